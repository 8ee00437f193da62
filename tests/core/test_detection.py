"""Object detection: IoU, VOC AP and the matching rules by hand; pycocotools as the oracle of
the COCO metrics; the 15-image precision-recall example (IoU >= 0.5 as a hit, PASCAL VOC's
11-point AP, Everingham et al. 2010, and mAP as the mean of class APs); validation names the
field.

pycocotools takes boxes as [x, y, w, h]: the scenes here are converted, and every coordinate is
a multiple of 1/8 below 2^10, so x + w, w * h and the areas are exact in both conventions and
the IoU (one division, (area_a + area_b) - intersection as pycocotools' ``bbIou``) agrees to the
last bit. Ground truth is ``iscrowd = 0`` with area w * h, read at area range "all".
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from pycocotools import mask as coco_mask
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

from evalserve.core import MetricInfo
from evalserve.core._errors import InvalidInputError
from evalserve.core._options import parse_options
from evalserve.core._result import TaskOutput
from evalserve.core.detection import (
    CATALOG_ENTRIES,
    CONVENTIONS,
    _matching,
    box_iou,
    compute_detection,
)

Floats = NDArray[np.float64]
Image = dict[str, Any]

ABS = 1e-9
MEANS = ("map", "map_50", "map_75", "ap_50_voc11", "ap_50_voc_all", "recall_50")
# COCO's summary besides map, map_50 and map_75 (tests/core/test_detection_coco_summary.py).
SUMMARY = (
    "map_small",
    "map_medium",
    "map_large",
    "mar_1",
    "mar_10",
    "mar_100",
    "mar_small",
    "mar_medium",
    "mar_large",
)
ROW_KEYS = {
    "class", "ap", "ap_50", "ap_75", "ap_50_voc11", "ap_50_voc_all", "recall_50",
    "ap_small", "ap_medium", "ap_large", "ar_1", "ar_10", "ar_100", "ar_small", "ar_medium",
    "ar_large", "n_ground_truth", "n_predictions", "undefined", "intervals",
}  # fmt: skip


@dataclass
class Scene:
    """Images as the core takes them: ``targets`` and ``predictions``, one entry per image."""

    targets: list[Image] = field(default_factory=list)
    predictions: list[Image] = field(default_factory=list)

    def image(
        self,
        truth: Sequence[tuple[Sequence[float], int]] = (),
        predicted: Sequence[tuple[Sequence[float], int, float]] = (),
    ) -> Scene:
        self.targets.append(
            {
                "boxes": np.array([box for box, _ in truth], dtype=float).reshape(-1, 4),
                "classes": np.array([c for _, c in truth], dtype=np.int64),
            }
        )
        self.predictions.append(
            {
                "boxes": np.array([box for box, _, _ in predicted], dtype=float).reshape(-1, 4),
                "classes": np.array([c for _, c, _ in predicted], dtype=np.int64),
                "scores": np.array([s for _, _, s in predicted], dtype=float),
            }
        )
        return self

    def evaluate(self, classes: Sequence[str] | None = None, **options: Any) -> TaskOutput:
        return compute_detection(
            self.targets, self.predictions, classes=classes, options=parse_options(options)
        )


def _row(output: TaskOutput, name: str) -> dict[str, Any]:
    """The row of class ``name`` in its JSON shape."""
    (row,) = [row.to_dict() for row in output.per_class if row.class_name == name]
    return row


def _strip(x1: float, x2: float) -> list[float]:
    """A box of height 1 from x1 to x2: IoU of two strips is that of their x intervals."""
    return [x1, 0.0, x2, 1.0]


# IoU


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        pytest.param([0, 0, 2, 2], [0, 0, 2, 2], 1.0, id="identical"),
        pytest.param([0, 0, 2, 2], [1, 0, 3, 2], 2 / 6, id="half-shifted"),
        pytest.param([0, 0, 4, 4], [1, 1, 3, 3], 4 / 16, id="contained"),
        pytest.param([0, 0, 2, 2], [1, 1, 3, 3], 1 / 7, id="corner"),
        pytest.param([0, 0, 1, 1], [1, 0, 2, 1], 0.0, id="touching-edge"),
        pytest.param([0, 0, 1, 1], [5, 5, 6, 6], 0.0, id="disjoint"),
        pytest.param([0, 0, 0, 2], [0, 0, 0, 2], 0.0, id="zero-area-both"),
        pytest.param([1, 0, 1, 2], [0, 0, 2, 2], 0.0, id="zero-area-inside"),
        pytest.param([0.5, 0.25, 2.5, 1.25], [1.5, 0.25, 3.5, 1.25], 1 / 3, id="fractional"),
    ],
)
def test_box_iou_by_hand(first: list[float], second: list[float], expected: float) -> None:
    iou = box_iou(np.array([first], dtype=float), np.array([second], dtype=float))
    assert iou.shape == (1, 1)
    assert iou[0, 0] == pytest.approx(expected, abs=1e-15)


def test_box_iou_has_no_plus_one_pixel() -> None:
    # Areas 1 and 2, intersection 1: IoU 1/2. With VOC's +1 pixel the areas would be 4 and 6
    # and the intersection 4: IoU 4/6.
    iou = box_iou(np.array([[0.0, 0.0, 1.0, 1.0]]), np.array([[0.0, 0.0, 1.0, 2.0]]))
    assert iou[0, 0] == 0.5
    assert "no +1 pixel" in CONVENTIONS["iou"]


def test_box_iou_is_a_matrix_over_all_pairs() -> None:
    first = np.array([[0, 0, 2, 2], [0, 0, 1, 1], [4, 4, 5, 5]], dtype=float)
    second = np.array([[0, 0, 2, 2], [1, 1, 2, 2]], dtype=float)
    expected = [[1.0, 0.25], [0.25, 0.0], [0.0, 0.0]]
    np.testing.assert_allclose(box_iou(first, second), expected, atol=1e-15)
    np.testing.assert_allclose(box_iou(second, first), np.transpose(expected), atol=1e-15)


def test_box_iou_equals_pycocotools_bbiou() -> None:
    # Bit for bit on coordinates that are multiples of 1/8 (x + w is then exact); to rounding
    # on arbitrary floats, where pycocotools' x + w may differ from x2 in the last bit.
    rng = np.random.default_rng(5)
    for scale in (8.0, None):
        corners = rng.integers(0, 800, size=(2, 40, 2)) / 8 if scale else rng.random((2, 40, 2))
        sizes = rng.integers(0, 400, size=(2, 40, 2)) / 8 if scale else rng.random((2, 40, 2))
        first, second = (np.hstack([c, c + s]) for c, s in zip(corners, sizes, strict=True))
        xywh = [np.hstack([b[:, :2], b[:, 2:] - b[:, :2]]) for b in (first, second)]
        reference = coco_mask.iou(xywh[0].tolist(), xywh[1].tolist(), [0] * len(second))
        if scale:
            np.testing.assert_array_equal(box_iou(first, second), reference)
        else:
            np.testing.assert_allclose(box_iou(first, second), reference, rtol=0, atol=1e-12)


def test_iou_of_exactly_one_half_is_a_hit() -> None:
    # "IoU >= 0.5" counts as found (pycocotools' >=). Prediction [0,0,1,1] in truth [0,0,2,1]:
    # intersection 1, union 2. A hit at 0.5 only: COCO's AP over 0.50:0.95 is 1/10.
    output = Scene().image([([0, 0, 2, 1], 0)], [([0, 0, 1, 1], 0, 0.9)]).evaluate()
    metrics = output.sink.metrics
    assert metrics["recall_50"] == 1.0
    assert metrics["map_50"] == 1.0
    assert metrics["ap_50_voc11"] == 1.0
    assert metrics["ap_50_voc_all"] == 1.0
    assert metrics["map_75"] == 0.0
    assert metrics["map"] == pytest.approx(0.1, abs=1e-15)


# VOC and COCO average precision by hand


def _five_boxes_tp_fp_tp_fp_tp() -> Scene:
    """Five disjoint ground truth boxes; five predictions ranked TP FP TP FP TP."""
    truth = [(_strip(10 * i, 10 * i + 5), 0) for i in range(5)]
    predicted = [
        (_strip(0, 5), 0, 0.9),  # TP: box 0
        (_strip(100, 105), 0, 0.8),  # FP: nothing there
        (_strip(10, 15), 0, 0.7),  # TP: box 1
        (_strip(0, 5), 0, 0.6),  # FP: box 0 again (a duplicate)
        (_strip(20, 25), 0, 0.5),  # TP: box 2
    ]
    return Scene().image(truth, predicted)


def test_voc_eleven_point_and_all_point_by_hand() -> None:
    # Precision 1, 1/2, 2/3, 1/2, 3/5 at recall .2, .2, .4, .4, .6; G = 5.
    # Envelope (max precision at recall >= r): 1 up to .2, 2/3 up to .4, 3/5 up to .6.
    # 11-point: r = 0, .1, .2 -> 1; .3, .4 -> 2/3; .5, .6 -> 3/5; .7 ... 1 -> 0.
    # All-point: each true positive adds 1/5 of recall at the envelope: (1 + 2/3 + 3/5) / 5.
    metrics = _five_boxes_tp_fp_tp_fp_tp().evaluate().sink.metrics
    assert metrics["ap_50_voc11"] == pytest.approx((3 + 2 * 2 / 3 + 2 * 3 / 5) / 11, abs=1e-15)
    assert metrics["ap_50_voc11"] == pytest.approx(83 / 165, abs=1e-15)
    assert metrics["ap_50_voc_all"] == pytest.approx(34 / 75, abs=1e-15)
    assert metrics["recall_50"] == pytest.approx(3 / 5, abs=1e-15)


def test_coco_101_point_ap_by_hand() -> None:
    # Same ranking: recall points 0, .01, ..., .20 (21) read precision 1; .21 ... .40 (20) read
    # 2/3; .41 ... .60 (20) read 3/5; the 40 above .60 read 0. Every prediction is exact, so
    # the AP is the same at every IoU threshold. (.2, .4 and .6 as np.linspace gives them equal
    # 1/5, 2/5 and 3/5 in floating point: no boundary surprise here.)
    metrics = _five_boxes_tp_fp_tp_fp_tp().evaluate().sink.metrics
    expected = (21 + 20 * 2 / 3 + 20 * 3 / 5) / 101
    assert expected == pytest.approx(139 / 303, abs=1e-15)
    for name in ("map", "map_50", "map_75"):
        assert metrics[name] == pytest.approx(expected, abs=1e-15)


def test_coco_recall_points_compare_in_floating_point_as_pycocotools() -> None:
    # 10 boxes, 7 found, no false positive: recall stops at 7/10. np.linspace(0, 1, 101)[70] is
    # 0.7000000000000001 > 7/10 in floating point, so pycocotools reads 0 there: 70 points of
    # precision 1, not 71. We follow it (the exact reading would give 71/101).
    assert np.linspace(0, 1, 101)[70] > 7 / 10
    truth = [(_strip(10 * i, 10 * i + 5), 0) for i in range(10)]
    predicted = [(_strip(10 * i, 10 * i + 5), 0, 1 - i / 10) for i in range(7)]
    scene = Scene().image(truth, predicted)
    metrics = scene.evaluate().sink.metrics
    assert metrics["map_50"] == pytest.approx(70 / 101, abs=1e-15)
    assert metrics["ap_50_voc11"] == pytest.approx(8 / 11, abs=1e-15)  # exact: r = .7 counts
    _assert_matches_pycocotools(scene)


def test_voc_eleven_point_reaches_recall_one() -> None:
    # Recall >= r, not > r: a perfect ranking scores 1 at the point r = 1 too.
    scene = Scene().image(
        [(_strip(0, 5), 0), (_strip(10, 15), 0)],
        [(_strip(0, 5), 0, 0.9), (_strip(10, 15), 0, 0.8)],
    )
    metrics = scene.evaluate().sink.metrics
    assert metrics["ap_50_voc11"] == 1.0
    assert metrics["ap_50_voc_all"] == 1.0
    assert metrics["map"] == 1.0


# Matching rules


def test_voc_and_coco_matching_differ_on_a_taken_box() -> None:
    # A = [0, 10] and B = [1, 11]. The first prediction is A itself (IoU 1 with A, 9/11 with B);
    # the second, [0.2, 10.2], overlaps A best (9.8/10.2) and B by 9.2/10.8 = 0.852.
    # VOC: the second prediction's best box A is taken -> false positive: recall 1/2.
    # COCO: it takes B, free and >= the threshold, up to IoU 0.85; at 0.90 and 0.95 it misses.
    scene = Scene().image(
        [(_strip(0, 10), 0), (_strip(1, 11), 0)],
        [(_strip(0, 10), 0, 0.9), (_strip(0.2, 10.2), 0, 0.8)],
    )
    metrics = scene.evaluate().sink.metrics
    assert metrics["ap_50_voc_all"] == 0.5
    assert metrics["ap_50_voc11"] == pytest.approx(6 / 11, abs=1e-15)
    assert metrics["map_50"] == 1.0
    assert metrics["recall_50"] == 1.0
    assert metrics["map"] == pytest.approx((8 + 2 * 51 / 101) / 10, abs=1e-15)
    _assert_matches_pycocotools(scene)


def test_coco_gives_equal_iou_to_the_later_box_as_pycocotools() -> None:
    # A = [0, 10], B = [2, 12]. The first prediction, [1, 11], overlaps both by exactly 9/11; the
    # second is A itself (IoU 1 with A, 8/12 with B). pycocotools hands the tie to the later box
    # B, so the second prediction finds A free: two hits up to IoU 0.80. Above 9/11 = 0.818 the
    # first prediction misses and the second still takes A: precision 1/2 at recall 1/2.
    # VOC hands the tie to the first box A; the second prediction's best box is then taken.
    scene = Scene().image(
        [(_strip(0, 10), 0), (_strip(2, 12), 0)],
        [(_strip(1, 11), 0, 0.9), (_strip(0, 10), 0, 0.8)],
    )
    metrics = scene.evaluate().sink.metrics
    assert metrics["map_50"] == 1.0
    assert metrics["map"] == pytest.approx((7 + 3 * 0.5 * 51 / 101) / 10, abs=1e-15)
    assert metrics["ap_50_voc_all"] == 0.5
    _assert_matches_pycocotools(scene)


def test_one_prediction_per_ground_truth_duplicates_are_false_positives() -> None:
    scene = Scene().image([(_strip(0, 10), 0)], [(_strip(0, 10), 0, 0.9), (_strip(0, 10), 0, 0.8)])
    metrics = scene.evaluate().sink.metrics
    assert metrics["recall_50"] == 1.0
    assert metrics["ap_50_voc_all"] == 1.0  # the duplicate ranks after the only hit
    reversed_scores = Scene().image(
        [(_strip(0, 10), 0)], [(_strip(0, 10), 0, 0.8), (_strip(3, 13), 0, 0.9)]
    )
    # At 0.5, [3, 13] (IoU 7/13) ranks first and takes the box; the exact box comes too late.
    # At 0.75, [3, 13] misses and the exact box is the hit: precision 1/2 at recall 1.
    again = reversed_scores.evaluate().sink.metrics
    assert again["ap_50_voc_all"] == 1.0
    assert again["map_50"] == 1.0
    assert again["map_75"] == 0.5


def test_predictions_only_match_their_own_class() -> None:
    scene = Scene().image([(_strip(0, 10), 0)], [(_strip(0, 10), 1, 0.9)])
    output = scene.evaluate()
    assert output.sink.metrics["recall_50"] == 0.0
    assert output.sink.metrics["map"] == 0.0


@pytest.mark.parametrize(
    ("first_is_hit", "expected"), [(False, 0.5), (True, 1.0)], ids=["miss-first", "hit-first"]
)
def test_tied_scores_rank_in_input_order(first_is_hit: bool, expected: float) -> None:
    hit, miss = (_strip(0, 10), 0, 0.5), (_strip(50, 60), 0, 0.5)
    predicted = [hit, miss] if first_is_hit else [miss, hit]
    metrics = Scene().image([(_strip(0, 10), 0)], predicted).evaluate().sink.metrics
    assert metrics["ap_50_voc_all"] == expected
    assert "input order" in CONVENTIONS["score_ties"]


def test_tied_scores_across_images_rank_image_by_image() -> None:
    # Image 0 holds a miss, image 1 a hit, both at 0.5: the miss ranks first.
    scene = Scene()
    scene.image([], [(_strip(50, 60), 0, 0.5)])
    scene.image([(_strip(0, 10), 0)], [(_strip(0, 10), 0, 0.5)])
    assert scene.evaluate().sink.metrics["ap_50_voc_all"] == 0.5
    _assert_matches_pycocotools(scene)


# max_detections


def test_max_detections_keeps_the_top_of_each_image_over_all_classes() -> None:
    scene = Scene().image(
        [(_strip(0, 10), 0)],
        [(_strip(50, 60), 1, 0.9), (_strip(70, 80), 1, 0.8), (_strip(0, 10), 0, 0.7)],
    )
    cut = scene.evaluate(max_detections=2)
    assert cut.sink.metrics["recall_50"] == 0.0
    assert cut.sink.metrics["n_predictions"] == 3  # received, before the cut
    assert any("max_detections" in warning for warning in cut.sink.warnings)
    full = scene.evaluate(max_detections=3)
    assert full.sink.metrics["recall_50"] == 1.0
    assert not any("max_detections" in warning for warning in full.sink.warnings)


def test_max_detections_cut_inside_a_tie_keeps_the_earlier_prediction() -> None:
    truth = [(_strip(0, 10), 0)]
    hit, miss = (_strip(0, 10), 0, 0.5), (_strip(50, 60), 0, 0.5)
    assert (
        Scene().image(truth, [hit, miss]).evaluate(max_detections=1).sink.metrics["recall_50"]
        == 1.0
    )
    assert (
        Scene().image(truth, [miss, hit]).evaluate(max_detections=1).sink.metrics["recall_50"]
        == 0.0
    )


def test_max_detections_is_per_image() -> None:
    scene = Scene()
    for _ in range(3):
        scene.image([(_strip(0, 10), 0)], [(_strip(0, 10), 0, 0.9), (_strip(0, 10), 0, 0.8)])
    output = scene.evaluate(max_detections=1)
    assert output.sink.metrics["recall_50"] == 1.0
    assert "3 predictions in 3 images" in output.sink.warnings[0]


# Classes


def test_class_without_ground_truth_is_null_and_left_out_of_the_means() -> None:
    # Class 0: one hit. Class 1: ground truth, no predictions -> AP 0, in the means. Class 2:
    # predictions only -> null with a reason, out of the means, in the warnings.
    scene = Scene().image(
        [(_strip(0, 10), 0), (_strip(20, 30), 1)],
        [(_strip(0, 10), 0, 0.9), (_strip(40, 50), 2, 0.8)],
    )
    output = scene.evaluate()
    assert [row.class_name for row in output.per_class] == ["0", "1", "2"]
    for name in MEANS:
        assert output.sink.metrics[name] == 0.5
    assert _row(output, "1")["ap"] == 0.0
    assert _row(output, "1")["n_predictions"] == 0
    orphan = _row(output, "2")
    for name in ("ap", "ap_50", "ap_75", "ap_50_voc11", "ap_50_voc_all", "recall_50"):
        assert orphan[name] is None
        assert "no ground truth" in orphan["undefined"][name]
    assert (orphan["n_ground_truth"], orphan["n_predictions"]) == (0, 1)
    (warning,) = output.sink.warnings
    assert "'2' (1 predictions)" in warning
    _assert_matches_pycocotools(scene)


def test_named_classes_give_every_class_a_row() -> None:
    scene = Scene().image([(_strip(0, 10), 1)], [(_strip(0, 10), 1, 0.9)])
    output = scene.evaluate(classes=["cat", "dog", "bird"])
    assert [row.class_name for row in output.per_class] == ["cat", "dog", "bird"]
    assert _row(output, "dog")["ap"] == 1.0
    assert _row(output, "cat")["ap"] is None
    assert _row(output, "bird")["undefined"]["ap_50"].startswith("no ground truth")
    assert output.sink.metrics["map"] == 1.0
    assert output.sink.warnings == []  # no predictions of cat or bird: nothing to warn about


def test_no_ground_truth_anywhere_leaves_the_means_undefined() -> None:
    scene = Scene().image([], [(_strip(0, 10), 0, 0.9)]).image()
    output = scene.evaluate()
    for name in MEANS:
        assert output.sink.metrics[name] is None
        assert output.sink.undefined[name] == "no ground truth boxes in any image"
    assert output.sink.metrics["n_images"] == 2
    assert output.sink.metrics["n_ground_truth"] == 0
    assert output.sink.metrics["n_predictions"] == 1


def test_result_shape_catalog_and_conventions() -> None:
    output = _five_boxes_tp_fp_tp_fp_tp().evaluate()
    counts = {"n_images", "n_ground_truth", "n_predictions"}
    assert set(output.sink.metrics) == {*MEANS, *SUMMARY, *counts}
    # Strips of height 1 are small boxes: the medium and large ranges have no ground truth.
    undefined = {"map_medium", "map_large", "mar_medium", "mar_large"}
    assert set(output.sink.undefined) == undefined
    assert all(
        type(output.sink.metrics[name]) is float for name in output.sink.metrics.keys() - undefined
    )
    (row,) = [entry.to_dict() for entry in output.per_class]
    assert set(row) == ROW_KEYS
    assert set(row["undefined"]) == {"ap_medium", "ap_large", "ar_medium", "ar_large"}
    assert row["intervals"] == {}
    assert all(
        type(row[key]) is float
        for key in ROW_KEYS
        - {"class", "n_ground_truth", "n_predictions", "undefined", "intervals"}
        - set(row["undefined"])
    )
    assert output.conventions == CONVENTIONS
    catalogued = {entry.name for entry in CATALOG_ENTRIES}
    assert set(output.sink.metrics) <= catalogued
    assert all(isinstance(entry, MetricInfo) for entry in CATALOG_ENTRIES)
    assert all(entry.task == "detection" for entry in CATALOG_ENTRIES)
    for key in ("crowd_difficult", "area_ranges", "classes", "max_detections", "matching"):
        assert key in CONVENTIONS


def test_inputs_accept_lists_and_empty_images() -> None:
    targets = [{"boxes": [[0, 0, 10, 1]], "classes": [0]}, {"boxes": [], "classes": []}]
    predictions = [
        {"boxes": [[0, 0, 10, 1]], "classes": [0.0], "scores": [1]},
        {"boxes": [], "classes": [], "scores": []},
    ]
    output = compute_detection(targets, predictions, options=parse_options(None))
    assert output.sink.metrics["map"] == 1.0
    assert output.sink.metrics["n_images"] == 2


# The 15-image precision-recall example of detection write-ups


# The model's results on 15 images at two thresholds (0.6 and 0.5): score, truth.
FIFTEEN_SCORES = [0.86, 0.97, 0.99, 0.85, 0.78, 0.72, 0.74, 0.63, 0.58, 0.55,
                   0.48, 0.46, 0.32, 0.22, 0.19]  # fmt: skip
FIFTEEN_TRUTH = [1, 1, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0]


def _fifteen_photos(threshold: float | None = None, class_id: int = 0) -> Scene:
    """The 15 photos as 15 images: an electric bike (class 0) is a box where the truth is 1;
    the model puts one box of class 0 on every photo, exactly on the bike when there is one."""
    scene = Scene()
    for score, truth in zip(FIFTEEN_SCORES, FIFTEEN_TRUTH, strict=True):
        box = [8.0, 8.0, 64.0, 48.0]
        kept = threshold is None or score >= threshold
        scene.image([(box, class_id)] if truth else [], [(box, class_id, score)] if kept else [])
    return scene


@pytest.mark.parametrize(
    ("threshold", "recall", "precision"),
    [(0.6, 6 / 7, 0.75), (0.5, 1.0, 0.7)],
    ids=["T=0.6", "T=0.5"],
)
def test_fifteen_image_example_recall_and_precision_at_two_thresholds(
    threshold: float, recall: float, precision: float
) -> None:
    # The example: T=0.6: TP 6, FP 2, FN 1, R = 0.86, P = 0.75; T=0.5: TP 7, FP 3, R = 1, P = 0.7.
    metrics = _fifteen_photos(threshold).evaluate().sink.metrics
    assert metrics["recall_50"] == pytest.approx(recall, abs=1e-15)
    n_predictions, n_truth = metrics["n_predictions"], metrics["n_ground_truth"]
    assert n_predictions is not None and n_truth is not None
    assert round(recall, 2) == {0.6: 0.86, 0.5: 1.0}[threshold]
    assert recall * n_truth / n_predictions == pytest.approx(precision, abs=1e-15)


def test_fifteen_image_example_eleven_point_ap() -> None:
    # Ranked: 5 hits (.99 .97 .86 .85 .78), 2 misses (.74 .72), 2 hits (.63 .58), 6 misses.
    # Precision at the hits: 1, 1, 1, 1, 1, 6/8, 7/9; recall k/7. The highest precision at
    # recall >= r (the example's P_max at each recall level) is 1 for r <= 5/7 (r = 0 ... 0.7: 8
    # points) and 7/9 for r = .8, .9, 1: AP = (P_max1 + ... + P_max11) / 11 = (8 + 3 * 7/9) / 11.
    metrics = _fifteen_photos().evaluate().sink.metrics
    assert metrics["ap_50_voc11"] == pytest.approx((8 + 3 * 7 / 9) / 11, abs=1e-15)
    assert metrics["ap_50_voc11"] == pytest.approx(31 / 33, abs=1e-15)
    # The integral AP = ∫ p(r) dr over the envelope: (5 * 1 + 2 * 7/9) / 7.
    assert metrics["ap_50_voc_all"] == pytest.approx(59 / 63, abs=1e-15)
    # COCO: 72 recall points up to 0.71 read 1, the 29 from 0.72 to 1 read 7/9.
    assert metrics["map_50"] == pytest.approx((72 + 29 * 7 / 9) / 101, abs=1e-15)


def test_fifteen_image_example_map_is_the_mean_of_the_class_aps() -> None:
    # mAP = (AP_1 + ... + AP_n) / n: the 15 photos as class 0, and a perfectly found class 1.
    scene = _fifteen_photos()
    perfect = _fifteen_photos(class_id=1)
    scene.targets += perfect.targets
    scene.predictions += [
        {**prediction, "scores": np.array([float(truth)])}
        for prediction, truth in zip(perfect.predictions, FIFTEEN_TRUTH, strict=True)
    ]
    output = scene.evaluate(classes=["电动车", "摩托车"])
    assert _row(output, "摩托车")["ap_50_voc11"] == 1.0
    for name, per_class in (("ap_50_voc11", "ap_50_voc11"), ("map_50", "ap_50"), ("map", "ap")):
        aps = [row.to_dict()[per_class] for row in output.per_class]
        assert output.sink.metrics[name] == pytest.approx(sum(aps) / 2, abs=1e-15)
    assert output.sink.metrics["ap_50_voc11"] == pytest.approx((31 / 33 + 1) / 2, abs=1e-15)


# pycocotools as the oracle


def _coco_eval(scene: Scene, max_detections: int = 100) -> COCOeval:
    """pycocotools' bbox evaluation of a scene with maxDets [1, 10, max_detections] (its
    default at 100): images 1..n in order, category id = class + 1, annotation ids in input
    order (pycocotools needs ids > 0), the ground truth's area w * h."""
    n_classes = 1 + max(
        [int(c) for image in scene.targets + scene.predictions for c in image["classes"]],
        default=0,
    )
    annotations: list[dict[str, Any]] = []
    detections: list[dict[str, Any]] = []
    for index, (target, prediction) in enumerate(
        zip(scene.targets, scene.predictions, strict=True)
    ):
        for box, class_id in zip(target["boxes"], target["classes"], strict=True):
            x, y, width, height = _xywh(box)
            annotations.append(
                {"id": len(annotations) + 1, "image_id": index + 1,
                 "category_id": int(class_id) + 1, "bbox": [x, y, width, height],
                 "area": width * height, "iscrowd": 0}
            )  # fmt: skip
        for box, class_id, score in zip(
            prediction["boxes"], prediction["classes"], prediction["scores"], strict=True
        ):
            detections.append(
                {"image_id": index + 1, "category_id": int(class_id) + 1,
                 "bbox": list(_xywh(box)), "score": float(score)}
            )  # fmt: skip
    assert detections, "pycocotools' loadRes needs at least one detection"
    with contextlib.redirect_stdout(io.StringIO()):  # pycocotools prints its progress
        truth = COCO()
        dataset: dict[str, list[dict[str, Any]]] = {
            "images": [{"id": i + 1} for i in range(len(scene.targets))],
            "categories": [{"id": c + 1} for c in range(n_classes)],
            "annotations": annotations,
        }
        # types-pycocotools types `dataset` as a complete COCO file (image sizes and file names,
        # category names, segmentations); bbox evaluation reads only the ids, boxes and areas.
        truth.dataset = dataset  # type: ignore[assignment]
        truth.createIndex()
        evaluation = COCOeval(truth, truth.loadRes(detections), "bbox")
        evaluation.params.maxDets = [1, 10, max_detections]
        evaluation.evaluate()
        evaluation.accumulate()
        evaluation.summarize()
    return evaluation


