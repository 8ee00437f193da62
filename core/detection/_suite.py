"""Every detection metric of one request: ``_format`` (checked, flattened input) → ``_match``
(per image and class) → ``_per_class`` (ranked over images) → the macro means."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalserve.core._options import Options
from evalserve.core._result import MetricSink, TaskOutput
from evalserve.core.detection._average_precision import (
    coco_average_precision,
    voc_average_precision,
)
from evalserve.core.detection._catalog import CLASS_METRICS, CONVENTIONS, MEAN_METRICS
from evalserve.core.detection._inputs import Boxes, Scene, class_names, scene
from evalserve.core.detection._iou import box_iou
from evalserve.core.detection._matching import coco_matches, voc_matches

__all__ = ["COCO_IOU_THRESHOLDS", "compute_detection"]

Floats = NDArray[np.float64]
Bools = NDArray[np.bool_]
Ints = NDArray[np.int64]

# pycocotools Params.iouThrs: 0.50:0.05:0.95; index 0 is 0.5 and index 5 is 0.75 exactly.
COCO_IOU_THRESHOLDS = np.linspace(0.5, 0.95, 10)
AT_50, AT_75 = 0, 5
VOC_IOU_THRESHOLD = 0.5

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
    sink = MetricSink()
    sink.set("n_images", checked.n_images)
    sink.set("n_ground_truth", checked.ground_truth.size)
    sink.set("n_predictions", checked.predictions.size)
    kept = _keep_top(checked.predictions, options.max_detections, sink)
    matched = _match(checked.ground_truth, kept)
    ids = _class_ids(checked, names)
    received = checked.predictions.classes
    rows = [
        _per_class(class_id, names, checked.ground_truth, kept, matched, received)
        for class_id in ids
    ]
    _means(rows, sink)
    _warn_no_truth(rows, sink)
    return TaskOutput(sink=sink, per_class=rows, conventions=dict(CONVENTIONS))


@dataclass(frozen=True, slots=True, eq=False)
class _Matched:
    """True positives of each kept prediction: COCO at each IoU threshold, VOC at 0.5."""

    coco: Bools  # (n_thresholds, n_kept)
    voc: Bools  # (n_kept,)


def _keep_top(predictions: Boxes, max_detections: int, sink: MetricSink) -> Boxes:
    """The ``max_detections`` highest-scoring predictions of each image, over all classes
    (ties: the earlier in input order)."""
    scores = predictions.scores
    assert scores is not None
    order = np.lexsort((-scores, predictions.image))  # stable: input order within ties
    image = predictions.image[order]
    starts = np.searchsorted(image, image, side="left")
    keep = np.zeros(predictions.size, dtype=np.bool_)
    keep[order] = np.arange(predictions.size) - starts < max_detections
    dropped = int(predictions.size - keep.sum())
    if dropped == 0:
        return predictions
    n_images = np.unique(predictions.image[~keep]).size
    sink.warn(
        f"{dropped} predictions in {n_images} images were left out: only the "
        f"{max_detections} highest-scoring predictions of each image count "
        "(options.max_detections)"
    )
    return Boxes(
        predictions.boxes[keep], predictions.classes[keep], predictions.image[keep], scores[keep]
    )


def _match(ground_truth: Boxes, predictions: Boxes) -> _Matched:
    """Match each image's predictions of each class to its ground truth of that class."""
    scores = predictions.scores
    assert scores is not None
    coco = np.zeros((COCO_IOU_THRESHOLDS.size, predictions.size), dtype=np.bool_)
    voc = np.zeros(predictions.size, dtype=np.bool_)
    truth_groups = _groups(ground_truth.image, ground_truth.classes)
    # Within an (image, class) group: by score, highest first, ties in input order.
    order = np.lexsort((-scores, predictions.classes, predictions.image))
    keys = np.stack([predictions.image[order], predictions.classes[order]], axis=1)
    bounds = np.flatnonzero(np.any(np.diff(keys, axis=0) != 0, axis=1)) + 1
    for group in np.split(order, bounds):
        if group.size == 0:
            continue
        key = (int(predictions.image[group[0]]), int(predictions.classes[group[0]]))
        truth = truth_groups.get(key)
        if truth is None:
            continue  # no ground truth of this class in this image: all false positives
        iou = box_iou(predictions.boxes[group], ground_truth.boxes[truth])
        coco[:, group] = coco_matches(iou, COCO_IOU_THRESHOLDS)
        voc[group] = voc_matches(iou, VOC_IOU_THRESHOLD)
    return _Matched(coco, voc)


