"""Averages and order statistics of the per-row errors: lower is better for all of them.

Each follows the scikit-learn function of the same name (``mean_squared_error``,
``root_mean_squared_error``, ``mean_absolute_error``, ``mean_absolute_percentage_error``,
``max_error``, ``median_absolute_error``); SMAPE, which scikit-learn lacks, is
mean(2|y - ŷ| / (|y| + |ŷ|)). Percentages are fractions: 0.25 means 25%. Each is read from the
sums and the error distribution of ``RegressionStats``.
"""

from __future__ import annotations

import math
import sys

import numpy as np
from numpy.typing import NDArray

from evalserve.core._result import MetricSink
from evalserve.core.regression._absolute import AbsoluteErrors
from evalserve.core.regression._stats import RegressionStats

__all__ = [
    "OVERFLOW",
    "absolute_error_metrics",
    "order_statistics",
    "put",
    "squared_error_metrics",
    "underflows",
    "weighted_median",
]

Floats = NDArray[np.float64]

OVERFLOW = "not representable in float64: the values are too large (overflow)"


def underflows(variance: float) -> bool:
    """A sum of squared deviations below float64's smallest normal number (values differing
    by under about 1e-154): zero, or subnormal with too few significant bits left to divide
    by (a Pearson r of two distinct rows came out 0.99997)."""
    return variance < sys.float_info.min


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


def absolute_error_metrics(sink: MetricSink, stats: RegressionStats) -> None:
    """mae, mape and smape: weighted means of |r|, |r| / |y| and 2|r| / (|y| + |ŷ|)."""
    n = stats.weight
    put(sink, "mae", stats.absolute_sum / n)
    if stats.zero_label_row >= 0:
        sink.undefine(
            "mape",
            f"label is 0 at row {stats.zero_label_row}: its percentage error |y - ŷ| / |y| is "
            "undefined",
        )
    else:
        put(sink, "mape", stats.percentage_sum / n)
    put(sink, "smape", min(stats.smape_sum / n, 2.0))  # a mean of terms <= 2 may round up


def order_statistics(sink: MetricSink, stats: RegressionStats, errors: AbsoluteErrors) -> None:
    """max_error over the rows of positive weight; median_absolute_error as scikit-learn
    (``errors``: the distribution of |y - ŷ| of ``stats``)."""
    put(sink, "max_error", errors.maximum)
    put(sink, "median_absolute_error", errors.median(stats.n_kept))


def weighted_median(values: Floats, weights: Floats) -> float:
    """The median of ``values`` under positive ``weights``, as ``median_absolute_error``
    computes it (``AbsoluteErrors.median``)."""
    return AbsoluteErrors.of_rows(values, weights).median(int(values.size))
