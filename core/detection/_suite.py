"""Every detection metric of one request in two halves that the ``Accumulator`` shares:
``_inputs.scene`` (checked, flattened input) → ``_statistics.statistics_of`` (cut, matched and
ranked per class) → ``detection_output`` (the per-class APs and ARs and the macro means)."""

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
    AREA_NAMES,
    AT_50,
    AT_75,
    COCO_IOU_THRESHOLDS,
    DetectionStats,
    area_bits,
    statistics_of,
)

__all__ = ["COCO_IOU_THRESHOLDS", "compute_detection", "detection_output"]

Ints = NDArray[np.int64]
Floats = NDArray[np.float64]

NO_TRUTH = "no ground truth of this class (COCO leaves such classes out of the means)"
NO_TRUTH_ANYWHERE = "no ground truth boxes in any image"
NOT_KEPT = (
    "not in this state: it was written by an evalserve that kept no ranks or areas of the "
    "predictions (read or merged from an older state)"
)
MAX_NAMED_IN_WARNING = 10
# The per-class metrics of COCO's summary that need ``DetectionStats.areas``.
TOP_K = {"ar_1": 1, "ar_10": 10}
AREA_METRICS = tuple(
    (index, f"ap_{area}", f"ar_{area}") for index, area in enumerate(AREA_NAMES)
)  # fmt: skip


def _no_truth_in(area: str) -> str:
    return f"no ground truth of this class in the {area} area range (area {_BOUNDS[area]})"


def _no_truth_anywhere_in(area: str) -> str:
    return f"no ground truth boxes in the {area} area range (area {_BOUNDS[area]}) in any image"


_BOUNDS = dict(zip(AREA_NAMES, ("<= 32^2", "in [32^2, 96^2]", "in [96^2, 1e10]"), strict=True))


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
    _means(rows, sink, stats)
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
    metrics: dict[str, float | None] = {
        "ap": float(coco_ap.mean()),
        "ap_50": float(coco_ap[AT_50]),
        "ap_75": float(coco_ap[AT_75]),
        "ap_50_voc11": eleven_point,
        "ap_50_voc_all": all_point,
        "recall_50": float(coco_recall[AT_50]),
    }
    undefined = _coco_summary(stats, position, ranked, metrics)
    metrics["ar_100"] = float(coco_recall.mean())
    return _class_row(name, metrics, n_truth, n_received, undefined), precision[AT_50]


def _coco_summary(
    stats: DetectionStats, position: int, ranked: slice, metrics: dict[str, float | None]
) -> dict[str, str]:
    """Add the class's AR at 1 and 10 detections and its AP and AR in each area range to
    ``metrics`` (None where undefined), and return the reasons of those undefined."""
    undefined: dict[str, str] = {}
    areas = stats.areas
    if areas is None:
        for _, ap_name, ar_name in AREA_METRICS:
            metrics[ap_name] = metrics[ar_name] = None
            undefined[ap_name] = undefined[ar_name] = NOT_KEPT
        for name in TOP_K:
            metrics[name] = None
            undefined[name] = NOT_KEPT
        return undefined
    n_truth = int(stats.n_truth[position])
    hits, rank = stats.coco[:, ranked], areas.rank[ranked]
    for name, k in TOP_K.items():
        # pycocotools' maxDets k: the k highest-scoring kept predictions of each image and class.
        found = np.count_nonzero(hits & (rank < k)[None, :], axis=1)
        metrics[name] = float((found / n_truth).mean())
    flags = areas.flags[ranked]
    for index, ap_name, ar_name in AREA_METRICS:
        in_range = int(areas.n_truth[index, position])
        if in_range == 0:
            metrics[ap_name] = metrics[ar_name] = None
            undefined[ap_name] = undefined[ar_name] = _no_truth_in(AREA_NAMES[index])
            continue
        found_in_range, ignored = area_bits(flags, index)
        average, recall, _ = coco_precisions(found_in_range, in_range, ~ignored)
        metrics[ap_name] = float(average.mean())
        metrics[ar_name] = float(recall.mean())
    return undefined


def _class_row(
    name: str,
    metrics: dict[str, float | None] | None,
    n_truth: int,
    n_received: int,
    undefined: dict[str, str] | None = None,
) -> ClassRow:
    values: dict[str, float | None] = {}
    reasons: dict[str, str] = {}
    if metrics is None:
        for metric in CLASS_METRICS:
            values[metric] = None
            reasons[metric] = NO_TRUTH
    else:
        values.update({metric: metrics[metric] for metric in CLASS_METRICS})
        reasons.update(undefined or {})
    values.update(n_ground_truth=n_truth, n_predictions=n_received)  # counts: ints in the JSON
    return ClassRow(name, values, reasons)


def _count(row: ClassRow, name: str) -> int:
    """``n_ground_truth`` or ``n_predictions`` of a row (every row has both)."""
    return int(row.metrics[name] or 0)


def _means(rows: list[ClassRow], sink: MetricSink, stats: DetectionStats) -> None:
    """Macro means over the classes where the per-class metric is defined: those with ground
    truth (in the area range, for the area ranges' metrics)."""
    truth = any(_count(row, "n_ground_truth") > 0 for row in rows)
    for name, per_class in MEAN_METRICS.items():
        values = [value for row in rows if (value := row.metrics[per_class]) is not None]
        if values:
            sink.set(name, sum(values) / len(values))
        elif not truth:
            sink.undefine(name, NO_TRUTH_ANYWHERE)
        elif stats.areas is None:
            sink.undefine(name, NOT_KEPT)
        else:  # ground truth, but none in this area range
            sink.undefine(name, _no_truth_anywhere_in(per_class.split("_")[1]))


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
