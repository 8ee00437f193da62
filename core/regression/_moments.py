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
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["OVERFLOWED", "Moments", "weighted_sum"]

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

    def merge(self, other: Moments, weight: float, other_weight: float) -> Moments:
        """The moments of both value sets; ``weight`` and ``other_weight`` are their W."""
        if math.isinf(self.m2) or math.isinf(other.m2):
            return OVERFLOWED
        share = other_weight / (weight + other_weight)
        delta = (other.mean - self.mean) + (other.mean_low - self.mean_low)
        m2 = self.m2 + other.m2 + delta * delta * (weight * share)
        high, error = _two_sum(self.mean, delta * share)
        mean, low = _two_sum(high, error + self.mean_low)
        return _checked(mean, low, m2)


OVERFLOWED = Moments(0.0, 0.0, math.inf)


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
