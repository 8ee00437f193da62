"""Task binary over ranges of the score axis: the exact result without any one place holding
every distinct score.

The rows are split by score into ranges (disjoint, each a stretch of the axis); each range's
state (its classes' distinct scores and masses) is held apart, on a machine of its own. Every
quantity of the binary suite is a sum, a maximum or a first-from-the-top over the sweep's
points in descending score order, and each point only needs, besides its own range, the class
totals of the ranges above it. So the result comes from three small passes over each range:

1. ``range_totals``, read from the range's classes (no sweep built), with its join: the
   range's class masses, its lowest and highest scores, the counts at the threshold, the
   calibration sums (per probability bin) and its first ROC point.
2. ``range_pass`` with the ``RangeContext`` from all totals (the mass above the range, the
   class totals, the curve marks it answers): the areas (AUC's pairs, the step-wise and the
   trapezoidal AP, the partial AUC), the maxima (precision, KS, Youden's J, F1), the head
   counts that fall in it, DeLong's sum of placements, its curve points.
3. ``range_finish`` with the global maxima and the AUC from all passes: the envelope areas
   (11-point and all-point AP), the first thresholds at the maxima, DeLong's variance sums.

``combine_ranges`` adds up the summaries into the ``EvaluationResult`` that ``evaluate`` gives
on all rows: the same metrics, curves, intervals, undefined values and warnings (with integer
weights the sums run over the same numbers in another grouping: equal to the last bits for
counts, within rounding for fractional weights). Bootstrap intervals need every row at once
and are not computed here (a warning says so); hard predictions are not taken.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

from evalserve.core._inner import inner
from evalserve.core._options import Options
from evalserve.core._result import EvaluationResult, MetricSink
from evalserve.core.binary._calibration import (
    NOT_PROBABILITIES,
    BinSums,
    add_calibration_curve,
    bin_sums,
    calibration_gap,
    class_sums,
)
from evalserve.core.binary._catalog import CONVENTIONS
from evalserve.core.binary._classes import ClassScores
from evalserve.core.binary._intervals import auc_interval_of
from evalserve.core.binary._ndcg import head_dcg, write_ndcg
from evalserve.core.binary._operating import (
    Classes,
    Hits,
    Point,
    best_precision,
    eer_point,
    eer_sides,
    flagged_point,
    precision_point,
    recall_point,
    specificity_point,
    tpr_point,
    write_eer,
    write_flagged,
    write_precision,
    write_recall,
    write_specificity,
    write_tpr,
)
from evalserve.core.binary._points import Arc, every_point, points_at
from evalserve.core.binary._range_rows import RangeClasses
from evalserve.core.binary._ranking import TIE_TOLERANCE
from evalserve.core.binary._suite import (
    curves_of_points,
    head_cut,
    head_metric_names,
    threshold_metrics,
    undefine_ranking,
)
from evalserve.core.binary._sweep import Sweep, place
from evalserve.core.binary._threshold import NO_POSITIVES

__all__ = [
    "RangeContext",
    "RangeFinish",
    "RangePass",
    "RangeTotals",
    "bests_of",
    "combine_ranges",
    "range_context",
    "range_finish",
    "range_pass",
    "range_totals",
    "ranges_result",
]

Floats = NDArray[np.float64]
Cuts = tuple[float, ...]
_T = TypeVar("_T")


def _floor(best: float) -> float:
    return best - TIE_TOLERANCE * abs(best)


# --- 1: totals ------------------------------------------------------------------------------


@dataclass(frozen=True)
class RangeTotals:
    positives: float
    negatives: float
    n_rows: int
    weighted: bool
    n_distinct: int
    pos_range: tuple[float, float]  # (lowest, highest) positive score; (inf, -inf) if none
    neg_range: tuple[float, float]
    tp_at: float  # positive and negative mass at or above the threshold
    fp_at: float
    log_sum: float  # calibration sums: mass * log(p of the own class), mass * squared miss
    square_sum: float
    bins: BinSums  # per calibration bin: positive mass, mass, mass * score, rows or not
    first_point: tuple[float, float]  # (TP, FP) of the range's highest distinct score
    neg_below_hits: float  # negative mass below the range's lowest positive (all without one)

    @property
    def lowest(self) -> float:
        return min(self.pos_range[0], self.neg_range[0])

    @property
    def highest(self) -> float:
        return max(self.pos_range[1], self.neg_range[1])

    @property
    def empty(self) -> bool:
        return self.n_distinct == 0


def range_totals(classes: RangeClasses, options: Options) -> RangeTotals:
    """Pass 1 over one range's classes (canonical, distinct ascending scores) and the
    positives' places among the negatives: read from them, no sweep built."""
    positives, negatives = classes.positives, classes.negatives
    below, tied = classes.placement
    n_distinct = positives.size + negatives.size - int(np.count_nonzero(tied))
    tp_at = fp_at = 0.0
    if n_distinct:
        threshold = np.array([options.threshold])
        tp_at = float(positives.mass_at_or_above(np.searchsorted(positives.scores, threshold))[0])
        fp_at = float(negatives.mass_at_or_above(np.searchsorted(negatives.scores, threshold))[0])
    bins = options.calibration_bins
    sums = BinSums(np.zeros(bins), np.zeros(bins), np.zeros(bins), np.zeros(bins, dtype=np.bool_))
    log_sum = square_sum = 0.0
    pos_range, neg_range = _span(positives), _span(negatives)
    lowest, highest = min(pos_range[0], neg_range[0]), max(pos_range[1], neg_range[1])
    if n_distinct == 0 or (lowest >= 0 and highest <= 1):
        for side, positive in ((positives, True), (negatives, False)):
            logs, squares = class_sums(side, positive=positive)
            log_sum += logs
            square_sum += squares
        sums = bin_sums(positives, negatives, bins)
    first = (0.0, 0.0)
    below_hits = negatives.total
    if positives.size:  # the top hit's (TP, FP); the negatives under the lowest hit
        top_hit = (
            float(positives.mass_at_or_above(np.array([positives.size - 1]))[0]),
            float(negatives.mass_at_or_above(below[-1:])[0]),
        )
        below_hits -= float(negatives.mass_at_or_above(below[:1])[0])
    if negatives.size and (not positives.size or negatives.scores[-1] > positives.scores[-1]):
        first = (0.0, float(negatives.mass_at_or_above(np.array([negatives.size - 1]))[0]))
    elif positives.size:
        first = top_hit
    return RangeTotals(
        positives=positives.total,
        negatives=negatives.total,
        n_rows=classes.n_rows,
        weighted=classes.weighted,
        n_distinct=n_distinct,
        pos_range=pos_range,
        neg_range=neg_range,
        tp_at=tp_at,
        fp_at=fp_at,
        log_sum=log_sum,
        square_sum=square_sum,
        bins=sums,
        first_point=first,
        neg_below_hits=below_hits,
    )


