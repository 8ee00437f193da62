"""Greedy matching of one image's predictions of one class to its ground truth.

Predictions arrive sorted by score, highest first (ties in input order); each takes at most one
ground truth box and each ground truth box is taken at most once. An IoU equal to the threshold
is a hit, as pycocotools compares (``>=``) and as detection write-ups state the rule ("IoU >=
0.5 counts as found"); the VOC paper's "must exceed 50%" and the Python VOC devkit use ">", which
differs only at an IoU of exactly the threshold.

The IoU of a group is computed a block of predictions at a time (``assign_boxes``), at most
``BLOCK_CELLS`` values each, so memory stays flat however many boxes an image has: both rules
take the predictions one by one in ranking order, and a prediction's IoU row does not depend on
the block it is computed in, so the result is the same as from the whole matrix.

Two rules, each as its reference implements it:

* COCO (pycocotools ``COCOeval.evaluateImg``): a prediction takes the ground truth of highest
  IoU among those not yet taken, if that IoU reaches the threshold. On equal IoU the later
  ground truth in input order wins (pycocotools replaces its best candidate on ``>=``).
* VOC (devkit ``VOCevaldet``, ``voc_eval.py``): a prediction looks only at the ground truth of
  highest IoU (the first in input order on equal IoU); if it is already taken, the prediction
  is a false positive even when another box would still have matched.

COCO's area ranges (small, medium, large) match again with some ground truth ignored, those
outside the range: a prediction takes the free box of highest IoU among those inside the range,
and only when none reaches the threshold the one of highest IoU among those outside it
(pycocotools sorts the ignored boxes last and stops at them once it holds a match). Such a
matching is one more set of rows with a ``preferred`` mask (``coco_assignments``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from evalserve.core.detection._iou import box_iou

__all__ = [
    "BLOCK_CELLS",
    "assign_boxes",
    "coco_assignments",
    "coco_matches",
    "match_boxes",
    "voc_matches",
]

Floats = NDArray[np.float64]
Bools = NDArray[np.bool_]
Ints = NDArray[np.intp]

BLOCK_CELLS = 1 << 18  # IoU values computed at once: 2 MiB, a few times that in temporaries


def match_boxes(
    predicted: Floats, truth: Floats, thresholds: Floats, voc_threshold: float
) -> tuple[Bools, Bools]:
    """COCO hits (len(thresholds), n_predictions) and VOC hits (n_predictions,) of one
    group's predictions (in ranking order) against its ground truth, the IoU computed in
    blocks of rows: the same as ``coco_matches`` and ``voc_matches`` of the whole matrix."""
    assigned, _, voc = assign_boxes(predicted, truth, thresholds, voc_threshold)
    return assigned >= 0, voc


def assign_boxes(
    predicted: Floats,
    truth: Floats,
    thresholds: Floats,
    voc_threshold: float,
    preferred: Bools | None = None,
) -> tuple[Ints, dict[int, Ints], Bools]:
    """The ground truth box each of one group's predictions (in ranking order) takes under the
    COCO rule at each threshold, -1 for none (len(thresholds), n_predictions); the same with
    the boxes outside each row of ``preferred`` (p, n_truth) ignored (``coco_assignments``),
    by row, for the rows where that changes a choice; and the VOC hits (n_predictions,). The
    IoU is computed in blocks of rows.

    Preferring some boxes changes nothing unless a prediction reaches (IoU >= the lowest
    threshold) boxes both preferred and not: every choice is then among boxes of one kind. A
    group of one block skips those rows; a larger one matches them all."""
    n_predictions, n_truth = len(predicted), len(truth)
    n_thresholds = thresholds.size
    if n_truth == 0:
        assigned = np.full((n_thresholds, n_predictions), -1, dtype=np.intp)
        return assigned, {}, np.zeros(n_predictions, dtype=np.bool_)
    rows = max(1, BLOCK_CELLS // n_truth)
    whole = box_iou(predicted, truth) if n_predictions <= rows else None
    sets = np.zeros(0, dtype=np.intp)
    if preferred is not None and len(preferred):
        sets = np.arange(len(preferred))
        if whole is not None:
            reach = (whole >= thresholds.min()).astype(np.int64)
            inside = reach @ preferred.T.astype(np.int64)
            sets = np.flatnonzero(((inside > 0) & (inside < reach.sum(axis=1)[:, None])).any(0))
    rows_thresholds, rows_preferred = thresholds, None
    if sets.size:
        assert preferred is not None
        rows_thresholds = np.tile(thresholds, 1 + sets.size)
        every = np.ones((n_thresholds, n_truth), dtype=np.bool_)
        rows_preferred = np.concatenate([every, np.repeat(preferred[sets], n_thresholds, axis=0)])
    if whole is not None:  # one block: the usual case
        every_row = coco_assignments(whole, rows_thresholds, preferred=rows_preferred)
        best = np.argmax(whole, axis=1)
        best_iou = whole[np.arange(n_predictions), best]
    else:
        every_row = np.empty((rows_thresholds.size, n_predictions), dtype=np.intp)
        taken = np.zeros((rows_thresholds.size, n_truth), dtype=np.bool_)
        best = np.empty(n_predictions, dtype=np.intp)
        best_iou = np.empty(n_predictions, dtype=np.float64)
        for start in range(0, n_predictions, rows):
            stop = min(start + rows, n_predictions)
            iou = box_iou(predicted[start:stop], truth)
            every_row[:, start:stop] = coco_assignments(
                iou, rows_thresholds, taken=taken, preferred=rows_preferred
            )
            best[start:stop] = np.argmax(iou, axis=1)
            best_iou[start:stop] = iou[np.arange(stop - start), best[start:stop]]
    by_set = {
        int(index): every_row[(1 + at) * n_thresholds : (2 + at) * n_thresholds]
        for at, index in enumerate(sets.tolist())
    }
    return every_row[:n_thresholds], by_set, _voc_hits(best, best_iou, voc_threshold)


def coco_matches(iou: Floats, thresholds: Floats, *, taken: Bools | None = None) -> Bools:
    """(len(thresholds), n_predictions): whether each prediction is a true positive at each
    IoU threshold. ``iou``: (n_predictions, n_ground_truth), predictions in ranking order.
    ``taken`` (len(thresholds), n_ground_truth): boxes earlier predictions took, updated in
    place (to match a group's predictions a block of rows at a time)."""
    return coco_assignments(iou, thresholds, taken=taken) >= 0


def coco_assignments(
    iou: Floats,
    thresholds: Floats,
    *,
    taken: Bools | None = None,
    preferred: Bools | None = None,
) -> Ints:
    """(len(thresholds), n_predictions): the ground truth box (column of ``iou``) each
    prediction takes at each row's IoU threshold, -1 for none. ``iou``: (n_predictions,
    n_ground_truth), predictions in ranking order. ``taken`` (rows, n_ground_truth): boxes
    earlier predictions took, updated in place. ``preferred`` (rows, n_ground_truth): the boxes
    a prediction takes first at each row; the others only when no preferred box is free and
    reaches the threshold (pycocotools' ignored ground truth)."""
    n_thresholds = thresholds.size
    n_predictions, n_truth = iou.shape
    assigned = np.full((n_thresholds, n_predictions), -1, dtype=np.intp)
    if n_truth == 0:
        return assigned
    if taken is None:
        taken = np.zeros((n_thresholds, n_truth), dtype=np.bool_)
    rows = np.arange(n_thresholds)
    # A prediction below the lowest threshold with every box matches nothing at any threshold.
    lowest = thresholds.min()
    for index in np.flatnonzero(iou.max(axis=1) >= lowest):
        # Only the boxes that reach the lowest threshold can be taken at any threshold: the
        # work per prediction grows with its overlapping boxes, not with the image's boxes.
        columns = np.flatnonzero(iou[index] >= lowest)
        overlaps = iou[index, columns]
        free = ~taken[:, columns] & (overlaps[None, :] >= thresholds[:, None])
        if preferred is not None:
            first = free & preferred[:, columns]
            free = np.where(first.any(axis=1)[:, None], first, free)
        candidate = np.where(free, overlaps[None, :], -1.0)
        # The last of equal maxima (columns keep the input order).
        best = columns.size - 1 - np.argmax(candidate[:, ::-1], axis=1)
        hit = free[rows, best]
        chosen = columns[best[hit]]
        assigned[hit, index] = chosen
        taken[rows[hit], chosen] = True
    return assigned


def voc_matches(iou: Floats, threshold: float) -> Bools:
    """(n_predictions,): true positives under the VOC rule at one IoU threshold."""
    n_predictions, n_truth = iou.shape
    hits = np.zeros(n_predictions, dtype=np.bool_)
    if n_truth == 0:
        return hits
    best = np.argmax(iou, axis=1)  # the first of equal maxima
    return _voc_hits(best, iou[np.arange(n_predictions), best], threshold)


def _voc_hits(best: Ints, best_iou: Floats, threshold: float) -> Bools:
    """VOC hits from each prediction's best ground truth and its IoU."""
    hits = np.zeros(best.size, dtype=np.bool_)
    claims = np.flatnonzero(best_iou >= threshold)
    # The first (highest-ranked) claim on a box takes it; later claims are false positives.
    _, first = np.unique(best[claims], return_index=True)
    hits[claims[first]] = True
    return hits
