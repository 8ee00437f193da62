"""COCO's summary beyond mAP: AP of the small, medium and large boxes and average recall (AR at
1, 10 and 100 detections, and of each area range), pycocotools' ``COCOeval.stats[3:12]`` (Lin
et al. 2014; AR as recall averaged over IoU 0.5:0.95, Hosang et al. 2016).

pycocotools is the oracle on random scenes with boxes of every size (areas exactly on the range
bounds 32^2 and 96^2 included), driven with ``maxDets = [1, 10, max_detections]`` and the ground
truth's area w * h; below 100 detections it is handed the predictions our per-image cut keeps,
as in ``test_detection.py``. Merged batches and states read back equal ``evaluate``; a state
written before the ranks and areas were kept still reads, with those metrics null.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pycocotools.cocoeval import COCOeval

from evalserve.core import Accumulator, InvalidInputError, evaluate, parse_options
from evalserve.core._state_format import StateDocument, decode, encode
from evalserve.core.detection._state import DETECTION_STATE, DetectionState
from evalserve.core.detection._suite import NOT_KEPT
from tests.core.test_detection import Scene, _coco_eval

ABS = 1e-9
# pycocotools' stats index of each metric (stats[0:3] are map, map_50, map_75).
STATS = {
    "map_small": 3, "map_medium": 4, "map_large": 5, "mar_1": 6, "mar_10": 7, "mar_100": 8,
    "mar_small": 9, "mar_medium": 10, "mar_large": 11,
}  # fmt: skip
AREAS = {"all": 0, "small": 1, "medium": 2, "large": 3}  # pycocotools' areaRng order
NEEDS_AREAS = tuple(name for name in STATS if name != "mar_100")
# Box sides (multiples of 1/8): small, on the 32 bound, medium, on the 96 bound, large.
SIDES = (3.0, 12.5, 24.0, 32.0, 45.25, 70.0, 96.0, 130.0, 200.0)


def _cut(scene: Scene, max_detections: int) -> Scene:
    """The predictions our cut keeps: the top ``max_detections`` of each image over all
    classes (ties in input order), in input order."""
    cut = Scene(targets=scene.targets)
    for prediction in scene.predictions:
        top = np.sort(np.argsort(-np.asarray(prediction["scores"]), kind="stable")[:max_detections])
        cut.predictions.append({key: np.asarray(v)[top] for key, v in prediction.items()})
    return cut


def _assert_summary_matches_pycocotools(scene: Scene, max_detections: int = 100) -> None:
    output = scene.evaluate(max_detections=max_detections)
    evaluation = _coco_eval(_cut(scene, max_detections), max_detections)
    metrics, undefined = output.sink.metrics, output.sink.undefined
    for name, index in STATS.items():
        expected = float(evaluation.stats[index])
        if expected == -1:  # pycocotools' "absent"
            assert metrics[name] is None and undefined[name], name
        else:
            assert metrics[name] == pytest.approx(expected, abs=ABS), name
    # stats[0] reads maxDets 100 only: the AP at maxDets[2] from the precision itself.
    precision = evaluation.eval["precision"][:, :, :, 0, 2]
    if (precision > -1).any():
        assert metrics["map"] == pytest.approx(float(precision[precision > -1].mean()), abs=ABS)
    else:
        assert metrics["map"] is None
    _assert_classes_match(output.per_class, evaluation)


def _assert_classes_match(rows: list[Any], evaluation: COCOeval) -> None:
    """Each class's AP and AR in each area range and its AR at 1, 10 and max detections."""
    precision, recall = evaluation.eval["precision"], evaluation.eval["recall"]
    by_name = {row.class_name: row for row in rows}
    for k, category in enumerate(evaluation.params.catIds):
        row = by_name.get(str(category - 1))
        if row is None:  # a category pycocotools lists that no box has
            continue
        expected: dict[str, float] = {}
        for area in ("small", "medium", "large"):
            a = AREAS[area]
            if precision[0, 0, k, a, 2] > -1:
                expected[f"ap_{area}"] = float(precision[:, :, k, a, 2].mean())
                expected[f"ar_{area}"] = float(recall[:, k, a, 2].mean())
        if recall[0, k, 0, 2] > -1:
            for m, name in enumerate(("ar_1", "ar_10", "ar_100")):
                expected[name] = float(recall[:, k, 0, m].mean())
        for name in ("ap_small", "ap_medium", "ap_large", "ar_1", "ar_10", "ar_100", "ar_small",
                     "ar_medium", "ar_large"):  # fmt: skip
            if name in expected:
                assert row.metrics[name] == pytest.approx(expected[name], abs=ABS), (k, name)
            else:
                assert row.metrics[name] is None and row.undefined[name], (k, name)


