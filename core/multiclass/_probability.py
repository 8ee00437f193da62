"""Probability metrics of a multiclass model: log loss, Brier score, top-label calibration
error (all lower is better).

They need probability rows: every score in [0, 1] and every row summing to 1 within 1e-6.
Anything else (logits, one-vs-rest scores, unnormalized rows) makes the three undefined with
the reason: the core never renormalizes or applies a softmax behind the caller's back.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from evalserve.core._result import MetricSink

__all__ = ["PROBABILITY_METRICS", "ROW_SUM_TOLERANCE", "probability_metrics", "probability_problem"]

Floats = NDArray[np.float64]
Indices = NDArray[np.intp]

PROBABILITY_METRICS = ("log_loss", "brier_score", "expected_calibration_error")
ROW_SUM_TOLERANCE = 1e-6
# As scikit-learn's log_loss: probabilities are clipped to [eps, 1 - eps], eps of float64.
EPS = float(np.finfo(np.float64).eps)
_ROW_BLOCK = 1 << 16


def probability_problem(
    scores: NDArray[np.float64], low: float, high: float, weights: Floats | None
) -> str | None:
    """Why the rows are not probabilities, or None when they are. Rows of weight zero take no
    part (as everywhere: they leave no trace)."""
    rows = None
    if weights is not None and not weights.all():
        rows = np.flatnonzero(weights)
        scores = scores[rows]
        low, high = float(scores.min()), float(scores.max())
    if low < 0 or high > 1:
        return (
            f"scores are not probabilities: they range over [{low:g}, {high:g}], outside "
            "[0, 1] (send softmax outputs; they are never renormalized)"
        )
    for start in range(0, scores.shape[0], _ROW_BLOCK):
        sums = np.einsum("ij->i", scores[start : start + _ROW_BLOCK])
        off = np.abs(sums - 1.0) > ROW_SUM_TOLERANCE
        if off.any():
            row = int(np.argmax(off))
            index = start + row if rows is None else int(rows[start + row])
            return (
                f"scores are not probabilities: row {index} sums to {float(sums[row])!r}, not 1 "
                f"within {ROW_SUM_TOLERANCE:g} (they are never renormalized)"
            )
    return None


def probability_metrics(
    sink: MetricSink,
    scores: NDArray[np.float64],
    true_scores: Floats,
    top: Indices,
    labels: Indices,
    weights: Floats | None,
    *,
    bins: int,
) -> None:
    """``true_scores`` = p of each row's true class, ``top`` = each row's argmax."""
    total = float(true_scores.size if weights is None else weights.sum())
    clipped = np.clip(true_scores, EPS, 1 - EPS)
    sink.set("log_loss", -_weighted_sum(np.log(clipped), weights) / total)
    # sum_c (p_c - [c = y])^2 = sum_c p_c^2 - 2 p_y + 1, with the squares summed row by row.
    squares = np.einsum("ij,ij->i", scores, scores)
    brier = squares - 2.0 * true_scores + 1.0
    sink.set("brier_score", _weighted_sum(brier, weights) / total)
    confidence = scores[np.arange(labels.size), top]
    correct = (top == labels).astype(np.float64)
    sink.set(
        "expected_calibration_error",
        _calibration_gap(confidence, correct, weights, bins) / total,
    )


def _weighted_sum(values: Floats, weights: Floats | None) -> float:
    return float(values.sum() if weights is None else np.dot(weights, values))


def _calibration_gap(
    confidence: Floats, correct: Floats, weights: Floats | None, bins: int
) -> float:
    """sum over equal-width bins of |sum(correct) - sum(confidence)|; bin i holds
    [i/B, (i+1)/B), the last bin also 1.0 (as task binary's expected_calibration_error)."""
    edges = np.arange(bins + 1) / bins
    index = np.minimum(np.searchsorted(edges, confidence, side="right") - 1, bins - 1)
    gap = correct - confidence
    if weights is not None:
        gap *= weights
    return float(np.abs(np.bincount(index, weights=gap, minlength=bins)).sum())
