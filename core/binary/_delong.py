"""DeLong's variance of the ROC AUC, exactly, from the per-distinct-score class masses.

DeLong, DeLong & Clarke-Pearson (1988) write the AUC as the mean of "placement values"
(structural components): a positive scoring s is placed at V10(s) = (N_below(s) + N_at(s)/2) / N,
the share of negatives it beats, ties counting half; a negative at V01(s) = (P_above(s) +
P_at(s)/2) / P. AUC = mean V10 over positives = mean V01 over negatives, and

    Var(AUC) = S10 / P + S01 / N,   S10 = sum over positives (V10 - AUC)^2 / (P - 1),

with S01 alike over negatives (pROC's ``var(roc, method = "delong")``). Every row at one
distinct score shares its placement, and so does every negative between two consecutive positive
scores, so the sums run over the hits of the ``Sweep`` with the class mass as the multiplicity:
O(distinct positive scores) after the sorts that built it, tie-aware by construction. The widely
copied "fast DeLong" (Sun & Xu 2014) computes midranks per row and gets tied scores with
different weights wrong; here a weight is a multiplicity (frequency weight: weight 2 is the same
as the row twice), which is what makes the weighted case exact.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from evalserve.core._inner import inner
from evalserve.core.binary._classes import ClassScores
from evalserve.core.binary._sweep import Sweep

__all__ = ["Placements", "placements"]

Floats = NDArray[np.float64]


@dataclass(frozen=True, slots=True, eq=False)
class Placements:
    """DeLong's placement values of one sweep: the AUC, its variance, and each row's placement
    (``v10_at``/``v01_at``) for the covariance of two AUCs on the same rows."""

    sweep: Sweep
    auc: float
    s10_sum: float  # mass-weighted sum of the positives' squared deviations from the AUC
    s01_sum: float  # of the negatives'

    @property
    def positives(self) -> float:
        return self.sweep.n_positive

    @property
    def negatives(self) -> float:
        return self.sweep.n_negative

    @property
    def s10(self) -> float:
        """Weighted variance of the positives' placements (divisor P - 1)."""
        return self.s10_sum / (self.positives - 1.0)

    @property
    def s01(self) -> float:
        return self.s01_sum / (self.negatives - 1.0)

    @property
    def variance(self) -> float:
        """DeLong's variance of the AUC; needs P > 1 and N > 1 (in units of weight)."""
        return max(0.0, self.s10 / self.positives + self.s01 / self.negatives)

    def v10_at(self, scores: Floats) -> Floats:
        """The placement of a positive row at each of ``scores``: the share of negatives it
        beats, ties counting half."""
        below, at = _below_and_at(self.sweep.negatives, scores)
        return (below + 0.5 * at) / self.negatives

    def v01_at(self, scores: Floats) -> Floats:
        """The placement of a negative row at each of ``scores``: the share of positives above
        it, ties counting half."""
        below, at = _below_and_at(self.sweep.positives, scores)
        return (self.positives - below - 0.5 * at) / self.positives


def _below_and_at(side: ClassScores, scores: Floats) -> tuple[Floats, Floats]:
    """The class's mass strictly below each score, and at it."""
    start = np.searchsorted(side.scores, scores, side="left")
    stop = np.searchsorted(side.scores, scores, side="right")
    at_or_above = side.mass_at_or_above(start)
    return side.total - at_or_above, at_or_above - side.mass_at_or_above(stop)


# Hits a block of the placement sums takes.
BLOCK = 1 << 16


def _v10(sweep: Sweep, start: int, stop: int) -> Floats:
    """The positives' placements of hits ``start`` to ``stop``: the share of negatives below,
    ties counting half."""
    v10 = np.subtract(sweep.n_negative, sweep.fps[start:stop])
    v10 += 0.5 * sweep.neg_in(start, stop)
    v10 /= sweep.n_negative
    return v10


def placements(sweep: Sweep) -> Placements:
    """The placement values of ``sweep``; the caller makes sure both classes are present.

    Positives: one placement per hit. Negatives: those tied with hit k sit at (TP above + half
    the hit's positives) / P; those strictly between hits k - 1 and k at TP above / P; those
    above the top hit at 0 and those below the lowest at 1.
    """
    positives, negatives = sweep.n_positive, sweep.n_negative
    pos_scores, neg_scores = sweep.positives.scores, sweep.negatives.scores
    # Separated classes: every placement is exactly 1 (or 0). Summing float weights in two
    # orders would leave an AUC of 1 + 2e-16 and a variance of 1e-33 instead.
    if neg_scores[-1] < pos_scores[0] or pos_scores[-1] < neg_scores[0]:
        return Placements(sweep, 1.0 if neg_scores[-1] < pos_scores[0] else 0.0, 0.0, 0.0)
    # In blocks of the hits: the temporaries stay a few MB however many hits (at 100 million
    # distinct scores, whole-array temporaries were the evaluation's peak memory).
    blocks = [(start, min(start + BLOCK, sweep.size)) for start in range(0, sweep.size, BLOCK)]
    pairs = sum(inner(sweep.pos[a:b], _v10(sweep, a, b)) for a, b in blocks)
    auc = min(1.0, max(0.0, pairs / positives))
    s10 = s01 = 0.0
    for a, b in blocks:
        centred = _v10(sweep, a, b)
        centred -= auc
        s10 += inner(sweep.pos[a:b], centred * centred)
        # Negatives in groups: between hits (k - 1, k) and tied with hit k.
        between = np.empty(b - a)
        if a == 0:
            between[0] = sweep.fps_above[0]
            np.subtract(sweep.fps_above[1:b], sweep.fps[: b - 1], out=between[1:])
        else:
            np.subtract(sweep.fps_above[a:b], sweep.fps[a - 1 : b - 1], out=between)
        at = sweep.tps_above[a:b] / positives
        at -= auc
        s01 += inner(between, at * at)
        at = sweep.tps_above[a:b] + 0.5 * sweep.pos[a:b]
        at /= positives
        at -= auc
        s01 += inner(sweep.neg_in(a, b), at * at)
    # ... and below the last hit, placed at 1.
    s01 += float(negatives - sweep.fps[-1]) * (1.0 - auc) ** 2
    return Placements(sweep, auc, s10, s01)