def _span(side: ClassScores) -> tuple[float, float]:
    if not side.size:
        return (math.inf, -math.inf)
    return (float(side.scores[0]), float(side.scores[-1]))


# --- the context of one range ------------------------------------------------------------------


@dataclass(frozen=True)
class RangeContext:
    positives: float  # P and N of all ranges
    negatives: float
    pos_above: float  # the class masses of the ranges above this one
    neg_above: float
    last_hit_fps: float  # FP at the lowest positive above this range (0 when none)
    lowest_above: float  # the lowest score of the ranges above (inf when none)
    marks: Floats | None  # the curve marks this range answers; None: every point
    head: Cuts  # head cuts (head_k capped, then P for the break-even point)
    recall_targets: Cuts = ()  # options.precision_at_recall, for the finish


def range_context(totals: Sequence[RangeTotals], position: int, options: Options) -> RangeContext:
    """The context of range ``position``; ``totals`` are every range's, from the highest scores
    down."""
    above = totals[:position]
    positives = sum(t.positives for t in totals)
    negatives = sum(t.negatives for t in totals)
    pos_above = sum(t.positives for t in above)
    neg_above = sum(t.negatives for t in above)
    last_hit_fps = 0.0
    tail = 0.0
    for t in reversed(above):
        if t.positives > 0:
            last_hit_fps = neg_above - tail - t.neg_below_hits
            break
        tail += t.negatives
    lowest_above = min((t.lowest for t in above if not t.empty), default=math.inf)
    head = (*(head_cut(k, positives + negatives) for k in options.head_k), positives)
    return RangeContext(
        positives,
        negatives,
        pos_above,
        neg_above,
        last_hit_fps,
        lowest_above,
        _marks(totals, position, options, positives, negatives),
        head,
        options.precision_at_recall,
    )


def _marks(
    totals: Sequence[RangeTotals], position: int, options: Options, p: float, n: float
) -> Floats | None:
    """The marks along the curve's arc (TP N + FP P) whose first point at or past them lies in
    this range: as ``curve_points`` samples the whole curve."""
    wanted = options.max_curve_points - 1
    if options.max_curve_points == 0 or sum(t.n_distinct for t in totals) <= wanted:
        return None
    if wanted == 1:
        is_last = all(t.empty for t in totals[position + 1 :])
        return np.array([2 * p * n]) if is_last and not totals[position].empty else np.empty(0)
    top = next(t for t in totals if not t.empty)
    first_arc = top.first_point[0] * n + top.first_point[1] * p
    marks = np.linspace(first_arc, p * n + n * p, wanted)
    pos_above = sum(t.positives for t in totals[:position])
    neg_above = sum(t.negatives for t in totals[:position])
    start = pos_above * n + neg_above * p if position else -math.inf
    current = totals[position]
    if all(t.empty for t in totals[position + 1 :]):
        stop = math.inf
    else:
        stop = (pos_above + current.positives) * n + (neg_above + current.negatives) * p
    return marks[(marks > start) & (marks <= stop)]