def _groups(image: Ints, classes: Ints) -> dict[tuple[int, int], Ints]:
    """Row indices of each (image, class), in input order."""
    order = np.lexsort((classes, image))
    keys = np.stack([image[order], classes[order]], axis=1)
    bounds = np.flatnonzero(np.any(np.diff(keys, axis=0) != 0, axis=1)) + 1
    return {
        (int(image[rows[0]]), int(classes[rows[0]])): rows
        for rows in np.split(order, bounds)
        if rows.size
    }


def _class_ids(checked: Scene, names: Sequence[str] | None) -> list[int]:
    """Every named class; without names, every id seen in ground truth or predictions."""
    if names is not None:
        return list(range(len(names)))
    seen = np.union1d(checked.ground_truth.classes, checked.predictions.classes)
    return [int(class_id) for class_id in seen]


def _per_class(
    class_id: int,
    names: Sequence[str] | None,
    ground_truth: Boxes,
    predictions: Boxes,
    matched: _Matched,
    received: Ints,
) -> dict[str, Any]:
    """One class's row; ``received``: the class of every prediction, kept or not."""
    scores = predictions.scores
    assert scores is not None
    n_truth = int(np.count_nonzero(ground_truth.classes == class_id))
    mine = np.flatnonzero(predictions.classes == class_id)
    # Over all images by score; ties keep input order: image by image, then within the image.
    ranked = mine[np.argsort(-scores[mine], kind="stable")]
    row: dict[str, Any] = {"class": str(class_id) if names is None else names[class_id]}
    undefined: dict[str, str] = {}
    if n_truth == 0:
        for name in CLASS_METRICS:
            row[name] = None
            undefined[name] = NO_TRUTH
    else:
        coco_ap, coco_recall = coco_average_precision(matched.coco[:, ranked], n_truth)
        eleven_point, all_point = voc_average_precision(matched.voc[ranked], n_truth)
        row.update(
            ap=float(coco_ap.mean()),
            ap_50=float(coco_ap[AT_50]),
            ap_75=float(coco_ap[AT_75]),
            ap_50_voc11=eleven_point,
            ap_50_voc_all=all_point,
            recall_50=float(coco_recall[AT_50]),
        )
    row.update(n_ground_truth=n_truth, n_predictions=int(np.count_nonzero(received == class_id)))
    row["undefined"] = undefined
    row["intervals"] = {}
    return row


def _means(rows: list[dict[str, Any]], sink: MetricSink) -> None:
    """Macro means over the classes that have ground truth."""
    defined = [row for row in rows if row["n_ground_truth"] > 0]
    for name, per_class in MEAN_METRICS.items():
        if not defined:
            sink.undefine(name, NO_TRUTH_ANYWHERE)
        else:
            sink.set(name, sum(row[per_class] for row in defined) / len(defined))


def _warn_no_truth(rows: list[dict[str, Any]], sink: MetricSink) -> None:
    predicted = [row for row in rows if row["n_ground_truth"] == 0 and row["n_predictions"]]
    if not predicted:
        return
    listed = ", ".join(
        f"{row['class']!r} ({row['n_predictions']} predictions)"
        for row in predicted[:MAX_NAMED_IN_WARNING]
    )
    more = len(predicted) - MAX_NAMED_IN_WARNING
    sink.warn(
        f"{len(predicted)} classes have predictions but no ground truth: their AP is null and "
        f"they are left out of the means (as COCO): {listed}"
        + (f" and {more} more" if more > 0 else "")
    )
