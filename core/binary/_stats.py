"""The mergeable sufficient statistic of binary evaluation.

Every binary metric here is a function of the class-conditional score distributions: for each
distinct score, the positive weight and the negative weight (counts when unweighted).
``BinaryStats`` holds exactly that, so

* batches ``update`` it and shards ``merge`` it, in any order, with the same result (to the
  bit with counts or integer weights; float weights add up in a different order, so results
  can differ by rounding);
* its size grows with the number of distinct scores, never with a copy of every row;
* ``compute`` in :mod:`core.binary._suite` derives every metric exactly from it.

Rows of weight zero leave no trace (as in scikit-learn), except in the row count ``n_rows``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["BinaryStats"]

Floats = NDArray[np.float64]
Bools = NDArray[np.bool_]


@dataclass(frozen=True, slots=True, eq=False)
class BinaryStats:
    """Per distinct score (ascending), the positive and negative weight.

    ``n_rows`` counts the rows that went in (weight-zero rows included); ``weighted`` says whether
    any of them carried sample weights.
    """

    scores: Floats
    pos: Floats
    neg: Floats
    n_rows: int = 0
    weighted: bool = False

    @classmethod
    def empty(cls) -> BinaryStats:
        nothing = np.empty(0, dtype=np.float64)
        return cls(nothing, nothing, nothing)

    @classmethod
    def from_arrays(
        cls, y_true: Bools, y_score: Floats, sample_weight: Floats | None = None
    ) -> BinaryStats:
        """Build the statistic from validated arrays (bool labels, finite float64 scores).

        Each class is sorted on its own: the two sorts cost about one sort of all rows, and no
        label has to travel with the scores through the sort.
        """
        negative = ~y_true
        if sample_weight is None:
            pos_scores, pos_mass = _histogram(y_score[y_true])
            neg_scores, neg_mass = _histogram(y_score[negative])
        else:
            pos_scores, pos_mass = _weighted_histogram(y_score[y_true], sample_weight[y_true])
            neg_scores, neg_mass = _weighted_histogram(y_score[negative], sample_weight[negative])
        scores, pos, neg = _union(
            (pos_scores, pos_mass, np.zeros_like(pos_mass)),
            (neg_scores, np.zeros_like(neg_mass), neg_mass),
        )
        return _drop_empty(cls(scores, pos, neg, int(y_true.size), sample_weight is not None))

    def update(
        self, y_true: Bools, y_score: Floats, sample_weight: Floats | None = None
    ) -> BinaryStats:
        """The statistic of everything seen so far plus one more batch."""
        return self.merge(BinaryStats.from_arrays(y_true, y_score, sample_weight))

    def merge(self, other: BinaryStats) -> BinaryStats:
        """The statistic of the union of both row sets (associative and commutative)."""
        if other.scores.size == 0 and other.n_rows == 0:
            return self
        if self.scores.size == 0 and self.n_rows == 0:
            return other
        scores, pos, neg = _union(
            (self.scores, self.pos, self.neg), (other.scores, other.pos, other.neg)
        )
        return BinaryStats(
            scores, pos, neg, self.n_rows + other.n_rows, self.weighted or other.weighted
        )

    @property
    def n_distinct(self) -> int:
        return int(self.scores.size)


def _run_starts(ordered: Floats) -> NDArray[np.intp]:
    """Where each run of equal values begins in a sorted array."""
    new_value = np.empty(ordered.size, dtype=np.bool_)
    new_value[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new_value[1:])
    return np.flatnonzero(new_value)


def _histogram(values: Floats) -> tuple[Floats, Floats]:
    """Distinct values (ascending) and how often each occurs."""
    if values.size == 0:
        return np.empty(0), np.empty(0)
    values.sort()  # ``values`` is a fresh copy made by boolean indexing
    starts = _run_starts(values)
    counts = np.empty(starts.size, dtype=np.float64)
    np.subtract(starts[1:], starts[:-1], out=counts[:-1])
    counts[-1] = values.size - starts[-1]
    return values[starts], counts


def _weighted_histogram(values: Floats, weights: Floats) -> tuple[Floats, Floats]:
    """Distinct values (ascending) and the total weight at each.

    Scores and weights travel together as one complex number (score + i weight): numpy sorts
    complex numbers by real part first, so one direct sort replaces an argsort and two gathers.
    """
    if values.size == 0:
        return np.empty(0), np.empty(0)
    pairs = np.empty(values.size, dtype=np.complex128)
    pairs.real = values
    pairs.imag = weights
    pairs.sort()
    ordered = pairs.real
    starts = _run_starts(ordered)
    return ordered[starts], np.add.reduceat(pairs.imag, starts)


Part = tuple[Floats, Floats, Floats]  # distinct scores (ascending), positive mass, negative mass


def _union(first: Part, second: Part) -> Part:
    """Merge two distinct-score sets, adding the masses at scores present in both.

    The smaller set is inserted into the larger one: a binary search per inserted score and two
    linear passes per column, instead of sorting the union again.
    """
    small, large = (first, second) if first[0].size <= second[0].size else (second, first)
    small_scores, large_scores = small[0], large[0]
    at = np.searchsorted(large_scores, small_scores)
    shared = np.zeros(small_scores.size, dtype=np.bool_)
    inside = np.flatnonzero(at < large_scores.size)
    shared[inside] = large_scores[at[inside]] == small_scores[inside]
    columns = [large[1], large[2]]
    if shared.any():
        # ``at`` is strictly increasing where scores are shared: no index repeats.
        for column in (0, 1):
            columns[column] = columns[column].copy()
            columns[column][at[shared]] += small[column + 1][shared]
    new = ~shared
    # Where the inserted scores land in the output; every other slot takes the larger set.
    landing = at[new] + np.arange(int(new.sum()))
    from_large = np.ones(large_scores.size + landing.size, dtype=np.bool_)
    from_large[landing] = False

    def interleave(large_column: Floats, small_column: Floats) -> Floats:
        out = np.empty(from_large.size, dtype=np.float64)
        out[landing] = small_column[new]
        out[from_large] = large_column
        return out

    return (
        interleave(large_scores, small_scores),
        interleave(columns[0], small[1]),
        interleave(columns[1], small[2]),
    )


def _drop_empty(stats: BinaryStats) -> BinaryStats:
    """Remove distinct scores whose rows all had weight zero."""
    if not stats.weighted:
        return stats
    occupied = (stats.pos > 0) | (stats.neg > 0)
    if occupied.all():
        return stats
    return BinaryStats(
        stats.scores[occupied], stats.pos[occupied], stats.neg[occupied], stats.n_rows, True
    )
