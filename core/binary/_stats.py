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

from evalserve.core.binary._classes import ClassScores, classes_of_rows

__all__ = ["BinaryStats", "union"]

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
        """Build the statistic from validated arrays (bool labels, finite float64 scores)."""
        positives, negatives = classes_of_rows(y_true, y_score, sample_weight)
        return cls.of_classes(positives, negatives, int(y_true.size), sample_weight is not None)

    @classmethod
    def of_classes(
        cls, positives: ClassScores, negatives: ClassScores, n_rows: int, weighted: bool
    ) -> BinaryStats:
        """The statistic of two classes' scores."""
        pos_mass, neg_mass = positives.masses(), negatives.masses()
        scores, pos, neg = union(
            (positives.scores, pos_mass, np.zeros_like(pos_mass)),
            (negatives.scores, np.zeros_like(neg_mass), neg_mass),
        )
        return cls(scores, pos, neg, n_rows, weighted)

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
        scores, pos, neg = union(
            (self.scores, self.pos, self.neg), (other.scores, other.pos, other.neg)
        )
        return BinaryStats(
            scores, pos, neg, self.n_rows + other.n_rows, self.weighted or other.weighted
        )

    @property
    def n_distinct(self) -> int:
        return int(self.scores.size)


Part = tuple[Floats, Floats, Floats]  # distinct scores (ascending), positive mass, negative mass


def union(first: Part, second: Part) -> Part:
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