def _xywh(box: Floats) -> tuple[float, float, float, float]:
    x1, y1, x2, y2 = (float(v) for v in box)
    return x1, y1, x2 - x1, y2 - y1


def _reference(
    scene: Scene,
) -> tuple[dict[str, float | None], dict[str, dict[str, float]], dict[str, Floats]]:
    """Means and per-class values as pycocotools computes them: precision [T, R, K, A, M] and
    recall [T, K, A, M] at area "all" and maxDets 100; -1 marks a class without ground truth."""
    evaluation = _coco_eval(scene)
    precision = evaluation.eval["precision"][:, :, :, 0, -1]
    recall = evaluation.eval["recall"][:, :, 0, -1]
    means: dict[str, float | None] = {}
    for name, stat in (("map", 0), ("map_50", 1), ("map_75", 2)):
        value = float(evaluation.stats[stat])
        means[name] = None if value == -1 else value
    at_50 = recall[0][recall[0] > -1]
    means["recall_50"] = float(at_50.mean()) if at_50.size else None
    per_class: dict[str, dict[str, float]] = {}
    curves: dict[str, Floats] = {}  # precision at the 101 recall points at IoU 0.50
    for k, category in enumerate(evaluation.params.catIds):
        if precision[0, 0, k] == -1:
            continue
        curves[str(category - 1)] = precision[0, :, k]
        per_class[str(category - 1)] = {
            "ap": float(precision[:, :, k].mean()),
            "ap_50": float(precision[0, :, k].mean()),
            "ap_75": float(precision[5, :, k].mean()),
            "recall_50": float(recall[0, k]),
        }
    return means, per_class, curves


