"""The mergeable statistic behind every multiclass ranking metric: per score column and true
class, the distinct scores with their weight.

Block (c, t) holds the distinct values of score column c among the rows of true class t,
ascending, each with its mass (count, or total weight; rows of weight zero leave no trace). The
ranking metrics need nothing more:

* one-vs-rest, class j: the positives are block (j, j), the negatives the blocks (j, t != j);
* one-vs-one, A(j|c) (Hand & Till 2001): block (j, j) against block (j, c);
* micro (the flattened problem): the positives are the true-class scores T, the union of the
  blocks (t, t); the negatives every block (c, t != c).

``ranking_stats`` derives from the blocks the same ``RankingStats`` that ``_ranking`` sweeps
from rows: the one-vs-rest statistics on scores instead of class slots (every metric of
``_per_class`` is a sum over the positive scores, equal either way), and the one-vs-one and
micro sums with the same formulas. Blocks hold at most one entry per row and column; scores
repeated within a class share one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from evalserve.core.binary._stats import BinaryStats
from evalserve.core.multiclass._ranking import Micro, RankingStats

__all__ = ["ScoreBlocks"]

Floats = NDArray[np.float64]
Indices = NDArray[np.intp]
Bools = NDArray[np.bool_]

_GROUP_CELLS = 1 << 20  # score cells sorted at once when blocks are built from rows


@dataclass(frozen=True, slots=True, eq=False)
class ScoreBlocks:
    """Entries ordered by (column c, true class t, score); block b = c * k + t is
    ``values[bounds[b]:bounds[b + 1]]`` (strictly ascending) with its ``mass`` (> 0)."""

    n_classes: int
    values: Floats
    mass: Floats
    bounds: NDArray[np.int64]

    @property
    def size(self) -> int:
        return int(self.values.size)

    @classmethod
    def empty(cls, n_classes: int) -> ScoreBlocks:
        nothing = np.empty(0, dtype=np.float64)
        return cls(n_classes, nothing, nothing, np.zeros(n_classes * n_classes + 1, np.int64))

    @property
    def total(self) -> float:
        """The weight of the rows (column 0's blocks hold each row once)."""
        return float(self.mass[: self.bounds[self.n_classes]].sum())

    def block_ids(self) -> Indices:
        """The block of each entry."""
        blocks = np.arange(self.n_classes * self.n_classes, dtype=np.intp)
        return np.repeat(blocks, np.diff(self.bounds))

    @classmethod
    def of_rows(
        cls, scores: NDArray[np.float64], labels: Indices, weights: Floats | None
    ) -> ScoreBlocks:
        """The blocks of validated rows (n x k finite scores, class indices, weights)."""
        n_rows, n_classes = scores.shape
        # A stable sort of small integers is a radix sort.
        small = labels.astype(np.uint16) if n_classes <= 1 << 16 else labels
        group = max(1, min(n_classes, _GROUP_CELLS // max(n_rows, 1)))
        parts: list[tuple[Floats, Floats, Indices]] = []
        for first in range(0, n_classes, group):
            last = min(n_classes, first + group)
            columns = np.ascontiguousarray(scores[:, first:last].T)
            # -0.0 becomes 0.0 (one value, one entry), in a copy: the slice may be the caller's
            # array (a one-row batch), read-only when it came as raw bytes.
            columns = columns + 0.0
            order = np.argsort(columns, axis=1)
            by_class = np.argsort(small[order], axis=1, kind="stable")
            order = np.take_along_axis(order, by_class, axis=1)
            values = np.take_along_axis(columns, order, axis=1).ravel()
            ids = labels[order]
            ids += (np.arange(first, last, dtype=np.intp) * n_classes)[:, None]
            mass = None if weights is None else weights[order.ravel()]
            parts.append(_distinct(values, ids.ravel(), mass))
        values = np.concatenate([part[0] for part in parts])
        mass = np.concatenate([part[1] for part in parts])
        ids = np.concatenate([part[2] for part in parts])
        return cls(n_classes, values, mass, _bounds(ids, n_classes))

    def merge(self, other: ScoreBlocks) -> ScoreBlocks:
        """The blocks of both row sets (the caller checks that the widths agree)."""
        if other.size == 0:
            return self
        if self.size == 0:
            return other
        values = np.concatenate((self.values, other.values))
        mass = np.concatenate((self.mass, other.mass))
        ids = np.concatenate((self.block_ids(), other.block_ids()))
        # Each side is sorted by (block, value): the stable sort by value meets sorted runs,
        # the one by block is a radix sort of small integers.
        small = ids.astype(np.uint16) if self.n_classes <= 1 << 8 else ids
        order = np.lexsort((values, small))
        merged = _distinct(values[order], ids[order], mass[order])
        return ScoreBlocks(self.n_classes, merged[0], merged[1], _bounds(merged[2], self.n_classes))

    def ranking_stats(self, n_rows: int, weighted: bool) -> RankingStats:
        """The one-vs-rest, one-vs-one and micro statistics (see ``_ranking.RankingStats``);
        the blocks must hold some weight."""
        n_classes, values, mass, bounds = self.n_classes, self.values, self.mass, self.bounds
        ids = self.block_ids()
        true_class = ids % n_classes
        end = int(bounds[n_classes])
        class_mass = _summed(true_class[:end], mass[:end], n_classes)
        diagonal = np.flatnonzero(ids // n_classes == true_class)
        truth, truth_mass = _union(values[diagonal], mass[diagonal])
        gap = np.zeros(truth.size + 1)
        tie = np.zeros(truth.size + 1)
        pairs = np.zeros((n_classes, n_classes))
        one_vs_rest = []
        for j in range(n_classes):
            start, stop = int(bounds[j * n_classes]), int(bounds[(j + 1) * n_classes])
            column, weight = values[start:stop], mass[start:stop]
            order = np.argsort(column, kind="stable")  # sorted runs, one per class
            column, weight, classes = column[order], weight[order], true_class[start:stop][order]
            group = _groups(column)
            own = classes == j
            positive = _summed(group, np.where(own, weight, 0.0))
            negative = _summed(group, np.where(own, 0.0, weight))
            first = np.flatnonzero(np.diff(group, prepend=-1))
            distinct = column[first]
            one_vs_rest.append(BinaryStats(distinct, positive, negative, n_rows, weighted))
            # One-vs-one: a row at a score is below the class weight above it plus half that at
            # it (the formula of ``_ranking``).
            placement = positive.sum() - np.cumsum(positive) + 0.5 * positive
            pairs[j] = _summed(classes, weight * placement[group], n_classes)
            pairs[j, j] = 0.0
            # Micro: the other classes' scores of column j, placed among T.
            others = ~own
            _place(truth, column[others], weight[others], gap, tie)
        micro = Micro(truth, truth_mass, gap, tie[:-1], counts=not weighted)
        return RankingStats(tuple(one_vs_rest), pairs, micro, class_mass)


def _summed(index: Indices, weights: Floats, size: int = 0) -> Floats:
    """The weight at each index 0..max(size, largest index + 1) - 1."""
    return np.asarray(np.bincount(index, weights=weights, minlength=size), dtype=np.float64)


def _groups(ordered: Floats) -> Indices:
    """The run of equal values each entry of a sorted array is in (0, 1, ...)."""
    new = np.empty(ordered.size, dtype=np.intp)
    new[:1] = 0
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:], casting="unsafe")
    return np.cumsum(new)


def _union(values: Floats, mass: Floats) -> tuple[Floats, Floats]:
    """Distinct values (ascending) and the mass at each, of sorted runs."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    group = _groups(ordered)
    first = np.flatnonzero(np.diff(group, prepend=-1))
    return ordered[first], _summed(group, mass[order])


def _place(truth: Floats, values: Floats, weight: Floats, gap: Floats, tie: Floats) -> None:
    """Add each value's weight to ``tie`` at its position in ``truth`` when it equals a value
    of it, to ``gap`` at the number of values below it otherwise."""
    position = np.searchsorted(truth, values, side="left")
    found = position < truth.size
    found[found] = truth[position[found]] == values[found]
    gap += _summed(position[~found], weight[~found], gap.size)
    tie += _summed(position[found], weight[found], tie.size)


def _distinct(values: Floats, ids: Indices, mass: Floats | None) -> tuple[Floats, Floats, Indices]:
    """Entries sorted by (block, value), equal ones merged (their mass added, ones when
    ``mass`` is None) and those of mass zero dropped."""
    if values.size == 0:
        return values, np.empty(0), ids
    new = np.empty(values.size, dtype=np.bool_)
    new[0] = True
    np.not_equal(values[1:], values[:-1], out=new[1:])
    new[1:] |= ids[1:] != ids[:-1]
    starts = np.flatnonzero(new)
    if mass is None:
        summed = np.diff(starts, append=values.size).astype(np.float64)
        return values[starts], summed, ids[starts]
    summed = np.add.reduceat(mass, starts)
    held = starts[summed > 0]
    return values[held], summed[summed > 0], ids[held]


def _bounds(ids: Indices, n_classes: int) -> NDArray[np.int64]:
    bounds = np.zeros(n_classes * n_classes + 1, dtype=np.int64)
    np.cumsum(np.bincount(ids, minlength=n_classes * n_classes), out=bounds[1:])
    return bounds
