"""The rows of the ranges path: each batch split into every score range at once, each range's
pieces joined into its classes with one sort.

A batch (a partition, on the worker that holds it) is checked as ``evaluate`` checks rows,
then each row is placed in its range (the ranges are (low, high] between the cuts, counted
from the top) and the batch grouped by (range, label) in one pass: every range's positives and
negatives are contiguous pieces of one gathered copy of the scores, in the rows' order. A
range's pieces from every batch are joined by one sort of their scores (``merge_classes``), so
each row is sorted once, in its range, as one state of all the rows sorts it once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalserve.core._errors import StateTooLargeError
from evalserve.core._grouping import grouped
from evalserve.core._validation import WEIGHTLESS_BATCHES, binary_inputs
from evalserve.core.binary._classes import ClassScores, RawScores, merge_classes
from evalserve.core.binary._state import BYTES_PER_ENTRY
from evalserve.core.binary._sweep import Sweep, place, placed_sweep

__all__ = [
    "RangeBatch",
    "RangeClasses",
    "RangeRows",
    "range_batch",
    "range_classes",
    "range_cuts",
    "range_rows",
    "split_batch",
]

Floats = NDArray[np.float64]
Indices = NDArray[np.intp]
Bools = NDArray[np.bool_]


@dataclass(frozen=True, slots=True, eq=False)
class RangeRows:
    """One batch's rows in one range: each class's scores (and weights) as they came."""

    positives: RawScores
    negatives: RawScores
    n_rows: int
    weighted: bool


@dataclass(frozen=True, slots=True, eq=False)
class RangeClasses:
    """One range's classes (every batch's rows in it), as its worker keeps them for the three
    passes: each pass sweeps them anew (``sweep``), so that between passes a worker holds
    its ranges' states (16 bytes a distinct score), not their sweeps (several times that).
    The positives' places among the negatives (9 bytes a distinct positive score), the
    sweep's binary search and most of its time, are found once and kept."""

    positives: ClassScores
    negatives: ClassScores
    n_rows: int
    weighted: bool
    placement: tuple[Indices, Bools]

    def sweep(self) -> Sweep:
        return placed_sweep(self.positives, self.negatives, self.placement)


