"""``evaluate``: the one public use case of the core."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core._errors import InvalidInputError
from core._options import Options, parse_options
from core._result import EvaluationResult
from core._validation import binary_inputs
from core.binary._compare import comparison_test, drift_test
from core.binary._delong import Placements, placements
from core.binary._stats import BinaryStats
from core.binary._suite import compute

__all__ = [
    "BINARY_CONVENTIONS",
    "TASKS",
    "check_baseline",
    "evaluate",
    "evaluate_binary_stats",
]

TASKS = ("binary", "multiclass", "multilabel", "regression", "detection")
IMPLEMENTED_TASKS = ("binary",)

BINARY_CONVENTIONS = {
    "threshold_rule": "score >= threshold is positive",
    "ties": "averaged: tied scores form one ROC/PR point (a diagonal ROC step)",
    "average_precision": "step-wise, as scikit-learn",
    "head_k": "k counts sample weight (rows when unweighted); ties at the cut pro rata",
    "break_even_point": "R-precision: precision at k = number of positives",
    "undefined": "null with a reason in `undefined`, never 0 or NaN",
}


def evaluate(
    task: str,
    y_true: Any,
    y_score: Any = None,
    *,
    y_pred: Any = None,
    sample_weight: Any = None,
    options: Mapping[str, Any] | Options | None = None,
    baseline: Mapping[str, Any] | None = None,
    challenger: Mapping[str, Any] | None = None,
) -> EvaluationResult:
    """Evaluate a model's scores against ground truth; see README "Metric catalog".

    Raises ``InvalidInputError`` (naming the field) for input that cannot be evaluated.
    """
    if task not in TASKS:
        raise InvalidInputError("task", f"expected one of {list(TASKS)}, but got {task!r}")
    if task not in IMPLEMENTED_TASKS:
        raise InvalidInputError("task", f"task {task!r} is not available in this version")
    parsed = parse_options(options)
    rows = binary_inputs(y_true, y_score, y_pred, sample_weight)
    stats = BinaryStats.from_arrays(rows.labels, rows.scores, rows.weights)
    predictions = None
    if rows.predicted is not None:
        predictions = BinaryStats.from_arrays(
            rows.labels, rows.predicted.astype("float64"), rows.weights
        )
    result = evaluate_binary_stats(stats, parsed, predictions=predictions, baseline=baseline)
    if challenger is not None:
        result.comparison["roc_auc"] = comparison_test(_placed(stats), rows, challenger, parsed)
    return result


def evaluate_binary_stats(
    stats: BinaryStats,
    options: Options,
    *,
    predictions: BinaryStats | None = None,
    baseline: Mapping[str, Any] | None = None,
) -> EvaluationResult:
    """The result for an already accumulated statistic (streaming and merged shards), with the
    drift test against ``baseline`` when given."""
    if stats.n_rows == 0:
        raise InvalidInputError("labels", "is empty; expected at least one row")
    drift = {} if baseline is None else {"roc_auc": drift_test(_placed(stats), baseline, options)}
    sink, curves = compute(stats, options, predictions=predictions)
    return EvaluationResult(
        task="binary",
        n_samples=stats.n_rows,
        metrics=sink.metrics,
        undefined=sink.undefined,
        curves=curves,
        intervals=sink.intervals,
        drift=drift,
        conventions=dict(BINARY_CONVENTIONS),
        warnings=sink.warnings,
    )


def check_baseline(baseline: Mapping[str, Any], options: Options) -> None:
    """Raise ``InvalidInputError`` now for a baseline that a later drift test would refuse (a
    stream checks its header's baseline before its rows arrive)."""
    drift_test(None, baseline, options)


def _placed(stats: BinaryStats) -> Placements | None:
    """DeLong's placement values, or None when a class is missing (no AUC)."""
    if stats.pos.sum() == 0 or stats.neg.sum() == 0:
        return None
    return placements(stats)
