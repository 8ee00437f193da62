"""Every regression metric from the sufficient statistic of the rows: ``regression_rows``
formats and checks, ``RegressionStats.of_rows`` sums once, and each small step below adds its
metrics to the sink in the catalog's order. The ``Accumulator`` merges the statistics of its
batches and ends in the same ``regression_output``: one path from the statistic to the
metrics for both."""

from __future__ import annotations

from typing import Any

from evalserve.core._options import Options
from evalserve.core._result import MetricSink, TaskOutput
from evalserve.core.regression._agreement import (
    correlations,
    log_error,
    pinball_losses,
    pinball_name,
)
from evalserve.core.regression._catalog import CONVENTIONS, METRIC_NAMES, PINBALL_TEMPLATE
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

__all__ = ["api_order", "compute_regression", "regression_output"]


def compute_regression(
    y_true: Any, y_pred: Any, *, sample_weight: Any = None, options: Options
) -> TaskOutput:
    """mse rmse mae mape smape r2 adjusted_r2 explained_variance max_error
    median_absolute_error aic bic mallows_cp mean_squared_log_error pinball_loss_{q} (each q
    of ``options.quantiles``) pearson_r spearman_r concordance_correlation and n_samples; see
    ``CATALOG_ENTRIES``.

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
    errors = stats.error_distribution()
    order_statistics(sink, stats, errors)
    information_criteria(sink, stats.sse, n, options.n_params)
    mallows_cp(sink, stats.sse, n, options)
    log_error(sink, stats.joint, n)
    pinball_losses(sink, stats.joint, n, options.quantiles)
    correlations(sink, stats)
    _order_as_api(sink, options)
    output = TaskOutput(sink=sink, conventions=dict(CONVENTIONS))
    if options.max_curve_points > 0 and errors.size > 0:
        output.curves["rec"] = rec_curve(errors, options.max_curve_points)
    sample = stats.sample
    if options.max_curve_points > 0 and sample is not None and sample.size > 0:
        kept = slice(0, options.max_curve_points)  # the keys' order is a random one
        output.curves["sample"] = {
            "actual": sample.labels[kept],
            "predicted": sample.predictions[kept],
            "weight": sample.weights[kept],
        }
    return output


def api_order(options: Options) -> tuple[str, ...]:
    """The metrics' names in the catalog's order, the template ``pinball_loss_{k}`` spelt
    out for each q of ``options.quantiles`` (ascending)."""
    names: list[str] = []
    for name in METRIC_NAMES:
        if name == PINBALL_TEMPLATE:
            # parse_options sorts them; an Options built by hand may not
            names.extend(pinball_name(q) for q in sorted(set(options.quantiles)))
        else:
            names.append(name)
    return tuple(names)


def _order_as_api(sink: MetricSink, options: Options) -> None:
    """JSON keys in the catalog's order: r2 comes before its adjusted twin and
    explained_variance."""
    order = api_order(options)
    sink.metrics = {name: sink.metrics[name] for name in order}
    sink.undefined = {name: sink.undefined[name] for name in order if name in sink.undefined}
