"""The mergeable sufficient statistic of binary evaluation.

Every binary metric here is a function of the class-conditional score distributions: for each
distinct score, the positive weight and the negative weight (counts when unweighted).
``BinaryStats`` holds exactly that, so

* batches ``update`` it and shards ``merge`` it, in any order, with the same result;
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
        pos_w = None if sample_weight is None else sample_weight[y_true]
        neg_w = None if sample_weight is None else sample_weight[~y_true]
        pos_scores, pos_mass = _histogram(y_score[y_true], pos_w)
        neg_scores, neg_mass = _histogram(y_score[~y_true], neg_w)
        scores, pos, neg = _union((pos_scores, pos_mass, None), (neg_scores, None, neg_mass))
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

    @property
    def positive_total(self) -> float:
        return float(self.pos.sum())

    @property
    def negative_total(self) -> float:
        return float(self.neg.sum())


def _histogram(values: Floats, weights: Floats | None) -> tuple[Floats, Floats]:
    """Distinct values (ascending) and the total weight (or count) at each."""
    if values.size == 0:
        return np.empty(0), np.empty(0)
    if weights is None:
        ordered = np.sort(values)
    else:
        order = np.argsort(values)
        ordered = values[order]
        weights = weights[order]
    new_value = np.empty(ordered.size, dtype=np.bool_)
    new_value[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new_value[1:])
    starts = np.flatnonzero(new_value)
    if weights is None:
        mass = np.diff(starts, append=ordered.size).astype(np.float64)
    else:
        mass = np.add.reduceat(weights, starts)
    return ordered[starts], mass


def _union(*parts: tuple[Floats, Floats | None, Floats | None]) -> tuple[Floats, Floats, Floats]:
    """Merge sorted distinct-score sets, adding each part's positive and negative mass."""
    merged = np.concatenate([part[0] for part in parts])
    # Sorted runs: the stable sort (timsort) merges them in linear time.
    merged.sort(kind="stable")
    keep = np.empty(merged.size, dtype=np.bool_)
    if merged.size:
        keep[0] = True
        np.not_equal(merged[1:], merged[:-1], out=keep[1:])
    scores = merged[keep]
    pos, neg = np.zeros(scores.size), np.zeros(scores.size)
    for part_scores, part_pos, part_neg in parts:
        at = np.searchsorted(scores, part_scores)  # distinct within a part: no index repeats
        if part_pos is not None:
            pos[at] += part_pos
        if part_neg is not None:
            neg[at] += part_neg
    return scores, pos, neg


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