# --- 2: the pass ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RangePass:
    auc_pairs: float = 0.0
    ap_sum: float = 0.0
    trapezoid: float = 0.0
    partial_area: float = 0.0
    v10_sum: float = 0.0
    max_precision: float = -math.inf
    ks_max: float = -math.inf
    youden_max: float = -math.inf
    f1_max: float = -math.inf
    last_hit_fps: float | None = None  # FP at the range's lowest positive
    head: tuple[float | None, ...] = ()  # per cut: the positives at it, when it falls here
    dcg: tuple[float, ...] = ()  # per head_k: the DCG of the range's hits above the cut
    points: tuple[Floats, Floats, Floats] = field(
        default_factory=lambda: (np.empty(0), np.empty(0), np.empty(0))
    )
    operating: RangeOperating | None = None


@dataclass(frozen=True)
class RangeOperating:
    """The range's candidates for the operating points (the searches of ``_operating`` on the
    range, the mass above it added): per target of each option, in the options' order."""

    recall: tuple[Point | None, ...] = ()
    best_precision: tuple[float, ...] = ()
    tpr: tuple[Point | None, ...] = ()
    specificity: tuple[Point | None, ...] = ()
    flagged: tuple[Point | None, ...] = ()
    eer_before: Point | None = None
    eer_after: Point | None = None


@dataclass(frozen=True)
class _Global:
    """The range's sweep with the mass of the ranges above added: the whole sweep's arrays
    at this range's hits."""

    s: Sweep
    tps: Floats
    fps: Floats
    tps_above: Floats
    fps_above: Floats

    @classmethod
    def of(cls, s: Sweep, context: RangeContext) -> _Global:
        """(Nothing above the top range: its own arrays, as adding 0 gives them.)"""
        pos, neg = context.pos_above, context.neg_above
        return cls(
            s,
            s.tps + pos if pos else s.tps,
            s.fps + neg if neg else s.fps,
            s.tps_above + pos if pos else s.tps_above,
            s.fps_above + neg if neg else s.fps_above,
        )

    def hits(self) -> Hits:
        """The hits with the mass above the range added (``Hits.of`` from these arrays)."""
        return Hits(self.s.thresholds, self.tps, self.fps)

    def before_valid(self, context: RangeContext) -> bool:
        """Whether the point just above the range's top hit exists (any mass above it)."""
        return bool(context.pos_above > 0 or self.fps_above[0] > 0)


def range_pass(s: Sweep, context: RangeContext, options: Options) -> RangePass:
    """Pass 2 over one range."""
    p, n = context.positives, context.negatives
    g = _Global.of(s, context)
    head = tuple(_head_here(g, k) for k in context.head)
    dcg = head_dcg(g, s.pos, context.head[:-1])
    operating = _operating_here(g, context, options)
    if not s.size or p == 0 or n == 0:  # no hits here, or no ranking at all: heads only
        one_class = p == 0 or n == 0
        return RangePass(
            head=head,
            dcg=dcg,
            points=_NO_POINTS if one_class else _points(s, g, context),
            operating=operating,
        )
    points = _points(s, g, context)
    return RangePass(
        **_pass_sums(g, context),
        partial_area=(
            0.0 if options.max_fpr is None else _partial_area(g, context, options.max_fpr)
        ),
        last_hit_fps=float(g.fps[-1]),
        head=head,
        dcg=dcg,
        points=points,
        operating=operating,
    )


# Hits a block of the passes' arithmetic takes: its temporaries stay in the CPU's cache (a
# pass over whole arrays of millions of hits ran at the speed of memory).
PASS_BLOCK = 1 << 15


def _blocks(size: int) -> list[slice]:
    return [slice(a, min(a + PASS_BLOCK, size)) for a in range(0, size, PASS_BLOCK)]


