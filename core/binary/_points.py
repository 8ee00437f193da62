"""The points of the ROC and PR curves: one per distinct score, or a thinned sample of them.

The full curve has a point at every distinct score of either class, from the top down. Without
building it, the sweep knows each point: a hit's point is its (TP, FP); a score that holds
negatives only, between hits k - 1 and k, has the TP above hit k and the FP of the negatives at
or above it. For transport the curve is thinned to points evenly spaced along its arc length
TP N + FP P (the L1 length of the ROC curve scaled by P N: strictly increasing), so steep and
flat stretches are sampled alike and the ROC and PR curves share thresholds; each sample is
found by a binary search among the hits, then among the negatives between two hits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from evalserve.core.binary._sweep import Sweep

__all__ = ["Arc", "curve_points", "every_point", "points_at"]

Floats = NDArray[np.float64]
Indices = NDArray[np.intp]
Bools = NDArray[np.bool_]
Points = tuple[Floats, Floats, Floats]  # thresholds (descending), TP, FP


def curve_points(sweep: Sweep, max_points: int) -> Points:
    """Every point when there are at most ``max_points``; else ``max_points`` evenly spaced
    along the arc, the first and the last included (only the last when there is room for one).
    """
    if sweep.n_distinct <= max_points:
        return every_point(sweep)
    if max_points == 1:
        return (
            np.array([sweep.lowest()]),
            np.array([sweep.n_positive]),
            np.array([sweep.n_negative]),
        )
    return _sampled(sweep, max_points)


def _segments(sweep: Sweep) -> tuple[Indices, Indices, Floats]:
    """Per gap between hits (above hit 0, between hits k - 1 and k, below the last hit): the
    range [start, stop) of negative positions in it, and the TP of its points."""
    hits = sweep.size
    start = np.empty(hits + 1, dtype=np.intp)
    stop = np.empty(hits + 1, dtype=np.intp)
    np.add(sweep.neg_from, sweep.tied, out=start[:-1])
    start[-1] = 0
    stop[0] = sweep.negatives.size
    stop[1:] = sweep.neg_from
    tp = np.append(sweep.tps_above, sweep.tps[-1] if hits else 0.0)
    return start, stop, tp


def _negative_fp(sweep: Sweep, position: Indices) -> Floats:
    """FP at the point of the negative score at ``position``: the negatives at or above it."""
    return sweep.negatives.mass_at_or_above(position)


def every_point(sweep: Sweep) -> Points:
    """The point of every distinct score, from the top down."""
    start, stop, tp = _segments(sweep)
    count = np.maximum(stop - start, 0)
    hits = sweep.size
    size = hits + int(count.sum())
    # Gap k's points come before hit k; a gap's points in descending score order.
    gap_offset = np.cumsum(count) - count + np.arange(hits + 1)
    hit_slot = gap_offset[:-1] + count[:-1]
    in_gap = np.ones(size, dtype=np.bool_)
    in_gap[hit_slot] = False
    gap_of = np.repeat(np.arange(hits + 1), count)
    rank_in_gap = np.arange(gap_of.size) - np.repeat(np.cumsum(count) - count, count)
    position = stop[gap_of] - 1 - rank_in_gap
    thresholds, tps, fps = np.empty(size), np.empty(size), np.empty(size)
    thresholds[hit_slot], tps[hit_slot], fps[hit_slot] = sweep.thresholds, sweep.tps, sweep.fps
    thresholds[in_gap] = sweep.negatives.scores[position]
    tps[in_gap] = tp[gap_of]
    fps[in_gap] = _negative_fp(sweep, position)
    return thresholds, tps, fps


@dataclass(frozen=True, slots=True)
class Arc:
    """How a point's arc is measured: (TP + ``pos_above``) ``negatives`` + (FP +
    ``neg_above``) ``positives``, the masses above and the class totals those of the whole
    curve (a range of the ranges path is a stretch of it)."""

    positives: float
    negatives: float
    pos_above: float = 0.0
    neg_above: float = 0.0

    def of(self, tps: Floats, fps: Floats) -> Floats:
        return (tps + self.pos_above) * self.negatives + (fps + self.neg_above) * self.positives


def _sampled(sweep: Sweep, max_points: int) -> Points:
    positives, negatives = sweep.n_positive, sweep.n_negative
    start, stop, _ = _gaps(sweep, np.zeros(1, dtype=np.intp))
    # The first point: the top hit, or the top negative when a negative scores higher.
    first_arc = (
        float(sweep.tps[0] * negatives + sweep.fps[0] * positives)
        if sweep.size and stop[0] == start[0]
        else float(_negative_fp(sweep, stop - 1)[0] * positives)
    )
    marks = np.linspace(first_arc, positives * negatives + negatives * positives, max_points)
    return points_at(sweep, marks, Arc(positives, negatives))


def points_at(sweep: Sweep, marks: Floats, arc: Arc) -> Points:
    """The first point (from the top) whose arc is at or past each of ``marks`` (ascending),
    each once; a mark past the last point's arc takes the last point. The points' TP and FP
    are the sweep's own (without the masses above)."""
    hit_arc = _hit_arc(sweep, arc)
    start, stop, tp = _gaps(sweep, np.full(1, sweep.size, dtype=np.intp))
    if stop[0] > start[0]:  # negatives below the last hit: the lowest is the last point
        last = arc.of(tp, _negative_fp(sweep, np.zeros(1, dtype=np.intp)))
    else:
        last = hit_arc[-1:]
    marks = np.minimum(marks, last[0])
    # The first hit at or past each mark, then the highest negative of the gap before it that
    # is at or past the mark (arcs grow downwards through a gap), if any.
    gap = np.searchsorted(hit_arc, marks, side="left")
    del hit_arc
    low, high, tp = _gaps(sweep, gap)
    open_ = low < high
    if open_.any():
        # Within a gap the arc falls as the position rises: find the first position whose
        # arc is below the mark.
        high[open_] = _first_below(sweep, arc, low[open_], high[open_], marks[open_], tp[open_])
    # ``high - 1`` is the highest qualifying negative of the gap; none when it is below start.
    on_negative = high > low
    position = high - 1
    # One point per sample, in descending order: repeats are neighbours.
    key = np.where(on_negative, -1 - position, gap)
    keep = np.ones(marks.size, dtype=np.bool_)
    keep[1:] = key[1:] != key[:-1]
    gap, position, on_negative, tp = gap[keep], position[keep], on_negative[keep], tp[keep]
    thresholds = np.where(
        on_negative,
        sweep.negatives.scores[np.where(on_negative, position, 0)] if sweep.negatives.size else 0.0,
        sweep.thresholds[np.minimum(gap, sweep.size - 1)] if sweep.size else 0.0,
    )
    hit = np.minimum(gap, max(sweep.size - 1, 0))
    tps = np.where(on_negative, tp, sweep.tps[hit] if sweep.size else 0.0)
    fps = np.where(
        on_negative,
        _negative_fp(sweep, np.where(on_negative, position, 0)),
        sweep.fps[hit] if sweep.size else 0.0,
    )
    return thresholds, tps, fps


