"""Greedy matching of one image's predictions of one class to its ground truth.

Predictions arrive sorted by score, highest first (ties in input order); each takes at most one
ground truth box and each ground truth box is taken at most once. An IoU equal to the threshold
is a hit, as pycocotools compares (``>=``) and as detection write-ups state the rule ("IoU >=
0.5 counts as found"); the VOC paper's "must exceed 50%" and the Python VOC devkit use ">", which
differs only at an IoU of exactly the threshold.

Two rules, each as its reference implements it:

* COCO (pycocotools ``COCOeval.evaluateImg``): a prediction takes the ground truth of highest
  IoU among those not yet taken, if that IoU reaches the threshold. On equal IoU the later
  ground truth in input order wins (pycocotools replaces its best candidate on ``>=``).
* VOC (devkit ``VOCevaldet``, ``voc_eval.py``): a prediction looks only at the ground truth of
  highest IoU (the first in input order on equal IoU); if it is already taken, the prediction
  is a false positive even when another box would still have matched.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["coco_matches", "voc_matches"]

Floats = NDArray[np.float64]
Bools = NDArray[np.bool_]


def coco_matches(iou: Floats, thresholds: Floats) -> Bools:
    """(len(thresholds), n_predictions): whether each prediction is a true positive at each
    IoU threshold. ``iou``: (n_predictions, n_ground_truth), predictions in ranking order."""
    n_thresholds = thresholds.size
    n_predictions, n_truth = iou.shape
    hits = np.zeros((n_thresholds, n_predictions), dtype=np.bool_)
    if n_truth == 0:
        return hits
    taken = np.zeros((n_thresholds, n_truth), dtype=np.bool_)
    rows = np.arange(n_thresholds)
    # A prediction below the lowest threshold with every box matches nothing at any threshold.
    for index in np.flatnonzero(iou.max(axis=1) >= thresholds.min()):
        overlaps = iou[index]
        free = ~taken & (overlaps[None, :] >= thresholds[:, None])
        candidate = np.where(free, overlaps[None, :], -1.0)
        best = n_truth - 1 - np.argmax(candidate[:, ::-1], axis=1)  # the last of equal maxima
        hit = free[rows, best]
        hits[hit, index] = True
        taken[rows[hit], best[hit]] = True
    return hits


def voc_matches(iou: Floats, threshold: float) -> Bools:
    """(n_predictions,): true positives under the VOC rule at one IoU threshold."""
    n_predictions, n_truth = iou.shape
    hits = np.zeros(n_predictions, dtype=np.bool_)
    if n_truth == 0:
        return hits
    best = np.argmax(iou, axis=1)  # the first of equal maxima
    claims = np.flatnonzero(iou[np.arange(n_predictions), best] >= threshold)
    # The first (highest-ranked) claim on a box takes it; later claims are false positives.
    _, first = np.unique(best[claims], return_index=True)
    hits[claims[first]] = True
    return hits