@dataclass(frozen=True)
class _Block:
    """One block of a range's hits: the global arrays' slices; what else a pass reads of
    them is computed when that pass asks (the finish's sums never read the Youden
    statistics, the search for the F1 threshold reads F1 alone)."""

    g: _Global
    block: slice
    context: RangeContext
    tps: Floats
    fps: Floats
    tps_above: Floats
    fps_above: Floats
    pos: Floats

    @classmethod
    def of(cls, g: _Global, block: slice, context: RangeContext) -> _Block:
        return cls(
            g, block, context, g.tps[block], g.fps[block], g.tps_above[block],
            g.fps_above[block], g.s.pos[block],
        )  # fmt: skip

    def neg(self) -> Floats:
        return self.g.s.neg_in(self.block.start, self.block.stop)

    def precision(self) -> Floats:
        return self.tps / (self.tps + self.fps)

    def f1(self, p: float) -> Floats:
        return self.tps / (self.tps + self.fps + p)

    def youden(self) -> tuple[Floats, Floats]:
        """TP N - FP P just before each hit (-inf before the top hit when no point is there)
        and at it."""
        p, n = self.context.positives, self.context.negatives
        before = self.tps_above * n - self.fps_above * p
        if self.block.start == 0 and not self.g.before_valid(self.context):
            before[0] = -np.inf  # nothing above the top hit: no point before it
        return before, self.tps * n - self.fps * p


def _distance(before: Floats) -> Floats:
    """|J| before each hit (-inf where ``before`` is: no point there)."""
    distance = np.abs(before)
    distance[before == -np.inf] = -np.inf
    return distance


def _pass_sums(g: _Global, context: RangeContext) -> dict[str, float]:
    """Pass 2's sums and maxima over the range's hits (``RangePass``'s fields of those names),
    block by block (the sums regrouped: as the ranges regroup them)."""
    p, n = context.positives, context.negatives
    auc_pairs = ap_sum = trapezoid = v10_sum = 0.0
    max_precision = ks_max = youden_max = f1_max = -math.inf
    for block in _blocks(g.s.size):
        b = _Block.of(g, block, context)
        precision, neg = b.precision(), b.neg()
        above = b.tps_above + b.fps_above
        precision_before = np.divide(b.tps_above, above, out=np.ones_like(above), where=above > 0)
        auc_pairs += inner(b.pos, n - b.fps) + 0.5 * inner(b.pos, neg)
        ap_sum += inner(b.pos, precision)
        trapezoid += inner((b.tps - b.tps_above) / p, (precision_before + precision) / 2)
        v10_sum += inner(b.pos, (n - b.fps + 0.5 * neg) / n)
        max_precision = max(max_precision, float(precision.max()))
        before, at_hit = b.youden()
        youden_max = max(youden_max, float(at_hit.max()), float(before.max()))
        ks_max = max(ks_max, float(np.abs(at_hit).max()), float(_distance(before).max()))
        f1_max = max(f1_max, float(b.f1(p).max()))
    return {
        "auc_pairs": auc_pairs, "ap_sum": ap_sum, "trapezoid": trapezoid, "v10_sum": v10_sum,
        "max_precision": max_precision, "ks_max": ks_max, "youden_max": youden_max,
        "f1_max": f1_max,
    }  # fmt: skip


def _operating_here(g: _Global, context: RangeContext, options: Options) -> RangeOperating:
    """The range's candidates for every operating point (see ``RangeOperating``)."""
    p, n, s = context.positives, context.negatives, g.s
    classes = Classes(s.positives, s.negatives, context.pos_above, context.neg_above)
    flagged = tuple(flagged_point(classes, q * (p + n)) for q in options.flagged_share)
    if p == 0 or n == 0:
        return RangeOperating(flagged=flagged)
    hits = g.hits()
    before, after = eer_sides(classes, p, n)
    return RangeOperating(
        recall=tuple(recall_point(hits, k) for k in options.recall_at_precision),
        best_precision=tuple(best_precision(hits, k * p) for k in options.precision_at_recall),
        tpr=tuple(tpr_point(hits, k * n) for k in options.tpr_at_fpr),
        specificity=tuple(
            specificity_point(hits, k * p) for k in options.specificity_at_sensitivity
        ),
        flagged=flagged,
        eer_before=before,
        eer_after=after,
    )


_NO_POINTS = (np.empty(0), np.empty(0), np.empty(0))


def _head_here(g: _Global, k: float) -> float | None:
    """``head_counts`` of the whole sweep when its first hit reaching ``k`` is in this range."""
    first = int(np.searchsorted(g.tps + g.fps, k, side="left"))
    if first >= g.s.size:
        return None
    above_pos = float(g.tps_above[first])
    above_mass = above_pos + float(g.fps_above[first])
    if above_mass >= k:
        return above_pos
    group = float(g.s.pos[first] + g.s.neg_in(first, first + 1)[0])
    return above_pos + (k - above_mass) / group * float(g.s.pos[first])


