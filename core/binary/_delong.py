"""DeLong's variance of the ROC AUC, exactly, from the per-distinct-score class masses.

DeLong, DeLong & Clarke-Pearson (1988) write the AUC as the mean of "placement values"
(structural components): a positive scoring s is placed at V10(s) = (N_below(s) + N_at(s)/2) / N,
the share of negatives it beats, ties counting half; a negative at V01(s) = (P_above(s) +
P_at(s)/2) / P. AUC = mean V10 over positives = mean V01 over negatives, and

    Var(AUC) = S10 / P + S01 / N,   S10 = sum over positives (V10 - AUC)^2 / (P - 1),

with S01 alike over negatives (pROC's ``var(roc, method = "delong")``). Every row at one distinct
score shares its placement, so the sums run over distinct scores with the class mass as the
multiplicity: O(distinct scores) after the sort that built the statistic, tie-aware by
construction. The widely copied "fast DeLong" (Sun & Xu 2014) computes midranks per row and
gets tied scores with different weights wrong; here a weight is a multiplicity (frequency
weight: weight 2 is the same as the row twice), which is what makes the weighted case exact.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from evalserve.core.binary._stats import BinaryStats

__all__ = ["Placements", "placements"]

Floats = NDArray[np.float64]


@dataclass(frozen=True, slots=True, eq=False)
class Placements:
    """Placement values per distinct score (ascending, as ``BinaryStats``) and the AUC."""

    stats: BinaryStats
    v10: Floats  # the placement of a positive at each distinct score
    v01: Floats  # the placement of a negative at each distinct score
    positives: float
    negatives: float
    auc: float

    @property
    def s10(self) -> float:
        """Weighted variance of the positives' placements (divisor P - 1)."""
        centred = self.v10 - self.auc
        return float(np.dot(self.stats.pos, centred * centred)) / (self.positives - 1.0)

    @property
    def s01(self) -> float:
        centred = self.v01 - self.auc
        return float(np.dot(self.stats.neg, centred * centred)) / (self.negatives - 1.0)

    @property
    def variance(self) -> float:
        """DeLong's variance of the AUC; needs P > 1 and N > 1 (in units of weight)."""
        return max(0.0, self.s10 / self.positives + self.s01 / self.negatives)


def placements(stats: BinaryStats) -> Placements:
    """The placement values of ``stats``; the caller makes sure both classes are present."""
    pos, neg = stats.pos, stats.neg
    positives, negatives = float(pos.sum()), float(neg.sum())
    has_pos, has_neg = np.flatnonzero(pos), np.flatnonzero(neg)
    # Separated classes: every placement is exactly 1 (or 0). Summing float weights in two
    # orders would leave an AUC of 1 + 2e-16 and a variance of 1e-33 instead.
    if has_neg[-1] < has_pos[0] or has_pos[-1] < has_neg[0]:
        side = 1.0 if has_neg[-1] < has_pos[0] else 0.0
        every = np.full(pos.size, side)
        return Placements(stats, every, every, positives, negatives, side)
    neg_below = np.cumsum(neg) - neg  # negatives strictly below each distinct score
    pos_above = positives - np.cumsum(pos)  # positives strictly above
    v10 = (neg_below + 0.5 * neg) / negatives
    v01 = (pos_above + 0.5 * pos) / positives
    auc = min(1.0, max(0.0, float(np.dot(pos, v10)) / positives))
    return Placements(stats, v10, v01, positives, negatives, auc)
