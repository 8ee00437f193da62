"""Probability metrics: log loss, Brier score, expected calibration error (lower is better),
and the reliability diagram's points (the ``calibration`` curve).

They need scores that are probabilities. The core never guesses (no sigmoid on scores outside
[0, 1], unlike torchmetrics): outside [0, 1] the three are undefined, with a reason.

Each class's sums run over its own distinct scores with their mass, in blocks that stay in the
CPU cache (one scratch buffer, no temporary the size of the data); with unit mass (the usual
unweighted case) the mass drops out of every sum.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from evalserve.core._inner import inner
from evalserve.core._result import MetricSink
from evalserve.core.binary._classes import ClassScores
from evalserve.core.binary._sweep import Sweep

__all__ = [
    "NOT_PROBABILITIES",
    "BinSums",
    "add_calibration_curve",
    "bin_sums",
    "calibration_curve",
    "calibration_gap",
    "calibration_metrics",
    "class_sums",
]

Floats = NDArray[np.float64]
Indices = NDArray[np.intp]

NOT_PROBABILITIES = "scores are not probabilities (some lie outside [0, 1])"
# As scikit-learn's log_loss: probabilities are clipped to [eps, 1 - eps], eps of float64.
EPS = float(np.finfo(np.float64).eps)
BLOCK = 1 << 15
PRODUCT = 16  # values multiplied before one logarithm (with unit mass)


@dataclass(frozen=True)
class BinSums:
    """Per equal-width probability bin ``[i/B, (i+1)/B)`` (the last one also holds 1.0): the
    positive mass, the mass of both classes, the sum of mass * score, and whether any row fell
    in it. Sums of disjoint rows add bin by bin (the ranges path adds its ranges' sums)."""

    positives: Floats
    mass: Floats
    expected: Floats
    used: NDArray[np.bool_]


def calibration_metrics(sink: MetricSink, sweep: Sweep, *, bins: int) -> BinSums | None:
    """Log loss, Brier score and ECE; the bin sums (None when the scores are not
    probabilities: the three are then undefined)."""
    if sweep.lowest() < 0 or sweep.highest() > 1:
        for name in ("log_loss", "brier_score", "expected_calibration_error"):
            sink.undefine(name, NOT_PROBABILITIES)
        return None
    total = sweep.n_positive + sweep.n_negative
    pos_log, pos_square = class_sums(sweep.positives, positive=True)
    neg_log, neg_square = class_sums(sweep.negatives, positive=False)
    sink.set("log_loss", -(pos_log + neg_log) / total)
    sink.set("brier_score", (pos_square + neg_square) / total)
    sums = bin_sums(sweep.positives, sweep.negatives, bins)
    sink.set("expected_calibration_error", calibration_gap(sums) / total)
    return sums


def calibration_gap(sums: BinSums) -> float:
    """sum over the bins of |observed positive mass - sum of mass * score|."""
    return float(np.abs(sums.positives[sums.used] - sums.expected[sums.used]).sum())


def add_calibration_curve(
    curves: dict[str, dict[str, Floats]], sums: BinSums | None, max_points: int
) -> None:
    """``curves["calibration"]``, the reliability diagram (Niculescu-Mizil & Caruana 2005): a
    point per bin that holds mass, when the scores are probabilities and there are at most
    ``max_points`` such bins (``max_curve_points``: 0 means no curves)."""
    if sums is None:
        return
    curve = calibration_curve(sums)
    if 0 < curve["weight"].size <= max_points:
        curves["calibration"] = curve


def calibration_curve(sums: BinSums) -> dict[str, Floats]:
    """Per bin that holds mass: its bounds, the mean score and the fraction of positives (both
    weighted by the rows' mass), and the mass."""
    held = sums.used & (sums.mass > 0)
    edges = np.arange(sums.mass.size + 1) / sums.mass.size
    mass = sums.mass[held]
    return {
        "lower": edges[:-1][held],
        "upper": edges[1:][held],
        "mean_score": sums.expected[held] / mass,
        "fraction_positive": sums.positives[held] / mass,
        "weight": mass,
    }


def bin_sums(positives: ClassScores, negatives: ClassScores, bins: int) -> BinSums:
    """The bin sums of two classes whose scores all lie in [0, 1]. Each class's scores are
    sorted, so each bin is a run of each."""
    edges = np.arange(bins + 1) / bins
    observed, mass, expected = np.zeros(bins), np.zeros(bins), np.zeros(bins)
    used = np.zeros(bins, dtype=np.bool_)
    for side, positive in ((positives, True), (negatives, False)):
        cuts = bin_cuts(side, edges)
        at_or_above = side.mass_at_or_above(cuts)
        in_bin = at_or_above[:-1] - at_or_above[1:]
        starts, stops = cuts[:-1], cuts[1:]
        used |= stops > starts
        mass += in_bin
        if positive:
            observed += in_bin
        for i in np.flatnonzero(stops > starts):
            expected[i] += _mass_times_score(side, int(starts[i]), int(stops[i]))
    return BinSums(observed, mass, expected, used)


def class_sums(side: ClassScores, *, positive: bool) -> tuple[float, float]:
    """Sum of mass * log(p) (positives) or mass * log(1 - p) (negatives), p clipped to
    [eps, 1 - eps], and sum of mass * (1 - p)^2 or mass * p^2."""
    log_sum = square_sum = 0.0
    scratch = np.empty(min(BLOCK, -(-side.size // PRODUCT) * PRODUCT))
    # The scores are sorted: those the clipping changes are a prefix and a suffix.
    low = int(np.searchsorted(side.scores, EPS, side="left"))
    high = int(np.searchsorted(side.scores, 1 - EPS, side="right"))
    for start in range(0, side.size, BLOCK):
        scores = side.scores[start : start + BLOCK]
        work = scratch[: scores.size]
        # The probability of the row's own class, clipped: p for positives, 1 - p for
        # negatives.
        if positive:
            np.copyto(work, scores)
        else:
            np.subtract(1.0, scores, out=work)
        if low > start:
            work[: low - start] = EPS if positive else 1 - EPS
        if high < start + scores.size:
            work[max(high - start, 0) :] = 1 - EPS if positive else EPS
        mass = None if side.mass is None else side.mass[start : start + BLOCK]
        if mass is None:
            log_sum += _log_of_product(scratch, scores.size)
        else:
            np.log(work, out=work)
            log_sum += float(np.einsum("i,i->", mass, work))
        # The squared miss: 1 - p for positives, p for negatives. einsum, not BLAS: a BLAS
        # library may start threads for every block.
        miss = np.subtract(1.0, scores, out=work) if positive else scores
        if mass is None:
            square_sum += float(np.einsum("i,i->", miss, miss))
        else:
            square_sum += float(np.einsum("i,i,i->", mass, miss, miss))
    return log_sum, square_sum


def _log_of_product(scratch: Floats, size: int) -> float:
    """sum(log(x)) over ``scratch[:size]`` (values in [eps, 1]) as the logs of products of
    ``PRODUCT`` values each: no product falls below 2^-832, so none underflows, and one log in
    ``PRODUCT`` is computed (the logarithm, not the multiplication, is what costs). Each
    product rounds by at most PRODUCT ulps, below the rounding of the sum itself."""
    padded = -(-size // PRODUCT) * PRODUCT
    scratch[size:padded] = 1.0
    # PRODUCT contiguous rows, multiplied half onto half: contiguous, vectorized products.
    table = scratch[:padded].reshape(PRODUCT, -1)
    rows = PRODUCT
    while rows > 1:
        rows //= 2
        np.multiply(table[:rows], table[rows : 2 * rows], out=table[:rows])
    return float(np.log(table[0]).sum())


def bin_cuts(side: ClassScores, edges: Floats) -> Indices:
    """Where each bin starts in the class's scores (every score is >= 0; 1.0 belongs to the
    last bin)."""
    cuts = np.searchsorted(side.scores, edges, side="left")
    cuts[0], cuts[-1] = 0, side.size
    return cuts


def _mass_times_score(side: ClassScores, start: int, stop: int) -> float:
    scores = side.scores[start:stop]
    if side.mass is None:
        return float(scores.sum())
    return inner(side.mass[start:stop], scores)