def _partial_area(g: _Global, context: RangeContext, max_fpr: float) -> float:
    """The range's hits' share of ``partial_roc_auc``'s area (before its scaling); the flat
    run after the lowest hit is added by ``combine_ranges``."""
    limit = max_fpr * context.negatives
    flat_start = np.empty(g.s.size)
    flat_start[0] = context.last_hit_fps
    flat_start[1:] = g.fps[:-1]
    area = inner(np.maximum(np.minimum(g.fps_above, limit) - flat_start, 0.0), g.tps_above)
    width = np.maximum(np.minimum(g.fps, limit) - g.fps_above, 0.0)
    rise = np.divide(
        (g.tps - g.tps_above) * width,
        g.fps - g.fps_above,
        out=g.tps - g.tps_above,
        where=g.fps > g.fps_above,
    )
    return area + inner(width, g.tps_above + 0.5 * rise)


def _points(s: Sweep, g: _Global, context: RangeContext) -> tuple[Floats, Floats, Floats]:
    """The range's curve points: all of them, or the first at or past each of its marks."""
    if context.marks is not None and not context.marks.size:
        return (np.empty(0), np.empty(0), np.empty(0))
    if context.marks is None:
        thresholds, tps, fps = every_point(s)
    else:  # found by searches, as the one-shot thinning finds them: no point built for all
        arc = Arc(context.positives, context.negatives, context.pos_above, context.neg_above)
        thresholds, tps, fps = points_at(s, context.marks, arc)
    return thresholds, tps + context.pos_above, fps + context.neg_above


# --- 3: the finish --------------------------------------------------------------------------


@dataclass(frozen=True)
class Bests:
    """What pass 3 needs from every pass 2: the maxima, DeLong's AUC, and per range the
    highest precision of the ranges below it."""

    ks: float
    youden: float
    f1: float
    auc: float
    precision_below: tuple[float, ...]
    # Per range, its own maxima (KS, Youden's J, F1) from pass 2: a range whose own maximum
    # is below a global one's tie floor has no first candidate at it, so pass 3 skips the
    # search (the same blocks and arithmetic in both passes: the same values).
    range_maxima: tuple[tuple[float, float, float], ...]
    precision_at_recall: tuple[float, ...] = ()  # per target: the best precision of all ranges


@dataclass(frozen=True)
class RangeFinish:
    ap_all_sum: float = 0.0
    ap_11: tuple[float | None, ...] = (None,) * 11  # envelope at the first hit of each level
    ks_threshold: float | None = None
    youden_threshold: float | None = None
    f1_threshold: float | None = None
    s10_sum: float = 0.0
    s01_sum: float = 0.0
    precision_points: tuple[Point | None, ...] = ()  # per precision_at_recall target


def bests_of(passes: Sequence[RangePass], positives: float) -> Bests:
    below = []
    running = -math.inf
    for done in reversed(passes):
        below.append(running)
        running = max(running, done.max_precision)
    auc = min(1.0, max(0.0, sum(done.v10_sum for done in passes) / positives))
    operating = [done.operating for done in passes if done.operating is not None]
    targets = len(operating[0].best_precision) if operating else 0
    return Bests(
        range_maxima=tuple((done.ks_max, done.youden_max, done.f1_max) for done in passes),
        ks=max(max(done.ks_max for done in passes), 0.0),
        youden=max(done.youden_max for done in passes),
        f1=max(done.f1_max for done in passes),
        auc=auc,
        precision_below=tuple(reversed(below)),
        precision_at_recall=tuple(
            max(each.best_precision[i] for each in operating) for i in range(targets)
        ),
    )