def _random_scene(seed: int, n_images: int = 12, n_classes: int = 3) -> Scene:
    """Boxes of every size (sides from 3 to 200, squares of side 32 and 96 on the range
    bounds), several per class in an image, jittered duplicate and misplaced predictions,
    wrong classes, junk, images without ground truth. Coordinates are multiples of 1/8."""
    rng = np.random.default_rng(seed)
    scene = Scene()
    for index in range(n_images):
        truth: list[tuple[list[float], int]] = []
        predicted: list[tuple[list[float], int, float]] = []
        for _ in range(0 if index % 5 == 0 else int(rng.integers(1, 9))):
            width, height = (float(rng.choice(SIDES)) for _ in range(2))
            if rng.random() < 0.25:  # a square on a bound, or near one
                width = height = float(rng.choice([32.0, 96.0, 31.875, 96.125]))
            x1, y1 = (float(v) for v in rng.integers(0, 4000, size=2) / 8)
            box = [x1, y1, x1 + width, y1 + height]
            class_id = int(rng.integers(0, n_classes))
            truth.append((box, class_id))
            for _ in range(int(rng.integers(0, 4))):
                shift = rng.integers(-3, 4, size=4) * max(width, height) / 64
                shifted = np.round((np.array(box) + shift) * 8) / 8
                shifted[2:] = np.maximum(shifted[2:], shifted[:2])
                guess = class_id if rng.random() < 0.85 else int(rng.integers(0, n_classes + 1))
                predicted.append((shifted.tolist(), guess, float(rng.random())))
        for _ in range(int(rng.integers(0, 4))):  # junk of any size
            x1, y1 = (float(v) for v in rng.integers(0, 4000, size=2) / 8)
            width, height = (float(rng.choice(SIDES)) for _ in range(2))
            junk = [x1, y1, x1 + width, y1 + height]
            predicted.append((junk, int(rng.integers(0, n_classes + 1)), float(rng.random())))
        scene.image(truth, predicted)
    return scene


@pytest.mark.parametrize("seed", range(10), ids=lambda seed: f"seed-{seed}")
def test_coco_summary_matches_pycocotools(seed: int) -> None:
    # map_small map_medium map_large mar_1 mar_10 mar_100 mar_small mar_medium mar_large: STATS.
    scene = _random_scene(seed, n_images=6 + 4 * seed)
    _assert_summary_matches_pycocotools(scene)


@pytest.mark.parametrize("max_detections", [1, 3, 7, 30])
def test_coco_summary_below_100_detections_matches_pycocotools(max_detections: int) -> None:
    # pycocotools with maxDets [1, 10, max_detections]: AR@10 (and AR@1 at 1) are capped at
    # max_detections, and AR@100 (stats[8]) is the AR at max_detections.
    scene = _random_scene(40 + max_detections, n_images=20)
    _assert_summary_matches_pycocotools(scene, max_detections)
    output = scene.evaluate(max_detections=max_detections)
    if max_detections < 10:
        assert output.sink.metrics["mar_10"] == output.sink.metrics["mar_100"]


def test_the_random_scenes_reach_every_range_and_both_bounds() -> None:
    scene = _random_scene(3, n_images=20)
    areas = np.concatenate([(t["boxes"][:, 2] - t["boxes"][:, 0]) * (t["boxes"][:, 3] -
                            t["boxes"][:, 1]) for t in scene.targets])  # fmt: skip
    assert {1024.0, 9216.0} <= set(areas.tolist())
    assert (areas < 1024).any() and ((areas > 1024) & (areas < 9216)).any() and (areas > 9216).any()
    metrics = scene.evaluate().sink.metrics
    assert all(metrics[name] is not None for name in STATS)
    at_1, at_10 = metrics["mar_1"], metrics["mar_10"]
    assert at_1 is not None and at_10 is not None
    assert at_1 < at_10  # images with several boxes of a class


def _box(x: float, side: float) -> list[float]:
    return [x, 0.0, x + side, side]


