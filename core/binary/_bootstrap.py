"""Bootstrap intervals for the metrics without a closed-form variance: average precision, F1,
KS, the break-even point, the operating points and the equal error rate.

An operating point's threshold is itself estimated from the data (the threshold where recall
first reaches r, or where precision still holds p): a Wilson interval of the recall at that
fixed threshold would ignore the threshold's own variation and be too narrow. The bootstrap
redraws the data, finds the operating point again in each replicate and so carries both.

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

from evalserve.core._options import Options
from evalserve.core._result_parts import Interval
from evalserve.core.binary._operating import TOLERANCE, operating_names, value_names
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
    options: Options | None = None,
) -> dict[str, Interval]:
    """Percentile intervals for the metrics of ``BOOTSTRAP_METRICS`` and the operating points
    of ``options`` present in ``exact`` (their exact values); ``confusion`` is (tp, fp) at the
    threshold, for F1. Both classes must be present. A replicate where no threshold holds the
    precision a recall_at_precision target asks counts as recall 0; an alert budget that some
    replicate cannot meet (its top scores' ties exceed it) gets no interval."""
    rng = np.random.default_rng(seed)
    pos, neg = _pooled(stats)
    positives, negatives = float(pos.sum()), float(neg.sum())
    separated = _separated(stats)
    samples = _curve_draws(rng, pos, neg, replicates, options)
    pooled = _curve_metrics(pos[None, ::-1], neg[None, ::-1], positives, negatives, options)
    for name, values in samples.items():
        shift = float(pooled[name][0])
        if exact.get(name) is not None and not math.isnan(shift):
            values += exact[name] - shift  # exact - pooled value
    if separated:
        # Every positive above every negative: so is every stratified redraw, and AP, KS, the
        # break-even point and the operating points but the budgets are perfect in each
        # (pooling could mix the classes at the cut).
        for name in (*CURVE_METRICS, *_perfect_names(options)):
            samples[name] = np.full(replicates, 0.0 if name == "equal_error_rate" else 1.0)
    samples["f1"] = _f1_draws(rng, confusion, positives, negatives, replicates)
    intervals: dict[str, Interval] = {}
    for name, values in samples.items():
        if exact.get(name) is None or np.isnan(values).any():
            continue
        # Every one of these metrics lies in [0, 1]; the pooling shift must not push it out.
        clipped = np.clip(values, 0.0, 1.0)
        intervals[name] = _percentile(clipped, level, replicates, seed)
    return intervals


def _perfect_names(options: Options | None) -> tuple[str, ...]:
    """The operating points that are 1 (the equal error rate: 0) when the classes separate."""
    if options is None:
        return ()
    names = [name for name in value_names(options) if "flagged_share" not in name]
    return tuple(names)


def _curve_draws(
    rng: np.random.Generator, pos: Floats, neg: Floats, replicates: int, options: Options | None
) -> dict[str, Floats]:
    """The curve metrics of ``replicates`` stratified redraws, in chunks of a few MB."""
    positives, negatives = float(pos.sum()), float(neg.sum())
    draws: dict[str, list[Floats]] = {}
    chunk = max(1, CHUNK_CELLS // pos.size)
    for start in range(0, replicates, chunk):
        size = min(chunk, replicates - start)
        pos_draw = _redraw(rng, pos, positives, size)
        neg_draw = _redraw(rng, neg, negatives, size)
        values = _curve_metrics(pos_draw[:, ::-1], neg_draw[:, ::-1], positives, negatives, options)
        for name, value in values.items():
            draws.setdefault(name, []).append(value)
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
    pos: Floats, neg: Floats, positives: float, negatives: float, options: Options | None = None
) -> dict[str, Floats]:
    """Average precision, break-even point, KS and (with ``options``) the operating points of
    each row of (replicates x scores) class masses, the scores in descending order; the class
    totals are the same in every row."""
    tps, fps = np.cumsum(pos, axis=1), np.cumsum(neg, axis=1)
    operating = (
        {} if options is None else _operating_metrics(tps, fps, positives, negatives, options)
    )
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
        **operating,
    }


def _operating_metrics(
    tps: Floats, fps: Floats, positives: float, negatives: float, options: Options
) -> dict[str, Floats]:
    """The operating points and the equal error rate of each row of cumulative class masses
    (descending scores), as ``_operating`` finds them on one curve; NaN where a replicate
    cannot reach a target. A column whose redrawn mass is 0 repeats its neighbour's point."""
    values: dict[str, Floats] = {}
    hit = tps > 0  # a point that flags a positive (flagging nothing is no threshold)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = tps / (tps + fps)
    for p in options.recall_at_precision:
        # A replicate where no threshold reaches precision p counts as recall 0, the value the
        # recall falls towards as the target slips out of reach (and torchmetrics' answer
        # there): the interval widens downwards instead of disappearing.
        met = hit & (tps * (1.0 + TOLERANCE) >= p * (tps + fps))
        values[operating_names("recall_at_precision", p)[0]] = (
            np.where(met, tps, 0.0).max(axis=1) / positives
        )
    for r in options.precision_at_recall:
        met = tps >= r * positives * (1.0 - TOLERANCE)
        values[operating_names("precision_at_recall", r)[0]] = np.where(
            met, precision, -np.inf
        ).max(axis=1)
    for f in options.tpr_at_fpr:
        met = hit & (fps <= f * negatives * (1.0 + TOLERANCE))
        most = np.where(met, tps, 0.0).max(axis=1)
        values[operating_names("tpr_at_fpr", f)[0]] = most / positives
    for s in options.specificity_at_sensitivity:
        met = tps >= s * positives * (1.0 - TOLERANCE)
        fewest = np.where(met, fps, np.inf).min(axis=1)
        values[operating_names("specificity_at_sensitivity", s)[0]] = 1.0 - fewest / negatives
    rows = np.arange(tps.shape[0])
    flagged = tps + fps
    for q in options.flagged_share:
        last = (flagged <= q * (positives + negatives) * (1.0 + TOLERANCE)).sum(axis=1) - 1
        at = np.maximum(last, 0)
        valid = (last >= 0) & (flagged[rows, at] > 0)
        names = operating_names("flagged_share", q)
        with np.errstate(invalid="ignore", divide="ignore"):
            values[names[2]] = np.where(valid, tps[rows, at] / flagged[rows, at], np.nan)
        values[names[3]] = np.where(valid, tps[rows, at] / positives, np.nan)
    # The equal error rate: FPR - FNR grows down the curve; of the two points around its sign
    # change the nearer one (the higher on a tie), never the start point.
    gap = fps * positives + tps * negatives - positives * negatives
    after = (gap < 0).sum(axis=1)
    before = np.maximum(after - 1, 0)
    take_before = (after > 0) & (np.abs(gap[rows, before]) <= np.abs(gap[rows, after]))
    at = np.where(take_before, before, after)
    fpr = fps[rows, at] / negatives
    fnr = (positives - tps[rows, at]) / positives
    values["equal_error_rate"] = (fpr + fnr) / 2.0
    return values


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
