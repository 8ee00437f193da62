"""Metrics of the scores: ROC AUC and average precision per label (and pooled: micro), label
ranking average precision and coverage error per sample.

Per label, as task binary (:mod:`core.binary._ranking`, :mod:`core.binary._precision_recall`),
from the label's statistic (:mod:`._columns`: distinct scores with their positive and negative
mass): tied scores form one threshold; the AUC is the Mann-Whitney statistic with ties counting
half (the area under the tie-grouped ROC curve), the AP the step-wise sum_n (R_n - R_{n-1}) P_n
of scikit-learn. All labels are ranked at once, in blocks of at most ``BLOCK_CELLS`` cells
(which bounds the memory at any k), so no Python loop runs per label.

The equal error rate's two points (task binary's ``eer_sides``: the lowest distinct score where
FPR < FNR and the one below it) come out of the same sums from the top: the condition holds from
the top down, so a bisection per label, all labels at once, finds where it stops.

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
class EerSides:
    """Per label, the two points of its curve around FPR = FNR: ``before`` (the lowest distinct
    score where FPR < FNR) and ``after`` (the next one down), each as the label's entry (-1:
    none) and its TP and FP, summed from the top; ``positives`` and ``negatives`` summed from
    the top too (task binary's sums, to the bit)."""

    before: Floats
    after: Floats
    tp_before: Floats
    fp_before: Floats
    tp_after: Floats
    fp_after: Floats
    positives: Floats
    negatives: Floats


@dataclass(frozen=True, slots=True, eq=False)
class ColumnRanking:
    """Per label: positive and negative weight, the AUC numerator (positive-negative pairs
    ranked right, ties half) and the AP numerator (sum of positive weight x precision)."""

    positives: Floats
    negatives: Floats
    pairs: Floats
    precision_mass: Floats
    eer: EerSides

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
    out = np.zeros((_ROWS, n_labels))
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
        return _ranking_of(out, lengths, width)
    by_length = np.argsort(-lengths, kind="stable")
    start = 0
    widths = np.zeros(n_labels, dtype=np.int64)
    while start < n_labels:
        width = max(1, int(lengths[by_length[start]]))
        block = by_length[start : start + max(1, BLOCK_CELLS // width)]
        out[:, block] = _rank_block(*_padded(columns, block, lengths[block], width))
        widths[block] = width
        start += block.size
    return _ranking_of(out, lengths, widths)


# Rows of a block's result: P, N, the AUC and AP numerators; the equal error rate's two places
# from the top (-1: none), the TP and FP at each, and N summed from the top.
_ROWS = 11


def _ranking_of(out: Floats, lengths: Ints, widths: Ints | int) -> ColumnRanking:
    """The ranking of the blocks' rows; the sides' places from the top of a block (padding
    first) become entries of each label, from its lowest score."""
    places = []
    for row in (4, 5):
        # From the top of a row of ``widths`` places, the last ``lengths`` being the label's.
        place = (widths - 1) - out[row]
        inside = (out[row] >= 0) & (place >= 0) & (place < lengths)
        places.append(np.where(inside, place, -1.0))
    eer = EerSides(places[0], places[1], out[6], out[7], out[8], out[9], out[0], out[10])
    return ColumnRanking(out[0], out[1], out[2], out[3], eer)


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
    sides = _eer_sides(precision, taken)
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
    return np.vstack((positives, negatives, 0.5 * twice[:, -1], precision[:, -1], sides))


def _eer_sides(tps: Floats, fps: Floats) -> Floats:
    """Per row of a block (TP and FP at or above each place, from the top, padding first):
    the last place from the top where FPR < FNR (task binary's condition, ``fp P < (P - tp)
    N``) and the place after it (-1: none), the TP and FP at both, and N. The condition holds
    from the top down (padding: 0 < P N), so one bisection per row finds where it stops."""
    rows, width = tps.shape
    positives, negatives = tps[:, -1], fps[:, -1]
    every = np.arange(rows)
    low = np.zeros(rows, dtype=np.intp)
    high = np.full(rows, width, dtype=np.intp)
    searching = low < high
    while searching.any():
        middle = (low + high) // 2
        at = np.minimum(middle, width - 1)
        tp, fp = tps[every, at], fps[every, at]
        holds = fp * positives < (positives - tp) * negatives
        low = np.where(searching & holds, middle + 1, low)
        high = np.where(searching & ~holds, middle, high)
        searching = low < high
    before, after = low - 1, low
    out = np.full((7, rows), -1.0)
    has_before, has_after = before >= 0, after < width
    out[0] = np.where(has_before, before, -1)
    out[1] = np.where(has_after, after, -1)
    b, a = np.maximum(before, 0), np.minimum(after, width - 1)
    out[2], out[3] = tps[every, b], fps[every, b]
    out[4], out[5] = tps[every, a], fps[every, a]
    out[6] = negatives
    return out


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
