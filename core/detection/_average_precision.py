"""Average precision of one class from its ranked true/false positives.

The ranking is every kept prediction of the class over all images, by score, highest first.
Tied scores are not grouped (as VOC and COCO): they stay in input order, image by image, and
each prediction is its own point on the curve. Precision after n predictions is TP_n / n and
recall is TP_n / G, G the ground truth boxes of the class.

* COCO (pycocotools ``COCOeval.accumulate``): precision is made monotone from the right (the
  envelope), then read at the 101 recall points ``np.linspace(0, 1, 101)``: at each point r the
  envelope at the first prediction whose recall is >= r (recall compared in floating point as
  pycocotools does), 0 where recall never reaches r; AP is their mean.
* VOC 2007 11-point: the mean over r = 0, 0.1, ..., 1 of the highest precision at recall >= r
  (0 where recall never reaches r). Recall is compared exactly (10 TP >= i G), as the binary
  task's ``ap_11_point``; some write-ups say "R > r", but with ">" the point r = 1 could never
  be met, so the devkit's ">=" is used (Everingham et al. 2010).
* VOC 2010+ all-point: the area under the envelope, sum over true positives of envelope / G.

In a COCO area range some predictions are ignored (``counted`` false): they neither count nor
cost, and stay in the ranking as points that repeat the point before them (precision 0 before
the first counted prediction), as pycocotools keeps them; the envelope and the 101 points are
then read as above, which is the same as leaving them out.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "COCO_RECALL_POINTS",
    "coco_average_precision",
    "coco_precisions",
    "voc_average_precision",
]

Floats = NDArray[np.float64]
Bools = NDArray[np.bool_]

# pycocotools Params.recThrs; linspace, not arange, whose points drift above the true values.
COCO_RECALL_POINTS = np.linspace(0.0, 1.0, 101)


def coco_average_precision(hits: Bools, n_truth: int) -> tuple[Floats, Floats]:
    """(AP, recall) at each IoU threshold. ``hits``: (n_thresholds, n_predictions) true
    positives in ranking order; ``n_truth`` > 0. Recall is that of all the predictions."""
    average, recall, _ = coco_precisions(hits, n_truth)
    return average, recall


def coco_precisions(
    hits: Bools, n_truth: int, counted: Bools | None = None
) -> tuple[Floats, Floats, Floats]:
    """(AP, recall, precision) at each IoU threshold: ``precision`` (n_thresholds, 101) is the
    interpolated precision at each of the 101 recall points, 0 where the recall is not
    reached (pycocotools' ``precision[t, :, k, area, maxDets]``); AP is its mean. ``counted``
    (n_thresholds, n_predictions): the predictions not ignored (all when None); ``hits`` are
    among them."""
    n_thresholds, n_predictions = hits.shape
    precision = np.zeros((n_thresholds, COCO_RECALL_POINTS.size))
    if n_predictions == 0:
        return np.zeros(n_thresholds), np.zeros(n_thresholds), precision
    tps = np.cumsum(hits, axis=1, dtype=np.float64)
    recall = tps / n_truth
    if counted is None:
        ranks = np.arange(1, n_predictions + 1, dtype=np.float64)
        points = tps / ranks
    else:
        ranks = np.cumsum(counted, axis=1, dtype=np.float64)
        points = np.divide(tps, ranks, out=np.zeros_like(tps), where=ranks > 0)
    envelope = np.maximum.accumulate(points[:, ::-1], axis=1)[:, ::-1]
    average = np.empty(n_thresholds)
    for row in range(n_thresholds):
        first = np.searchsorted(recall[row], COCO_RECALL_POINTS, side="left")
        reached = first < n_predictions
        values = envelope[row, first[reached]]
        precision[row, : values.size] = values  # the reached points are the lowest recalls
        average[row] = values.sum() / COCO_RECALL_POINTS.size
    return average, recall[:, -1].copy(), precision


def voc_average_precision(hits: Bools, n_truth: int) -> tuple[float, float]:
    """(11-point AP, all-point AP). ``hits``: (n_predictions,) true positives in ranking order;
    ``n_truth`` > 0."""
    tp_rank = np.flatnonzero(hits).astype(np.float64) + 1  # rank of the k-th true positive
    if tp_rank.size == 0:
        return 0.0, 0.0
    tps = np.arange(1, tp_rank.size + 1, dtype=np.float64)
    # Between true positives recall stands still and precision only falls: the envelope is
    # reached at true positives, so they are the only points needed.
    envelope = np.maximum.accumulate((tps / tp_rank)[::-1])[::-1]
    first = np.searchsorted(10 * tps, np.arange(11) * float(n_truth), side="left")
    eleven_point = float(envelope[first[first < tps.size]].sum()) / 11
    all_point = float(envelope.sum()) / n_truth
    return eleven_point, all_point
