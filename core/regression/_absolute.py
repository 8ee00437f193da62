"""The distribution of the absolute errors |y - ŷ|: each distinct value with its weight.

It is what the order statistics need exactly (max_error, the weighted median), and it merges
like the distinct scores of the binary state: the two sorted sets are interleaved and the
weights of values present in both are added. Its size is the number of distinct |errors|:
one per row for continuous predictions, a few thousand for errors rounded to a grid.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["AbsoluteErrors", "group_starts", "merge_distinct"]

Floats = NDArray[np.float64]
Indices = NDArray[np.intp]
# Distinct values: floats (absolute errors) or complex y + iŷ (pairs, ``_pairs.py``).
Values = NDArray[Any]

EPS = float(np.finfo(np.float64).eps)


@dataclass(frozen=True, slots=True, eq=False)
class AbsoluteErrors:
    """Distinct absolute errors (strictly ascending, in [0, ∞]: infinite where y - ŷ
    overflowed) and the positive weight at each (the count when unweighted)."""

    values: Floats
    masses: Floats

    @classmethod
    def of_rows(cls, absolute: Floats, weights: Floats | None) -> AbsoluteErrors:
        """The distribution of ``absolute`` under positive ``weights`` (None: ones)."""
        if weights is None:
            values = np.sort(absolute)  # a plain sort is several times faster than argsort
            starts = group_starts(values)
            counts = np.diff(np.append(starts, values.size)).astype(np.float64)
            return cls(values[starts], counts)
        order = np.argsort(absolute)
        values = absolute[order]
        starts = group_starts(values)
        return cls(values[starts], np.add.reduceat(weights[order], starts))

    def merge(self, other: AbsoluteErrors) -> AbsoluteErrors:
        """The distribution of both row sets (``merge_distinct``)."""
        if other.size == 0:
            return self
        if self.size == 0:
            return other
        return AbsoluteErrors(*merge_distinct(self.values, self.masses, other.values, other.masses))

    @property
    def size(self) -> int:
        return int(self.values.size)

    @property
    def maximum(self) -> float:
        return float(self.values[-1])

    def median(self, n_terms: int) -> float:
        """The weighted median: the averaged inverted CDF (Hyndman and Fan's definition 2,
        scikit-learn's ``_weighted_percentile(average=True)``, used by its
        ``median_absolute_error`` since 1.8). The smallest value whose cumulative weight
        reaches half the total; when it reaches exactly half, the mean of it and the next
        value. With unit weights this is ``np.median``; a weight 2 is a row sent twice.

        "Exactly half" allows the rounding the sums of ``n_terms`` weights can carry, n eps
        times the total weight, on both sides of half (scikit-learn allows an absolute eps;
        relative, the result does not change when every weight is multiplied by one constant:
        with eps alone, weights scaled by 3 could round a cumulative sum of exactly half to
        just under it and move the median to the next value, found by Hypothesis). The same
        allowance makes the median of merged batches, whose weights are added in another
        order, the median of all rows."""
        cumulative = np.cumsum(self.masses)
        total = float(cumulative[-1])
        half = total / 2
        tolerance = EPS * total * n_terms
        last = self.values.size - 1
        at = min(int(np.searchsorted(cumulative, half - tolerance, side="left")), last)
        if float(cumulative[at]) - half > tolerance or at == last:
            return float(self.values[at])
        low, high = float(self.values[at]), float(self.values[at + 1])
        return low + (high - low) / 2


def group_starts(ordered: Values) -> Indices:
    """The index of the first of each run of equal values in ``ordered``."""
    starts: Indices = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    return starts


def merge_distinct(
    values: Values, masses: Floats, other_values: Values, other_masses: Floats
) -> tuple[Values, Floats]:
    """Two sets of distinct values (strictly ascending, in numpy's order: complex values
    lexicographically) with their masses, merged into one: the smaller set is inserted into
    the larger one (a binary search per inserted value and two linear passes), and the masses
    of values present in both are added."""
    if values.size <= other_values.size:
        small, small_masses, large, large_masses = values, masses, other_values, other_masses
    else:
        small, small_masses, large, large_masses = other_values, other_masses, values, masses
    at = np.searchsorted(large, small)
    shared = np.zeros(small.size, dtype=np.bool_)
    inside = np.flatnonzero(at < large.size)
    shared[inside] = large[at[inside]] == small[inside]
    if shared.any():
        # ``at`` is strictly increasing where values are shared: no index repeats.
        large_masses = large_masses.copy()
        large_masses[at[shared]] += small_masses[shared]
    new = ~shared
    # Where the inserted values land in the output; every other slot takes the larger set.
    landing = at[new] + np.arange(int(new.sum()))
    from_large = np.ones(large.size + landing.size, dtype=np.bool_)
    from_large[landing] = False

    def interleave(large_column: Values, small_column: Values) -> Values:
        out = np.empty(from_large.size, dtype=large_column.dtype)
        out[landing] = small_column[new]
        out[from_large] = large_column
        return out

    return interleave(large, small), interleave(large_masses, small_masses)
