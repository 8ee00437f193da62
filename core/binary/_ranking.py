"""ROC curve, ROC AUC, partial AUC, KS and the optimal thresholds.

Naming contract (as scikit-learn's ``_ranking.py``): ``*_auc``, ``*_statistic`` and every
``optimal_*`` are higher-is-better quantities or the thresholds that maximise them.

Ties: tied scores form one threshold, so the ROC curve takes one diagonal step through them
(Fawcett 2006, "An introduction to ROC analysis", seed 002); the area under that curve equals the
Mann-Whitney statistic with averaged ranks (seed 000), which is how it is computed here.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from core.binary._ranked import Ranked

__all__ = ["ks", "optimal_thresholds", "partial_roc_auc", "roc_auc", "roc_curve"]

Floats = NDArray[np.float64]


def roc_auc(ranked: Ranked) -> float:
    """P(score of a random positive > that of a random negative) + half P(tie).

    Each negative counts every positive strictly above it, and half of those tied with it. The
    caller makes sure both classes are present.
    """
    above = ranked.tps - ranked.pos
    pairs = float(np.dot(ranked.neg, above)) + 0.5 * float(np.dot(ranked.neg, ranked.pos))
    return pairs / (ranked.positives * ranked.negatives)


def roc_curve(ranked: Ranked) -> tuple[Floats, Floats, Floats]:
    """(fpr, tpr, thresholds), starting at (0, 0) with threshold +inf, one point per distinct
    score (scikit-learn's ``roc_curve(..., drop_intermediate=False)``)."""
    fpr = np.concatenate(([0.0], ranked.fps / ranked.negatives))
    tpr = np.concatenate(([0.0], ranked.tps / ranked.positives))
    thresholds = np.concatenate(([np.inf], ranked.thresholds))
    return fpr, tpr, thresholds


def partial_roc_auc(fpr: Floats, tpr: Floats, max_fpr: float) -> float:
    """McClish-standardized area of the ROC curve over FPR in [0, max_fpr].

    As scikit-learn: the curve is cut at max_fpr with a linearly interpolated point, and the
    area A is mapped to 0.5 * (1 + (A - m^2/2) / (m - m^2/2)), so 0.5 is chance and 1 perfect.
    """
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


def ks(ranked: Ranked) -> tuple[float, float]:
    """Kolmogorov-Smirnov statistic max |TPR - FPR| (the largest vertical gap between the ROC
    curve and the diagonal, seed 001) and the highest threshold where it is reached.

    Equal to the two-sample KS statistic of the positive and negative score distributions
    (``scipy.stats.ks_2samp``).
    """
    gap = np.abs(ranked.tps / ranked.positives - ranked.fps / ranked.negatives)
    best = int(np.argmax(gap))
    return float(gap[best]), float(ranked.thresholds[best])


def optimal_thresholds(ranked: Ranked) -> tuple[float, float]:
    """(Youden-optimal threshold, F1-optimal threshold); the highest one on ties.

    Youden's J = TPR - FPR; F1 = 2 TP / (TP + FP + P). Both can only peak at a threshold that
    adds positives, and all distinct scores are tried.
    """
    youden = ranked.tps / ranked.positives - ranked.fps / ranked.negatives
    f1 = 2 * ranked.tps / (ranked.tps + ranked.fps + ranked.positives)
    thresholds = ranked.thresholds
    return float(thresholds[int(np.argmax(youden))]), float(thresholds[int(np.argmax(f1))])