def _assert_matches_pycocotools(scene: Scene, **options: Any) -> None:
    output = scene.evaluate(**options)
    means, per_class, curves = _reference(scene)
    for name, expected in means.items():
        got = output.sink.metrics[name]
        if expected is None:
            assert got is None, name
        else:
            assert got == pytest.approx(expected, abs=ABS), name
    defined = {
        row.class_name: row.metrics for row in output.per_class if row.metrics["n_ground_truth"]
    }
    assert set(defined) == set(per_class)
    for name, expected_row in per_class.items():
        for key, expected in expected_row.items():
            assert defined[name][key] == pytest.approx(expected, abs=ABS), (name, key)
    pr = output.curves.get("pr_iou50")
    if not curves:
        assert pr is None
        return
    assert pr is not None
    np.testing.assert_array_equal(pr["recall"], np.linspace(0, 1, 101))
    rows, points = (int(n) for n in pr["shape"])
    assert points == 101
    precision = pr["precision"].reshape(rows, points)
    named = [output.per_class[int(index)].class_name for index in pr["class_index"]]
    assert named == [row.class_name for row in output.per_class if row.metrics["n_ground_truth"]]
    assert set(named) == set(curves)
    for name, row in zip(named, precision, strict=True):
        np.testing.assert_allclose(row, curves[name], rtol=0, atol=ABS, err_msg=name)


