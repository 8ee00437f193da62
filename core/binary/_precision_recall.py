"""Precision-recall: the curve, four areas under it that must not be confused, the break-even
point and head precision/recall.

* ``average_precision``: step-wise AP = sum_n (R_n - R_{n-1}) P_n (scikit-learn).
* ``pr_auc_trapezoid``: trapezoids under the PR curve that starts at (R=0, P=1) and stops at the
  first threshold reaching full recall (scikit-learn's ``auc(recall, precision)``).
* ``ap_11_point``: VOC 2007, mean over r = 0, 0.1, ..., 1 of the highest precision at recall >= r
  (0 where recall never reaches r). Seed 003 writes "R > r"; with ">" the point r = 1 could never
  be met, so the standard ">=" of the VOC code is used.
* ``ap_all_point``: VOC 2010+, the area under the monotone envelope p(r) = max precision at
  recall >= r.

Ties: all rows at one score enter the ranking together (one point on the curve). For ``@k`` cuts
that fall inside a tie group, the group is counted at its expected value under a random order
of the tied rows: the fraction of the group above the cut times its positive mass.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from core.binary._ranked import Ranked

__all__ = [
    "average_precision",
    "head_counts",
    "interpolated_aps",
    "pr_auc_trapezoid",
    "pr_curve",
    "precision_series",
]

Floats = NDArray[np.float64]


def precision_series(ranked: Ranked) -> Floats:
    """Precision at every distinct threshold (never 0/0: every threshold holds some mass)."""
    return ranked.tps / (ranked.tps + ranked.fps)


def average_precision(ranked: Ranked, precision: Floats) -> float:
    """Step-wise AP: each threshold's recall gain times its precision."""
    return float(np.dot(ranked.pos, precision)) / ranked.positives


def interpolated_aps(ranked: Ranked, precision: Floats) -> tuple[float, float]:
    """(VOC 11-point AP, all-point AP) from the precision envelope."""
    envelope = np.maximum.accumulate(precision[::-1])[::-1]  # max precision at recall >= here
    positives = ranked.positives
    # recall >= i/10  <=>  10 * TP >= i * P, compared exactly rather than in rounded fractions
    first = np.searchsorted(10 * ranked.tps, np.arange(11) * positives, side="left")
    reached = first < ranked.size
    eleven = float(envelope[first[reached]].sum()) / 11
    all_point = float(np.dot(ranked.pos, envelope)) / positives
    return eleven, all_point


def pr_curve(ranked: Ranked, precision: Floats) -> tuple[Floats, Floats, Floats]:
    """(precision, recall, thresholds) from (R=0, P=1, +inf) down to the first full recall."""
    last = int(np.searchsorted(ranked.tps, ranked.positives, side="left"))
    stop = min(last + 1, ranked.size)
    return (
        np.concatenate(([1.0], precision[:stop])),
        np.concatenate(([0.0], ranked.tps[:stop] / ranked.positives)),
        np.concatenate(([np.inf], ranked.thresholds[:stop])),
    )


def pr_auc_trapezoid(recall: Floats, precision: Floats) -> float:
    return float(np.trapezoid(precision, recall))


def head_counts(ranked: Ranked, k: float) -> float:
    """Expected positive mass among the top ``k`` units of mass (ties at the cut pro rata)."""
    mass = ranked.tps + ranked.fps
    cut = int(np.searchsorted(mass, k, side="left"))
    if cut >= ranked.size:
        return ranked.positives
    above_mass = float(mass[cut - 1]) if cut else 0.0
    above_pos = float(ranked.tps[cut - 1]) if cut else 0.0
    group = float(ranked.pos[cut] + ranked.neg[cut])
    return above_pos + (k - above_mass) / group * float(ranked.pos[cut])
