"""ROC AUC, partial AUC, KS and the optimal thresholds.

Naming contract (as scikit-learn's ``_ranking.py``): ``*_auc`` and ``*_statistic`` are
higher-is-better; ``*_threshold`` values are the thresholds where a maximum is reached.

Ties: tied scores form one threshold, so the ROC curve takes one diagonal step through them
(Fawcett 2006, "An introduction to ROC analysis", Pattern Recognition Letters 27(8)); the area
under that curve equals the Mann-Whitney statistic with averaged ranks (the rank formula of the
AUC, as in Zhou, "Machine Learning", 2016, ch. 2), which is how it is computed here.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from evalserve.core.binary._ranked import Hits, Ranked

__all__ = [
    "auc_pairs",
    "f1_optimal_threshold",
    "first_max",
    "ks_and_youden",
    "partial_roc_auc",
    "roc_auc",
]

# Values within this relative distance of the maximum count as tied with it: rounding must not
# decide between thresholds that are tied in exact arithmetic.
TIE_TOLERANCE = 1e-12

Floats = NDArray[np.float64]


def roc_auc(ranked: Ranked, hit: Hits) -> float:
    """P(score of a random positive > that of a random negative) + half P(tie).

    Each negative counts every positive strictly above it, and half of those tied with it. The
    caller makes sure both classes are present.
    """
    return auc_pairs(ranked.negatives, hit) / (ranked.positives * ranked.negatives)


def auc_pairs(negatives: float, hit: Hits) -> float:
    """Positive-negative pairs ranked right, ties counting half: each positive beats the
    negatives strictly below its threshold (N - FP) and ties with those at it."""
    below = negatives - hit.fps
    return float(np.dot(hit.pos, below)) + 0.5 * float(np.dot(hit.pos, hit.neg))


def partial_roc_auc(ranked: Ranked, max_fpr: float) -> float:
    """McClish-standardized area of the ROC curve over FPR in [0, max_fpr].

    As scikit-learn: the curve is cut at max_fpr with a linearly interpolated point, and the
    area A is mapped to 0.5 * (1 + (A - m^2/2) / (m - m^2/2)), so 0.5 is chance and 1 is
    perfect. Only the prefix of the curve up to the first point past max_fpr is built.
    """
    # The first threshold whose FPR exceeds max_fpr (the last one when max_fpr = 1).
    past = min(
        int(np.searchsorted(ranked.fps, max_fpr * ranked.negatives, side="right")),
        ranked.size - 1,
    )
    fpr = np.concatenate(([0.0], ranked.fps[: past + 1] / ranked.negatives))
    tpr = np.concatenate(([0.0], ranked.tps[: past + 1] / ranked.positives))
    if max_fpr == 1:
        return float(np.trapezoid(tpr, fpr))
    stop = int(np.searchsorted(fpr, max_fpr, side="right"))
    x_interp = (fpr[stop - 1], fpr[stop])
    y_interp = (tpr[stop - 1], tpr[stop])
    cut_tpr = np.append(tpr[:stop], np.interp(max_fpr, x_interp, y_interp))
    cut_fpr = np.append(fpr[:stop], max_fpr)
    area = float(np.trapezoid(cut_tpr, cut_fpr))
    min_area = 0.5 * max_fpr**2
    return 0.5 * (1 + (area - min_area) / (max_fpr - min_area))


def first_max(values: Floats) -> int:
    """Index of the first value that ties with the maximum (within ``TIE_TOLERANCE``): with
    thresholds in descending order, ties go to the highest threshold."""
    best = float(values.max())
    return int(np.argmax(values >= best - TIE_TOLERANCE * abs(best)))


def ks_and_youden(ranked: Ranked, hit: Hits) -> tuple[float, float, float]:
    """(KS statistic, its threshold, Youden-optimal threshold).

    KS is max |TPR - FPR| (the largest vertical distance between the ROC curve and the
    diagonal), equal to the two-sample KS statistic of the class-wise scores
    (``scipy.stats.ks_2samp``); Youden's J = TPR - FPR is maximized without the absolute value.
    TPR - FPR rises only at hits and falls only along runs of negatives, so its maximum is at a
    hit and its minimum at the end of such a run: just before a hit, or the last threshold.
    Only those candidates are evaluated, as TP N - FP P: exact for counts below
    2^53 / max(P, N), so ties in exact arithmetic stay ties.
    """
    positives, negatives = ranked.positives, ranked.negatives
    # Hit indices ascend strictly, so (i0 - 1, i0, i1 - 1, i1, ..., last) is already sorted:
    # interleave instead of sorting, then drop -1 and repeats (i - 1 equal to the previous hit).
    candidates = np.empty(2 * hit.index.size + 1, dtype=np.int64)
    np.subtract(hit.index, 1, out=candidates[0:-1:2])
    candidates[1::2] = hit.index
    candidates[-1] = ranked.size - 1
    keep = np.empty(candidates.size, dtype=np.bool_)
    keep[0] = candidates[0] >= 0
    np.greater(candidates[1:], candidates[:-1], out=keep[1:])
    candidates = candidates[keep]
    gap = ranked.tps[candidates] * negatives - ranked.fps[candidates] * positives
    distance = np.abs(gap)
    return (
        float(distance.max()) / (positives * negatives),
        float(ranked.thresholds[candidates[first_max(distance)]]),
        float(ranked.thresholds[candidates[first_max(gap)]]),
    )


def f1_optimal_threshold(positives: float, hit: Hits) -> float:
    """Threshold maximizing F1 = 2 TP / (TP + FP + P). Adding negatives only lowers F1, so the
    maximum is at a threshold that adds positives; the highest one on ties."""
    f1 = hit.tps / (hit.tps + hit.fps + positives)
    return float(hit.thresholds[first_max(f1)])