def _random_scene(seed: int, *, n_images: int = 8, tie_step: float | None = None) -> Scene:
    """Clustered, overlapping ground truth of classes 0-3; jittered duplicate predictions,
    some of the wrong class; junk boxes; every third image without ground truth; class 3 never
    predicted and class 4 never in the ground truth. Coordinates are multiples of 1/8."""
    rng = np.random.default_rng(seed)
    scene = Scene()
    for index in range(n_images):
        truth: list[tuple[list[float], int]] = []
        predicted: list[tuple[list[float], int, float]] = []
        n_truth = 0 if index % 3 == 0 else int(rng.integers(1, 8))
        centre = rng.integers(0, 400, size=2)
        for _ in range(n_truth):
            x1, y1 = (centre + rng.integers(-40, 40, size=2)) / 8 + 8
            width, height = rng.integers(16, 240, size=2) / 8
            box = [float(x1), float(y1), float(x1 + width), float(y1 + height)]
            class_id = int(rng.integers(0, 4))
            truth.append((box, class_id))
            for _ in range(int(rng.integers(0, 4))):  # 0 to 3 guesses at this box
                shifted = np.array(box) + rng.integers(-24, 25, size=4) / 8
                shifted[2:] = np.maximum(shifted[2:], shifted[:2])
                guess = class_id if rng.random() < 0.85 else int(rng.integers(0, 5))
                if guess != 3:
                    predicted.append((shifted.tolist(), guess, float(rng.random())))
        for _ in range(int(rng.integers(0, 4))):  # junk
            x1, y1 = rng.integers(0, 600, size=2) / 8
            width, height = rng.integers(8, 240, size=2) / 8
            junk = [float(x1), float(y1), float(x1 + width), float(y1 + height)]
            predicted.append((junk, int(rng.choice([0, 1, 2, 4])), float(rng.random())))
        if tie_step is not None:
            predicted = [(box, c, round(s / tie_step) * tie_step) for box, c, s in predicted]
        scene.image(truth, predicted)
    return scene


