"""Every regression metric from one pass of checked rows: ``regression_rows`` formats and
checks, the residuals and SSE are computed once, and each small step below adds its metrics
to the sink in the catalog's order."""

from __future__ import annotations

from typing import Any

import numpy as np

from evalserve.core._options import Options
from evalserve.core._result import MetricSink, TaskOutput
from evalserve.core.regression._catalog import CONVENTIONS, METRIC_NAMES
from evalserve.core.regression._criteria import information_criteria, mallows_cp
from evalserve.core.regression._fit import adjusted_r2, fit_metrics
from evalserve.core.regression._pointwise import (
    absolute_error_metrics,
    order_statistics,
    squared_error_metrics,
)
from evalserve.core.regression._rows import regression_rows

__all__ = ["compute_regression"]


def compute_regression(
    y_true: Any, y_pred: Any, *, sample_weight: Any = None, options: Options
) -> TaskOutput:
    """mse rmse mae mape smape r2 adjusted_r2 explained_variance max_error
    median_absolute_error aic bic mallows_cp and n_samples; see ``CATALOG_ENTRIES``.

    Raises ``InvalidInputError`` naming ``labels``, ``predictions`` or ``weights``."""
    rows = regression_rows(y_true, y_pred, sample_weight)
    sink = MetricSink()
    sink.set("n_samples", rows.n_rows)
    n = rows.total_weight
    # Overflow (|values| near 1e154 and above) is caught metric by metric (``put``): numpy
    # stays quiet meanwhile, so that it neither prints nor, under pytest, raises.
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        residual = rows.labels - rows.predictions
        absolute = np.abs(residual)
        sse = float(np.dot(rows.weights, residual * residual))
        squared_error_metrics(sink, sse, n)
        absolute_error_metrics(sink, rows, absolute)
        fit_metrics(sink, rows, residual, sse)
        adjusted_r2(sink, n, options.n_params)
        order_statistics(sink, rows, absolute)
        information_criteria(sink, sse, n, options.n_params)
        mallows_cp(sink, sse, n, options)
    _order_as_api(sink)
    return TaskOutput(sink=sink, conventions=dict(CONVENTIONS))


API_ORDER = METRIC_NAMES


def _order_as_api(sink: MetricSink) -> None:
    """JSON keys in the catalog's order: r2 comes before its adjusted twin and
    explained_variance."""
    sink.metrics = {name: sink.metrics[name] for name in API_ORDER}
    sink.undefined = {name: sink.undefined[name] for name in API_ORDER if name in sink.undefined}
