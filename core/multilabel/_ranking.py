"""Metrics of the scores: ROC AUC and average precision per label (and pooled: micro), label
ranking average precision and coverage error per sample.

Per label, as task binary (:mod:`core.binary._ranking`, :mod:`core.binary._precision_recall`),
from the label's statistic (:mod:`._columns`: distinct scores with their positive and negative
mass): tied scores form one threshold; the AUC is the Mann-Whitney statistic with ties counting
half (the area under the tie-grouped ROC curve), the AP the step-wise sum_n (R_n - R_{n-1}) P_n
of scikit-learn. All labels are ranked at once, in blocks of at most ``BLOCK_CELLS`` cells
(which bounds the memory at any k), so no Python loop runs per label.

Per sample, as scikit-learn's ``label_ranking_average_precision_score`` and ``coverage_error``:
a label's rank is the number of labels scored ``>=`` it (ties take the highest rank).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from evalserve.core.multilabel._columns import ColumnStats

__all__ = ["ColumnRanking", "SampleRanking", "rank_columns", "rank_samples"]

Floats = NDArray[np.float64]
Bools = NDArray[np.bool_]
Indices = NDArray[np.intp]
Ints = NDArray[np.int64]

BLOCK_CELLS = 1 << 21  # about 16 MB per float64 block


@dataclass(frozen=True, slots=True, eq=False)
class ColumnRanking:
    """Per label: positive and negative weight, the AUC numerator (positive-negative pairs
    ranked right, ties half) and the AP numerator (sum of positive weight x precision)."""

    positives: Floats
    negatives: Floats
    pairs: Floats
    precision_mass: Floats

    def roc_auc(self) -> Floats:
        """Defined where P N > 0; 0.0 elsewhere."""
        both = (self.positives > 0) & (self.negatives > 0)
        denominator = self.positives * self.negatives
        auc = np.divide(self.pairs, denominator, out=np.zeros_like(self.pairs), where=both)
        return _unit(auc)

    def average_precision(self) -> Floats:
        """Defined where P > 0; 0.0 elsewhere."""
        ap = np.divide(
            self.precision_mass,
            self.positives,
            out=np.zeros_like(self.precision_mass),
            where=self.positives > 0,
        )
        return _unit(ap)


def _unit(values: Floats) -> Floats:
    """Numerator and denominator are sums of the same weights in different orders: a perfect
    ranking can come out one ulp above 1 (AP 1.0000000000000002), which is rounding, not data."""
    clipped: Floats = np.clip(values, 0.0, 1.0)
    return clipped


def rank_columns(columns: ColumnStats) -> ColumnRanking:
    """The ranking statistics of every label of ``columns``.

    Labels of similar length share a block: each label's entries become one row of a
    (labels x longest) block, padded with zero mass, and every sum runs along the row in order
    (``cumsum``), so the padding adds exact zeros and neither the block nor its width changes a
    label's numbers."""
    n_labels = columns.n_labels
    lengths = np.diff(columns.offsets)
    out = np.zeros((4, n_labels))
    if lengths[0] > 0 and bool((lengths == lengths[0]).all()):
        # Every label as long (no ties, or the same ones): the blocks are slices, no padding.
        width = max(1, int(lengths[0]))
        step = max(1, BLOCK_CELLS // width)
        for start in range(0, n_labels, step):
            stop = min(n_labels, start + step)
            entries = slice(int(columns.offsets[start]), int(columns.offsets[stop]))
            out[:, start:stop] = _rank_block(
                columns.pos[entries].reshape(stop - start, width),
                columns.neg[entries].reshape(stop - start, width),
            )
        return ColumnRanking(*out)
    by_length = np.argsort(-lengths, kind="stable")
    start = 0
    while start < n_labels:
        width = max(1, int(lengths[by_length[start]]))
        block = by_length[start : start + max(1, BLOCK_CELLS // width)]
        out[:, block] = _rank_block(*_padded(columns, block, lengths[block], width))
        start += block.size
    return ColumnRanking(*out)


def _padded(
    columns: ColumnStats, block: Indices, lengths: Ints, width: int
) -> tuple[Floats, Floats]:
    """The positive and negative masses of the labels ``block``, one label a row (ascending
    scores), padded with zeros on the right to ``width``."""
    row = np.repeat(np.arange(block.size), lengths)
    place = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    source = np.repeat(columns.offsets[block], lengths) + place
    pos = np.zeros((block.size, width))
    neg = np.zeros((block.size, width))
    pos[row, place] = columns.pos[source]
    neg[row, place] = columns.neg[source]
    return pos, neg


def _rank_block(pos: Floats, neg: Floats) -> Floats:
    """Rows P, N, the AUC numerator and the AP numerator of a block of labels (one a row,
    masses by ascending score). Two buffers, worked in place: blocks are large."""
    # From the top: the masses at or above each entry (the padding, on top, adds zeros first).
    top_pos, top_neg = pos[:, ::-1], neg[:, ::-1]
    precision = np.cumsum(top_pos, axis=1)
    positives = precision[:, -1].copy()
    taken = np.cumsum(top_neg, axis=1)
    taken += precision
    # A positive's precision is TP / (TP + FP) at its score, summed from the top: small masses
    # near the top keep their precision. Where nothing is taken (padding), TP is 0 and stays.
    np.divide(precision, taken, out=precision, where=taken > 0)
    precision *= top_pos
    np.cumsum(precision, axis=1, out=precision)
    # From the bottom: the negatives strictly below each entry. A positive beats them and ties
    # with the negatives at its own score, half each: 2 x won = pos (2 below + tied), and the
    # doubling is exact.
    twice = taken
    twice[:, 0] = 0.0
    np.cumsum(neg[:, :-1], axis=1, out=twice[:, 1:])
    negatives = twice[:, -1] + neg[:, -1]
    twice *= 2.0
    twice += neg
    twice *= pos
    np.cumsum(twice, axis=1, out=twice)
    return np.stack((positives, negatives, 0.5 * twice[:, -1], precision[:, -1]))


@dataclass(frozen=True, slots=True, eq=False)
class SampleRanking:
    """Per sample: its number of true labels, the sum over them of |true labels scored >= it| /
    |labels scored >= it| (LRAP = that sum / n_true), and the coverage: the number of labels
    scored >= its lowest-scored true label (0 without a true label)."""

    n_true: Floats
    precision_sum: Floats
    coverage: Floats


def rank_samples(labels: Bools, scores: Floats) -> SampleRanking:
    n_rows, n_columns = labels.shape
    step = max(1, BLOCK_CELLS // n_columns)
    parts = [
        _rank_rows(labels[start : start + step], scores[start : start + step])
        for start in range(0, n_rows, step)
    ]
    return SampleRanking(*(np.concatenate(column) for column in zip(*parts, strict=True)))


def _rank_rows(labels: Bools, scores: Floats) -> tuple[Floats, Floats, Floats]:
    n_columns = scores.shape[1]
    order = np.argsort(scores, axis=1)[:, ::-1]
    ordered = np.take_along_axis(scores, order, axis=1)
    hit = np.take_along_axis(labels, order, axis=1)
    # Each cell's tie group ends at the next group end at or after it; the cells up to there
    # are the labels scored >= this one.
    last = np.empty(ordered.shape, dtype=np.bool_)
    np.not_equal(ordered[:, 1:], ordered[:, :-1], out=last[:, :-1])
    last[:, -1] = True
    position = np.where(last, np.arange(n_columns), n_columns)
    group_end = np.minimum.accumulate(position[:, ::-1], axis=1)[:, ::-1]
    at_or_above = (group_end + 1).astype(np.float64)
    true_cumulative = np.cumsum(hit, axis=1)
    true_at_or_above = np.take_along_axis(true_cumulative, group_end, axis=1)
    precision = np.where(hit, true_at_or_above / at_or_above, 0.0)
    coverage = np.where(hit, at_or_above, 0.0).max(axis=1)
    return true_cumulative[:, -1].astype(np.float64), precision.sum(axis=1), coverage