@pytest.mark.parametrize("seed", range(12), ids=lambda seed: f"seed-{seed}")
def test_coco_metrics_match_pycocotools(seed: int) -> None:
    _assert_matches_pycocotools(_random_scene(seed))


@pytest.mark.parametrize("seed", range(12), ids=lambda seed: f"seed-{seed}")
def test_coco_metrics_match_pycocotools_with_tied_scores(seed: int) -> None:
    # Scores on a 0.1 grid: many ties, ranked in input order by both.
    _assert_matches_pycocotools(_random_scene(100 + seed, n_images=12, tie_step=0.1))


def test_coco_metrics_match_pycocotools_on_a_larger_scene() -> None:
    _assert_matches_pycocotools(_random_scene(7, n_images=150, tie_step=0.05))


def test_max_detections_matches_pycocotools_on_the_cut_predictions() -> None:
    # Ours keeps the top 3 of each image over all classes; pycocotools' maxDets counts per image
    # and class, so it is handed the cut list (top 3 by score, ties in input order) instead.
    scene = _random_scene(3, n_images=20)
    cut = Scene(targets=scene.targets)
    for prediction in scene.predictions:
        top = np.argsort(-prediction["scores"], kind="stable")[:3]
        keep = np.sort(top)
        cut.predictions.append({key: values[keep] for key, values in prediction.items()})
    assert sum(p["scores"].size for p in cut.predictions) < sum(
        p["scores"].size for p in scene.predictions
    )
    output = scene.evaluate(max_detections=3)
    expected = cut.evaluate()
    for name in MEANS:
        assert output.sink.metrics[name] == expected.sink.metrics[name]
    _assert_matches_pycocotools(cut)


