"""Bootstrap intervals for the metrics without a closed-form variance: average precision, F1,
KS and the break-even point.

The bootstrap is stratified by class (each replicate redraws P positives and N negatives, with
replacement, so the class totals stay fixed, as pROC's stratified bootstrap) and runs on the
statistic, not on the rows: a replicate redraws how much of each class falls at each distinct
score (a multinomial draw), and the metrics of all replicates are computed at once on a
(replicates x scores) matrix. F1 at the threshold needs only the confusion counts there, which
a stratified bootstrap redraws as two binomials: exact, and independent of the number of scores.

Bounded time: above ``MAX_GROUPS`` distinct scores, neighbouring scores are pooled into groups
of about equal mass first. The replicates then measure the spread around the pooled statistic's
value, and the interval is shifted by the difference between the exact and the pooled value (a
few 1e-4 at most; the spread itself barely changes). The work is at most replicates x
``MAX_GROUPS``, whatever the number of rows.

Weights count as rows (frequency weights), as in DeLong's variance: a class of total weight W is
redrawn as round(W) rows, each carrying W / round(W).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from evalserve.core._result_parts import Interval
from evalserve.core.binary._stats import BinaryStats

__all__ = ["BOOTSTRAP_METRICS", "MAX_GROUPS", "bootstrap_intervals"]

Floats = NDArray[np.float64]

MAX_GROUPS = 1000
CHUNK_CELLS = 1 << 20  # replicates x groups per chunk: a few MB per matrix
CURVE_METRICS = ("average_precision", "break_even_point", "ks_statistic")
BOOTSTRAP_METRICS = (*CURVE_METRICS, "f1")


def bootstrap_intervals(
    stats: BinaryStats,
    exact: dict[str, float],
    confusion: tuple[float, float],
    *,
    replicates: int,
    seed: int,
    level: float,
) -> dict[str, Interval]:
    """Percentile intervals for the metrics of ``BOOTSTRAP_METRICS`` present in ``exact``
    (their exact values); ``confusion`` is (tp, fp) at the threshold, for F1. Both classes
    must be present."""
    rng = np.random.default_rng(seed)
    pos, neg = _pooled(stats)
    positives, negatives = float(pos.sum()), float(neg.sum())
    if _separated(stats):
        # Every positive above every negative: so is every stratified redraw, and AP, KS and
        # the break-even point are 1 in each (pooling could mix the classes at the cut).
        samples = {name: np.ones(replicates) for name in CURVE_METRICS}
    else:
        samples = _curve_draws(rng, pos, neg, replicates)
        pooled = _curve_metrics(pos[None, ::-1], neg[None, ::-1], positives, negatives)
        for name in CURVE_METRICS:
            samples[name] += exact[name] - float(pooled[name][0])  # exact - pooled value
    samples["f1"] = _f1_draws(rng, confusion, positives, negatives, replicates)
    intervals: dict[str, Interval] = {}
    for name in BOOTSTRAP_METRICS:
        if exact.get(name) is None:
            continue
        # Every one of these metrics lies in [0, 1]; the pooling shift must not push it out.
        clipped = np.clip(samples[name], 0.0, 1.0)
        intervals[name] = _percentile(clipped, level, replicates, seed)
    return intervals


def _curve_draws(
    rng: np.random.Generator, pos: Floats, neg: Floats, replicates: int
) -> dict[str, Floats]:
    """The curve metrics of ``replicates`` stratified redraws, in chunks of a few MB."""
    positives, negatives = float(pos.sum()), float(neg.sum())
    draws: dict[str, list[Floats]] = {name: [] for name in CURVE_METRICS}
    chunk = max(1, CHUNK_CELLS // pos.size)
    for start in range(0, replicates, chunk):
        size = min(chunk, replicates - start)
        pos_draw = _redraw(rng, pos, positives, size)
        neg_draw = _redraw(rng, neg, negatives, size)
        values = _curve_metrics(pos_draw[:, ::-1], neg_draw[:, ::-1], positives, negatives)
        for name in CURVE_METRICS:
            draws[name].append(values[name])
    return {name: np.concatenate(parts) for name, parts in draws.items()}


def _separated(stats: BinaryStats) -> bool:
    """Every positive scores above every negative."""
    has_pos, has_neg = np.flatnonzero(stats.pos), np.flatnonzero(stats.neg)
    return bool(has_neg[-1] < has_pos[0])


def _pooled(stats: BinaryStats) -> tuple[Floats, Floats]:
    """Class masses per distinct score (ascending), pooled into at most MAX_GROUPS groups of
    neighbouring scores with about equal total mass."""
    pos, neg = stats.pos, stats.neg
    if pos.size <= MAX_GROUPS:
        return pos, neg
    total = np.cumsum(pos + neg)
    cuts = np.searchsorted(total, np.linspace(0.0, total[-1], MAX_GROUPS + 1)[1:-1], "right")
    starts = np.unique(np.concatenate(([0], cuts)))
    starts = starts[starts < pos.size]
    return np.add.reduceat(pos, starts), np.add.reduceat(neg, starts)


def _redraw(rng: np.random.Generator, mass: Floats, total: float, size: int) -> Floats:
    """``size`` stratified redraws of one class: round(total) rows drawn with probability
    proportional to the mass at each score, each row carrying total / round(total)."""
    rows = max(1, round(total))
    if rows <= 4 * mass.size:  # few rows: draw them one by one and count them per score
        whole = mass.astype(np.int64)
        if np.array_equal(whole, mass):  # row counts (unweighted): draw row numbers
            group_of_row = np.repeat(np.arange(mass.size), whole)
            picks = group_of_row[rng.integers(0, rows, size=(size, rows))]
        else:
            cumulative = np.cumsum(mass)
            picks = np.searchsorted(cumulative, rng.random((size, rows)) * cumulative[-1], "right")
            np.minimum(picks, mass.size - 1, out=picks)
        picks += (np.arange(size) * mass.size)[:, None]
        counts = np.bincount(picks.ravel(), minlength=size * mass.size).reshape(size, -1)
    else:
        counts = rng.multinomial(rows, mass / total, size=size)
    scaled: Floats = counts.astype(np.float64) * (total / rows)
    return scaled


def _curve_metrics(
    pos: Floats, neg: Floats, positives: float, negatives: float
) -> dict[str, Floats]:
    """Average precision, break-even point and KS of each row of (replicates x scores) class
    masses, the scores in descending order; the class totals are the same in every row."""
    tps, fps = np.cumsum(pos, axis=1), np.cumsum(neg, axis=1)
    taken = tps + fps
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(pos > 0, tps / taken, 0.0)
    average_precision = (pos * precision).sum(axis=1) / positives
    ks = np.abs(tps / positives - fps / negatives).max(axis=1)
    # Break-even point: precision at k = P, the tie block at the cut counted pro rata.
    at = (taken < positives).sum(axis=1)
    rows = np.arange(pos.shape[0])
    before_tp = np.where(at > 0, tps[rows, at - 1], 0.0)
    before = np.where(at > 0, taken[rows, at - 1], 0.0)
    block = pos[rows, at] + neg[rows, at]
    found = before_tp + pos[rows, at] * (positives - before) / block
    return {
        "average_precision": average_precision,
        "break_even_point": found / positives,
        "ks_statistic": ks,
    }


def _f1_draws(
    rng: np.random.Generator,
    confusion: tuple[float, float],
    positives: float,
    negatives: float,
    replicates: int,
) -> Floats:
    """F1 = 2 TP / (TP + FP + P) of stratified redraws: TP and FP are binomial."""
    tp, fp = confusion
    pos_rows, neg_rows = max(1, round(positives)), max(1, round(negatives))
    tp_draw = rng.binomial(pos_rows, min(1.0, tp / positives), replicates) * (positives / pos_rows)
    fp_draw = rng.binomial(neg_rows, min(1.0, fp / negatives), replicates) * (negatives / neg_rows)
    f1: Floats = 2.0 * tp_draw / (tp_draw + fp_draw + positives)
    return f1


def _percentile(samples: Floats, level: float, replicates: int, seed: int) -> Interval:
    tail = (1.0 - level) / 2.0
    lower, upper = np.quantile(samples, [tail, 1.0 - tail])
    spread = float(np.std(samples, ddof=1)) if samples.size > 1 else math.nan
    return Interval(
        lower=float(lower),
        upper=float(upper),
        level=level,
        method="bootstrap-percentile",
        std_error=spread,
        replicates=replicates,
        seed=seed,
    )
