"""Task binary's result: every metric of a sweep, with the drift test and the comparison.

The one task whose result compares models: against a baseline's AUC (the drift test) and
against a challenger's scores on the same rows (DeLong's paired test).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evalserve.core._coverage import coverage_report
from evalserve.core._errors import InvalidInputError
from evalserve.core._options import Options
from evalserve.core._result import EvaluationResult
from evalserve.core._task_spec import MonitorRequest
from evalserve.core._validation import binary_inputs
from evalserve.core.binary._catalog import CONVENTIONS
from evalserve.core.binary._compare import (
    BaselineEstimate,
    baseline_estimate,
    comparison_test,
    drift_against,
    drift_test,
    too_few,
)
from evalserve.core.binary._delong import Placements, placements
from evalserve.core.binary._monitor import MonitorQuestion, MonitorStep, monitor_window
from evalserve.core.binary._state import BinaryState
from evalserve.core.binary._stats import BinaryStats
from evalserve.core.binary._suite import compute
from evalserve.core.binary._sweep import Sweep, sweep_of, sweep_of_rows

__all__ = [
    "binary_result",
    "check_baseline",
    "evaluate_binary_rows",
    "evaluate_binary_state",
    "evaluate_binary_stats",
]


def evaluate_binary_rows(
    y_true: Any,
    y_score: Any,
    y_pred: Any,
    sample_weight: Any,
    options: Options,
    classes: Sequence[str] | None,
    baseline: Mapping[str, Any] | None,
    challenger: Mapping[str, Any] | None,
    monitor: MonitorRequest | None,
) -> EvaluationResult:
    """``evaluate`` for task binary."""
    if classes is not None:
        raise InvalidInputError("classes", "task 'binary' takes no class names")
    rows = binary_inputs(
        y_true, y_score, y_pred, sample_weight, positive_label=options.positive_label
    )
    sweep = sweep_of_rows(rows.labels, rows.scores, rows.weights)
    predictions = None
    if rows.predicted is not None:
        predictions = sweep_of_rows(rows.labels, rows.predicted.astype("float64"), rows.weights)
    result = binary_result(
        sweep, int(rows.labels.size), options, predictions, baseline, None, monitor
    )
    if challenger is not None:
        result.comparison["roc_auc"] = comparison_test(_placed(sweep), rows, challenger, options)
    return result


def evaluate_binary_state(
    state: BinaryState,
    options: Options,
    classes: tuple[str, ...] | None,
    baseline: Mapping[str, Any] | None,
    monitor: MonitorRequest | None,
) -> EvaluationResult:
    """``Accumulator.result`` for task binary."""
    predictions = None if state.predictions is None else state.predictions.sweep()
    sweep = state.scores.sweep()
    return binary_result(sweep, state.n_rows, options, predictions, baseline, None, monitor)


def evaluate_binary_stats(
    stats: BinaryStats,
    options: Options,
    *,
    predictions: BinaryStats | None = None,
    baseline: Mapping[str, Any] | None = None,
    coverage: Mapping[str, Any] | None = None,
    monitor: MonitorRequest | None = None,
) -> EvaluationResult:
    """The result for an already accumulated statistic (streaming and merged shards), with the
    drift test and the monitor against ``baseline`` and the label coverage when given."""
    return binary_result(
        sweep_of(stats),
        stats.n_rows,
        options,
        None if predictions is None else sweep_of(predictions),
        baseline,
        coverage,
        monitor,
    )


def binary_result(
    sweep: Sweep,
    n_rows: int,
    options: Options,
    predictions: Sweep | None,
    baseline: Mapping[str, Any] | None,
    coverage: Mapping[str, Any] | None,
    monitor: MonitorRequest | None = None,
) -> EvaluationResult:
    """The binary result of a sweep (rows, a statistic or an accumulator's state): every
    metric, the drift test and the monitor against ``baseline`` and the label coverage when
    given."""
    if n_rows == 0:
        raise InvalidInputError("labels", "is empty; expected at least one row")
    step = None
    drift = {}
    if baseline is not None:
        current = _placed(sweep)
        estimate = baseline_estimate(baseline, options)
        drift["roc_auc"] = drift_against(current, estimate, options)
        step = _monitored(current, estimate, options, monitor or MonitorRequest())
    sink, curves = compute(sweep, options, n_rows=n_rows, predictions=predictions)
    result = EvaluationResult(
        task="binary",
        n_samples=n_rows,
        metrics=sink.metrics,
        undefined=sink.undefined,
        curves=curves,
        intervals=sink.intervals,
        drift=drift,
        conventions=dict(CONVENTIONS),
        warnings=sink.warnings,
    )
    if step is not None:
        result.monitor["roc_auc"] = step.entry
        result.monitor_state = step.state
    if coverage is not None:
        result.coverage = coverage_report(coverage, result.n_samples)
    return result


def check_baseline(baseline: Mapping[str, Any], options: Options) -> None:
    """Raise ``InvalidInputError`` now for a baseline that a later drift test would refuse (a
    stream checks its header's baseline before its rows arrive)."""
    drift_test(None, baseline, options)


def _monitored(
    current: Placements | None,
    estimate: BaselineEstimate,
    options: Options,
    request: MonitorRequest,
) -> MonitorStep:
    """This window's step of the AUC monitor."""
    question = MonitorQuestion(
        estimate.auc, estimate.variance, options.drift_tolerance, options.monitor_arl_windows
    )
    short = too_few(current, options) or estimate.short
    if current is None or short:
        return monitor_window(question, request.state, request.window, None, None, short)
    return monitor_window(
        question, request.state, request.window, current.auc, current.variance, ""
    )


def _placed(sweep: Sweep) -> Placements | None:
    """DeLong's placement values, or None when a class is missing (no AUC)."""
    if sweep.n_positive == 0 or sweep.n_negative == 0:
        return None
    return placements(sweep)
