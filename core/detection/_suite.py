"""Every detection metric of one request in two halves that the ``Accumulator`` shares:
``_inputs.scene`` (checked, flattened input) → ``_statistics.statistics_of`` (cut, matched and
ranked per class) → ``detection_output`` (the per-class APs and the macro means)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalserve.core._options import Options
from evalserve.core._result import MetricSink, TaskOutput
from evalserve.core._result_parts import ClassRow
from evalserve.core.detection._average_precision import (
    COCO_RECALL_POINTS,
    coco_precisions,
    voc_average_precision,
)
from evalserve.core.detection._catalog import CLASS_METRICS, CONVENTIONS, MEAN_METRICS
from evalserve.core.detection._inputs import class_names, scene
from evalserve.core.detection._statistics import (
    AT_50,
    AT_75,
    COCO_IOU_THRESHOLDS,
    DetectionStats,
    statistics_of,
)

__all__ = ["COCO_IOU_THRESHOLDS", "compute_detection", "detection_output"]

Ints = NDArray[np.int64]
Floats = NDArray[np.float64]

NO_TRUTH = "no ground truth of this class (COCO leaves such classes out of the means)"
NO_TRUTH_ANYWHERE = "no ground truth boxes in any image"
MAX_NAMED_IN_WARNING = 10


def compute_detection(
    targets: Any, predictions: Any, *, classes: Any = None, options: Options
) -> TaskOutput:
    """COCO and VOC metrics of object detection; see ``core.detection`` for the conventions.

    ``targets``: one mapping per image, ``{"boxes": (m, 4), "classes": (m,)}``;
    ``predictions``: the same length, ``{"boxes": (p, 4), "classes": (p,), "scores": (p,)}``.
    Raises ``InvalidInputError`` naming the field (``images[3].pred_boxes``) on bad input.
    """
    names = class_names(classes)
    checked = scene(targets, predictions, None if names is None else len(names))
    stats = statistics_of(checked, options.max_detections)
    return detection_output(stats, names, options.max_detections)


def detection_output(
    stats: DetectionStats, names: Sequence[str] | None, max_detections: int
) -> TaskOutput:
    """Every metric of the images ``stats`` holds, cut at ``max_detections`` per image.
    ``names``: the class names, whose ids ``stats`` was checked against; without them each
    class seen has a row, named by its id."""
    sink = MetricSink()
    sink.set("n_images", stats.n_images)
    sink.set("n_ground_truth", int(stats.n_truth.sum()))
    sink.set("n_predictions", int(stats.n_received.sum()))
    if stats.n_dropped:
        sink.warn(
            f"{stats.n_dropped} predictions in {stats.n_images_cut} images were left out: only "
            f"the {max_detections} highest-scoring predictions of each image count "
            "(options.max_detections)"
        )
    offsets = stats.offsets()
    ids = stats.class_ids.tolist() if names is None else range(len(names))
    positions = np.searchsorted(stats.class_ids, ids)
    rows: list[ClassRow] = []
    curves: list[tuple[int, Floats]] = []  # (row, precision at IoU 0.50) of classes with truth
    for class_id, position in zip(ids, positions.tolist(), strict=True):
        name = str(class_id) if names is None else names[class_id]
        if position < stats.class_ids.size and stats.class_ids[position] == class_id:
            row, precision = _per_class(name, stats, position, offsets)
            if precision is not None:
                curves.append((len(rows), precision))
            rows.append(row)
        else:  # named, but neither in the ground truth nor in the predictions
            rows.append(_class_row(name, None, 0, 0))
    _means(rows, sink)
    _warn_no_truth(rows, sink)
    output = TaskOutput(sink=sink, per_class=rows, conventions=dict(CONVENTIONS))
    if curves:
        output.curves["pr_iou50"] = {
            "recall": COCO_RECALL_POINTS.copy(),
            "precision": np.concatenate([precision for _, precision in curves]),
            "shape": np.array([len(curves), COCO_RECALL_POINTS.size], dtype=np.float64),
            "class_index": np.array([index for index, _ in curves], dtype=np.float64),
        }
    return output


def _per_class(
    name: str, stats: DetectionStats, position: int, offsets: Ints
) -> tuple[ClassRow, Floats | None]:
    """The row of the class at ``position`` of ``stats.class_ids``, and its interpolated
    precision at the 101 recall points at IoU 0.50 (None without ground truth)."""
    n_truth = int(stats.n_truth[position])
    n_received = int(stats.n_received[position])
    if n_truth == 0:
        return _class_row(name, None, n_truth, n_received), None
    ranked = slice(int(offsets[position]), int(offsets[position + 1]))
    coco_ap, coco_recall, precision = coco_precisions(stats.coco[:, ranked], n_truth)
    eleven_point, all_point = voc_average_precision(stats.voc[ranked], n_truth)
    metrics = {
        "ap": float(coco_ap.mean()),
        "ap_50": float(coco_ap[AT_50]),
        "ap_75": float(coco_ap[AT_75]),
        "ap_50_voc11": eleven_point,
        "ap_50_voc_all": all_point,
        "recall_50": float(coco_recall[AT_50]),
    }
    return _class_row(name, metrics, n_truth, n_received), precision[AT_50]


def _class_row(
    name: str, metrics: dict[str, float] | None, n_truth: int, n_received: int
) -> ClassRow:
    values: dict[str, float | None] = {}
    undefined: dict[str, str] = {}
    if metrics is None:
        for metric in CLASS_METRICS:
            values[metric] = None
            undefined[metric] = NO_TRUTH
    else:
        values.update(metrics)
    values.update(n_ground_truth=n_truth, n_predictions=n_received)  # counts: ints in the JSON
    return ClassRow(name, values, undefined)


def _count(row: ClassRow, name: str) -> int:
    """``n_ground_truth`` or ``n_predictions`` of a row (every row has both)."""
    return int(row.metrics[name] or 0)


def _means(rows: list[ClassRow], sink: MetricSink) -> None:
    """Macro means over the classes that have ground truth."""
    defined = [row for row in rows if _count(row, "n_ground_truth") > 0]
    for name, per_class in MEAN_METRICS.items():
        if not defined:
            sink.undefine(name, NO_TRUTH_ANYWHERE)
        else:
            # A class with ground truth has every metric: none of them is None.
            total = sum(row.metrics[per_class] or 0.0 for row in defined)
            sink.set(name, total / len(defined))


def _warn_no_truth(rows: list[ClassRow], sink: MetricSink) -> None:
    predicted = [
        row for row in rows if _count(row, "n_ground_truth") == 0 and _count(row, "n_predictions")
    ]
    if not predicted:
        return
    listed = ", ".join(
        f"{row.class_name!r} ({_count(row, 'n_predictions')} predictions)"
        for row in predicted[:MAX_NAMED_IN_WARNING]
    )
    more = len(predicted) - MAX_NAMED_IN_WARNING
    sink.warn(
        f"{len(predicted)} classes have predictions but no ground truth: their AP is null and "
        f"they are left out of the means (as COCO): {listed}"
        + (f" and {more} more" if more > 0 else "")
    )