def test_random_scenes_exercise_what_they_claim() -> None:
    scene = _random_scene(0)
    truth = np.concatenate([t["classes"] for t in scene.targets])
    predicted = np.concatenate([p["classes"] for p in scene.predictions])
    assert any(t["classes"].size == 0 for t in scene.targets)
    assert 3 in truth and 3 not in predicted
    assert 4 in predicted and 4 not in truth
    output = scene.evaluate()
    assert _row(output, "3")["ap"] == 0.0
    assert _row(output, "4")["ap"] is None
    assert any(0 < iou < 1 for iou in _all_ground_truth_overlaps(scene))


def _all_ground_truth_overlaps(scene: Scene) -> list[float]:
    overlaps: list[float] = []
    for target in scene.targets:
        iou = box_iou(target["boxes"], target["boxes"])
        overlaps += iou[np.triu_indices(len(iou), k=1)].tolist()
    return overlaps


# Validation


def _good() -> tuple[list[Image], list[Image]]:
    targets = [
        {"boxes": [[0, 0, 10, 10]], "classes": [0]},
        {"boxes": [[0, 0, 5, 5], [1, 1, 4, 4]], "classes": [1, 0]},
    ]
    predictions = [
        {"boxes": [[0, 0, 10, 10]], "classes": [0], "scores": [0.9]},
        {"boxes": [[0, 0, 5, 5]], "classes": [1], "scores": [0.8]},
    ]
    return targets, predictions