def range_finish(s: Sweep, context: RangeContext, bests: Bests, position: int) -> RangeFinish:
    """Pass 3 over one range."""
    p, n, auc = context.positives, context.negatives, bests.auc
    if not s.size:
        at = context.pos_above / p - auc
        return RangeFinish(
            s01_sum=s.n_negative * at * at,
            precision_points=(None,) * len(bests.precision_at_recall),
        )
    g = _Global.of(s, context)
    hits = g.hits()
    precision_points = tuple(
        precision_point(hits, k * p, best)
        for k, best in zip(context.recall_targets, bests.precision_at_recall, strict=True)
    )
    wanted = np.arange(11) * p
    firsts = np.searchsorted(10 * g.tps, wanted, side="left")  # one pass for the 11 levels
    at_first: dict[int, float] = {}
    blocks = _blocks(s.size)
    # The envelope (the highest precision at or below each hit) from the bottom block up, the
    # highest of the blocks below carried in.
    carry, ap_all_sum, s10_sum, s01_sum = bests.precision_below[position], 0.0, 0.0, 0.0
    for block in reversed(blocks):
        b = _Block.of(g, block, context)
        envelope = np.maximum.accumulate(b.precision()[::-1])[::-1]
        np.maximum(envelope, carry, out=envelope)
        carry = float(envelope[0])
        ap_all_sum += inner(b.pos, envelope)
        for first in firsts[(firsts >= block.start) & (firsts < block.stop)]:
            at_first[int(first)] = float(envelope[first - block.start])
        neg = b.neg()
        v10 = (n - b.fps + 0.5 * neg) / n - auc
        s10_sum += inner(b.pos, v10 * v10)
        # The negatives between each hit and the one before it (above the top hit: all of
        # the range's above it), at the TP there; the negatives tied with each hit.
        fps_above, fps = s.fps_above[block], s.fps[block]  # the range's own: differences
        between = np.empty(fps.size)
        between[:1] = fps_above[:1] - (s.fps[block.start - 1] if block.start else 0.0)
        np.subtract(fps_above[1:], fps[:-1], out=between[1:])
        at_between = b.tps_above / p - auc
        at_tie = (b.tps_above + 0.5 * b.pos) / p - auc
        s01_sum += inner(between, at_between * at_between) + inner(neg, at_tie * at_tie)
    at_last = g.tps[-1] / p - auc  # the negatives below the lowest hit
    s01_sum += (s.n_negative - s.fps[-1]) * at_last * at_last
    # Which of the global maxima (KS, Youden's J, F1) this range's own maximum reaches.
    own = [
        maximum >= _floor(best)
        for maximum, best in zip(
            bests.range_maxima[position], (bests.ks, bests.youden, bests.f1), strict=True
        )
    ]
    levels: list[float | None] = []
    for level in range(11):
        if context.pos_above > 0 and 10 * context.pos_above >= wanted[level]:
            levels.append(None)  # its first hit lies above this range
            continue
        levels.append(at_first.get(int(firsts[level])))
    return RangeFinish(
        ap_all_sum=ap_all_sum,
        ap_11=tuple(levels),
        ks_threshold=_first_at(g, blocks, context, bests.ks, distance=True) if own[0] else None,
        youden_threshold=(
            _first_at(g, blocks, context, bests.youden, distance=False) if own[1] else None
        ),
        f1_threshold=_first_f1(g, blocks, context, bests.f1) if own[2] else None,
        s10_sum=s10_sum,
        s01_sum=s01_sum,
        precision_points=precision_points,
    )


def _first_at(
    g: _Global, blocks: list[slice], context: RangeContext, best: float, *, distance: bool
) -> float | None:
    """The threshold of the range's first candidate (before its hit 0, hit 0, before hit 1,
    ...) whose Youden statistic (``distance``: its absolute value, KS) ties with ``best``;
    None when none does. Block by block from the top, to the first block that has one."""
    s, floor = g.s, _floor(best)
    for block in blocks:
        before, at_hit = _Block.of(g, block, context).youden()
        if distance:
            before, at_hit = _distance(before), np.abs(at_hit)
        hits_before = np.flatnonzero(before >= floor)
        hits_at = np.flatnonzero(at_hit >= floor)
        if not hits_before.size and not hits_at.size:
            continue
        size = block.stop - block.start
        first_before = int(hits_before[0]) if hits_before.size else size
        first_hit = int(hits_at[0]) if hits_at.size else size
        if first_before <= first_hit:
            at = block.start + first_before
            above = s.above_threshold(at)
            return min(above, context.lowest_above) if at == 0 else above
        return float(s.thresholds[block.start + first_hit])
    return None


def _first_f1(g: _Global, blocks: list[slice], context: RangeContext, best: float) -> float | None:
    floor = _floor(best)
    for block in blocks:
        found = np.flatnonzero(_Block.of(g, block, context).f1(context.positives) >= floor)
        if found.size:
            return float(g.s.thresholds[block.start + found[0]])
    return None


# --- the result -----------------------------------------------------------------------------