def test_a_box_outside_the_range_absorbs_its_prediction() -> None:
    # A small box (side 8) and a large one (side 100) of one class. In the small range the
    # large box is ignored: the prediction on it is neither a hit nor a false positive, and
    # a junk prediction of the small size is a false positive there but is ignored in the
    # large range. Small: the junk, then the hit: precision 1/2 at recall 1, read at all 101
    # points: AP 1/2 at every threshold. Large: one hit, nothing else counted: AP 1.
    scene = Scene().image(
        [(_box(0, 8), 0), (_box(200, 100), 0)],
        [(_box(200, 100), 0, 0.9), (_box(500, 8), 0, 0.8), (_box(0, 8), 0, 0.7)],
    )
    metrics = scene.evaluate().sink.metrics
    assert metrics["map_small"] == 0.5
    assert metrics["map_large"] == 1.0
    assert metrics["mar_small"] == metrics["mar_large"] == 1.0
    assert metrics["map_medium"] is None
    assert "medium area range" in scene.evaluate().sink.undefined["map_medium"]
    _assert_summary_matches_pycocotools(scene)


def test_mar_1_counts_the_top_prediction_of_each_image_and_class() -> None:
    # Two boxes of class 0 and one of class 1 in one image, each found: AR@1 takes the top
    # prediction of each (image, class): class 0 finds one of its two, class 1 its one.
    scene = Scene().image(
        [(_box(0, 50), 0), (_box(100, 50), 0), (_box(200, 50), 1)],
        [(_box(0, 50), 0, 0.9), (_box(100, 50), 0, 0.8), (_box(200, 50), 1, 0.7)],
    )
    metrics = scene.evaluate().sink.metrics
    assert metrics["mar_1"] == pytest.approx((1 / 2 + 1) / 2, abs=1e-15)
    assert metrics["mar_10"] == metrics["mar_100"] == 1.0
    _assert_summary_matches_pycocotools(scene)


# --- the state: merged batches equal evaluate; old states still read ---------------------------


@st.composite
def scenes(draw: st.DrawFn) -> tuple[Scene, int]:
    """A few images of two classes, boxes of sides 4 to 128 on a grid of 4 (so that they
    overlap and fall in every area range), predictions near them or anywhere, tied scores."""
    scene = Scene()
    side = st.sampled_from([4.0, 8.0, 32.0, 40.0, 96.0, 128.0])
    for _ in range(draw(st.integers(1, 6))):
        truth: list[tuple[list[float], int]] = []
        for _ in range(draw(st.integers(0, 4))):
            x, y = draw(st.integers(0, 8)) * 4.0, draw(st.integers(0, 8)) * 4.0
            truth.append(([x, y, x + draw(side), y + draw(side)], draw(st.integers(0, 1))))
        predicted: list[tuple[list[float], int, float]] = []
        for _ in range(draw(st.integers(0, 6))):
            if len(truth) > 0 and draw(st.booleans()):
                box, class_id = draw(st.sampled_from(truth))
                shift = draw(st.lists(st.sampled_from([-4.0, 0.0, 4.0]), min_size=4, max_size=4))
                x1, y1 = box[0] + shift[0], box[1] + shift[1]
                moved = [x1, y1, max(x1, box[2] + shift[2]), max(y1, box[3] + shift[3])]
            else:
                x, y = draw(st.integers(0, 8)) * 4.0, draw(st.integers(0, 8)) * 4.0
                moved, class_id = [x, y, x + draw(side), y + draw(side)], draw(st.integers(0, 1))
            predicted.append((moved, class_id, draw(st.sampled_from([0.25, 0.5, 0.75, 0.9]))))
        scene.image(truth, predicted)
    return scene, draw(st.sampled_from([1, 2, 100]))


@settings(max_examples=80, deadline=None)
@given(scenes())
def test_generated_scenes_match_pycocotools(case: tuple[Scene, int]) -> None:
    scene, max_detections = case
    if not any(len(p["scores"]) for p in _cut(scene, max_detections).predictions):
        return  # pycocotools' loadRes refuses an empty list
    _assert_summary_matches_pycocotools(scene, max_detections)


def _dict(scene: Scene, max_detections: int, order: list[int] | None = None) -> dict[str, Any]:
    order = list(range(len(scene.targets))) if order is None else order
    return evaluate(
        "detection", [scene.targets[i] for i in order], [scene.predictions[i] for i in order],
        options={"max_detections": max_detections},
    ).to_dict()  # fmt: skip


