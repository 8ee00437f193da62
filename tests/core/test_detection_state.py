"""Task detection's ``Accumulator``: images added in batches, on shards merged in any grouping
and through ``to_bytes`` / ``from_bytes``, give exactly what ``evaluate`` gives on all the
images, in every field; the state's arrays are checked when read back.

Tied scores rank image by image (pycocotools' stable sort), so the answer depends on the order
of the images when a score ties across them: the accumulator's order is that of ``update`` and
``a.merge(b)`` puts a's images first. Shards merged in a shuffled order are therefore compared
with ``evaluate`` on the images in that same order, and with the original order when no score
ties across images.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import Phase, find, given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from evalserve.core import (
    Accumulator,
    InvalidInputError,
    StateTooLargeError,
    evaluate,
    parse_options,
)
from evalserve.core._state_format import StateDocument, decode, encode
from evalserve.core.detection._state import (
    BYTES_PER_CLASS,
    BYTES_PER_DETECTION,
    DETECTION_STATE,
    DetectionState,
)

Image = dict[str, Any]
NAMES = ("person", "bicycle", "café", "traffic light", "dog")
TIED_SCORES = (0.25, 0.5, 0.75, 1.0)
properties = settings(max_examples=120, deadline=None)


@dataclass
class Problem:
    """Images as ``evaluate`` takes them, with the options and class names of the request."""

    targets: list[Image]
    predictions: list[Image]
    options: dict[str, Any]
    classes: list[str] | None

    def evaluate(self, order: list[int] | None = None) -> dict[str, Any]:
        order = list(range(len(self.targets))) if order is None else order
        return evaluate(
            "detection",
            [self.targets[i] for i in order],
            [self.predictions[i] for i in order],
            options=self.options,
            classes=self.classes,
        ).to_dict()

    def accumulator(self) -> Accumulator:
        return Accumulator("detection", self.options, self.classes)


def _box(draw: st.DrawFn, near: list[float] | None = None) -> list[float]:
    """A box on a small grid (boxes overlap often), or ``near`` shifted by at most one unit."""
    if near is not None:
        shift = draw(st.lists(st.integers(-1, 1), min_size=4, max_size=4))
        x1, y1 = near[0] + shift[0], near[1] + shift[1]
        return [x1, y1, max(x1, near[2] + shift[2]), max(y1, near[3] + shift[3])]
    x1, y1 = draw(st.integers(0, 8)), draw(st.integers(0, 2))
    return [x1, y1, x1 + draw(st.integers(0, 5)), y1 + draw(st.integers(1, 4))]


@st.composite
def problems(draw: st.DrawFn, *, distinct_scores: bool = False) -> Problem:
    """Several images of a few classes: overlapping boxes, duplicates, predictions of the wrong
    class, images without predictions or without ground truth, scores tied across images (or
    all distinct), sparse class ids or named classes, a max_detections cut or none."""
    classes: list[str] | None = None
    if draw(st.booleans()):
        classes = list(NAMES[: draw(st.integers(1, len(NAMES)))])
        ids = list(range(len(classes)))
    else:
        sparse = st.sampled_from([0, 1, 3, 7, 12])
        ids = draw(st.lists(sparse, min_size=1, max_size=4, unique=True))
    n_images = draw(st.integers(1, 9))
    targets: list[Image] = []
    predictions: list[Image] = []
    for _ in range(n_images):
        truth = [(_box(draw), draw(st.sampled_from(ids))) for _ in range(draw(st.integers(0, 4)))]
        predicted = []
        for _ in range(draw(st.integers(0, 6))):
            near = None
            if truth and draw(st.integers(0, 3)) > 0:  # mostly near a ground truth box
                near = draw(st.sampled_from([box for box, _ in truth]))
            class_id = draw(st.sampled_from(ids))
            score = (
                draw(st.sampled_from(TIED_SCORES)) if draw(st.booleans()) else draw(st.floats(0, 1))
            )
            predicted.append((_box(draw, near), class_id, score))
        targets.append(
            {
                "boxes": np.array([box for box, _ in truth], dtype=float).reshape(-1, 4),
                "classes": np.array([c for _, c in truth], dtype=np.int64),
            }
        )
        predictions.append(
            {
                "boxes": [box for box, _, _ in predicted],
                "classes": [c for _, c, _ in predicted],
                "scores": [s for _, _, s in predicted],
            }
        )
    if distinct_scores:
        total = sum(len(p["scores"]) for p in predictions)
        values = draw(st.permutations(list(range(total))))
        for prediction in predictions:
            size = len(prediction["scores"])
            prediction["scores"] = [v / (total + 1) for v in values[:size]]
            values = values[size:]
    cut = draw(st.sampled_from([1, 3, 100, 100]))
    return Problem(targets, predictions, {"max_detections": cut}, classes)


def _round_trip(accumulator: Accumulator) -> Accumulator:
    return Accumulator.from_bytes(accumulator.to_bytes())


def _pieces(size: int, rng: random.Random) -> list[tuple[int, int]]:
    """``range(size)`` cut at random points into contiguous (start, stop) pieces."""
    cuts = sorted(rng.sample(range(1, size), rng.randint(0, size - 1))) if size > 1 else []
    bounds = [0, *cuts, size]
    return list(itertools.pairwise(bounds))


def _shards(problem: Problem, rng: random.Random) -> tuple[list[Accumulator], list[list[int]]]:
    """The images split into batches and the batches into shards (each an accumulator, some
    read back from bytes, some given an empty batch), with the images of each shard."""
    shards, images = [], []
    for start, stop in _pieces(len(problem.targets), rng):
        accumulator = problem.accumulator()
        if rng.random() < 0.2:
            accumulator.update([], [])
        for first, last in _pieces(stop - start, rng):
            accumulator.update(
                problem.targets[start + first : start + last],
                problem.predictions[start + first : start + last],
            )
            if rng.random() < 0.3:
                accumulator = _round_trip(accumulator)
        shards.append(accumulator)
        images.append(list(range(start, stop)))
    return shards, images


def _merged(shards: list[Accumulator], rng: random.Random) -> Accumulator:
    """The shards merged pairwise in a random grouping (each merge keeps their order), some
    intermediate results read back from bytes."""
    shards = list(shards)
    while len(shards) > 1:
        at = rng.randrange(len(shards) - 1)
        merged = shards[at].merge(shards[at + 1])
        shards[at : at + 2] = [_round_trip(merged) if rng.random() < 0.3 else merged]
    return shards[0]


@properties
@given(problems(), st.randoms(use_true_random=False))
def test_shards_merged_in_any_order_equal_evaluate_on_their_images(
    problem: Problem, rng: random.Random
) -> None:
    shards, images = _shards(problem, rng)
    order = list(range(len(shards)))
    rng.shuffle(order)
    accumulator = _round_trip(_merged([shards[i] for i in order], rng))
    expected = problem.evaluate([image for i in order for image in images[i]])
    assert accumulator.n_rows == len(problem.targets)
    assert accumulator.result().to_dict() == expected


@properties
@given(problems(distinct_scores=True), st.randoms(use_true_random=False))
def test_without_ties_across_images_the_shard_order_does_not_matter(
    problem: Problem, rng: random.Random
) -> None:
    shards, _ = _shards(problem, rng)
    rng.shuffle(shards)
    assert _merged(shards, rng).result().to_dict() == problem.evaluate()


@settings(max_examples=60, deadline=None)
@given(problems())
def test_one_batch_per_image_equals_evaluate(problem: Problem) -> None:
    accumulator = problem.accumulator()
    for target, prediction in zip(problem.targets, problem.predictions, strict=True):
        accumulator.update([target], [prediction])
    result = accumulator.result()
    assert result.to_dict() == problem.evaluate()
    # The size of the state: 35 bytes per kept prediction and 56 per class, as documented.
    state = accumulator._state()
    assert isinstance(state, DetectionState)
    arrays = state.to_arrays()
    assert state.nbytes == sum(array.nbytes for array in arrays.values())
    n_predictions = result.metrics["n_predictions"]
    assert n_predictions is not None and arrays["detections.score"].size <= n_predictions


def _reversed_changes_the_answer(problem: Problem) -> bool:
    order = list(range(len(problem.targets)))[::-1]
    return bool(problem.evaluate(order)["metrics"] != problem.evaluate()["metrics"])


def _cut_no_truth_and_partial_map(problem: Problem) -> bool:
    result = problem.evaluate()
    warnings, map_ = " ".join(result["warnings"]), result["metrics"]["map"]
    return "left out" in warnings and "no ground truth" in warnings and 0 < (map_ or 0.0) < 1


@pytest.mark.parametrize(
    "condition", [_reversed_changes_the_answer, _cut_no_truth_and_partial_map],
    ids=lambda condition: condition.__name__,
)  # fmt: skip
def test_the_problems_hold_what_the_properties_need(condition: Callable[[Problem], bool]) -> None:
    # Ties across images that decide the answer (so the shard order matters), the cut and the
    # no-ground-truth warnings, matches at some thresholds and not others: all generated.
    # Derandomized: a random search of 500 problems missed the rarer condition now and then.
    generate_only = settings(
        max_examples=2000, database=None, phases=[Phase.generate], derandomize=True
    )
    find(problems(), condition, settings=generate_only)


def _image(
    truth: Sequence[tuple[Sequence[float], int]],
    predicted: Sequence[tuple[Sequence[float], int, float]],
) -> tuple[Image, Image]:
    target = {"boxes": [b for b, _ in truth], "classes": [c for _, c in truth]}
    prediction = {
        "boxes": [b for b, _, _ in predicted],
        "classes": [c for _, c, _ in predicted],
        "scores": [s for _, _, s in predicted],
    }
    return target, prediction


def test_a_tie_across_shards_ranks_the_first_shard_first() -> None:
    # Shard a: a miss at 0.5; shard b: a hit at 0.5. a then b ranks the miss first (VOC AP 1/2),
    # b then a the hit first (AP 1), exactly as evaluate on the images in each order.
    miss = _image([], [([50, 0, 60, 1], 0, 0.5)])
    hit = _image([([0, 0, 10, 1], 0)], [([0, 0, 10, 1], 0, 0.5)])
    a = Accumulator("detection").update([miss[0]], [miss[1]])
    b = Accumulator("detection").update([hit[0]], [hit[1]])
    forward, backward = a.merge(b).result(), b.merge(a).result()
    assert forward.metrics["ap_50_voc_all"] == 0.5
    assert backward.metrics["ap_50_voc_all"] == 1.0
    assert (
        forward.to_dict() == evaluate("detection", [miss[0], hit[0]], [miss[1], hit[1]]).to_dict()
    )
    assert (
        backward.to_dict() == evaluate("detection", [hit[0], miss[0]], [hit[1], miss[1]]).to_dict()
    )


def test_the_cut_and_no_truth_warnings_add_up_over_batches() -> None:
    boxes = [[0, 0, 4, 4], [0, 0, 4, 5], [1, 1, 4, 4]]
    image = _image([([0, 0, 4, 4], 0)], [(box, k, 0.9 - 0.1 * k) for k, box in enumerate(boxes)])
    accumulator = Accumulator("detection", {"max_detections": 2})
    for _ in range(3):
        accumulator.update([image[0]], [image[1]])
    result = accumulator.result()
    assert result.warnings[0].startswith("3 predictions in 3 images were left out")
    assert "'1' (3 predictions)" in result.warnings[1]
    expected = evaluate("detection", [image[0]] * 3, [image[1]] * 3, options={"max_detections": 2})
    assert result.to_dict() == expected.to_dict()


# --- errors: the same as evaluate's; the accumulator stays as it was --------------------------


GOOD = _image([([0, 0, 2, 2], 0)], [([0, 0, 2, 2], 0, 0.9)])


@pytest.mark.parametrize(
    ("targets", "predictions", "keywords"),
    [
        pytest.param([GOOD[0]], [GOOD[1], GOOD[1]], {}, id="lengths"),
        pytest.param([GOOD[0]], [{**GOOD[1], "boxes": [[0, 0, 1]]}], {}, id="box-shape"),
        pytest.param([GOOD[0]], [{**GOOD[1], "scores": [float("nan")]}], {}, id="nan-score"),
        pytest.param([{**GOOD[0], "classes": [-1]}], [GOOD[1]], {}, id="negative-class"),
        pytest.param([GOOD[0]], [{**GOOD[1], "classes": [1]}], {"classes": ["a"]}, id="unnamed"),
        pytest.param([GOOD[0]], [GOOD[1]], {"y_pred": [1]}, id="y-pred"),
        pytest.param([GOOD[0]], [GOOD[1]], {"sample_weight": [1.0]}, id="weights"),
        pytest.param("images", [GOOD[1]], {}, id="not-a-list"),
    ],
)
def test_bad_batches_raise_what_evaluate_raises(
    targets: Any, predictions: Any, keywords: dict[str, Any]
) -> None:
    classes = keywords.pop("classes", None)
    with pytest.raises(InvalidInputError) as expected:
        evaluate("detection", targets, predictions, classes=classes, **keywords)
    accumulator = Accumulator("detection", classes=classes)
    accumulator.update([GOOD[0]], [GOOD[1]])
    before = accumulator.to_bytes()
    with pytest.raises(InvalidInputError) as got:
        accumulator.update(targets, predictions, **keywords)
    assert (got.value.field, got.value.message) == (expected.value.field, expected.value.message)
    assert accumulator.to_bytes() == before


def test_bad_class_names_are_refused_at_the_first_batch() -> None:
    with pytest.raises(InvalidInputError) as expected:
        evaluate("detection", [GOOD[0]], [GOOD[1]], classes=["a", "a"])
    accumulator = Accumulator("detection", classes=["a", "a"])
    with pytest.raises(InvalidInputError) as got:
        accumulator.update([GOOD[0]], [GOOD[1]])
    assert (got.value.field, got.value.message) == (expected.value.field, expected.value.message)
    assert accumulator.n_rows == 0


def test_an_empty_accumulator_has_no_result() -> None:
    accumulator = Accumulator("detection").update([], [])
    assert accumulator.n_rows == 0
    for empty in (accumulator, _round_trip(accumulator)):
        with pytest.raises(InvalidInputError, match="no rows were added"):
            empty.result()
    one = Accumulator("detection").update([GOOD[0]], [GOOD[1]])
    assert accumulator.merge(one).result().to_dict() == one.result().to_dict()
    with pytest.raises(InvalidInputError) as error:
        one.result(baseline={"scores": [0.5]})
    assert error.value.field == "baseline"


def test_the_state_cap_refuses_a_batch_and_keeps_the_state() -> None:
    accumulator = Accumulator("detection", max_state_bytes=200)
    accumulator.update([GOOD[0]], [GOOD[1]])
    assert accumulator.nbytes == BYTES_PER_DETECTION + BYTES_PER_CLASS + 24
    before = accumulator.to_bytes()
    many = _image([], [([0, 0, 1, 1], 0, k / 10) for k in range(10)])
    with pytest.raises(StateTooLargeError):
        accumulator.update([many[0]], [many[1]])
    assert accumulator.to_bytes() == before


@pytest.mark.parametrize(
    ("other", "field"),
    [
        pytest.param(lambda: Accumulator("detection", {"max_detections": 5}), "options", id="cut"),
        pytest.param(lambda: Accumulator("detection", classes=["a"]), "classes", id="classes"),
        pytest.param(lambda: Accumulator("binary"), "task", id="task"),
    ],
)
def test_accumulators_that_differ_do_not_merge(
    other: Callable[[], Accumulator], field: str
) -> None:
    accumulator = Accumulator("detection").update([GOOD[0]], [GOOD[1]])
    with pytest.raises(InvalidInputError) as error:
        accumulator.merge(other())
    assert error.value.field == field


# --- from_arrays: arrays no state could have written ------------------------------------------


def _valid() -> tuple[dict[str, NDArray[Any]], Problem]:
    """The arrays of a state of two classes, each with ground truth, hits and misses."""
    hit_a = ([0, 0, 4, 4], 0, 0.9)
    miss_a = ([10, 0, 14, 4], 0, 0.8)
    hit_b = ([0, 0, 4, 4], 1, 0.7)
    miss_b = ([20, 0, 24, 4], 1, 0.6)
    first = _image([([0, 0, 4, 4], 0), ([0, 0, 4, 4], 1)], [hit_a, miss_a, hit_b, miss_b])
    second = _image([([0, 0, 4, 4], 0)], [hit_a, miss_b])
    problem = Problem([first[0], second[0]], [first[1], second[1]], {}, ["a", "b", "c"])
    accumulator = problem.accumulator().update(problem.targets, problem.predictions)
    state = accumulator._state()
    assert isinstance(state, DetectionState)
    return {name: array.copy() for name, array in state.to_arrays().items()}, problem


def _set(name: str, value: Any) -> Callable[[dict[str, NDArray[Any]]], None]:
    def change(arrays: dict[str, NDArray[Any]]) -> None:
        arrays[name] = np.asarray(value, dtype=arrays[name].dtype)

    return change


def _edit(name: str, index: Any, value: Any) -> Callable[[dict[str, NDArray[Any]]], None]:
    def change(arrays: dict[str, NDArray[Any]]) -> None:
        arrays[name][index] = value

    return change


def _also(*changes: Callable[[dict[str, NDArray[Any]]], None]) -> Callable[..., None]:
    def change(arrays: dict[str, NDArray[Any]]) -> None:
        for one in changes:
            one(arrays)

    return change


BIG = 2**62
REFUSALS = [
    pytest.param(lambda a: a.pop("detections.voc"), "is missing", id="missing"),
    pytest.param(
        lambda a: a.update({"classes.id": a["classes.id"].astype(float)}), "dtype", id="dtype"
    ),
    pytest.param(_set("n_images", 0), "no image", id="no-image"),
    pytest.param(_set("n_images", -1), "count >= 0", id="negative-images"),
    pytest.param(_set("n_images_cut", 1), "were cut", id="cut-without-drops"),
    pytest.param(
        _also(_set("n_dropped", 1), _set("n_images_cut", 3)),
        "were cut",
        id="more-cut-images-than-images",
    ),
    pytest.param(_set("classes.id", [1, 0]), "strictly ascending", id="unsorted-ids"),
    pytest.param(_set("classes.id", [-1, 1]), "outside", id="negative-id"),
    pytest.param(_set("classes.id", [0, 3]), "classes are named", id="unnamed-id"),
    pytest.param(_set("classes.id", [0, 1, 2]), "2 entries, expected 3", id="ids-length"),
    pytest.param(_edit("classes.n_kept", 0, 9), "more kept", id="kept-over-received"),
    pytest.param(_edit("classes.n_ground_truth", 0, -2), "negative", id="negative-truth"),
    pytest.param(
        _also(
            _set("classes.n_ground_truth", [0, 0]),
            _set("classes.n_ground_truth_by_area", np.zeros((3, 2))),
        ),
        "more true positives",
        id="hits-without-truth",
    ),
    pytest.param(
        _also(
            _edit("classes.n_ground_truth", 1, 0),
            _edit("classes.n_received", 1, 0),
            _edit("classes.n_kept", 1, 0),
        ),
        "neither",
        id="empty-class",
    ),
    pytest.param(_edit("classes.n_received", 1, 4), "do not add up", id="counts"),
    pytest.param(_set("classes.n_ground_truth", [BIG, BIG]), "64-bit", id="truth-overflows"),
    pytest.param(
        _also(
            _set("classes.n_received", [BIG, BIG]), _set("n_dropped", BIG), _set("n_images_cut", 1)
        ),
        "64-bit",
        id="received-overflows",
    ),
    pytest.param(
        _also(_edit("classes.n_received", 0, 4), _set("n_dropped", 1), _set("n_images_cut", 1)),
        "options.max_detections",
        id="cut-too-few",
    ),
    pytest.param(_set("detections.score", np.ones(5)), "5 entries", id="scores-length"),
    pytest.param(_edit("detections.score", 1, np.inf), "not finite", id="infinite-score"),
    pytest.param(_edit("detections.score", 0, -1.0), "ranking order", id="unranked"),
    pytest.param(_set("detections.coco", np.zeros((9, 6))), "9 entries", id="coco-thresholds"),
    pytest.param(_set("detections.coco", np.zeros((10, 5))), "5 columns", id="coco-columns"),
    pytest.param(_set("detections.coco", np.ones((10, 6))), "more true positives", id="coco-hits"),
    pytest.param(_set("detections.voc", np.ones(6)), "more true positives", id="voc-hits"),
    pytest.param(_set("detections.voc", np.zeros((6, 1))), "dimensions", id="voc-shape"),
]


@pytest.mark.parametrize(("change", "message"), REFUSALS)
def test_from_arrays_refuses_what_no_state_could_write(
    change: Callable[[dict[str, NDArray[Any]]], None], message: str
) -> None:
    arrays, problem = _valid()
    options, classes = parse_options(problem.options), tuple(problem.classes or ())
    DETECTION_STATE.from_arrays(arrays, options, classes)  # the unchanged arrays are a state
    change(arrays)
    with pytest.raises(InvalidInputError, match=message) as error:
        DETECTION_STATE.from_arrays(arrays, options, classes)
    assert error.value.field == "state"
    document = StateDocument("detection", _options(), classes, arrays)
    with pytest.raises(InvalidInputError, match=message):
        Accumulator.from_bytes(encode(document))


def _options() -> dict[str, Any]:
    """Every option's JSON value, as an accumulator writes them."""
    return decode(Accumulator("detection").to_bytes()).options