def combine_ranges(
    totals: Sequence[RangeTotals],
    contexts: Sequence[RangeContext],
    passes: Sequence[RangePass],
    finishes: Sequence[RangeFinish],
    bests: Bests | None,
    options: Options,
) -> EvaluationResult:
    """The result of all rows from every range's summaries (ranges from the highest scores
    down), as ``evaluate("binary", ...)`` gives it."""
    n_rows = sum(t.n_rows for t in totals)
    positives = sum(t.positives for t in totals)
    negatives = sum(t.negatives for t in totals)
    sink = MetricSink()
    sink.set("n_samples", n_rows)
    tp = sum(t.tp_at for t in totals)
    fp = sum(t.fp_at for t in totals)
    tn, fn = negatives - fp, positives - tp
    threshold_metrics(sink, (tp, fp, tn, fn), options)
    curves = {}
    lowest = min(t.lowest for t in totals)
    if positives == 0 or negatives == 0:
        undefine_ranking(sink, positives, options)
    else:
        assert bests is not None
        curves = _ranking(sink, totals, passes, finishes, bests, options, lowest)
    _flagged(sink, passes, options, positives, negatives)
    _head(sink, contexts, passes, positives, negatives, options)
    write_ndcg(sink, options.head_k, [done.dcg for done in passes], positives, negatives)
    if positives + negatives > 0:
        sums = _calibration(sink, totals, positives + negatives, lowest)
        add_calibration_curve(curves, sums, options.max_curve_points)
    return EvaluationResult(
        task="binary",
        n_samples=n_rows,
        metrics=sink.metrics,
        undefined=sink.undefined,
        curves=curves,
        intervals=sink.intervals,
        conventions=dict(CONVENTIONS),
        warnings=sink.warnings,
    )


def _ranking(
    sink: MetricSink,
    totals: Sequence[RangeTotals],
    passes: Sequence[RangePass],
    finishes: Sequence[RangeFinish],
    bests: Bests,
    options: Options,
    lowest: float,
) -> dict[str, dict[str, Floats]]:
    p = sum(t.positives for t in totals)
    n = sum(t.negatives for t in totals)
    sink.set("roc_auc", sum(done.auc_pairs for done in passes) / (p * n))
    if options.max_fpr is not None:
        area = sum(done.partial_area for done in passes)
        last = [done.last_hit_fps for done in passes if done.last_hit_fps is not None][-1]
        limit = options.max_fpr * n
        area += max(limit - last, 0.0) * p
        area /= p * n
        min_area = 0.5 * options.max_fpr**2
        sink.set("roc_auc_partial", 0.5 * (1 + (area - min_area) / (options.max_fpr - min_area)))
    levels = [_first([f.ap_11[i] for f in finishes]) for i in range(11)]
    sink.set("average_precision", sum(done.ap_sum for done in passes) / p)
    sink.set("pr_auc_trapezoid", sum(done.trapezoid for done in passes))
    sink.set("ap_11_point", sum(level for level in levels if level is not None) / 11)
    sink.set("ap_all_point", sum(f.ap_all_sum for f in finishes) / p)
    break_even = _first([done.head[-1] for done in passes])
    sink.set("break_even_point", (p if break_even is None else break_even) / p)
    sink.set("ks_statistic", bests.ks / (p * n))
    sink.set("ks_threshold", _first_or([f.ks_threshold for f in finishes], lowest))
    sink.set("optimal_threshold_youden", _first_or([f.youden_threshold for f in finishes], lowest))
    sink.set("optimal_threshold_f1", _first_or([f.f1_threshold for f in finishes], lowest))
    _delong(sink, totals, finishes, bests, options, p, n)
    _operating(sink, passes, finishes, options, p, n)
    if options.bootstrap_replicates:
        sink.warn(
            "no bootstrap intervals: the bootstrap draws from every row at once, which the "
            "ranges path never holds"
        )
    if options.max_curve_points == 0:
        return {}
    thresholds = np.concatenate([done.points[0] for done in passes])
    tps = np.concatenate([done.points[1] for done in passes])
    fps = np.concatenate([done.points[2] for done in passes])
    return curves_of_points(thresholds, tps, fps, p, n)


def _operating(
    sink: MetricSink,
    passes: Sequence[RangePass],
    finishes: Sequence[RangeFinish],
    options: Options,
    p: float,
    n: float,
) -> None:
    """The operating points from every range's candidates: the lowest candidate (the highest
    recall or TPR), the highest one (the fewest false positives), as each search asks."""
    found = [done.operating for done in passes if done.operating is not None]
    for i, k in enumerate(options.recall_at_precision):
        write_recall(sink, k, _last([each.recall[i] for each in found]), p)
    for i, k in enumerate(options.precision_at_recall):
        write_precision(sink, k, _last([f.precision_points[i] for f in finishes]))
    for i, k in enumerate(options.tpr_at_fpr):
        write_tpr(sink, k, _last([each.tpr[i] for each in found]), p)
    for i, k in enumerate(options.specificity_at_sensitivity):
        candidates = [each.specificity[i] for each in found if each.specificity[i] is not None]
        fewest = min((point.fp for point in candidates if point is not None), default=None)
        write_specificity(
            sink, k, _last([point for point in candidates if point and point.fp == fewest]), n
        )
    before = _last([each.eer_before for each in found])
    after = _first([each.eer_after for each in found])
    write_eer(sink, eer_point(before, after, p, n), p, n)


