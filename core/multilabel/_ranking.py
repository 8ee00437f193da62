"""Metrics of the scores: ROC AUC and average precision per label (and pooled: micro), label
ranking average precision and coverage error per sample.

Per label, as task binary (:mod:`core.binary._ranking`, :mod:`core.binary._precision_recall`):
tied scores form one threshold; the AUC is the Mann-Whitney statistic with ties counting half
(the area under the tie-grouped ROC curve), the AP the step-wise sum_n (R_n - R_{n-1}) P_n of
scikit-learn. Here all labels are ranked at once: one ``argsort`` along the rows of a
(labels x rows) block sorts every label column, and the tie groups of all labels are summed in
one pass, so no Python loop runs per label. Blocks hold at most ``BLOCK_CELLS`` cells, which
bounds the memory at any k. Unweighted blocks without ties (continuous scores) skip the tie
grouping: every cell is a threshold, and the AUC comes out of exact integer counts.

Per sample, as scikit-learn's ``label_ranking_average_precision_score`` and ``coverage_error``:
a label's rank is the number of labels scored ``>=`` it (ties take the highest rank).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["ColumnRanking", "SampleRanking", "rank_columns", "rank_samples"]

Floats = NDArray[np.float64]
Bools = NDArray[np.bool_]
Indices = NDArray[np.intp]

BLOCK_CELLS = 1 << 21  # about 16 MB per float64 block


@dataclass(frozen=True, slots=True, eq=False)
class ColumnRanking:
    """Per column: positive and negative weight, the AUC numerator (positive-negative pairs
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


def rank_columns(labels: Bools, scores: Floats, weights: Floats | None) -> ColumnRanking:
    """The ranking statistics of every column of n x k ``labels`` / ``scores``."""
    n_rows, n_columns = labels.shape
    step = max(1, BLOCK_CELLS // n_rows)
    parts = [
        _rank_block(
            np.ascontiguousarray(labels[:, start : start + step].T),
            np.ascontiguousarray(scores[:, start : start + step].T),
            weights,
        )
        for start in range(0, n_columns, step)
    ]
    return ColumnRanking(*(np.concatenate(column) for column in zip(*parts, strict=True)))


def _rank_block(
    labels: Bools, scores: Floats, weights: Floats | None
) -> tuple[Floats, Floats, Floats, Floats]:
    """``labels`` and ``scores`` are (columns x rows): each row of the block is one label."""
    order = np.argsort(scores, axis=1)[:, ::-1]  # descending; order inside ties is irrelevant
    ordered = np.take_along_axis(scores, order, axis=1)
    hit = np.take_along_axis(labels, order, axis=1)
    # The last cell of each tie group (and of each column) is where the group's threshold
    # takes effect: the cumulative masses there are that threshold's TP and FP.
    group_end = np.empty(ordered.shape, dtype=np.bool_)
    np.not_equal(ordered[:, 1:], ordered[:, :-1], out=group_end[:, :-1])
    group_end[:, -1] = True
    if weights is None and group_end.all():
        return _untied_counts(hit)
    if weights is None:
        pos = hit.astype(np.float64)
        neg = 1.0 - pos
    else:
        mass = weights[order]
        pos = np.where(hit, mass, 0.0)
        neg = mass - pos
    return _tie_groups(pos, neg, group_end)


def _untied_counts(hit: Bools) -> tuple[Floats, Floats, Floats, Floats]:
    """Unweighted columns without ties (continuous scores): every cell is its own threshold,
    and the AUC numerator is an exact integer: P N minus, over the positives, the negatives
    ranked above them."""
    n_rows = hit.shape[1]
    tps = np.cumsum(hit, axis=1)
    taken = np.arange(1, n_rows + 1)
    positives = tps[:, -1]
    negatives = n_rows - positives
    above = np.where(hit, taken - tps, 0).sum(axis=1)
    precision = np.where(hit, tps / taken, 0.0).sum(axis=1)
    return (
        positives.astype(np.float64),
        negatives.astype(np.float64),
        (positives * negatives - above).astype(np.float64),
        precision,
    )


def _tie_groups(
    pos: Floats, neg: Floats, group_end: Bools
) -> tuple[Floats, Floats, Floats, Floats]:
    """Columns of class masses in descending score order, tie groups ending at ``group_end``:
    every group is one threshold (ties averaged)."""
    n_columns, n_rows = pos.shape
    tps, fps = np.cumsum(pos, axis=1), np.cumsum(neg, axis=1)
    positives, negatives = tps[:, -1].copy(), fps[:, -1].copy()
    if group_end.all():  # no ties: every cell is its own group, nothing to gather
        won = pos * (negatives[:, None] - fps + 0.5 * neg)
        taken = tps + fps
        precision = np.divide(tps, taken, out=np.zeros_like(taken), where=taken > 0)
        return positives, negatives, won.sum(axis=1), (pos * precision).sum(axis=1)
    ends = np.flatnonzero(group_end)
    starts = np.concatenate(([0], ends[:-1] + 1))
    column = ends // n_rows
    pos_group = np.add.reduceat(pos.ravel(), starts)
    neg_group = np.add.reduceat(neg.ravel(), starts)
    tps_group, fps_group = tps.ravel()[ends], fps.ravel()[ends]
    # A positive beats the negatives strictly below its threshold and ties with those at it.
    won = pos_group * (negatives[column] - fps_group + 0.5 * neg_group)
    taken = tps_group + fps_group
    precision = np.divide(tps_group, taken, out=np.zeros_like(taken), where=taken > 0)
    return (
        positives,
        negatives,
        _sum_by(column, won, n_columns),
        _sum_by(column, pos_group * precision, n_columns),
    )


def _sum_by(group: Indices, values: Floats, n_groups: int) -> Floats:
    sums = np.bincount(group, weights=values, minlength=n_groups)
    return sums.astype(np.float64, copy=False)


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
