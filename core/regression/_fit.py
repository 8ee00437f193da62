"""Goodness of fit: r2, adjusted_r2 and explained_variance (higher is better, at most 1).

r2 and explained_variance follow scikit-learn's ``r2_score`` and ``explained_variance_score``
with weighted means, except for constant labels: there the share of variance explained is
0/0 (or x/0), and scikit-learn's ``force_finite`` answer (1.0 or 0.0) becomes None + reason.
r2 = 1 - SSE / SST can be negative: a model worse than predicting the mean.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from evalserve.core._result import MetricSink
from evalserve.core.regression._pointwise import OVERFLOW, put
from evalserve.core.regression._rows import RegressionRows

__all__ = ["CONSTANT_LABELS", "NO_N_PARAMS", "adjusted_r2", "fit_metrics"]

Floats = NDArray[np.float64]

CONSTANT_LABELS = (
    "labels are constant (zero variance): the share of variance explained is undefined"
)
UNDERFLOW = "the variance of the labels underflows float64 (labels differ by under 1e-154)"
NO_N_PARAMS = "options.n_params is not set: {metric} needs the number of model parameters p"


def fit_metrics(sink: MetricSink, rows: RegressionRows, residual: Floats, sse: float) -> None:
    """r2 = 1 - SSE / SST and explained_variance = 1 - Var(r) / Var(y), r = y - ŷ."""
    # Equal labels are found by comparing them: their weighted mean need not round back to the
    # label, which would leave SST at 1e-33 instead of 0 (and r2 at -1e30).
    constant = bool(rows.labels.min() == rows.labels.max())
    sst = 0.0 if constant else _total_sum_of_squares(rows)
    if constant or sst == 0 or not (math.isfinite(sst) and math.isfinite(sse)):
        reason = CONSTANT_LABELS if constant else UNDERFLOW if sst == 0 else OVERFLOW
        sink.undefine("r2", reason)
        sink.undefine("explained_variance", reason)
        sink.warn(f"r2, adjusted_r2 and explained_variance are undefined: {reason}")
        return
    put(sink, "r2", 1 - sse / sst)
    # Var(r) / Var(y), both over the same total weight: SS(r - mean r) / SST.
    residual_ss = _centred_sum_of_squares(residual, rows.weights, rows.total_weight)
    put(sink, "explained_variance", 1 - residual_ss / sst)


def _total_sum_of_squares(rows: RegressionRows) -> float:
    """SST = sum w (y - ȳ)^2 with ȳ the weighted mean."""
    return _centred_sum_of_squares(rows.labels, rows.weights, rows.total_weight)


def _centred_sum_of_squares(values: Floats, weights: Floats, total_weight: float) -> float:
    """sum w (x - x̄)^2 by the corrected two-pass algorithm (Chan, Golub & LeVeque 1983): the
    rounding error of the computed mean shifts every deviation alike, and subtracting
    (sum w d)^2 / W removes that shift. Without it, labels a few ulps apart (1000 and
    1000 + 2e-13) get an SST whose rounding error is as large as itself, and r2 = 1 - SSE / SST
    (-1e32 there) changed by 2x when every weight was scaled by 3."""
    mean = float(np.dot(weights, values)) / total_weight
    deviations = values - mean
    shift = float(np.dot(weights, deviations))
    return max(float(np.dot(weights, deviations * deviations)) - shift * shift / total_weight, 0.0)


def adjusted_r2(sink: MetricSink, n: float, n_params: int | None) -> None:
    """1 - (1 - R2)(n - 1) / (n - p - 1), p = options.n_params, n = total weight.

    Some surveys print R2_adj = 1 - (1 - R2) / (n - p - 1): a typo, the factor (n - 1) is
    missing (without it R2_adj != R2 at p = 0). We use the standard definition."""
    if n_params is None:
        sink.undefine("adjusted_r2", NO_N_PARAMS.format(metric="adjusted R2"))
        return
    r2 = sink.metrics.get("r2")
    if r2 is None:
        sink.undefine("adjusted_r2", f"r2 is undefined: {sink.undefined['r2']}")
        return
    dof = n - n_params - 1
    if dof <= 0:
        sink.undefine(
            "adjusted_r2",
            f"needs n - p - 1 > 0, but n = {n:g} (rows, or the sum of the weights) and "
            f"p = options.n_params = {n_params}",
        )
        return
    put(sink, "adjusted_r2", 1 - (1 - r2) * (n - 1) / dof)
