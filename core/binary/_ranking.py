"""ROC AUC, partial AUC, KS and the optimal thresholds.

Naming contract (as scikit-learn's ``_ranking.py``): ``*_auc`` and ``*_statistic`` are
higher-is-better; ``*_threshold`` values are the thresholds where a maximum is reached.

Ties: tied scores form one threshold, so the ROC curve takes one diagonal step through them
(Fawcett 2006, "An introduction to ROC analysis", Pattern Recognition Letters 27(8)); the area
under that curve equals the Mann-Whitney statistic with averaged ranks (the rank formula of the
AUC, as in Zhou, "Machine Learning", 2016, ch. 2), which is how it is computed here.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from numpy.typing import NDArray

from evalserve.core._inner import inner
from evalserve.core.binary._sweep import Sweep

__all__ = [
    "auc_pairs",
    "f1_optimal_threshold",
    "first_max",
    "ks_and_youden",
    "ks_statistic",
    "partial_roc_auc",
    "roc_auc",
]

# Values within this relative distance of the maximum count as tied with it: rounding must not
# decide between thresholds that are tied in exact arithmetic.
TIE_TOLERANCE = 1e-12

Floats = NDArray[np.float64]


def roc_auc(sweep: Sweep) -> float:
    """P(score of a random positive > that of a random negative) + half P(tie).

    Each negative counts every positive strictly above it, and half of those tied with it. The
    caller makes sure both classes are present.
    """
    return auc_pairs(sweep) / (sweep.n_positive * sweep.n_negative)


def auc_pairs(sweep: Sweep) -> float:
    """Positive-negative pairs ranked right, ties counting half: each positive beats the
    negatives strictly below its threshold (N - FP) and ties with those at it."""
    pairs = ties = 0.0
    for start, stop in _blocks(sweep):  # temporaries of a block, not of every hit
        pos = sweep.pos[start:stop]
        pairs += inner(pos, sweep.n_negative - sweep.fps[start:stop])
        ties += inner(pos, sweep.neg_in(start, stop))
    return pairs + 0.5 * ties


def partial_roc_auc(sweep: Sweep, max_fpr: float) -> float:
    """McClish-standardized area of the ROC curve over FPR in [0, max_fpr].

    As scikit-learn: the curve is cut at max_fpr with a linearly interpolated point, and the
    area A is mapped to 0.5 * (1 + (A - m^2/2) / (m - m^2/2)), so 0.5 is chance and 1 is
    perfect. Before each hit the curve runs flat (at the previous hit's TP) and through the
    hit's ties it runs diagonally; only the hits whose flat run starts below max_fpr count:
    those whose diagonal starts there, and the next one.
    """
    positives, negatives = sweep.n_positive, sweep.n_negative
    limit = max_fpr * negatives
    hits = min(int(np.searchsorted(sweep.fps_above, limit, side="right")) + 1, sweep.size)
    area = 0.0
    for start in range(0, hits, KS_BLOCK):  # in blocks, as the other passes over the hits
        stop = min(start + KS_BLOCK, hits)
        fps, fps_above = sweep.fps[start:stop], sweep.fps_above[start:stop]
        tps, tps_above = sweep.tps[start:stop], sweep.tps_above[start:stop]
        flat_start = np.empty(stop - start)
        flat_start[:1] = sweep.fps[start - 1] if start else 0.0
        flat_start[1:] = fps[:-1]
        area += inner(np.maximum(np.minimum(fps_above, limit) - flat_start, 0.0), tps_above)
        # Diagonals, the last one cut at the limit with its interpolated TP.
        width = np.maximum(np.minimum(fps, limit) - fps_above, 0.0)
        rise = np.divide(
            (tps - tps_above) * width, fps - fps_above, out=tps - tps_above, where=fps > fps_above
        )
        area += inner(width, tps_above + 0.5 * rise)
    if hits == sweep.size:  # the flat run after the lowest hit
        area += max(limit - (float(sweep.fps[hits - 1]) if hits else 0.0), 0.0) * positives
    area /= positives * negatives
    min_area = 0.5 * max_fpr**2
    return 0.5 * (1 + (area - min_area) / (max_fpr - min_area))


def first_max(values: Floats) -> int:
    """Index of the first value that ties with the maximum (within ``TIE_TOLERANCE``): with
    thresholds in descending order, ties go to the highest threshold."""
    best = float(values.max())
    return int(np.argmax(values >= best - TIE_TOLERANCE * abs(best)))


def ks_and_youden(sweep: Sweep) -> tuple[float, float, float]:
    """(KS statistic, its threshold, Youden-optimal threshold).

    KS is max |TPR - FPR| (the largest vertical distance between the ROC curve and the
    diagonal), equal to the two-sample KS statistic of the class-wise scores
    (``scipy.stats.ks_2samp``); Youden's J = TPR - FPR is maximized without the absolute value.
    TPR - FPR rises only at hits and falls only along runs of negatives, so its maximum is at a
    hit and its minimum at the end of such a run: just before a hit, or the lowest score (where
    it is 0). Only those candidates are evaluated, as TP N - FP P: exact for counts below
    2^53 / max(P, N), so ties in exact arithmetic stay ties. Candidates are taken in
    descending threshold order (before hit 0, hit 0, before hit 1, ...): ties go to the
    highest threshold.
    """
    statistic, youden = _ks_maxima(sweep)
    return (
        statistic / (sweep.n_positive * sweep.n_negative),
        _first_at_max(sweep, statistic, absolute=True),
        _first_at_max(sweep, youden, absolute=False),
    )


def ks_statistic(sweep: Sweep) -> float:
    """``ks_and_youden(sweep)[0]`` alone, without the search for the thresholds."""
    return _ks_maxima(sweep)[0] / (sweep.n_positive * sweep.n_negative)


# Hits a block of the passes over the hits here (KS and Youden's J, the AUC's pairs, F1)
# takes: its temporaries are a few blocks, not the hits' size, and stay in the CPU's cache
# (blocks of 65,536 hits: the 10M-row suite 0.21 -> 0.20 s against blocks of a million).
KS_BLOCK = 1 << 16


def _blocks(sweep: Sweep) -> Iterator[tuple[int, int]]:
    for start in range(0, sweep.size, KS_BLOCK):
        yield start, min(start + KS_BLOCK, sweep.size)


def _ks_candidates(sweep: Sweep, start: int, stop: int, *, absolute: bool) -> tuple[Floats, Floats]:
    """TP N - FP P just before each hit of ``start`` to ``stop`` and at it (their absolute
    values when ``absolute``)."""
    positives, negatives = sweep.n_positive, sweep.n_negative
    at_hit = sweep.tps[start:stop] * negatives - sweep.fps[start:stop] * positives
    before = sweep.tps_above[start:stop] * negatives - sweep.fps_above[start:stop] * positives
    if absolute:
        np.abs(at_hit, out=at_hit)
        np.abs(before, out=before)
    # Nothing lies above the top score: the point before it is the start, not a candidate.
    if start == 0 and not np.isfinite(sweep.above_threshold(0)):
        before[0] = -np.inf
    return before, at_hit


def _ks_maxima(sweep: Sweep) -> tuple[float, float]:
    """The largest distance |TP N - FP P| of the candidates (the KS statistic times P N; 0 at
    the lowest score) and the largest TP N - FP P (Youden's J times P N)."""
    statistic, youden = 0.0, -np.inf
    for start, stop in _blocks(sweep):
        before, at_hit = _ks_candidates(sweep, start, stop, absolute=False)
        youden = max(youden, float(at_hit.max()), float(before.max()))
        np.abs(at_hit, out=at_hit)  # the same candidates' distances: computed once
        np.abs(before, out=before)
        if start == 0 and before[0] == np.inf:
            before[0] = -np.inf  # the start: not a candidate either way
        statistic = max(statistic, float(at_hit.max()), float(before.max()))
    return statistic, youden


def _first_at_max(sweep: Sweep, best: float, *, absolute: bool) -> float:
    """The threshold of the first candidate (before hit 0, hit 0, before hit 1, ..., the
    lowest score, whose value is 0) that ties with ``best`` (within ``TIE_TOLERANCE``)."""
    floor = best - TIE_TOLERANCE * abs(best)
    first_before = first_hit = sweep.size
    for start, stop in _blocks(sweep):
        before, at_hit = _ks_candidates(sweep, start, stop, absolute=absolute)
        if first_before == sweep.size and (before >= floor).any():
            first_before = start + int(np.argmax(before >= floor))
        if first_hit == sweep.size and (at_hit >= floor).any():
            first_hit = start + int(np.argmax(at_hit >= floor))
        if first_before < sweep.size and first_hit < sweep.size:
            break
    if first_before <= first_hit and first_before < sweep.size:
        return sweep.above_threshold(first_before)
    if first_hit < sweep.size:
        return float(sweep.thresholds[first_hit])
    return sweep.lowest()


def f1_optimal_threshold(sweep: Sweep) -> float:
    """Threshold maximizing F1 = 2 TP / (TP + FP + P). Adding negatives only lowers F1, so the
    maximum is at a threshold that adds positives; the highest one on ties."""
    positives = sweep.n_positive
    blocks = list(_blocks(sweep))
    highest = [float(_f1(sweep, start, stop, positives).max()) for start, stop in blocks]
    best = max(highest)
    floor = best - TIE_TOLERANCE * abs(best)
    # The first block that reaches the floor holds the first tie: only it is computed again.
    start, stop = next(each for each, top in zip(blocks, highest, strict=True) if top >= floor)
    found = np.flatnonzero(_f1(sweep, start, stop, positives) >= floor)
    return float(sweep.thresholds[start + int(found[0])])


def _f1(sweep: Sweep, start: int, stop: int, positives: float) -> Floats:
    """F1 times a constant (2 TP / (TP + FP + P), halved) at hits ``start`` to ``stop``."""
    tps = sweep.tps[start:stop]
    return tps / (tps + sweep.fps[start:stop] + positives)