def _last(points: Sequence[Point | None]) -> Point | None:
    return next((point for point in reversed(points) if point is not None), None)


def _flagged(
    sink: MetricSink, passes: Sequence[RangePass], options: Options, p: float, n: float
) -> None:
    found = [done.operating for done in passes if done.operating is not None]
    points = {
        q: _last([each.flagged[i] for each in found]) for i, q in enumerate(options.flagged_share)
    }
    write_flagged(sink, options, None, total=p + n, positives=p, points=points)


def _delong(
    sink: MetricSink,
    totals: Sequence[RangeTotals],
    finishes: Sequence[RangeFinish],
    bests: Bests,
    options: Options,
    p: float,
    n: float,
) -> None:
    pos_low = min(t.pos_range[0] for t in totals)
    pos_high = max(t.pos_range[1] for t in totals)
    neg_low = min(t.neg_range[0] for t in totals)
    neg_high = max(t.neg_range[1] for t in totals)
    if neg_high < pos_low or pos_high < neg_low:  # separated: every placement 1 (or 0)
        auc, s10, s01 = (1.0 if neg_high < pos_low else 0.0), 0.0, 0.0
    else:
        auc = bests.auc
        s10 = sum(f.s10_sum for f in finishes)
        s01 = sum(f.s01_sum for f in finishes)
    variance = max(0.0, s10 / (p - 1.0) / p + s01 / (n - 1.0) / n) if p > 1 and n > 1 else 0.0
    interval = auc_interval_of(auc, variance, p, n, options.confidence_level, options.auc_interval)
    if isinstance(interval, str):
        sink.warn(f"no interval for roc_auc: {interval}")
    else:
        sink.intervals["roc_auc"] = interval


def _head(
    sink: MetricSink,
    contexts: Sequence[RangeContext],
    passes: Sequence[RangePass],
    positives: float,
    negatives: float,
    options: Options,
) -> None:
    total = positives + negatives
    for index, k in enumerate(options.head_k):
        precision_name, recall_name = head_metric_names(k)
        cut = contexts[0].head[index]
        if k > total:
            sink.warn(f"head_k {k:g} exceeds the total sample weight {total:g}; capped at it")
        found = _first([done.head[index] for done in passes])
        found = positives if found is None else found
        sink.set(precision_name, found / cut)
        sink.ratio(recall_name, found, positives, NO_POSITIVES)


def _calibration(
    sink: MetricSink, totals: Sequence[RangeTotals], total: float, lowest: float
) -> BinSums | None:
    highest = max(t.highest for t in totals)
    if lowest < 0 or highest > 1:
        for name in ("log_loss", "brier_score", "expected_calibration_error"):
            sink.undefine(name, NOT_PROBABILITIES)
        return None
    sink.set("log_loss", -sum(t.log_sum for t in totals) / total)
    sink.set("brier_score", sum(t.square_sum for t in totals) / total)
    sums = BinSums(
        np.sum([t.bins.positives for t in totals], axis=0),
        np.sum([t.bins.mass for t in totals], axis=0),
        np.sum([t.bins.expected for t in totals], axis=0),
        np.logical_or.reduce([t.bins.used for t in totals]),
    )
    sink.set("expected_calibration_error", calibration_gap(sums) / total)
    return sums


def _first(values: Sequence[_T | None]) -> _T | None:
    return next((value for value in values if value is not None), None)


def _first_or(values: Sequence[float | None], default: float) -> float:
    found = _first(values)
    return default if found is None else found


def ranges_result(
    ranges: Sequence[tuple[ClassScores, ClassScores, int, bool]], options: Options
) -> EvaluationResult:
    """The three passes and the sum, in this process: each range's (positives, negatives,
    rows, weighted), from the highest scores down. A distributed engine runs the same passes
    where the ranges live."""
    held = [
        RangeClasses(pos, neg, rows, weighted, place(pos, neg))
        for pos, neg, rows, weighted in ranges
    ]
    sweeps = [each.sweep() for each in held]
    totals = [range_totals(each, options) for each in held]
    contexts = [range_context(totals, i, options) for i in range(len(ranges))]
    passes = [range_pass(s, context, options) for s, context in zip(sweeps, contexts, strict=True)]
    positives = sum(t.positives for t in totals)
    negatives = sum(t.negatives for t in totals)
    bests = bests_of(passes, positives) if positives > 0 and negatives > 0 else None
    finishes = (
        [
            range_finish(s, context, bests, i)
            for i, (s, context) in enumerate(zip(sweeps, contexts, strict=True))
        ]
        if bests is not None
        else []
    )
    return combine_ranges(totals, contexts, passes, finishes, bests, options)