def _replace(which: str, image: int, key: str, value: Any) -> tuple[list[Image], list[Image]]:
    targets, predictions = _good()
    images = targets if which == "gt" else predictions
    if value is _DELETE:
        del images[image][key]
    else:
        images[image][key] = value
    return targets, predictions


_DELETE = object()
NAN = float("nan")

BAD_IMAGES = [
    pytest.param(_replace("pred", 1, "boxes", [[0, 0, 5]]), "images[1].pred_boxes", "shape",
                 id="box-of-three"),
    pytest.param(_replace("pred", 1, "boxes", [0, 0, 5, 5]), "images[1].pred_boxes", "shape",
                 id="flat-box"),
    pytest.param(_replace("pred", 1, "boxes", [[5, 0, 4, 5]]), "images[1].pred_boxes", "x2 >= x1",
                 id="x2-below-x1"),
    pytest.param(_replace("gt", 1, "boxes", [[0, 0, 5, 5], [1, 4, 4, 1]]), "images[1].gt_boxes",
                 "box 1", id="y2-below-y1"),
    pytest.param(_replace("gt", 0, "boxes", [[0, NAN, 5, 5]]), "images[0].gt_boxes", "finite",
                 id="nan-box"),
    pytest.param(_replace("pred", 0, "boxes", [["a", "b", "c", "d"]]), "images[0].pred_boxes",
                 "numbers", id="text-box"),
    pytest.param(_replace("pred", 0, "boxes", [[0, 0, 1, 1], [0, 0, 1]]), "images[0].pred_boxes",
                 "numbers", id="ragged-boxes"),
    pytest.param(_replace("gt", 1, "classes", [1]), "images[1].gt_classes", "expected 2 class ids",
                 id="too-few-classes"),
    pytest.param(_replace("gt", 0, "classes", [-1]), "images[0].gt_classes", ">= 0",
                 id="negative-class"),
    pytest.param(_replace("pred", 0, "classes", [0.5]), "images[0].pred_classes", "integer",
                 id="fractional-class"),
    pytest.param(_replace("pred", 0, "classes", [NAN]), "images[0].pred_classes", "integer",
                 id="nan-class"),
    pytest.param(_replace("pred", 0, "classes", [[0]]), "images[0].pred_classes", "1-d",
                 id="2d-classes"),
    pytest.param(_replace("pred", 1, "scores", [0.8, 0.7]), "images[1].pred_scores",
                 "expected 1 scores", id="too-many-scores"),
    pytest.param(_replace("pred", 1, "scores", [NAN]), "images[1].pred_scores", "finite",
                 id="nan-score"),
    pytest.param(_replace("pred", 0, "scores", _DELETE), "images[0].pred_scores", "required",
                 id="missing-scores"),
    pytest.param(_replace("gt", 1, "boxes", None), "images[1].gt_boxes", "required",
                 id="null-boxes"),
]  # fmt: skip


