"""Goodness of fit: r2, adjusted_r2 and explained_variance (higher is better, at most 1).

r2 and explained_variance follow scikit-learn's ``r2_score`` and ``explained_variance_score``
with weighted means, except for constant labels: there the share of variance explained is
0/0 (or x/0), and scikit-learn's ``force_finite`` answer (1.0 or 0.0) becomes None + reason.
r2 = 1 - SSE / SST can be negative: a model worse than predicting the mean. SST and Var(r) are
the M2 of ``RegressionStats`` (``_moments.py``: the corrected two-pass sum of Chan, Golub &
LeVeque within a batch, their pairwise update across batches).
"""

from __future__ import annotations

import math

from evalserve.core._result import MetricSink
from evalserve.core.regression._pointwise import OVERFLOW, put, underflows
from evalserve.core.regression._stats import RegressionStats

__all__ = ["CONSTANT_LABELS", "NO_N_PARAMS", "adjusted_r2", "fit_metrics"]

CONSTANT_LABELS = (
    "labels are constant (zero variance): the share of variance explained is undefined"
)
UNDERFLOW = "the variance of the labels underflows float64 (labels differ by under 1e-154)"
NO_N_PARAMS = "options.n_params is not set: {metric} needs the number of model parameters p"


def fit_metrics(sink: MetricSink, stats: RegressionStats) -> None:
    """r2 = 1 - SSE / SST and explained_variance = 1 - Var(r) / Var(y), r = y - ŷ."""
    # Equal labels are found by comparing them: their weighted mean need not round back to the
    # label, which would leave SST at 1e-33 instead of 0 (and r2 at -1e30).
    constant = stats.label_min == stats.label_max
    sst = 0.0 if constant else stats.labels.m2
    sse = stats.sse
    if constant or underflows(sst) or not (math.isfinite(sst) and math.isfinite(sse)):
        reason = CONSTANT_LABELS if constant else UNDERFLOW if underflows(sst) else OVERFLOW
        sink.undefine("r2", reason)
        sink.undefine("explained_variance", reason)
        sink.warn(f"r2, adjusted_r2 and explained_variance are undefined: {reason}")
        return
    put(sink, "r2", 1 - sse / sst)
    # Var(r) / Var(y), both over the same total weight: SS(r - mean r) / SST.
    put(sink, "explained_variance", 1 - stats.residuals.m2 / sst)


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