@settings(max_examples=80, deadline=None)
@given(scenes(), st.randoms(use_true_random=False))
def test_split_batches_merged_equal_evaluate(case: tuple[Scene, int], rng: random.Random) -> None:
    scene, max_detections = case
    n = len(scene.targets)
    cuts = sorted(rng.sample(range(1, n), rng.randint(0, n - 1))) if n > 1 else []
    bounds = [0, *cuts, n]
    shards = []
    for start, stop in itertools.pairwise(bounds):
        shard = Accumulator("detection", {"max_detections": max_detections})
        shard.update(scene.targets[start:stop], scene.predictions[start:stop])
        shards.append(Accumulator.from_bytes(shard.to_bytes()) if rng.random() < 0.5 else shard)
    merged = shards[0]
    for shard in shards[1:]:
        merged = merged.merge(shard)
    assert Accumulator.from_bytes(merged.to_bytes()).result().to_dict() == _dict(
        scene, max_detections
    )


def _older(accumulator: Accumulator) -> Accumulator:
    """The accumulator as an evalserve that kept no ranks or areas wrote it."""
    document = decode(accumulator.to_bytes())
    arrays = {
        name: array
        for name, array in document.arrays.items()
        if name
        not in ("classes.n_ground_truth_by_area", "detections.rank", "detections.area_flags")
    }
    return Accumulator.from_bytes(
        encode(StateDocument(document.task, document.options, document.classes, arrays))
    )


def test_an_older_state_reads_with_the_new_metrics_null() -> None:
    scene = _random_scene(5)
    whole = Accumulator("detection").update(scene.targets, scene.predictions)
    expected = whole.result()
    older = _older(whole)
    for result in (older.result(), older.merge(whole).result(), whole.merge(older).result()):
        for name, value in expected.metrics.items():
            if name in NEEDS_AREAS:
                assert result.metrics[name] is None
                assert result.undefined[name] == NOT_KEPT
            else:
                assert value is None or result.metrics[name] is not None, name
        assert result.metrics["mar_100"] == pytest.approx(expected.metrics["mar_100"], abs=1e-12)
        rows = [row for row in result.per_class if row.metrics["n_ground_truth"]]
        assert rows and all(row.undefined["ar_1"] == NOT_KEPT for row in rows)
    assert older.result().metrics["map"] == expected.metrics["map"]


def _arrays() -> dict[str, Any]:
    scene = _random_scene(2, n_images=6)
    state = Accumulator("detection").update(scene.targets, scene.predictions)._state()
    assert isinstance(state, DetectionState)
    return {name: array.copy() for name, array in state.to_arrays().items()}


def _flip_found_and_ignored(arrays: dict[str, Any]) -> None:
    arrays["detections.area_flags"][0] |= 1 | (1 << 10)


def _more_found_than_truth(arrays: dict[str, Any]) -> None:
    arrays["detections.area_flags"][:] |= (1 << 10) - 1
    arrays["detections.area_flags"][:] &= ~(((1 << 10) - 1) << 10)


def _rank_gap(arrays: dict[str, Any]) -> None:
    arrays["detections.rank"][arrays["detections.rank"] == 0] = 1


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param(lambda a: a.pop("detections.rank"), "is missing", id="rank-missing"),
        pytest.param(lambda a: a.update({"detections.area_flags": a["detections.area_flags"][1:]}),
                     "entries", id="flags-length"),
        pytest.param(lambda a: a.update({"classes.n_ground_truth_by_area":
                                         a["classes.n_ground_truth_by_area"][:, 1:]}),
                     "columns", id="by-area-columns"),
        pytest.param(lambda a: a["classes.n_ground_truth_by_area"].__setitem__((0, 0), 10**6),
                     "more ground truth in an area range", id="by-area-over-truth"),
        pytest.param(lambda a: a["classes.n_ground_truth_by_area"].__setitem__((1, 0), -1),
                     "negative", id="by-area-negative"),
        pytest.param(lambda a: a["detections.rank"].__setitem__(0, 100), "outside", id="rank-cut"),
        pytest.param(_rank_gap, "ranks of predictions", id="rank-gap"),
        pytest.param(lambda a: a["detections.area_flags"].__setitem__(0, 1 << 62), "bit",
                     id="unused-bit"),
        pytest.param(_flip_found_and_ignored, "found and ignored", id="found-and-ignored"),
        pytest.param(_more_found_than_truth, "more true positives", id="found-over-truth"),
    ],
)  # fmt: skip
def test_damaged_area_arrays_are_refused(change: Any, message: str) -> None:
    arrays = _arrays()
    options = parse_options(None)
    DETECTION_STATE.from_arrays(arrays, options, None)  # the unchanged arrays are a state
    change(arrays)
    with pytest.raises(InvalidInputError, match=message) as error:
        DETECTION_STATE.from_arrays(arrays, options, None)
    assert error.value.field == "state"
