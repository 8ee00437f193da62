"""Per label, task binary's statistic of that label's column: the distinct scores with the
positive and the negative mass at each (:mod:`core.binary._stats`), for every label at once.

Label ``j``'s entries are ``offsets[j]:offsets[j + 1]`` of ``scores`` / ``pos`` / ``neg``, its
scores distinct and ascending, every entry with mass > 0 (rows of weight zero leave no trace).
Every score metric of a label follows from its entries (:mod:`._ranking`), and the pooled
(micro) metrics from the union of all labels' entries: the statistic of all n x k cells. Two
row sets' statistics merge label by label, adding the masses of scores both hold, so batches
and shards give the statistic of all rows: to the bit with counts or integer weights.

Columns are built in blocks of at most ``BLOCK_CELLS`` cells: one ``argsort`` along the rows
of a (labels x rows) block sorts every label of the block, and no Python loop runs per label.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from evalserve.core.binary._classes import ClassScores, class_scores

__all__ = ["ColumnStats", "column_stats"]

Floats = NDArray[np.float64]
Bools = NDArray[np.bool_]
Ints = NDArray[np.int64]

BLOCK_CELLS = 1 << 21  # about 16 MB per float64 block


@dataclass(frozen=True, slots=True, eq=False)
class ColumnStats:
    """Every label's distinct scores (ascending) and the positive and negative mass at each,
    label after label; ``offsets`` (k + 1 entries) says where each label's entries start."""

    offsets: Ints
    scores: Floats
    pos: Floats
    neg: Floats

    @property
    def n_labels(self) -> int:
        return int(self.offsets.size) - 1

    @property
    def size(self) -> int:
        """Entries over all labels."""
        return int(self.scores.size)

    def label_of_entries(self) -> Ints:
        """The label of every entry."""
        counts = np.diff(self.offsets)
        labels: Ints = np.repeat(np.arange(self.n_labels, dtype=np.int64), counts)
        return labels

    @classmethod
    def empty(cls, n_labels: int) -> ColumnStats:
        nothing = np.empty(0, dtype=np.float64)
        return cls(np.zeros(n_labels + 1, dtype=np.int64), nothing, nothing, nothing)

    def merge(self, other: ColumnStats) -> ColumnStats:
        """The statistic of both row sets, label by label (same number of labels): one sort of
        both sides' entries by (label, score)."""
        if other.size == 0:
            return self
        if self.size == 0:
            return other
        labels = np.concatenate((self.label_of_entries(), other.label_of_entries()))
        scores = np.concatenate((self.scores, other.scores))
        # By label, then by score; each side holds a (label, score) at most once, so a shared
        # one is one addition (commutative: the merge order of two states does not matter).
        order = np.lexsort((scores, labels))
        labels, scores = labels[order], scores[order]
        pos = np.concatenate((self.pos, other.pos))[order]
        neg = np.concatenate((self.neg, other.neg))[order]
        starts = _run_starts(labels, scores)
        counts = np.bincount(labels[starts], minlength=self.n_labels)
        return ColumnStats(
            _offsets(counts),
            scores[starts],
            np.add.reduceat(pos, starts) if starts.size < pos.size else pos,
            np.add.reduceat(neg, starts) if starts.size < neg.size else neg,
        )

    def pooled(self) -> tuple[ClassScores, ClassScores]:
        """The positives' and the negatives' scores over all n x k cells: the union of every
        label's entries (the micro averages' ROC and precision-recall curves)."""
        return _pooled_class(self.scores, self.pos), _pooled_class(self.scores, self.neg)


def _pooled_class(scores: Floats, mass: Floats) -> ClassScores:
    """One class's canonical scores from the entries of every label."""
    held = mass > 0
    scores, mass = scores[held], mass[held]  # copies
    if scores.size == 0:
        return class_scores(scores, None)
    if bool((mass == 1.0).all()):  # one unit each (counts, no ties): only the scores travel
        scores.sort()
        new = _new_values(scores)
        if new.all():
            return class_scores(scores, None)
        starts = np.flatnonzero(new)
        counts = np.diff(np.append(starts, scores.size)).astype(np.float64)
        return class_scores(scores[starts], counts)
    # A stable sort keeps the labels' order among equal scores: their masses add up in it.
    order = np.argsort(scores, kind="stable")
    scores, mass = scores[order], mass[order]
    starts = np.flatnonzero(_new_values(scores))
    return class_scores(scores[starts], np.add.reduceat(mass, starts))


def _new_values(ordered: Floats) -> Bools:
    """Where a new value begins in a sorted, non-empty array."""
    new = np.empty(ordered.size, dtype=np.bool_)
    new[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    return new


def column_stats(labels: Bools, scores: Floats, weights: Floats | None) -> ColumnStats:
    """The statistic of every column of validated n x k ``labels`` / ``scores`` (finite),
    with optional non-negative row ``weights`` (rows of weight zero leave no entry)."""
    if weights is not None and not (weights > 0).all():
        live = weights > 0
        labels, scores, weights = labels[live], scores[live], weights[live]
    n_rows, n_labels = labels.shape
    step = max(1, BLOCK_CELLS // max(n_rows, 1))
    parts = [
        _column_block(
            np.ascontiguousarray(labels[:, start : start + step].T),
            np.ascontiguousarray(scores[:, start : start + step].T),
            weights,
        )
        for start in range(0, n_labels, step)
    ]
    if len(parts) == 1:
        counts, values, pos, neg = parts[0]
    else:
        counts, values, pos, neg = (np.concatenate(part) for part in zip(*parts, strict=True))
    return ColumnStats(_offsets(counts), values, pos, neg)


def _column_block(
    labels: Bools, scores: Floats, weights: Floats | None
) -> tuple[Ints, Floats, Floats, Floats]:
    """``labels`` and ``scores`` are (columns x rows): each row of the block is one label."""
    order = np.argsort(scores, axis=1)
    ordered = np.take_along_axis(scores, order, axis=1)
    hit = np.take_along_axis(labels, order, axis=1)
    new = np.empty(ordered.shape, dtype=np.bool_)
    new[:, :1] = True
    np.not_equal(ordered[:, 1:], ordered[:, :-1], out=new[:, 1:])
    if weights is None:
        pos = hit.astype(np.float64)
        neg = 1.0 - pos
    else:
        mass = weights[order]
        pos = np.where(hit, mass, 0.0)
        neg = mass - pos  # exact: mass - mass or mass - 0
    counts = np.count_nonzero(new, axis=1).astype(np.int64)
    if new.all():  # no ties: every cell is its own entry
        return counts, ordered.ravel(), pos.ravel(), neg.ravel()
    starts = np.flatnonzero(new)
    return (
        counts,
        ordered.ravel()[starts],
        np.add.reduceat(pos.ravel(), starts),
        np.add.reduceat(neg.ravel(), starts),
    )


def _offsets(counts: NDArray[np.integer]) -> Ints:
    offsets = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return offsets


def _run_starts(labels: Ints, scores: Floats) -> NDArray[np.intp]:
    """Where each run of equal (label, score) begins in arrays sorted by both."""
    new = np.empty(labels.size, dtype=np.bool_)
    new[:1] = True
    np.not_equal(scores[1:], scores[:-1], out=new[1:])
    new[1:] |= labels[1:] != labels[:-1]
    return np.flatnonzero(new)