def test_the_valid_arrays_read_back_to_the_same_result() -> None:
    arrays, problem = _valid()
    document = StateDocument("detection", _options(), tuple(problem.classes or ()), arrays)
    assert Accumulator.from_bytes(encode(document)).result().to_dict() == problem.evaluate()
    assert (BYTES_PER_DETECTION, BYTES_PER_CLASS) == (35, 56)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_damaged_arrays_are_refused_or_read_never_a_crash(data: st.DataObject) -> None:
    arrays, problem = _valid()
    options, classes = parse_options(problem.options), tuple(problem.classes or ())
    name = data.draw(st.sampled_from(sorted(arrays)))
    array = arrays[name]
    shape = data.draw(st.sampled_from([array.shape, (0,), (array.size + 1,), (10, 1)]))
    values: st.SearchStrategy[Any]
    if array.dtype == np.bool_:
        values = st.booleans()
    elif array.dtype == np.int64:
        values = st.one_of(st.integers(-(2**63), 2**63 - 1), st.integers(-2, 8))
    else:
        values = st.floats(allow_nan=True, allow_infinity=True)
    size = int(np.prod(shape))
    arrays[name] = np.array(
        data.draw(st.lists(values, min_size=size, max_size=size)), dtype=array.dtype
    ).reshape(shape)
    try:
        state = DETECTION_STATE.from_arrays(arrays, options, classes)
    except InvalidInputError as error:
        assert error.field == "state"
        return
    output = state.output(options, classes)
    assert output.sink.metrics["n_images"] == state.n_rows >= 1