@dataclass(frozen=True, slots=True, eq=False)
class RangeBatch:
    """One batch's checked rows (bool labels, finite scores, weights or None), as the ranges
    path reads each batch once: its scores sampled for the cuts, then split into the ranges."""

    labels: Bools
    scores: Floats
    weights: Floats | None

    @property
    def n_rows(self) -> int:
        return int(self.labels.size)

    def sample(self, size: int) -> tuple[Floats, Bools]:
        """At most ``size`` of its rows, evenly spaced in their order: their scores and labels
        (fresh arrays)."""
        step = max(1, self.scores.size // max(size, 1))
        return self.scores[::step][:size].copy(), self.labels[::step][:size].copy()


# What a positive row costs a range beside a negative one: a positive is a hit, which the
# placement, the sweeps and the passes work on (one thread, AMD Zen 5, 5M rows a range:
# 11 ns a row and 46 ns more a positive).
HIT_COST = 5.0


def range_cuts(scores: Floats, labels: Bools, count: int) -> list[float]:
    """Cuts (distinct, ascending) that split a sample of rows (scores and labels) into at
    most ``count`` ranges (low, high] of about equal work, a positive weighing ``HIT_COST``
    negatives: ranges even in rows but not in positives took up to 3x each other's time."""
    if count < 2 or not scores.size:
        return []
    order = np.argsort(scores)  # tied scores in any order: a cut is a score
    ordered = scores[order]
    work = np.cumsum(np.where(labels[order], HIT_COST, 1.0))
    shares = work[-1] * np.arange(1, count) / count
    at = np.minimum(np.searchsorted(work, shares, side="left"), ordered.size - 1)
    cuts = np.unique(ordered[at])
    return [float(cut) for cut in cuts if cut < ordered[-1]]


def range_batch(
    y_true: Any, y_score: Any, sample_weight: Any, *, positive_label: str | None = None
) -> RangeBatch:
    """One batch's rows checked as ``evaluate`` checks them (``positive_label``: the option
    that reads the labels); raises ``InvalidInputError`` naming the field and the row (a
    batch's weights may all be 0; a batch may be empty, as an ``Accumulator``'s)."""
    if np.size(y_true) == 0:
        empty = np.empty(0)
        weights = None if sample_weight is None else empty
        return RangeBatch(np.empty(0, dtype=np.bool_), empty, weights)
    token = WEIGHTLESS_BATCHES.set(True)
    try:
        rows = binary_inputs(y_true, y_score, None, sample_weight, positive_label=positive_label)
    finally:
        WEIGHTLESS_BATCHES.reset(token)
    return RangeBatch(rows.labels, rows.scores, rows.weights)


def range_rows(
    y_true: Any,
    y_score: Any,
    sample_weight: Any,
    cuts: Sequence[float],
    *,
    positive_label: str | None = None,
) -> tuple[RangeRows, ...]:
    """The batch's rows in each range (``range_batch``, then ``split_batch``)."""
    batch = range_batch(y_true, y_score, sample_weight, positive_label=positive_label)
    return split_batch(batch, cuts)


def split_batch(batch: RangeBatch, cuts: Sequence[float]) -> tuple[RangeRows, ...]:
    """The batch's rows in each range, from the highest range down (``len(cuts) + 1``
    ranges: (cuts[-1], inf] first, (-inf, cuts[0]] last), each class's rows in their order."""
    count = len(cuts) + 1
    weighted = batch.weights is not None
    if batch.n_rows == 0:
        empty = RawScores(np.empty(0), np.empty(0) if weighted else None)
        return tuple(RangeRows(empty, empty, 0, weighted) for _ in range(count))
    # (low, high]: the first cut at or above the score; from the top. Grouped by (range, label).
    group = _top_range(batch.scores, np.asarray(cuts, dtype=np.float64))
    group <<= 1
    group += batch.labels
    order, bounds = grouped(group, 2 * count)
    del group
    scores = np.take(batch.scores, order, mode="clip")
    weights = None if batch.weights is None else np.take(batch.weights, order, mode="clip")
    pieces = []
    for j in range(count):
        negatives = _raw(scores, weights, bounds[2 * j], bounds[2 * j + 1])
        positives = _raw(scores, weights, bounds[2 * j + 1], bounds[2 * j + 2])
        pieces.append(RangeRows(positives, negatives, bounds[2 * j + 2] - bounds[2 * j], weighted))
    return tuple(pieces)


# Up to this many cuts, a row's range is counted by comparisons with each cut (numpy's binary
# search of unsorted keys in a few cuts is branchy: 5.4 ms for a million rows and one cut,
# 31 ms for 63 cuts; the comparisons, block by block in the CPU's cache, 0.1 ms and 6 ms).
COMPARED_CUTS = 64
BLOCK = 1 << 16


def _top_range(scores: Floats, edges: Floats) -> NDArray[np.uint16]:
    """Each score's range counted from the top: ``len(edges)`` minus the cuts below it (the
    ranges are (low, high]; ``edges`` ascending)."""
    top = edges.size
    if top > COMPARED_CUTS:
        below = np.searchsorted(edges, scores, side="left")
        return np.subtract(top, below, dtype=np.intp).astype(np.uint16)
    ranges = np.full(scores.size, top, dtype=np.uint16)
    above = np.empty(min(BLOCK, scores.size), dtype=np.bool_)
    for start in range(0, scores.size, BLOCK):
        block = scores[start : start + BLOCK]
        counted = ranges[start : start + BLOCK]
        over = above[: block.size]
        for edge in edges:
            np.greater(block, edge, out=over)
            counted -= over
    return ranges


def _raw(scores: Floats, weights: Floats | None, start: int, stop: int) -> RawScores:
    return RawScores(scores[start:stop], None if weights is None else weights[start:stop])


def range_classes(pieces: Sequence[RangeRows], max_bytes: int | None = None) -> RangeClasses:
    """One range's classes from its pieces of every batch (one sort of each class's scores);
    ``max_bytes`` caps the range's state (``StateTooLargeError`` past it)."""
    positives = merge_classes([piece.positives for piece in pieces])
    negatives = merge_classes([piece.negatives for piece in pieces])
    held = BYTES_PER_ENTRY * (positives.size + negatives.size)
    if max_bytes is not None and held > max_bytes:
        raise StateTooLargeError(
            "state",
            f"a range's binary state would hold {held} bytes, over its cap of {max_bytes} "
            "bytes: cut the scores into more ranges, raise the cap, or round the scores",
        )
    n_rows = sum(piece.n_rows for piece in pieces)
    weighted = any(piece.weighted for piece in pieces)
    return RangeClasses(positives, negatives, n_rows, weighted, place(positives, negatives))
