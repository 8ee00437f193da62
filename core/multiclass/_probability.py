"""Probability metrics of a multiclass model: log loss, Brier score, top-label calibration
error (all lower is better).

They need probability rows: every score in [0, 1] and every row summing to 1 within
``row_sum_tolerance(k)`` = max(1e-4, k x 1e-6) for k classes. That is the rounding real rows
carry: k probabilities printed with 6 decimals are off by at most k x 5e-7 in sum, and float32
probabilities by about 6e-8 each (its epsilon is 1.2e-7), while logits, one-vs-rest scores and
unnormalized rows are off by far more. Anything else makes the three undefined with the reason.
Rows within the tolerance are taken as they came: the core never renormalizes or applies a
softmax behind the caller's back (as scikit-learn's log_loss and brier_score_loss, which warn
and compute on the rows as they are). Rows of weight zero take no part (as everywhere: they
leave no trace).

Each metric is a sum over rows, taken where it is exact and mergeable:

* log loss = -sum_i w_i log p_i(y_i) / W: over the distinct true-class scores T with their
  weight (the micro statistic of ``_ranking`` holds them);
* Brier = sum_i w_i sum_c (p_ic - [c = y_i])^2 / W = (S - 2 sum_i w_i p_i(y_i) + W) / W, with
  S = sum_i w_i sum_c p_ic^2 kept as an exact sum (``core._exact_sum``), the middle term again
  from T;
* top-label calibration error: per bin, the weight of the rows whose argmax is right and the
  exact sum of their weighted top scores.

So the metrics of rows split into batches and merged in any order are those of all rows at once:
bit for bit with counts or integer weights.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from evalserve.core._exact_sum import exact_sum, exact_sums, rounded
from evalserve.core._inner import inner
from evalserve.core._result import MetricSink

__all__ = [
    "PROBABILITY_METRICS",
    "ROW_SUM_TOLERANCE",
    "ProbabilityCheck",
    "ProbabilitySums",
    "calibration_bins",
    "probability_check",
    "probability_metrics",
    "probability_sums",
    "row_sum_tolerance",
]

Floats = NDArray[np.float64]
Indices = NDArray[np.intp]

PROBABILITY_METRICS = ("log_loss", "brier_score", "expected_calibration_error")
# A row sums to 1 within max(ROW_SUM_TOLERANCE, k x ROW_SUM_PER_CLASS) (k classes): the absolute
# part covers float32 rows (about 6e-8 per class, more when a float32 softmax summed them), the
# per-class part 6-decimal printing (at most 5e-7 per class) with room to spare.
ROW_SUM_TOLERANCE = 1e-4
ROW_SUM_PER_CLASS = 1e-6
# What states written before the tolerance grew used: the row such a state names as off 1 is
# off by more than this (``_state`` reads it as it was written).
LEGACY_ROW_SUM_TOLERANCE = 1e-6
# As scikit-learn's log_loss: probabilities are clipped to [eps, 1 - eps], eps of float64.
EPS = float(np.finfo(np.float64).eps)
_ROW_BLOCK = 1 << 16


def row_sum_tolerance(n_classes: int) -> float:
    """How far from 1 a probability row of ``n_classes`` scores may sum."""
    return max(ROW_SUM_TOLERANCE, n_classes * ROW_SUM_PER_CLASS)


@dataclass(frozen=True, slots=True)
class ProbabilityCheck:
    """Whether the rows are probabilities: the range of the scores of the rows of weight above
    zero (``low`` > ``high`` when there is none), and the first of those rows whose sum is off 1
    (``row`` -1: none; not looked for when the range is off already)."""

    low: float
    high: float
    row: int
    row_sum: float

    def problem(self, n_classes: int) -> str | None:
        """Why the rows (of ``n_classes`` scores) are not probabilities, or None when they
        are."""
        if self.low <= self.high and (self.low < 0 or self.high > 1):
            return (
                f"scores are not probabilities: they range over [{self.low:g}, {self.high:g}], "
                "outside [0, 1] (send softmax outputs; they are never renormalized)"
            )
        if self.row >= 0:
            return (
                f"scores are not probabilities: row {self.row} sums to {self.row_sum:.10g}, not 1 "
                f"within {row_sum_tolerance(n_classes):g} (they are never renormalized)"
            )
        return None

    def merge(self, other: ProbabilityCheck, offset: int) -> ProbabilityCheck:
        """The check of these rows followed by ``other``'s, which start at row ``offset``."""
        row, row_sum = self.row, self.row_sum
        if row < 0 and other.row >= 0:
            row, row_sum = offset + other.row, other.row_sum
        return ProbabilityCheck(min(self.low, other.low), max(self.high, other.high), row, row_sum)


