"""One class's scores: distinct, ascending, each with the mass (count or total weight) there.

A class's scores are *canonical*: distinct, ascending, each with positive mass; the mass is
``None`` exactly when every score holds one unit (unweighted rows, no ties: the common case of
continuous scores, where the mass below position ``i`` is ``i`` itself, and the sorted rows are
the distinct scores with nothing more to build). Rows and the mergeable statistic
(``BinaryStats``) arrive at the same ``ClassScores`` for the same rows, so whatever is computed
from them is computed with the same arithmetic: bit for bit with counts or integer weights.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial

import numpy as np
from numpy.typing import NDArray

from evalserve.core._threads import by_shares, threads_for
from evalserve.core.binary._key_sort import class_orders, sorted_order
from evalserve.core.binary._parallel_sort import sort_columns, split_classes
from evalserve.core.binary._signed_keys import signed_classes

__all__ = [
    "CanonicalMerge",
    "ClassScores",
    "RawScores",
    "class_scores",
    "classes_of_rows",
    "merge_classes",
    "merges_by_stretches",
    "raw_classes_of_rows",
    "unweighted_class",
    "weighted_class",
]

Floats = NDArray[np.float64]
Indices = NDArray[np.intp]
Bools = NDArray[np.bool_]


@dataclass(frozen=True, slots=True, eq=False)
class ClassScores:
    """One class's distinct scores (ascending) and the mass at each.

    ``mass`` is None when every score holds exactly one unit. ``from_top[j]`` is the mass of
    the ``j`` highest scores (``size + 1`` entries; None with unit mass, where it is ``j``):
    summed from the top, so the small masses near the top of a curve (its first FPRs) carry
    no rounding of the bulk below them. It is summed when first read (a sweep reads it; a
    state merged and written as bytes never does: 8 bytes a distinct score saved there).
    """

    scores: Floats
    mass: Floats | None
    _from_top: list[Floats] = field(default_factory=list, repr=False)

    @property
    def from_top(self) -> Floats | None:
        if self.mass is None:
            return None
        if not self._from_top:  # two threads may both sum it: the same values
            from_top = np.empty(self.mass.size + 1, dtype=np.float64)
            from_top[0] = 0.0
            np.cumsum(self.mass[::-1], out=from_top[1:])
            self._from_top.append(from_top)
        return self._from_top[0]

    @property
    def size(self) -> int:
        return int(self.scores.size)

    @property
    def total(self) -> float:
        """The class's whole mass (summed from the top, as every partial mass here)."""
        return float(self.size) if self.from_top is None else float(self.from_top[-1])

    def masses(self) -> Floats:
        """The mass at each score, ones included."""
        return np.ones(self.scores.size) if self.mass is None else self.mass

    def mass_at_or_above(self, index: Indices) -> Floats:
        """The mass of the scores from position ``index`` up."""
        if self.from_top is None:
            return np.subtract(self.size, index, dtype=np.float64)
        return self.from_top[self.size - index]


EMPTY = np.empty(0, dtype=np.float64)


def class_scores(scores: Floats, mass: Floats | None) -> ClassScores:
    """From distinct ascending scores and their masses; scores of mass zero are dropped (rows of
    weight zero leave no trace) and all-ones masses become ``None``."""
    if mass is not None:
        if scores.size and not mass.all():
            held = mass != 0
            scores, mass = scores[held], mass[held]
        if bool((mass == 1.0).all()):
            mass = None
    return ClassScores(scores, mass)


def classes_of_rows(
    labels: Bools, scores: Floats, weights: Floats | None
) -> tuple[ClassScores, ClassScores]:
    """The positives' and the negatives' ``ClassScores`` of validated rows (bool labels,
    finite scores, optional non-negative weights). Unweighted scores of at least ``+0.0`` take
    one sort of all rows with the label in the sign bit (``signed_classes``); other scores
    split, and each class is sorted on its own (the two sorts cost about one sort of all
    rows). Large batches sort on the threads the context allows (``evaluate``'s
    ``threads``)."""
    threads = threads_for(scores.size)
    if weights is not None:
        return _weighted(labels, scores, weights, threads)
    signed = signed_classes(labels, scores, threads)
    if signed is not None:
        return _counted(signed[0]), _counted(signed[1])
    positives, negatives = split_classes(labels, scores, threads)
    if threads > 1:
        sort_columns([positives, negatives], threads)
        return _counted(positives), _counted(negatives)
    return unweighted_class(positives), unweighted_class(negatives)


