"""NDCG at each head cut (``ndcg_at_{k}``, Järvelin & Kekäläinen 2002) for binary relevance.

Gain 1 for a positive, 0 for a negative; the rank ``r`` (from 1, by score, highest first) is
discounted by ``1 / log2(r + 1)``; ``NDCG@k = DCG@k / IDCG@k``, the ideal DCG putting every
positive first. ``k`` counts sample weight, capped at the total weight as ``precision_at_{k}``.

Weights are frequency weights, on a continuous axis of mass: rank ``r`` covers the mass
``(r - 1, r]`` and every unit of mass in it carries the discount ``1 / log2(r + 1)``. The
discount of a stretch ``(a, b]`` is the integral of that step function, ``D(a, b)``: a row of
integer weight ``w`` is ``w`` rows on ``w`` ranks, and a fractional stretch takes its share of
the ranks it touches, as a fractional cut counts a straddling row by its included part in
``precision_at_{k}``.

Ties: the rows tied at one score share its ranks, each unit of mass carrying the group's mean
gain (positive mass over mass): scikit-learn's ``ndcg_score(ignore_ties=False)`` (McSherry &
Najork 2008), which is the expected DCG over every order of the tied rows. So the DCG is a sum
over the sweep's hits (the groups that hold a positive), each hit's positive mass times the mean
discount of its stretch (cut at ``k``):

    DCG@k = sum over hits h above k of pos_h * D(a_h, min(b_h, k)) / (b_h - a_h)
    IDCG@k = D(0, min(P, k))

with ``a_h``, ``b_h`` the mass above the hit's group and at or above it. Each term is a
difference of a few discounts, never of two large partial sums, so a hit deep in the ranking
keeps its digits:

* the whole ranks ``i + 1 .. i + m`` of a stretch, when ``m`` is small next to their centre
  ``c`` (``64 m <= c + 1``: every single rank), are summed by the midpoint series
  ``m f(c) + f''(c) m (m^2 - 1) / 24 + f''''(c) m (m^2 - 1) (3 m^2 - 7) / 5760`` (the sum of
  ``f(c + d)`` over offsets ``d`` symmetric about ``c``: the odd terms cancel), whose next term
  is below 1e-14 of the sum;
* longer runs are ``S(i + m) - S(i)`` with ``S(n) = sum_{r <= n} 1 / log2(r + 1)``: a table up
  to ``TABLE`` (summed in extended precision) and beyond it the Euler-Maclaurin formula from
  ``TABLE`` with the integral ``ln 2 (li(n + 1) - li(TABLE + 1))`` and two correction terms (the
  remainder is below 1e-18); the difference loses at most a factor ``c / m <= 64``.

The work after the sweep is linear in the hits inside the cut, found by one binary search.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cache
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from evalserve.core._inner import inner
from evalserve.core._options import Options
from evalserve.core._result import MetricSink
from evalserve.core.binary._operating import target_label
from evalserve.core.binary._sweep import Sweep
from evalserve.core.binary._threshold import NO_POSITIVES

__all__ = [
    "NO_IDEAL",
    "TABLE",
    "Masses",
    "discount_sums",
    "head_dcg",
    "ideal_dcg",
    "ndcg_metric_name",
    "ndcg_metrics",
    "rank_sums",
    "write_ndcg",
]

Floats = NDArray[np.float64]

TABLE = 4096  # S(n) is tabulated for n <= TABLE
SHORT = 64  # whole runs of m ranks with SHORT * m <= centre + 1 use the midpoint series
NO_IDEAL = f"{NO_POSITIVES}: the ideal DCG is 0"
_LN2 = math.log(2.0)
_EULER_GAMMA = 0.57721566490153286061


def ndcg_metric_name(k: float) -> str:
    """ndcg_at_100 for k = 100, ndcg_at_9.5: k written as in ``head_metric_names``."""
    return f"ndcg_at_{target_label(k)}"


# --- the discount -----------------------------------------------------------------------------


@cache
def _table() -> Floats:
    """S(n) for n = 0 .. TABLE, each rounded once from an extended-precision running sum."""
    ranks = np.arange(1, TABLE + 1, dtype=np.longdouble)
    sums = np.zeros(TABLE + 1, dtype=np.longdouble)
    np.cumsum(np.log(np.longdouble(2.0)) / np.log1p(ranks), out=sums[1:])
    return sums.astype(np.float64)


def _li(x: Floats) -> Floats:
    """The logarithmic integral li(x) = Ei(ln x) for x > e: the power series of Ei (positive
    terms: no cancellation) up to ln x = 50, the asymptotic series above (its terms fall below
    1e-17 of the sum before they turn)."""
    y = np.log(x)
    out = np.empty_like(y)
    small = y <= 50.0
    if small.any():
        ys = y[small]
        term = ys.copy()  # y^k / k!
        total = ys.copy()  # sum of y^k / (k k!)
        k = 1
        while True:
            k += 1
            term *= ys / k
            added = term / k
            total += added
            if bool((added <= 1e-17 * total).all()):
                break
        out[small] = _EULER_GAMMA + np.log(ys) + total
    large = ~small
    if large.any():
        yl = y[large]
        term = np.ones_like(yl)
        total = np.ones_like(yl)
        k = 0
        while True:
            k += 1
            term *= k / yl
            total += term
            if bool((term <= 1e-17 * total).all()):
                break
        out[large] = x[large] / yl * total
    return out


def _f(x: Floats) -> Floats:
    """The discount 1 / log2(x + 1)."""
    return _LN2 / np.log1p(x)


def _euler_maclaurin(n: Floats) -> Floats:
    """S(n) for n > TABLE: S(TABLE) plus the sum from TABLE + 1 to n by Euler-Maclaurin."""
    start = np.array([float(TABLE)])
    both = np.concatenate((n, start))
    u = both + 1.0
    z = 1.0 / np.log(u)
    v = 1.0 / u  # powers of 1/u underflow where powers of u would overflow
    f1 = -_LN2 * z * z * v  # f'
    f3 = -_LN2 * z * z * (2.0 + 6.0 * z + 6.0 * z * z) * (v * v * v)  # f'''
    ends = _LN2 * _li(u) + _LN2 * z / 2.0 + f1 / 12.0 - f3 / 720.0
    return (ends[:-1] - ends[-1:]) + float(_table()[TABLE])


def rank_sums(n: Floats) -> Floats:
    """S(n) = sum of 1 / log2(r + 1) over r = 1 .. n, for whole numbers n >= 0."""
    out = np.empty_like(n)
    low = n <= TABLE
    out[low] = _table()[n[low].astype(np.intp)]
    if not low.all():
        out[~low] = _euler_maclaurin(n[~low])
    return out


def _whole_ranks(first: Floats, count: Floats) -> Floats:
    """The discount summed over the ranks first + 1 .. first + count (whole numbers)."""
    u = first + (count + 1.0) / 2.0 + 1.0  # the centre rank, plus one
    z = 1.0 / np.log(u)
    value = _LN2 * count * z
    spread = np.flatnonzero(count > 1.0)
    if not spread.size:
        return value
    m, us, zs = count[spread], u[spread], z[spread]
    q = 1.0 / us
    q *= q
    d2 = _LN2 * zs * zs * (1.0 + 2.0 * zs) * q
    d4 = _LN2 * zs * zs * (6.0 + zs * (22.0 + zs * (36.0 + 24.0 * zs))) * q * q
    pairs = m * (m * m - 1.0)
    value[spread] += d2 * pairs / 24.0 + d4 * pairs * (3.0 * m * m - 7.0) / 5760.0
    long = spread[SHORT * m > us]
    if long.size:
        ends = rank_sums(np.concatenate((first[long], first[long] + count[long])))
        value[long] = ends[long.size :] - ends[: long.size]
    return value


def discount_sums(start: Floats, stop: Floats) -> Floats:
    """D(start, stop): the discount integrated over the mass (start, stop], rank r covering
    (r - 1, r] (0 <= start <= stop)."""
    first = np.ceil(start)  # the rank whose end is the first whole rank boundary
    last = np.floor(stop)
    if bool((first == start).all() and (last == stop).all()):  # whole ranks: counts, integers
        return _whole_ranks(start, stop - start)
    whole_to = np.maximum(last, first)
    head = (np.minimum(first, stop) - start) * _f(np.maximum(first, 1.0))
    tail = np.maximum(stop - whole_to, 0.0) * _f(whole_to + 1.0)
    return head + _whole_ranks(first, whole_to - first) + tail


# --- DCG over the hits --------------------------------------------------------------------------


class Masses(Protocol):
    """The masses of a sweep's hits, in descending score order (``Sweep``, or a range's hits
    with the mass of the ranges above added)."""

    @property
    def tps(self) -> Floats: ...
    @property
    def fps(self) -> Floats: ...
    @property
    def tps_above(self) -> Floats: ...
    @property
    def fps_above(self) -> Floats: ...


def _hits_above(hits: Masses, cut: float) -> int:
    """How many hits have their group start above the cut: a galloping search over the first
    ones, so that a small cut reads a few hits, not all of them."""
    size = int(hits.tps.size)
    reach = min(size, 256)
    while reach < size and hits.tps_above[reach - 1] + hits.fps_above[reach - 1] < cut:
        reach = min(size, 8 * reach)
    above = hits.tps_above[:reach] + hits.fps_above[:reach]
    return int(np.searchsorted(above, cut, side="left"))


def head_dcg(hits: Masses, pos: Floats, cuts: Sequence[float]) -> tuple[float, ...]:
    """Per cut, the DCG of the hits (``pos``: each hit's positive mass), counting only the mass
    above the cut. Reads only the hits whose group starts above the cut."""
    found = []
    for cut in cuts:
        inside = _hits_above(hits, cut)
        if not inside:
            found.append(0.0)
            continue
        start = hits.tps_above[:inside] + hits.fps_above[:inside]
        upto = hits.tps[:inside] + hits.fps[:inside]
        width = upto - start
        stop = upto
        if upto[-1] > cut:
            stop = upto.copy()
            stop[-1] = cut
        share = np.divide(pos[:inside], width, out=np.zeros(inside), where=width > 0)
        found.append(inner(share, discount_sums(start, stop)))
    return tuple(found)


def ideal_dcg(positives: float, cut: float) -> float:
    """IDCG at the cut: every positive ranked first."""
    return float(discount_sums(np.zeros(1), np.array([min(positives, cut)]))[0])


def write_ndcg(
    sink: MetricSink,
    head_k: Sequence[float],
    dcg_parts: Sequence[Sequence[float]],
    positives: float,
    negatives: float,
) -> None:
    """``ndcg_at_{k}`` for each k from the DCG of every part of the ranking (one per range, or
    one for the whole), null with the reason without positives; k capped at the total mass, as
    ``head_cut``."""
    total = positives + negatives
    for index, k in enumerate(head_k):
        name = ndcg_metric_name(k)
        if positives <= 0:
            sink.undefine(name, NO_IDEAL)
            continue
        dcg = math.fsum(part[index] for part in dcg_parts)
        sink.set(name, min(1.0, max(0.0, dcg / ideal_dcg(positives, min(k, total)))))


def ndcg_metrics(sink: MetricSink, sweep: Sweep, options: Options) -> None:
    """``ndcg_at_{k}`` of one sweep, for every ``head_k``."""
    if not options.head_k:
        return
    total = sweep.n_positive + sweep.n_negative
    cuts = [min(k, total) for k in options.head_k]
    dcg = head_dcg(sweep, sweep.pos, cuts)
    write_ndcg(sink, options.head_k, [dcg], sweep.n_positive, sweep.n_negative)
