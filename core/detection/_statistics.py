"""Images → the statistic every detection metric is read from, and how two statistics merge.

Matching is per image and class, and the ``options.max_detections`` cut is per image, so once a
batch of images is matched only its kept predictions matter: per class, their scores in ranking
order and whether each is a true positive (at each COCO IoU threshold, and under the VOC rule),
with the class's ground truth and received prediction counts. No box is kept.

Ranking order is score, highest first, ties in image order and then in input order within the
image (as pycocotools' stable sort over its images). The statistic of a later set of images
therefore merges in by a stable merge with the earlier one's entries first on tied scores:
``first.merge(second)`` is exactly the statistic of ``first``'s images followed by ``second``'s.
The merge is associative; it is commutative only when no score of a class ties across the two.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from evalserve.core.detection._inputs import Boxes, Scene
from evalserve.core.detection._matching import match_boxes

__all__ = ["AT_50", "AT_75", "COCO_IOU_THRESHOLDS", "DetectionStats", "statistics_of"]

Floats = NDArray[np.float64]
Bools = NDArray[np.bool_]
Ints = NDArray[np.int64]

# pycocotools Params.iouThrs: 0.50:0.05:0.95; index 0 is 0.5 and index 5 is 0.75 exactly.
COCO_IOU_THRESHOLDS = np.linspace(0.5, 0.95, 10)
AT_50, AT_75 = 0, 5
VOC_IOU_THRESHOLD = 0.5


@dataclass(frozen=True, slots=True, eq=False)
class DetectionStats:
    """The matched predictions of a sequence of images, grouped by class.

    ``class_ids`` (ascending) are the classes seen in the ground truth or the received
    predictions; per class its ground truth boxes, received predictions (before the cut) and
    kept predictions. The kept predictions are grouped by class in ``class_ids`` order, each
    group in ranking order: ``scores``, ``coco`` (true positive at each COCO IoU threshold) and
    ``voc`` (true positive under the VOC rule at 0.5)."""

    n_images: int
    n_dropped: int  # predictions left out by the max_detections cut
    n_images_cut: int  # images that lost predictions to the cut
    class_ids: Ints  # (k,)
    n_truth: Ints  # (k,)
    n_received: Ints  # (k,)
    n_kept: Ints  # (k,)
    scores: Floats  # (n,)
    coco: Bools  # (len(COCO_IOU_THRESHOLDS), n)
    voc: Bools  # (n,)

    @property
    def n_detections(self) -> int:
        return int(self.scores.size)

    def offsets(self) -> Ints:
        """Where each class's kept predictions start, and the end of the last: (k + 1,)."""
        return np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(self.n_kept)])

    def merge(self, later: DetectionStats) -> DetectionStats:
        """The statistic of this one's images followed by ``later``'s."""
        class_ids = np.union1d(self.class_ids, later.class_ids)
        first = np.searchsorted(class_ids, self.class_ids)
        second = np.searchsorted(class_ids, later.class_ids)
        counts = []
        for name in ("n_truth", "n_received", "n_kept"):
            total = np.zeros(class_ids.size, dtype=np.int64)
            total[first] += getattr(self, name)
            total[second] += getattr(later, name)
            counts.append(total)
        owner = np.concatenate([np.repeat(first, self.n_kept), np.repeat(second, later.n_kept)])
        scores = np.concatenate([self.scores, later.scores])
        # Stable: on a tied score within a class this one's entries stay ahead of later's.
        order = np.lexsort((-scores, owner))
        return DetectionStats(
            n_images=self.n_images + later.n_images,
            n_dropped=self.n_dropped + later.n_dropped,
            n_images_cut=self.n_images_cut + later.n_images_cut,
            class_ids=class_ids,
            n_truth=counts[0],
            n_received=counts[1],
            n_kept=counts[2],
            scores=scores[order],
            coco=np.concatenate([self.coco, later.coco], axis=1)[:, order],
            voc=np.concatenate([self.voc, later.voc])[order],
        )


def statistics_of(checked: Scene, max_detections: int) -> DetectionStats:
    """Cut, match and rank the predictions of checked images."""
    ground_truth, received = checked.ground_truth, checked.predictions
    kept, n_dropped, n_images_cut = _keep_top(received, max_detections)
    coco, voc = _match(ground_truth, kept)
    class_ids = np.union1d(ground_truth.classes, received.classes).astype(np.int64)
    scores = kept.scores
    assert scores is not None
    # By class, then score, highest first; ties keep input order: image by image, then within
    # the image (lexsort is stable).
    order = np.lexsort((-scores, kept.classes))
    return DetectionStats(
        n_images=checked.n_images,
        n_dropped=n_dropped,
        n_images_cut=n_images_cut,
        class_ids=class_ids,
        n_truth=_counts(class_ids, ground_truth.classes),
        n_received=_counts(class_ids, received.classes),
        n_kept=_counts(class_ids, kept.classes),
        scores=scores[order],
        coco=coco[:, order],
        voc=voc[order],
    )


def _counts(class_ids: Ints, classes: Ints) -> Ints:
    """How many of ``classes`` are each of ``class_ids`` (which hold every value of it)."""
    return np.bincount(np.searchsorted(class_ids, classes), minlength=class_ids.size).astype(
        np.int64
    )


def _keep_top(predictions: Boxes, max_detections: int) -> tuple[Boxes, int, int]:
    """The ``max_detections`` highest-scoring predictions of each image, over all classes
    (ties: the earlier in input order), the number left out and the images they were in."""
    scores = predictions.scores
    assert scores is not None
    order = np.lexsort((-scores, predictions.image))  # stable: input order within ties
    image = predictions.image[order]
    starts = np.searchsorted(image, image, side="left")
    keep = np.zeros(predictions.size, dtype=np.bool_)
    keep[order] = np.arange(predictions.size) - starts < max_detections
    dropped = int(predictions.size - keep.sum())
    if dropped == 0:
        return predictions, 0, 0
    n_images = int(np.unique(predictions.image[~keep]).size)
    kept = Boxes(
        predictions.boxes[keep], predictions.classes[keep], predictions.image[keep], scores[keep]
    )
    return kept, dropped, n_images


def _match(ground_truth: Boxes, predictions: Boxes) -> tuple[Bools, Bools]:
    """Match each image's predictions of each class to its ground truth of that class: true
    positives of each prediction, COCO (n_thresholds, n) and VOC (n,)."""
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
        coco[:, group], voc[group] = match_boxes(
            predictions.boxes[group], ground_truth.boxes[truth], COCO_IOU_THRESHOLDS,
            VOC_IOU_THRESHOLD,
        )  # fmt: skip
    return coco, voc


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