def _weighted(
    labels: Bools, scores: Floats, weights: Floats, threads: int
) -> tuple[ClassScores, ClassScores]:
    """Weighted classes: each class's scores in order and the rows they are at, from one sort
    of packed keys per class (``class_orders``: no class's column is copied first), then the
    weights gathered at those rows; the same classes on any number of threads."""
    orders = class_orders(labels, scores, threads)
    classes: list[ClassScores] = []
    while orders:  # each class's order is let go once its weights are gathered
        ordered, rows = orders.pop(0)
        classes.append(_ordered(ordered, _take(weights, rows, threads)))
        del ordered, rows
    return classes[0], classes[1]


def unweighted_class(scores: Floats) -> ClassScores:
    """From one class's scores, a fresh copy (sorted in place, on threads when large)."""
    threads = threads_for(scores.size)
    if threads > 1:
        sort_columns([scores], threads)
    else:
        scores.sort()
    return _counted(scores)


def _counted(ordered: Floats) -> ClassScores:
    """From one class's sorted scores (each one unit): the distinct scores and their counts."""
    if ordered.size == 0:
        return class_scores(EMPTY, None)
    starts = _run_starts(ordered)
    if starts is None:  # no ties: the sorted rows are the distinct scores
        return class_scores(ordered, None)
    counts = np.empty(starts.size, dtype=np.float64)
    np.subtract(starts[1:], starts[:-1], out=counts[:-1])
    counts[-1] = ordered.size - starts[-1]
    return class_scores(ordered[starts], counts)


@dataclass(frozen=True, slots=True, eq=False)
class RawScores:
    """One class's scores of a batch as they came (unsorted, with their weights or None): the
    sort is left to ``merge_classes``, which sorts every part of a class at once."""

    scores: Floats
    weights: Floats | None

    @property
    def size(self) -> int:
        return int(self.scores.size)

    def masses(self) -> Floats:
        return np.ones(self.scores.size) if self.weights is None else self.weights


def raw_classes_of_rows(
    labels: Bools, scores: Floats, weights: Floats | None
) -> tuple[RawScores, RawScores]:
    """The positives' and the negatives' scores of validated rows, copied, not sorted."""
    negative = ~labels
    if weights is None:
        return RawScores(scores[labels], None), RawScores(scores[negative], None)
    return (
        RawScores(scores[labels], weights[labels]),
        RawScores(scores[negative], weights[negative]),
    )


def merge_classes(parts: Sequence[ClassScores | RawScores]) -> ClassScores:
    """One class's canonical scores from several parts (batches, shards): canonical parts and
    raw batch scores alike, with one sort of all their scores; masses are added where parts
    share a score. Without weights and ties anywhere this is a plain sort, numpy's fastest."""
    held = [part for part in parts if part.size]
    if len(held) == 1 and isinstance(held[0], ClassScores):
        return held[0]
    if not held:
        return class_scores(EMPTY, None)
    canonical = [part for part in held if isinstance(part, ClassScores)]
    if len(canonical) == len(held) and sum(part.size for part in held) >= CHUNKED_MERGE_MIN:
        return _merge_canonical(canonical)
    scores = np.concatenate([part.scores for part in held])
    unit = [part.mass is None if isinstance(part, ClassScores) else part.weights is None
            for part in held]  # fmt: skip
    if all(unit):
        return unweighted_class(scores)
    masses = np.concatenate([part.masses() for part in held])
    return _sorted_weighted(scores, masses)


# Canonical parts holding at least this many entries together merge stretch by stretch of the
# score axis, each stretch about MERGE_STRETCH entries.
CHUNKED_MERGE_MIN = 1 << 20
MERGE_STRETCH = 1 << 20


def _merge_canonical(parts: Sequence[ClassScores]) -> ClassScores:
    """Canonical parts merged stretch by stretch (``CanonicalMerge``) into new arrays."""
    merge = CanonicalMerge(parts)
    total = sum(part.size for part in parts)
    scores = np.empty(total, dtype=np.float64)
    mass = np.empty(total, dtype=np.float64)
    held = merge.write(scores, mass)
    if held < total:  # ties across parts: keep no more than the result needs
        scores, mass = scores[:held].copy(), mass[:held].copy()
    return class_scores(scores, mass)


def merges_by_stretches(parts: Sequence[ClassScores]) -> bool:
    """Whether ``merge_classes`` merges these canonical parts stretch by stretch (and so
    ``CanonicalMerge`` gives its answer to the bit)."""
    held = [part for part in parts if part.size]
    return len(held) > 1 and sum(part.size for part in held) >= CHUNKED_MERGE_MIN


