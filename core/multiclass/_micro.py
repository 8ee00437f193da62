"""Micro averages of the ranking metrics: the flattened one-vs-rest problem.

Flattening the n x k one-hot labels and scores (scikit-learn's ``plot_roc`` example:
``label_binarize``, then ``roc_curve(y.ravel(), s.ravel())``) gives n positives, the true-class
scores T, and n (k - 1) negatives, every
other score. ``_ranking`` counts the negatives by where they sit among the distinct values of
T: strictly between T[p-1] and T[p] (``gap[p]``), or equal to T[p] (``tie[p]``). That is
enough for both metrics, with T's own weights ``mass``:

* ROC AUC = sum_p mass[p] (negatives below T[p] + half those equal) / (P N), the
  Mann-Whitney form with ties counting half (the rank formula of the AUC), as scikit-learn's
  ``roc_auc_score``;
* average precision = sum_p (mass[p] / P) TP_p / (TP_p + FP_p), TP_p and FP_p the weights
  scored >= T[p]: scikit-learn's step-wise AP, whose thresholds that add positives are
  exactly the values of T.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from evalserve.core._inner import inner
from evalserve.core._result import MetricSink
from evalserve.core.multiclass._ranking import Micro

__all__ = ["micro_metrics"]

Floats = NDArray[np.float64]


def micro_metrics(sink: MetricSink, micro: Micro) -> None:
    """``roc_auc_ovr_micro`` and ``average_precision_micro`` of the flattened problem:
    ``mass[p]`` the weight of the rows whose true-class score is T[p]; ``gap``: n_T + 1
    negative weights (``gap[n_T]`` lies above T); ``tie``: n_T negative weights."""
    mass, gap, tie, counts = micro.mass, micro.gap, micro.tie, micro.counts
    positives = float(mass.sum())
    negatives = float(gap.sum()) + float(tie.sum())
    # The flattened problem has both classes: n positives, n (k - 1) negatives, k >= 2. Its
    # float arrays (one entry per distinct true-class score) are reused in place: two, not six.
    below = _running_sum(gap[:-1], counts, np.empty(tie.size))
    tied_below = _running_sum(tie, counts, np.empty(tie.size))
    below += tied_below
    below -= tie  # negatives strictly below T[p]
    ranked_right = inner(mass, below) + 0.5 * inner(mass, tie)
    sink.set("roc_auc_ovr_micro", ranked_right / (positives * negatives))
    # The weight of positives >= T[p], summed from the top (into the buffer of tied_below).
    true_positives = _running_sum(mass[::-1], counts, tied_below[::-1])[::-1]
    false_positives = np.subtract(negatives, below, out=below)
    positive = mass
    if not mass.all():  # true-class scores of rows of weight zero only: no threshold there
        scored = np.flatnonzero(mass)
        true_positives, false_positives = true_positives[scored], false_positives[scored]
        positive = mass[scored]
    precision = np.add(true_positives, false_positives, out=false_positives)
    np.divide(true_positives, precision, out=precision)
    sink.set("average_precision_micro", inner(positive, precision) / positives)


def _running_sum(values: Floats, counts: bool, out: Floats) -> Floats:
    """``np.cumsum(values, out=out)``. Counts are summed as int64: every partial sum is an
    integer below 2**53, exact either way, and an integer running sum is several times faster
    than a float one (whose additions wait on each other)."""
    if not counts:
        return np.cumsum(values, out=out)
    whole = values.astype(np.int64)
    np.cumsum(whole, out=whole)
    np.copyto(out, whole)
    return out
