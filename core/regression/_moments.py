"""Weighted mean and centred sum of squares, from one batch and merged across batches.

``M2 = sum w (x - x̄)^2`` is SST for the labels and n Var(r) for the residuals. One batch is
summed by the corrected two-pass algorithm, batches are combined by the pairwise update of
Chan, Golub & LeVeque (1983, "Algorithms for computing the sample variance: analysis and
recommendations", The American Statistician 37(3)), weighted as in West (1979)::

    W = Wa + Wb,  δ = x̄b - x̄a,  x̄ = x̄a + δ Wb / W,  M2 = M2a + M2b + δ² Wa Wb / W

Every term of M2 is non-negative, so the update adds no cancellation of its own; what it needs
is an accurate δ. Labels far from zero with a small spread (1e6 + 1e-3 noise) make δ the
difference of two nearly equal means, and the rounding of each mean (about eps |x̄|) would
then dominate δ. The mean is therefore kept as an unevaluated sum ``mean + mean_low`` (a
double-double in the sense of Dekker 1971): ``mean_low`` is the correction the two-pass
algorithm computes anyway, sum w (x - mean) / W, and the merge adds the step δ Wb / W to it
with Knuth's exact TwoSum. δ then carries only the rounding of the deviations, and merged M2
stays within a few eps times log2(batches) of the one-batch value.

Overflow (values near 1e154 and beyond square to infinity) makes M2 infinite for good: every
later merge adds non-negative terms to it. Such moments are kept as ``OVERFLOWED`` (mean 0,
M2 infinity) so that no NaN enters a state.

The cross moment of two value sets x and y of the same rows, ``C = sum w (x - x̄)(y - ȳ)``
(W Cov(x, y), for Pearson's r and Lin's concordance), follows the same two steps: one batch by
the corrected two-pass sum, ``C = sum w dx dy - (sum w dx)(sum w dy) / W`` with the deviations
from the computed means, and batches by the bivariate form of the pairwise update (Chan, Golub
& LeVeque's update for the variance; the same algebra for the co-moment, as Bennett, Grout,
Pébay, Roe & Thompson 2009 state it)::

    C = Ca + Cb + δx δy Wa Wb / W

with δx, δy the differences of the two batches' double-double means. Unlike M2, C has terms of
both signs; |C| <= sqrt(M2x M2y) (Cauchy-Schwarz), so it is finite while both M2 are. Where it
is not (overflow), it is kept as ``math.inf`` for good, like an overflowed M2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["OVERFLOWED", "Moments", "co_moment", "merged_co_moment", "weighted_sum"]

Floats = NDArray[np.float64]


def weighted_sum(weights: Floats | None, terms: Floats) -> float:
    """sum w t by numpy's pairwise summation (relative error about log2(n) eps for terms of
    one sign, where a running dot product carries up to n eps); ``weights`` None means ones."""
    return float(np.sum(terms if weights is None else weights * terms))


@dataclass(frozen=True, slots=True)
class Moments:
    """The weighted mean (``mean + mean_low``) and M2 = sum w (x - mean)^2 of some values."""

    mean: float
    mean_low: float
    m2: float

    @classmethod
    def of(
        cls, values: Floats, weights: Floats | None, total_weight: float, shares: Floats | float
    ) -> Moments:
        """The moments of one batch (``weights`` None for ones; ``shares`` = w / W, which
        keeps the first mean from overflowing where sum w x would). Call under
        ``np.errstate(all="ignore")``: overflow comes out as ``OVERFLOWED``."""
        mean = float(np.sum(values * shares))
        # The corrected two-pass algorithm: the computed mean's rounding shifts every deviation
        # alike; first / W is that shift (the low part of the mean) and first^2 / W removes it
        # from the sum of squares. Without it, labels a few ulps apart get an M2 whose rounding
        # error is as large as itself.
        deviations = values - mean
        first = weighted_sum(weights, deviations)
        second = weighted_sum(weights, deviations * deviations)
        low = first / total_weight
        m2 = max(second - first * low, 0.0)
        return _checked(mean, low, m2)

    def delta(self, other: Moments) -> float:
        """The difference of the means, other's less this one's, from their double-double
        form: accurate where the two means agree in most of their digits."""
        return (other.mean - self.mean) + (other.mean_low - self.mean_low)

    @property
    def mean_value(self) -> float:
        """The mean as one float."""
        return self.mean + self.mean_low

    def merge(self, other: Moments, weight: float, other_weight: float) -> Moments:
        """The moments of both value sets; ``weight`` and ``other_weight`` are their W."""
        if math.isinf(self.m2) or math.isinf(other.m2):
            return OVERFLOWED
        share = other_weight / (weight + other_weight)
        delta = self.delta(other)
        m2 = self.m2 + other.m2 + delta * delta * (weight * share)
        high, error = _two_sum(self.mean, delta * share)
        mean, low = _two_sum(high, error + self.mean_low)
        return _checked(mean, low, m2)


OVERFLOWED = Moments(0.0, 0.0, math.inf)


def co_moment(
    x: Floats, y: Floats, x_moments: Moments, y_moments: Moments, weights: Floats | None
) -> float:
    """C = sum w (x - x̄)(y - ȳ) of one batch, by the corrected two-pass sum over the
    deviations from the batches' computed means (``Moments.of``): their rounding shifts the
    deviations by about ``mean_low``, and the second term removes it. ``math.inf`` where it
    overflowed. Call under ``np.errstate(all="ignore")``."""
    if math.isinf(x_moments.m2) or math.isinf(y_moments.m2):
        return math.inf
    dx = x - x_moments.mean
    dy = y - y_moments.mean
    total = float(dx.size) if weights is None else float(np.sum(weights))
    product = weighted_sum(weights, dx * dy)
    correction = weighted_sum(weights, dx) * weighted_sum(weights, dy) / total
    value = product - correction
    return value if math.isfinite(value) else math.inf


def merged_co_moment(
    c: float,
    other_c: float,
    deltas: tuple[float, float],
    weight: float,
    other_weight: float,
) -> float:
    """C of two batches: Ca + Cb + δx δy Wa Wb / W, ``deltas`` = (δx, δy) the differences of
    their means (``Moments.delta``); ``math.inf`` once either is (overflow)."""
    if math.isinf(c) or math.isinf(other_c):
        return math.inf
    share = other_weight / (weight + other_weight)
    value = c + other_c + deltas[0] * deltas[1] * (weight * share)
    return value if math.isfinite(value) else math.inf


def _checked(mean: float, low: float, m2: float) -> Moments:
    if math.isfinite(mean) and math.isfinite(low) and math.isfinite(m2):
        return Moments(mean, low, m2)
    return OVERFLOWED


def _two_sum(a: float, b: float) -> tuple[float, float]:
    """s = fl(a + b) and the exact error a + b - s (Knuth's TwoSum)."""
    s = a + b
    a_part = s - b
    b_part = s - a_part
    return s, (a - a_part) + (b - b_part)