class CanonicalMerge:
    """Canonical parts (each distinct and ascending: merged states, a tree's partitions)
    merged stretch by stretch of the score axis, cut at scores of the largest part: each
    stretch's pieces of every part (views) are joined, ordered by a stable sort (runs already
    sorted) and their masses added where scores tie, straight into the caller's arrays (new
    ones, or the places of the arrays in a state's bytes). The memory beside the result is one
    stretch's, not the whole merge's (a sort of all scores with their masses held about four
    times the result)."""

    def __init__(self, parts: Sequence[ClassScores]) -> None:
        self.parts = [part for part in parts if part.size]
        total = sum(part.size for part in self.parts)
        largest = max(self.parts, key=lambda part: part.size)
        stretches = max(1, total // MERGE_STRETCH)
        cuts = np.unique(largest.scores[np.arange(1, stretches) * largest.size // stretches])
        self.stretches = cuts.size + 1
        self.bounds = [
            np.concatenate(([0], np.searchsorted(part.scores, cuts, side="left"), [part.size]))
            for part in self.parts
        ]

    def _scores(self, stretch: int) -> Floats:
        return np.concatenate(
            [part.scores[at[stretch] : at[stretch + 1]]
             for part, at in zip(self.parts, self.bounds, strict=True)]
        )  # fmt: skip

    def size(self) -> int:
        """The merged entries (distinct scores over every part): one sort of each stretch's
        scores, without their masses, so that the result's place is sized before it is
        written."""
        held = 0
        for stretch in range(self.stretches):
            joined = np.sort(self._scores(stretch), kind="stable")
            starts = _run_starts(joined) if joined.size else None
            held += joined.size if starts is None else starts.size
        return held

    def write(self, scores: Floats, mass: Floats) -> int:
        """The merged scores and masses into the front of ``scores`` and ``mass`` (at least
        ``size()`` entries each); returns how many."""
        held = 0
        for stretch in range(self.stretches):
            joined = self._scores(stretch)
            if joined.size == 0:
                continue
            masses = np.concatenate(
                [np.ones(at[stretch + 1] - at[stretch]) if part.mass is None
                 else part.mass[at[stretch] : at[stretch + 1]]
                 for part, at in zip(self.parts, self.bounds, strict=True)]
            )  # fmt: skip
            joined, order = sorted_order(joined)  # a stable argsort's order
            masses = np.take(masses, order, mode="clip")
            del order
            starts = _run_starts(joined)
            if starts is None:
                count = joined.size
                scores[held : held + count], mass[held : held + count] = joined, masses
            else:
                count = starts.size
                scores[held : held + count] = joined[starts]
                mass[held : held + count] = np.add.reduceat(masses, starts)
            held += count
        return held


def weighted_class(scores: Floats, weights: Floats) -> ClassScores:
    """From one class's scores and their weights in the rows' order (views: a segment's piece
    of the rows grouped by segment)."""
    return _sorted_weighted(scores, weights)


def _sorted_weighted(scores: Floats, weights: Floats) -> ClassScores:
    """From one class's scores and weights (neither changed)."""
    threads = threads_for(scores.size)
    ordered, order = sorted_order(scores, threads)
    return _ordered(ordered, _take(weights, order, threads))


def _take(column: Floats, order: Indices, threads: int) -> Floats:
    """``column[order]`` for a permutation ``order``, share by share on ``threads`` threads."""
    taken = np.empty(order.size, dtype=np.float64)

    def share(start: int, stop: int) -> None:
        np.take(column, order[start:stop], out=taken[start:stop], mode="clip")

    by_shares(order.size, threads, share)
    return taken


def _ordered(ordered: Floats, mass: Floats) -> ClassScores:
    """From sorted scores and the mass of each (ties summed)."""
    if ordered.size == 0:
        return class_scores(EMPTY, None)
    starts = _run_starts(ordered)
    if starts is None:
        return class_scores(ordered, mass)
    return class_scores(ordered[starts], np.add.reduceat(mass, starts))


# Scores a block of the check for ties compares at once: its temporary stays in the CPU's cache.
TIE_BLOCK = 1 << 16


def _run_starts(ordered: Floats) -> Indices | None:
    """Where each run of equal values begins in a sorted array; None when there are no ties
    (the common case of continuous scores, found block by block in shares on the context's
    threads, with no temporary of every score's size)."""
    pairs = ordered.size - 1
    if pairs < 1 or not any(by_shares(pairs, threads_for(pairs), partial(_tied, ordered))):
        return None
    new_value = np.empty(ordered.size, dtype=np.bool_)
    new_value[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new_value[1:])
    return np.flatnonzero(new_value)


def _tied(ordered: Floats, start: int, stop: int) -> bool:
    """Whether ``ordered[i] == ordered[i + 1]`` for some ``i`` in ``[start, stop)``."""
    equal = np.empty(min(TIE_BLOCK, stop - start), dtype=np.bool_)
    for at in range(start, stop, TIE_BLOCK):
        end = min(at + TIE_BLOCK, stop)
        block = equal[: end - at]
        np.equal(ordered[at + 1 : end + 1], ordered[at:end], out=block)
        if block.any():
            return True
    return False