@pytest.mark.parametrize(("images", "field", "fragment"), BAD_IMAGES)
def test_bad_images_name_the_field(
    images: tuple[list[Image], list[Image]], field: str, fragment: str
) -> None:
    targets, predictions = images
    with pytest.raises(InvalidInputError) as error:
        compute_detection(targets, predictions, options=parse_options(None))
    assert error.value.field == field
    assert fragment in error.value.message


def test_class_ids_outside_the_named_classes() -> None:
    targets, predictions = _good()
    with pytest.raises(InvalidInputError) as error:
        compute_detection(targets, predictions, classes=["cat"], options=parse_options(None))
    assert error.value.field == "images[1].gt_classes"
    assert "[0, 0]" in error.value.message and "row 0 is 1" in error.value.message


@pytest.mark.parametrize(
    ("classes", "fragment"),
    [
        (["cat", "cat"], "distinct"),
        (["cat", ""], "non-empty"),
        ("cat", "list"),
        ([1, 2], "strings"),
    ],
    ids=["duplicate", "empty-name", "string", "numbers"],
)
def test_bad_class_names(classes: Any, fragment: str) -> None:
    targets, predictions = _good()
    with pytest.raises(InvalidInputError) as error:
        compute_detection(targets, predictions, classes=classes, options=parse_options(None))
    assert error.value.field == "classes"
    assert fragment in error.value.message


@pytest.mark.parametrize(
    ("targets", "predictions", "fragment"),
    [
        (_good()[0], _good()[1][:1], "2 images"),
        ([], [], "empty"),
        ({"boxes": []}, [], "list"),
        (None, [], "required"),
    ],
    ids=["different-counts", "no-images", "not-a-list", "missing"],
)
def test_bad_image_lists(targets: Any, predictions: Any, fragment: str) -> None:
    with pytest.raises(InvalidInputError) as error:
        compute_detection(targets, predictions, options=parse_options(None))
    assert error.value.field == "images"
    assert fragment in error.value.message


def test_an_image_that_is_not_an_object() -> None:
    targets, predictions = _good()
    with pytest.raises(InvalidInputError) as error:
        compute_detection(targets, [predictions[0], [[0, 0, 1, 1]]], options=parse_options(None))
    assert error.value.field == "images[1]"
    assert "pred_boxes" in error.value.message


# --- matching in blocks: memory flat in the boxes of an image, the result unchanged -----------


@pytest.mark.parametrize("block_cells", [1, 7, 64, 1 << 18])
@pytest.mark.parametrize("seed", range(4))
def test_matching_in_blocks_equals_matching_the_whole_matrix(block_cells: int, seed: int) -> None:
    """Blocks of one row, of a few rows and the whole matrix: the same COCO and VOC hits as the
    rules applied to the whole IoU matrix, on crowded boxes with tied IoUs."""
    rng = np.random.default_rng(seed)
    n_predictions, n_truth = int(rng.integers(1, 60)), int(rng.integers(0, 40))
    # A coarse grid makes equal IoUs (the tie rules) and boxes taken by several predictions.
    corners = rng.integers(0, 8, size=(n_predictions + n_truth, 2)).astype(float)
    sizes = rng.integers(1, 6, size=(n_predictions + n_truth, 2)).astype(float)
    boxes = np.hstack([corners, corners + sizes])
    predicted, truth = boxes[:n_predictions], boxes[n_predictions:]
    thresholds = np.linspace(0.5, 0.95, 10)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_matching, "BLOCK_CELLS", block_cells)
        coco, voc = _matching.match_boxes(predicted, truth, thresholds, 0.5)
    iou = box_iou(predicted, truth)
    np.testing.assert_array_equal(coco, _matching.coco_matches(iou, thresholds))
    np.testing.assert_array_equal(voc, _matching.voc_matches(iou, 0.5))
    if n_truth and seed == 0:
        assert coco.any() and not coco.all(), "the scene has hits and misses"


def test_pycocotools_agrees_when_every_block_is_one_prediction(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_matching, "BLOCK_CELLS", 1)
    _assert_matches_pycocotools(_random_scene(11, n_images=30, tie_step=0.1))
