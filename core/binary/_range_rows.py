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

__all__ = ["RangeClasses", "RangeRows", "range_classes", "range_rows"]

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


def range_rows(
    y_true: Any,
    y_score: Any,
    sample_weight: Any,
    cuts: Sequence[float],
    *,
    positive_label: str | None = None,
) -> tuple[RangeRows, ...]:
    """The batch's rows in each range, from the highest range down (``len(cuts) + 1``
    ranges: (cuts[-1], inf] first, (-inf, cuts[0]] last); ``positive_label``: the option that
    reads the labels; raises ``InvalidInputError``
    naming the field and the row, as ``evaluate`` does (a batch's weights may all be 0; a
    batch may be empty, as an ``Accumulator``'s)."""
    count = len(cuts) + 1
    if np.size(y_true) == 0:
        weighted = sample_weight is not None
        empty = RawScores(np.empty(0), np.empty(0) if weighted else None)
        return tuple(RangeRows(empty, empty, 0, weighted) for _ in range(count))
    token = WEIGHTLESS_BATCHES.set(True)
    try:
        rows = binary_inputs(y_true, y_score, None, sample_weight, positive_label=positive_label)
    finally:
        WEIGHTLESS_BATCHES.reset(token)
    edges = np.asarray(cuts, dtype=np.float64)
    # (low, high]: the first cut at or above the score; from the top. Grouped by (range, label).
    group = (count - 1 - np.searchsorted(edges, rows.scores, side="left")) * 2
    group += rows.labels
    order, bounds = grouped(group, 2 * count)
    scores = np.take(rows.scores, order, mode="clip")
    weights = None if rows.weights is None else np.take(rows.weights, order, mode="clip")
    weighted = weights is not None
    pieces = []
    for j in range(count):
        negatives = _raw(scores, weights, bounds[2 * j], bounds[2 * j + 1])
        positives = _raw(scores, weights, bounds[2 * j + 1], bounds[2 * j + 2])
        pieces.append(RangeRows(positives, negatives, bounds[2 * j + 2] - bounds[2 * j], weighted))
    return tuple(pieces)


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