def probability_check(
    scores: NDArray[np.float64], low: float, high: float, weights: Floats | None
) -> ProbabilityCheck:
    """The check of validated rows (``low`` and ``high``: the range of all their scores)."""
    rows = None
    if weights is not None and not weights.all():
        rows = np.flatnonzero(weights)
        scores = scores[rows]
        low, high = (float(scores.min()), float(scores.max())) if rows.size else (np.inf, -np.inf)
    low, high = low + 0.0, high + 0.0  # -0.0 is 0: one value, one message
    tolerance = row_sum_tolerance(scores.shape[1])
    if (rows is not None and rows.size == 0) or low < 0 or high > 1:
        return ProbabilityCheck(low, high, -1, 0.0)
    for start in range(0, scores.shape[0], _ROW_BLOCK):
        sums = np.einsum("ij->i", scores[start : start + _ROW_BLOCK])
        # |s - 1| grows away from 1 on either side: the extremes decide for the block.
        if max(abs(float(sums.min()) - 1.0), abs(float(sums.max()) - 1.0)) <= tolerance:
            continue
        off = np.abs(sums - 1.0) > tolerance
        if off.any():
            row = int(np.argmax(off))
            index = start + row if rows is None else int(rows[start + row])
            return ProbabilityCheck(low, high, index, float(sums[row]))
    return ProbabilityCheck(low, high, -1, 0.0)


@dataclass(frozen=True, slots=True, eq=False)
class ProbabilitySums:
    """The sums behind the Brier score and the calibration error, exact sums in units of
    2**-1074 (``core._exact_sum``): ``squares`` = sum_i w_i sum_c p_ic^2; per calibration bin,
    ``correct`` = the weight of the rows whose argmax is their class and ``confidence`` =
    sum_i w_i max_c p_ic."""

    squares: int
    correct: Floats
    confidence: tuple[int, ...]

    @classmethod
    def empty(cls, bins: int) -> ProbabilitySums:
        return cls(0, np.zeros(bins), (0,) * bins)

    def merge(self, other: ProbabilitySums) -> ProbabilitySums:
        confidence = tuple(a + b for a, b in zip(self.confidence, other.confidence, strict=True))
        return ProbabilitySums(self.squares + other.squares, self.correct + other.correct,
                               confidence)  # fmt: skip


def probability_sums(
    scores: NDArray[np.float64],
    top: Indices,
    labels: Indices,
    weights: Floats | None,
    bins: int,
) -> ProbabilitySums:
    """The sums of probability rows (``top`` = each row's argmax). Rows of weight zero add
    nothing, whatever their scores."""
    n_rows, n_classes = scores.shape
    squares = np.einsum("ij,ij->i", scores, scores)
    # The top scores, gathered from the flat matrix (faster than a two-index gather).
    confidence = scores.ravel().take(np.arange(0, n_rows * n_classes, n_classes) + top)
    if weights is not None and not weights.all():  # their squares may even be infinite
        nothing = weights == 0
        squares[nothing] = 0.0
        confidence[nothing] = 0.0
    index = calibration_bins(confidence, bins)
    right = top == labels
    if weights is not None:
        squares *= weights
        confidence *= weights
        right = np.where(right, weights, 0.0)
    correct = np.asarray(np.bincount(index, weights=right, minlength=bins), dtype=np.float64)
    return ProbabilitySums(exact_sum(squares), correct, tuple(exact_sums(confidence, index, bins)))


def calibration_bins(confidence: Floats, bins: int) -> Indices:
    """The bin of each top score in [0, 1]: bin i holds [i/B, (i+1)/B) (the edges as
    ``np.arange(B + 1) / B`` rounds them), the last bin also 1.0, as task binary's calibration
    error. ``floor(p B)`` is off by at most one next to an edge: one comparison with each
    neighbouring edge settles it, in fewer passes than a binary search."""
    edges = np.arange(bins + 1) / bins
    above = np.append(edges[1:bins], np.inf)  # the lower edge of the next bin; none after the last
    index = (confidence * bins).astype(np.intp)
    np.minimum(index, bins - 1, out=index)
    index -= confidence < edges.take(index)
    index += confidence >= above.take(index)
    return index


def probability_metrics(
    sink: MetricSink, sums: ProbabilitySums, values: Floats, mass: Floats, total: float
) -> None:
    """The three metrics from the sums, the distinct true-class scores ``values`` with their
    weight ``mass``, and the total weight."""
    true_scores, weight = values, mass
    if not mass.all():  # scores of rows of weight zero only
        held = np.flatnonzero(mass)
        true_scores, weight = values[held], mass[held]
    log_p = np.log(np.clip(true_scores, EPS, 1 - EPS))
    sink.set("log_loss", -inner(weight, log_p) / total)
    # sum_c (p_c - [c = y])^2 = sum_c p_c^2 - 2 p_y + 1; cancellation leaves at most ~1e-16 W
    # below 0 where the score is perfect.
    brier = rounded(sums.squares) - 2.0 * inner(weight, true_scores) + total
    sink.set("brier_score", max(brier, 0.0) / total)
    confidence = np.array([rounded(value) for value in sums.confidence], dtype=np.float64)
    gap = float(np.abs(sums.correct - confidence).sum())
    sink.set("expected_calibration_error", gap / total)
