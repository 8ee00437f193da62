"""Precision-recall: four areas under the curve that must not be confused, the break-even point
and head precision/recall.

* ``average_precision``: step-wise AP = sum_n (R_n - R_{n-1}) P_n (scikit-learn).
* ``pr_auc_trapezoid``: trapezoids under the PR curve that starts at (R=0, P=1)
  (scikit-learn's ``auc(recall, precision)`` of ``precision_recall_curve``).
* ``ap_11_point``: VOC 2007, mean over r = 0, 0.1, ..., 1 of the highest precision at recall >= r
  (0 where recall never reaches r). Some write-ups of the 11-point AP say "R > r"; with ">" the
  point r = 1 could never be met, so the standard ">=" of the VOC devkit is used (Everingham et
  al. 2010, "The PASCAL Visual Object Classes (VOC) Challenge", IJCV 88).
* ``ap_all_point``: VOC 2010+, the area under the monotone envelope p(r) = max precision at
  recall >= r.

Every one of them only needs the thresholds that add positives (the hits of the ``Sweep``):
between two of them recall stands still and precision only falls.

Ties: all rows at one score enter the ranking together (one point on the curve). For ``@k`` cuts
that fall inside a tie group, the group counts at its expected value under a random order of
the tied rows (each unit of weight counting as a row): the fraction of the group's mass above
the cut times its positive mass.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from evalserve.core._inner import inner
from evalserve.core.binary._sweep import Sweep

__all__ = ["PrAreas", "average_precision", "head_counts", "pr_areas"]

Floats = NDArray[np.float64]


class PrAreas(NamedTuple):
    average_precision: float
    pr_auc_trapezoid: float
    ap_11_point: float
    ap_all_point: float


# Hits a block of ``pr_areas`` takes: its temporaries are a few blocks' size, not the hits',
# and stay in the CPU's cache (as ``_ranking.KS_BLOCK``).
PR_BLOCK = 1 << 16


def pr_areas(sweep: Sweep) -> PrAreas:
    """The four PR areas of one ranking, from its hits: in blocks of ``PR_BLOCK`` hits from
    the lowest up (the envelope, the highest precision at this recall or more, is carried
    upwards); a sweep of one block is computed as a whole."""
    positives = sweep.n_positive
    # recall >= i/10  <=>  10 TP >= i P: compared exactly, not in rounded fractions
    wanted = np.arange(11) * positives
    first = np.full(11, sweep.size, dtype=np.intp)
    first_envelope = np.zeros(11)
    average = trapezoid = all_point = 0.0
    later = -np.inf  # the envelope below the block
    for stop in range(sweep.size, 0, -PR_BLOCK):
        start = max(0, stop - PR_BLOCK)
        precision = _precision(sweep, start, stop)
        envelope = np.maximum.accumulate(precision[::-1])[::-1]  # max precision at recall >= here
        np.maximum(envelope, later, out=envelope)
        later = float(envelope[0])
        pos = sweep.pos[start:stop]
        average += inner(pos, precision)
        all_point += inner(pos, envelope)
        trapezoid += _trapezoid(sweep, precision, start, stop)
        local = np.searchsorted(10 * sweep.tps[start:stop], wanted, side="left")
        inside = local < stop - start
        first[inside] = start + local[inside]
        first_envelope[inside] = envelope[local[inside]]
    return PrAreas(
        average_precision=average / positives,
        pr_auc_trapezoid=trapezoid,
        ap_11_point=float(first_envelope[first < sweep.size].sum()) / 11,
        ap_all_point=all_point / positives,
    )


def average_precision(sweep: Sweep) -> float:
    """``pr_areas(sweep).average_precision`` alone (the other areas cost more than it)."""
    return inner(sweep.pos, _precision(sweep, 0, sweep.size)) / sweep.n_positive


def _precision(sweep: Sweep, start: int, stop: int) -> Floats:
    """The precision at hits ``start`` to ``stop``."""
    tps = sweep.tps[start:stop]
    return tps / (tps + sweep.fps[start:stop])


def _trapezoid(sweep: Sweep, precision: Floats, start: int, stop: int) -> float:
    """Trapezoids over the PR points from (0, 1) on, of hits ``start`` to ``stop``.

    Recall only moves on a hit, so only the segment that ends on each hit has width. It starts
    at the point just above the hit's threshold: the previous hits' TP over all mass strictly
    above the threshold; with no mass above, that point is the start (R=0, P=1).
    """
    tps_above = sweep.tps_above[start:stop]
    width = sweep.tps[start:stop] - tps_above
    width /= sweep.n_positive
    above = tps_above + sweep.fps_above[start:stop]
    before = np.divide(tps_above, above, out=np.ones_like(above), where=above > 0)
    del above
    before += precision
    before /= 2
    return inner(width, before)


def head_counts(sweep: Sweep, k: float) -> float:
    """Expected positive mass among the top ``k`` units of mass (ties at the cut pro rata).

    The cut falls in the first group of tied rows (from the top) that reaches ``k``: a hit's
    group, or a group of negatives only between two hits, whose positives above are the
    previous hit's TP."""
    first = int(np.searchsorted(sweep.tps + sweep.fps, k, side="left"))
    if first >= sweep.size:
        return sweep.n_positive
    above_pos = float(sweep.tps_above[first])
    above_mass = above_pos + float(sweep.fps_above[first])
    if above_mass >= k:  # reached by negatives above this hit
        return above_pos
    group = float(sweep.pos[first] + sweep.neg_in(first, first + 1)[0])
    return above_pos + (k - above_mass) / group * float(sweep.pos[first])
