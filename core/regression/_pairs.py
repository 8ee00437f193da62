"""The joint distribution of the rows: each distinct pair (y, ŷ) with its weight.

Spearman's rank correlation needs the joint ranks of labels and predictions, which no fixed
set of sums gives; the distinct pairs with their weights do, exactly, and they merge like the
distinct absolute errors of ``_absolute.py``: a pair is held as the complex number y + iŷ,
which numpy sorts lexicographically (by y, then by ŷ), so the two sorted sets are interleaved
by ``merge_distinct`` and the weights of pairs present in both are added. They also give the
distribution of |y - ŷ| (max_error, the weighted median, the REC curve), which a state holding
the pairs therefore does not keep besides.

Size: one entry per distinct pair, 24 bytes (y, ŷ and the weight): continuous labels or
predictions make nearly every row one, however the errors repeat.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from evalserve.core.regression._absolute import AbsoluteErrors, group_starts, merge_distinct

__all__ = ["PAIR_BYTES", "DistinctPairs", "midranks", "pairs_of"]

Floats = NDArray[np.float64]
Complexes = NDArray[np.complex128]
Indices = NDArray[np.intp]

PAIR_BYTES = 24  # a label, a prediction and a weight


def pairs_of(labels: Floats, predictions: Floats) -> Complexes:
    """y + iŷ per row, built part by part (no complex arithmetic: exact); -0.0 is read as 0.0,
    so that the pairs of equal values never depend on the sign of a zero."""
    joined = np.empty(labels.size, dtype=np.complex128)
    joined.real = labels + 0.0
    joined.imag = predictions + 0.0
    return joined


@dataclass(frozen=True, slots=True, eq=False)
class DistinctPairs:
    """Distinct pairs y + iŷ (strictly ascending, lexicographically; finite) and the positive
    weight of each (the count when unweighted)."""

    values: Complexes
    masses: Floats

    @classmethod
    def empty(cls) -> DistinctPairs:
        return cls(np.empty(0, dtype=np.complex128), np.empty(0))

    @classmethod
    def of_rows(cls, labels: Floats, predictions: Floats, weights: Floats | None) -> DistinctPairs:
        """The distribution of rows of positive ``weights`` (None: ones)."""
        joined = pairs_of(labels, predictions)
        order = lexicographic_order(joined)
        values = joined[order]
        if weights is None:
            starts = group_starts(values)
            counts = np.diff(np.append(starts, values.size)).astype(np.float64)
            return cls(values[starts], counts)
        starts = group_starts(values)
        return cls(values[starts], np.add.reduceat(weights[order], starts))

    @classmethod
    def of_arrays(cls, labels: Floats, predictions: Floats, masses: Floats) -> DistinctPairs:
        return cls(pairs_of(labels, predictions), masses)

    def merge(self, other: DistinctPairs) -> DistinctPairs:
        """The distribution of both row sets."""
        if other.size == 0:
            return self
        if self.size == 0:
            return other
        return DistinctPairs(*merge_distinct(self.values, self.masses, other.values, other.masses))

    @property
    def size(self) -> int:
        return int(self.values.size)

    @property
    def nbytes(self) -> int:
        return PAIR_BYTES * self.size

    @property
    def labels(self) -> Floats:
        return np.ascontiguousarray(self.values.real)

    @property
    def predictions(self) -> Floats:
        return np.ascontiguousarray(self.values.imag)

    def is_ordered(self) -> bool:
        """Whether the pairs are distinct and in ascending (y, ŷ) order."""
        y, y_hat = self.values.real, self.values.imag
        after = (y[1:] > y[:-1]) | ((y[1:] == y[:-1]) & (y_hat[1:] > y_hat[:-1]))
        return bool(after.all())

    def absolute_errors(self) -> AbsoluteErrors:
        """The distribution of |y - ŷ| over the same rows."""
        if self.size == 0:  # an accumulator's batches may still wait to be folded in
            return AbsoluteErrors(np.empty(0), np.empty(0))
        with np.errstate(over="ignore", invalid="ignore"):
            absolute = np.abs(self.values.real - self.values.imag)
        # Pairs that each hold one row (continuous values, unweighted) sort as plain rows: a
        # plain sort is several times faster than the argsort that carries the masses.
        ones = bool((self.masses == 1.0).all())
        return AbsoluteErrors.of_rows(absolute, None if ones else self.masses)

    def ranks(self) -> tuple[Floats, Floats]:
        """The labels' and the predictions' ranks of each distinct pair (``midranks``)."""
        label_ranks = midranks(self.values.real, self.masses)  # already in the labels' order
        # Tied predictions share one midrank, so their order among themselves does not matter:
        # numpy's default (SIMD) argsort, about 5x faster here than a stable one.
        order = np.argsort(self.values.imag)
        prediction_ranks = np.empty(self.size)
        prediction_ranks[order] = midranks(self.values.imag[order], self.masses[order])
        return label_ranks, prediction_ranks


def lexicographic_order(joined: Complexes) -> Indices:
    """The order of the pairs by (y, ŷ): numpy's (SIMD) argsort of the labels alone where they
    are distinct, several times faster than sorting complex numbers; where labels tie, the
    complex argsort, which orders by the predictions within a tie."""
    order: Indices = np.argsort(joined.real)
    ordered = joined.real[order]
    if bool((ordered[1:] == ordered[:-1]).any()):
        order = np.argsort(joined)
    return order


def midranks(ordered: Floats, masses: Floats) -> Floats:
    """The rank of each value of ``ordered`` (ascending) under frequency weights ``masses``:
    the mean of the positions its group of equal values would take were each value repeated
    ``mass`` times, less 1/2: the weight before the group plus half the group's weight. (The
    1/2 that separates it from the usual 1-based average rank shifts every rank alike, which
    no correlation sees.)"""
    starts = group_starts(ordered)
    group = np.add.reduceat(masses, starts)
    before = np.cumsum(group) - group
    counts = np.diff(np.append(starts, ordered.size))
    ranks: Floats = np.repeat(before + group / 2, counts)
    return ranks