def _gaps(sweep: Sweep, gap: Indices) -> tuple[Indices, Indices, Floats]:
    """``_segments``'s start, stop and TP of the gaps ``gap`` only (a curve's samples: not
    arrays of every hit's size)."""
    hits = sweep.size
    if hits == 0:
        zeros = np.zeros(gap.size, dtype=np.intp)
        return zeros, np.full(gap.size, sweep.negatives.size, dtype=np.intp), np.zeros(gap.size)
    inside = np.minimum(gap, hits - 1)
    start = np.where(gap < hits, sweep.neg_from[inside] + sweep.tied[inside], 0)
    stop = np.where(gap > 0, sweep.neg_from[np.maximum(gap - 1, 0)], sweep.negatives.size)
    tp = np.where(gap < hits, sweep.tps_above[inside], sweep.tps[-1])
    return start, stop, tp


def _hit_arc(sweep: Sweep, arc: Arc) -> Floats:
    """``arc.of(sweep.tps, sweep.fps)`` with one temporary, not four."""
    out = sweep.tps + arc.pos_above
    out *= arc.negatives
    other = sweep.fps + arc.neg_above
    other *= arc.positives
    out += other
    return out


def _first_below(
    sweep: Sweep, arc: Arc, lo: Indices, hi: Indices, wanted: Floats, gap_tp: Floats
) -> Indices:
    """Per sample, the first negative position in [lo, hi) whose point's arc is below
    ``wanted`` (``hi`` when none is): within a gap the arc falls as the position rises. Read
    off the class's masses from the top (the arc's FP part solved for), then checked with the
    arc's own arithmetic; a guess a rounding put a position off is searched for."""
    size = sweep.negatives.size

    def below(position: Indices) -> Bools:
        fp = _negative_fp(sweep, np.clip(position, 0, max(size - 1, 0)))
        return np.asarray(arc.of(gap_tp, fp) < wanted)

    guess = lo.copy()
    if arc.positives > 0:
        # FP at position p is the mass of the size - p highest scores: F[size - p] < target.
        target = (wanted - (gap_tp + arc.pos_above) * arc.negatives) / arc.positives
        target -= arc.neg_above
        top = sweep.negatives.from_top
        if top is None:
            count = np.clip(np.ceil(target), 0, size + 1).astype(np.intp)
        else:
            count = np.searchsorted(top, target, side="left")
        guess = np.clip(size - count + 1, lo, hi)
    settled = ((guess == lo) | ~below(guess - 1)) & ((guess == hi) | below(guess))
    if not settled.all():
        unsettled = ~settled
        guess[unsettled] = _bisected(below, lo, hi, unsettled)
    return guess


def _bisected(
    below: Callable[[Indices], Bools], lo: Indices, hi: Indices, chosen: Bools
) -> Indices:
    """``_first_below`` of the ``chosen`` samples by bisection."""
    low, high = lo.copy(), hi.copy()
    while True:
        searching = chosen & (low < high)
        if not searching.any():
            return low[chosen]
        middle = (low + high) // 2
        falls = searching & below(middle)
        high = np.where(falls, middle, high)
        low = np.where(searching & ~falls, middle + 1, low)
