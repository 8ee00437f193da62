"""Averages and order statistics of the per-row errors: lower is better for all of them.

Each follows the scikit-learn function of the same name (``mean_squared_error``,
``root_mean_squared_error``, ``mean_absolute_error``, ``mean_absolute_percentage_error``,
``max_error``, ``median_absolute_error``); SMAPE, which scikit-learn lacks, is
mean(2|y - ŷ| / (|y| + |ŷ|)). Percentages are fractions: 0.25 means 25%.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from evalserve.core._result import MetricSink
from evalserve.core.regression._rows import RegressionRows

__all__ = [
    "EPS",
    "OVERFLOW",
    "absolute_error_metrics",
    "order_statistics",
    "put",
    "squared_error_metrics",
    "weighted_median",
]

Floats = NDArray[np.float64]

# scikit-learn's MAPE divides by max(|y|, eps), eps of float64.
EPS = float(np.finfo(np.float64).eps)
OVERFLOW = "not representable in float64: the values are too large (overflow)"


def put(sink: MetricSink, name: str, value: float) -> None:
    """``sink.set``, or None with a reason when float64 overflowed on the way (|values| near
    1e154 and above square to infinity): a guard, so no infinity or NaN reaches the result."""
    if math.isfinite(value):
        sink.set(name, value)
    else:
        sink.undefine(name, OVERFLOW)


def squared_error_metrics(sink: MetricSink, sse: float, n: float) -> None:
    """mse = sum w r^2 / sum w and rmse = sqrt(mse), r = y - ŷ."""
    mse = sse / n
    put(sink, "mse", mse)
    put(sink, "rmse", math.sqrt(mse) if math.isfinite(mse) else math.inf)


def absolute_error_metrics(sink: MetricSink, rows: RegressionRows, absolute: Floats) -> None:
    """mae, mape and smape: weighted means of |r|, |r| / |y| and 2|r| / (|y| + |ŷ|)."""
    weights, n = rows.weights, rows.total_weight
    put(sink, "mae", float(np.dot(weights, absolute)) / n)
    zero = np.flatnonzero(rows.labels == 0)
    if zero.size:
        row = rows.request_row(int(zero[0]))
        sink.undefine(
            "mape",
            f"label is 0 at row {row}: its percentage error |y - ŷ| / |y| is undefined",
        )
    else:
        # As scikit-learn: |y| is floored at eps, so labels below 2.2e-16 in size count as eps.
        relative = absolute / np.maximum(np.abs(rows.labels), EPS)
        put(sink, "mape", float(np.dot(weights, relative)) / n)
    smape = float(np.dot(weights, _smape_terms(rows.labels, rows.predictions))) / n
    put(sink, "smape", min(smape, 2.0))  # a mean of terms <= 2 may round to 2 + 4e-16


def _smape_terms(labels: Floats, predictions: Floats) -> Floats:
    """2|y - ŷ| / (|y| + |ŷ|) per row, in [0, 2]; 0 where y = ŷ = 0 (a perfect prediction,
    not 0/0). Both are first divided by max(|y|, |ŷ|), which leaves the ratio unchanged and
    keeps |y| + |ŷ| from overflowing (or |y|/2 from underflowing) at the ends of float64."""
    scale = np.maximum(np.abs(labels), np.abs(predictions))
    nonzero = scale > 0
    scale[~nonzero] = 1.0
    y, y_hat = labels / scale, predictions / scale
    terms: Floats = 2 * np.abs(y - y_hat) / (np.abs(y) + np.abs(y_hat))
    terms[~nonzero] = 0.0
    return terms


def order_statistics(sink: MetricSink, rows: RegressionRows, absolute: Floats) -> None:
    """max_error over the rows of positive weight; median_absolute_error as scikit-learn."""
    put(sink, "max_error", float(np.max(absolute)))
    put(sink, "median_absolute_error", weighted_median(absolute, rows.weights))


def weighted_median(values: Floats, weights: Floats) -> float:
    """The median of ``values`` under positive ``weights``: the averaged inverted CDF (Hyndman
    and Fan's definition 2, scikit-learn's ``_weighted_percentile(average=True)``, used by its
    ``median_absolute_error`` since 1.8). The smallest value whose cumulative weight reaches half
    the total; when it reaches exactly half, the mean of it and the next value. With unit
    weights this is ``np.median``; a weight 2 is a row sent twice.

    "Exactly half" allows the rounding a cumulative sum of n terms can carry, n eps times the
    total weight, on both sides of half (scikit-learn allows an absolute eps; relative, the
    result does not change when every weight is multiplied by one constant: with eps alone,
    weights scaled by 3 could round a cumulative sum of exactly half to just under it and move
    the median to the next value, found by Hypothesis)."""
    order = np.argsort(values, kind="stable")
    sorted_values = values[order]
    cumulative = np.cumsum(weights[order])
    total = float(cumulative[-1])
    half = total / 2
    tolerance = EPS * total * sorted_values.size
    last = sorted_values.size - 1
    at = min(int(np.searchsorted(cumulative, half - tolerance, side="left")), last)
    if float(cumulative[at]) - half > tolerance or at == last:
        return float(sorted_values[at])
    low, high = float(sorted_values[at]), float(sorted_values[at + 1])
    return low + (high - low) / 2
