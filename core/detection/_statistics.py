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

For COCO's average recall at 1 and 10 detections and its area ranges the statistic also keeps,
per kept prediction, its rank among the kept predictions of its image and class, and what it is
in each area range at each IoU threshold (a true positive, ignored, or else a false positive),
with the ground truth boxes of each class in each range (``AreaStats``). Statistics read from a
state written before these existed have none (``areas`` is None), nor has a merge with one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from evalserve.core.detection._inputs import Boxes, Scene
from evalserve.core.detection._iou import box_area
from evalserve.core.detection._matching import assign_boxes

__all__ = [
    "AREA_BITS",
    "AREA_NAMES",
    "AREA_RANGES",
    "AT_50",
    "AT_75",
    "COCO_IOU_THRESHOLDS",
    "AreaStats",
    "DetectionStats",
    "area_bits",
    "statistics_of",
]

Floats = NDArray[np.float64]
Bools = NDArray[np.bool_]
Ints = NDArray[np.int64]

# pycocotools Params.iouThrs: 0.50:0.05:0.95; index 0 is 0.5 and index 5 is 0.75 exactly.
COCO_IOU_THRESHOLDS = np.linspace(0.5, 0.95, 10)
AT_50, AT_75 = 0, 5
VOC_IOU_THRESHOLD = 0.5
# pycocotools Params.areaRng (small, medium, large): a box belongs to a range when
# low <= area <= high, so an area of exactly 32^2 or 96^2 is in two ranges.
AREA_NAMES = ("small", "medium", "large")
AREA_RANGES = ((0.0, 32.0**2), (32.0**2, 96.0**2), (96.0**2, 1e5**2))
# Bits of ``AreaStats.flags`` per area range: a true positive at each COCO IoU threshold, then
# ignored at each; range r's bits start at r * AREA_BITS.
AREA_BITS = 2 * COCO_IOU_THRESHOLDS.size


@dataclass(frozen=True, slots=True, eq=False)
class AreaStats:
    """What COCO's AR at 1 and 10 detections and its area ranges need besides
    ``DetectionStats``, aligned with its kept predictions (same order).

    ``n_truth`` (3, k): ground truth boxes of each class in each area range. ``rank`` (n,): the
    place of each kept prediction among the kept predictions of its image and class, by score
    (0 = highest; ties in input order). ``flags`` (n,): for area range r and IoU threshold t,
    bit ``r * AREA_BITS + t`` says the prediction is a true positive there (matched to a box
    inside the range) and bit ``r * AREA_BITS + 10 + t`` that it is ignored (matched to a box
    outside the range, or unmatched and itself outside it); neither: a false positive."""

    n_truth: Ints  # (len(AREA_RANGES), k)
    rank: Ints  # (n,)
    flags: Ints  # (n,)


def area_bits(flags: Ints, area: int) -> tuple[Bools, Bools]:
    """(true positive, ignored), each (len(COCO_IOU_THRESHOLDS), n), in area range ``area``."""
    n_thresholds = COCO_IOU_THRESHOLDS.size
    bits = np.empty((2 * n_thresholds, flags.size), dtype=np.bool_)
    for bit in range(2 * n_thresholds):
        np.not_equal((flags >> (area * AREA_BITS + bit)) & 1, 0, out=bits[bit])
    return bits[:n_thresholds], bits[n_thresholds:]


def _in_ranges(boxes: Floats) -> Bools:
    """(len(AREA_RANGES), n): whether each box's area lies in each range (bounds included)."""
    area = box_area(boxes)
    return np.stack([(low <= area) & (area <= high) for low, high in AREA_RANGES])


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
    areas: AreaStats | None  # None: read from a state that did not keep them

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
        areas = None
        if self.areas is not None and later.areas is not None:
            n_truth = np.zeros((len(AREA_RANGES), class_ids.size), dtype=np.int64)
            n_truth[:, first] += self.areas.n_truth
            n_truth[:, second] += later.areas.n_truth
            areas = AreaStats(
                n_truth=n_truth,
                rank=np.concatenate([self.areas.rank, later.areas.rank])[order],
                flags=np.concatenate([self.areas.flags, later.areas.flags])[order],
            )
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
            areas=areas,
        )


def statistics_of(checked: Scene, max_detections: int) -> DetectionStats:
    """Cut, match and rank the predictions of checked images."""
    ground_truth, received = checked.ground_truth, checked.predictions
    kept, n_dropped, n_images_cut = _keep_top(received, max_detections)
    coco, voc, rank, flags = _match(ground_truth, kept)
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
        areas=AreaStats(
            n_truth=np.stack(
                [
                    _counts(class_ids, ground_truth.classes[inside])
                    for inside in _in_ranges(ground_truth.boxes)
                ]
            ).reshape(len(AREA_RANGES), class_ids.size),
            rank=rank[order],
            flags=flags[order],
        ),
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


