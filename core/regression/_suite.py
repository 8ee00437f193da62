"""Every regression metric from the sufficient statistic of the rows: ``regression_rows``
formats and checks, ``RegressionStats.of_rows`` sums once, and each small step below adds its
metrics to the sink in the catalog's order. The ``Accumulator`` merges the statistics of its
batches and ends in the same ``regression_output``: one path from the statistic to the
metrics for both."""

from __future__ import annotations

from typing import Any

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
from evalserve.core.regression._rec import rec_curve
from evalserve.core.regression._rows import regression_rows
from evalserve.core.regression._stats import RegressionStats

__all__ = ["compute_regression", "regression_output"]


def compute_regression(
    y_true: Any, y_pred: Any, *, sample_weight: Any = None, options: Options
) -> TaskOutput:
    """mse rmse mae mape smape r2 adjusted_r2 explained_variance max_error
    median_absolute_error aic bic mallows_cp and n_samples; see ``CATALOG_ENTRIES``.

    Raises ``InvalidInputError`` naming ``labels``, ``predictions`` or ``weights``."""
    rows = regression_rows(y_true, y_pred, sample_weight)
    return regression_output(RegressionStats.of_rows(rows), options)


def regression_output(stats: RegressionStats, options: Options) -> TaskOutput:
    """Every metric from the statistic of the rows (of one batch or of merged batches).

    Overflow (|values| near 1e154 and above) arrives as infinite sums and is caught metric by
    metric (``put``), in Python floats, which neither warn nor raise."""
    sink = MetricSink()
    sink.set("n_samples", stats.n_rows)
    n = stats.weight
    squared_error_metrics(sink, stats.sse, n)
    absolute_error_metrics(sink, stats)
    fit_metrics(sink, stats)
    adjusted_r2(sink, n, options.n_params)
    order_statistics(sink, stats)
    information_criteria(sink, stats.sse, n, options.n_params)
    mallows_cp(sink, stats.sse, n, options)
    _order_as_api(sink)
    output = TaskOutput(sink=sink, conventions=dict(CONVENTIONS))
    if options.max_curve_points > 0 and stats.errors.size > 0:
        output.curves["rec"] = rec_curve(stats.errors, options.max_curve_points)
    sample = stats.sample
    if options.max_curve_points > 0 and sample is not None and sample.size > 0:
        kept = slice(0, options.max_curve_points)  # the keys' order is a random one
        output.curves["sample"] = {
            "actual": sample.labels[kept],
            "predicted": sample.predictions[kept],
            "weight": sample.weights[kept],
        }
    return output


API_ORDER = METRIC_NAMES


def _order_as_api(sink: MetricSink) -> None:
    """JSON keys in the catalog's order: r2 comes before its adjusted twin and
    explained_variance."""
    sink.metrics = {name: sink.metrics[name] for name in API_ORDER}
    sink.undefined = {name: sink.undefined[name] for name in API_ORDER if name in sink.undefined}