def _match(ground_truth: Boxes, predictions: Boxes) -> tuple[Bools, Bools, Ints, Ints]:
    """Match each image's predictions of each class to its ground truth of that class: true
    positives of each prediction, COCO (n_thresholds, n) and VOC (n,); its rank in its image
    and class; its ``AreaStats.flags``."""
    scores = predictions.scores
    assert scores is not None
    # The ground truth box each prediction takes at each threshold (area "all"), -1 for none.
    index_type = np.int32 if ground_truth.size < 2**31 else np.int64
    assigned = np.full((COCO_IOU_THRESHOLDS.size, predictions.size), -1, dtype=index_type)
    voc = np.zeros(predictions.size, dtype=np.bool_)
    truth_inside = _in_ranges(ground_truth.boxes)
    # Groups whose ground truth lies partly inside an area range match again for that range.
    redone: list[list[tuple[Ints, NDArray[np.integer]]]] = [[] for _ in AREA_RANGES]
    truth_groups = _groups(ground_truth.image, ground_truth.classes, truth_inside)
    # Within an (image, class) group: by score, highest first, ties in input order.
    order = np.lexsort((-scores, predictions.classes, predictions.image))
    keys = np.stack([predictions.image[order], predictions.classes[order]], axis=1)
    bounds = np.flatnonzero(np.any(np.diff(keys, axis=0) != 0, axis=1)) + 1
    for group in np.split(order, bounds):
        if group.size == 0:
            continue
        key = (int(predictions.image[group[0]]), int(predictions.classes[group[0]]))
        found = truth_groups.get(key)
        if found is None:
            continue  # no ground truth of this class in this image: all false positives
        truth, mixed = found
        rows, again, voc[group] = assign_boxes(
            predictions.boxes[group], ground_truth.boxes[truth], COCO_IOU_THRESHOLDS,
            VOC_IOU_THRESHOLD, truth_inside[mixed][:, truth] if mixed else None,
        )  # fmt: skip
        assigned[:, group] = np.where(rows >= 0, truth[rows], -1)
        for at, in_range in again.items():
            redone[mixed[at]].append((group, np.where(in_range >= 0, truth[in_range], -1)))
    rank = np.empty(predictions.size, dtype=np.int64)
    starts = np.concatenate([np.zeros(1, dtype=np.int64), bounds])
    sizes = np.diff(np.concatenate([starts, [predictions.size]]))
    rank[order] = np.arange(predictions.size) - np.repeat(starts, sizes)
    flags = _area_flags(assigned, redone, truth_inside, _in_ranges(predictions.boxes))
    return assigned >= 0, voc, rank, flags


def _area_flags(
    assigned: NDArray[np.integer],
    redone: list[list[tuple[Ints, NDArray[np.integer]]]],
    truth_inside: Bools,
    inside: Bools,
) -> Ints:
    """``AreaStats.flags`` of each prediction from the ground truth it takes at each threshold
    (``assigned``, area "all"), that of the groups matched again for a range (``redone``) and
    whether each ground truth box and each prediction lies inside each range."""
    flags = np.zeros(assigned.shape[1], dtype=np.int64)
    n_thresholds = assigned.shape[0]
    for area, groups in enumerate(redone):
        if groups:
            columns = np.concatenate([group for group, _ in groups])
            values = np.concatenate([taken for _, taken in groups], axis=1)
        # One threshold at a time: the temporaries are one row long.
        for bit in range(n_thresholds):
            row = assigned[bit]
            if groups:
                row = row.copy()
                row[columns] = values[bit]
            matched = row >= 0
            hit = matched.copy()  # a match implies some ground truth: the index below exists
            if hit.any():
                hit &= truth_inside[area][np.where(matched, row, 0)]
            ignored = (matched & ~hit) | (~matched & ~inside[area])
            flags |= hit.astype(np.int64) << (area * AREA_BITS + bit)
            flags |= ignored.astype(np.int64) << (area * AREA_BITS + n_thresholds + bit)
    return flags


def _groups(
    image: Ints, classes: Ints, inside: Bools
) -> dict[tuple[int, int], tuple[Ints, list[int]]]:
    """Row indices of each (image, class), in input order, and the area ranges its boxes lie
    partly inside (``inside``: each box in each range): those that match again."""
    order = np.lexsort((classes, image))
    keys = np.stack([image[order], classes[order]], axis=1)
    bounds = np.flatnonzero(np.any(np.diff(keys, axis=0) != 0, axis=1)) + 1
    if order.size == 0:
        return {}
    starts = np.concatenate([np.zeros(1, dtype=np.intp), bounds])
    counts = np.add.reduceat(inside[:, order].astype(np.int64), starts, axis=1)
    sizes = np.diff(np.concatenate([starts, [order.size]]))
    partly = (counts > 0) & (counts < sizes[None, :])
    # Each group's ranges as a code (bit r: range r), then as one of a few shared lists.
    codes = (partly.astype(np.int64) << np.arange(len(inside))[:, None]).sum(axis=0)
    lists = [[r for r in range(len(inside)) if code >> r & 1] for code in range(1 << len(inside))]
    return {
        (int(image[rows[0]]), int(classes[rows[0]])): (rows, lists[code])
        for rows, code in zip(np.split(order, bounds), codes.tolist(), strict=True)
    }
