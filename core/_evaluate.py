"""``evaluate``: the one public use case of the core."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evalserve.core._coverage import check_coverage, coverage_report
from evalserve.core._errors import InvalidInputError
from evalserve.core._options import Options, parse_options
from evalserve.core._result import EvaluationResult, TaskOutput
from evalserve.core._tasks import TASKS, check_task
from evalserve.core._validation import binary_inputs
from evalserve.core.binary._catalog import CONVENTIONS as BINARY_CONVENTIONS
from evalserve.core.binary._compare import comparison_test, drift_test
from evalserve.core.binary._delong import Placements, placements
from evalserve.core.binary._stats import BinaryStats
from evalserve.core.binary._suite import compute
from evalserve.core.binary._sweep import Sweep, sweep_of, sweep_of_rows
from evalserve.core.detection import CONVENTIONS as DETECTION_CONVENTIONS
from evalserve.core.detection import compute_detection
from evalserve.core.detection._inputs import refuse_row_columns
from evalserve.core.multiclass import CONVENTIONS as MULTICLASS_CONVENTIONS
from evalserve.core.multiclass import compute_multiclass
from evalserve.core.multilabel import CONVENTIONS as MULTILABEL_CONVENTIONS
from evalserve.core.multilabel import compute_multilabel
from evalserve.core.regression import CONVENTIONS as REGRESSION_CONVENTIONS
from evalserve.core.regression import compute_regression
from evalserve.core.regression._rows import regression_predictions

__all__ = [
    "TASKS",
    "binary_result",
    "check_baseline",
    "evaluate",
    "evaluate_binary_stats",
    "task_result",
]


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
    classes: Sequence[str] | None = None,
    coverage: Mapping[str, Any] | None = None,
) -> EvaluationResult:
    """Evaluate a model's scores against ground truth; see README "Metric catalog".

    ``task``: binary (0/1 labels, n scores), multiclass (class indices or names, n x k scores),
    multilabel (n x k 0/1 labels and scores), regression (``y_true`` targets and ``y_pred``
    predictions; ``y_score`` is taken for ``y_pred`` when that is absent) or detection
    (``y_true`` per-image targets, ``y_score`` per-image predictions). ``classes`` names the
    score columns (multiclass, multilabel) or the class ids (detection). ``coverage``
    (``n_predictions``, ``label_delay_seconds``) reports the share of the window's predictions
    that were labelled, in ``result.coverage``.

    Raises ``InvalidInputError`` (naming the field) for input that cannot be evaluated.
    """
    check_task(task)
    parsed = parse_options(options)
    if coverage is not None:
        check_coverage(coverage)  # before the work; n_predictions >= rows once they are counted
    if task != "binary":
        for name, value in (("baseline", baseline), ("challenger", challenger)):
            if value is not None:
                raise InvalidInputError(
                    name, f"drift tests and comparisons take task 'binary', not {task!r}"
                )
        result = _other_task(task, y_true, y_score, y_pred, sample_weight, parsed, classes)
        return _with_coverage(result, coverage)
    if classes is not None:
        raise InvalidInputError("classes", "task 'binary' takes no class names")
    rows = binary_inputs(y_true, y_score, y_pred, sample_weight)
    sweep = sweep_of_rows(rows.labels, rows.scores, rows.weights)
    predictions = None
    if rows.predicted is not None:
        predictions = sweep_of_rows(rows.labels, rows.predicted.astype("float64"), rows.weights)
    result = binary_result(sweep, int(rows.labels.size), parsed, predictions, baseline, coverage)
    if challenger is not None:
        result.comparison["roc_auc"] = comparison_test(_placed(sweep), rows, challenger, parsed)
    return result


def _with_coverage(
    result: EvaluationResult, coverage: Mapping[str, Any] | None
) -> EvaluationResult:
    if coverage is not None:
        result.coverage = coverage_report(coverage, result.n_samples)
    return result


def evaluate_binary_stats(
    stats: BinaryStats,
    options: Options,
    *,
    predictions: BinaryStats | None = None,
    baseline: Mapping[str, Any] | None = None,
    coverage: Mapping[str, Any] | None = None,
) -> EvaluationResult:
    """The result for an already accumulated statistic (streaming and merged shards), with the
    drift test against ``baseline`` and the label coverage when given."""
    return binary_result(
        sweep_of(stats),
        stats.n_rows,
        options,
        None if predictions is None else sweep_of(predictions),
        baseline,
        coverage,
    )


def binary_result(
    sweep: Sweep,
    n_rows: int,
    options: Options,
    predictions: Sweep | None,
    baseline: Mapping[str, Any] | None,
    coverage: Mapping[str, Any] | None,
) -> EvaluationResult:
    """The binary result of a sweep (rows, a statistic or an accumulator's state): every
    metric, the drift test against ``baseline`` and the label coverage when given."""
    if n_rows == 0:
        raise InvalidInputError("labels", "is empty; expected at least one row")
    drift = {} if baseline is None else {"roc_auc": drift_test(_placed(sweep), baseline, options)}
    sink, curves = compute(sweep, options, n_rows=n_rows, predictions=predictions)
    result = EvaluationResult(
        task="binary",
        n_samples=n_rows,
        metrics=sink.metrics,
        undefined=sink.undefined,
        curves=curves,
        intervals=sink.intervals,
        drift=drift,
        conventions=dict(BINARY_CONVENTIONS),
        warnings=sink.warnings,
    )
    return _with_coverage(result, coverage)


def _other_task(
    task: str,
    y_true: Any,
    y_score: Any,
    y_pred: Any,
    sample_weight: Any,
    options: Options,
    classes: Sequence[str] | None,
) -> EvaluationResult:
    if task == "multiclass":
        output = compute_multiclass(
            y_true, y_score, y_pred=y_pred, sample_weight=sample_weight, classes=classes,
            options=options,
        )  # fmt: skip
    elif task == "multilabel":
        output = compute_multilabel(
            y_true, y_score, y_pred=y_pred, sample_weight=sample_weight, classes=classes,
            options=options,
        )  # fmt: skip
    elif task == "regression":
        predicted = regression_predictions(y_score, y_pred, classes)
        output = compute_regression(y_true, predicted, sample_weight=sample_weight, options=options)
    else:
        refuse_row_columns(y_pred, sample_weight)
        output = compute_detection(y_true, y_score, classes=classes, options=options)
    return task_result(task, output)


_CONVENTIONS = {
    "multiclass": MULTICLASS_CONVENTIONS,
    "multilabel": MULTILABEL_CONVENTIONS,
    "regression": REGRESSION_CONVENTIONS,
    "detection": DETECTION_CONVENTIONS,
}


def task_result(task: str, output: TaskOutput) -> EvaluationResult:
    """The result of a task other than binary from what its ``compute`` (or its state's
    ``output``) gave."""
    sink = output.sink
    # Detection counts images: its rows are the images of the request.
    n_samples = sink.metrics.get("n_samples", sink.metrics.get("n_images"))
    return EvaluationResult(
        task=task,
        n_samples=int(n_samples) if n_samples is not None else 0,
        metrics=sink.metrics,
        undefined=sink.undefined,
        curves=output.curves,
        intervals=sink.intervals,
        per_class=output.per_class,
        conventions={**_CONVENTIONS[task], **output.conventions},
        warnings=sink.warnings,
    )


def check_baseline(baseline: Mapping[str, Any], options: Options) -> None:
    """Raise ``InvalidInputError`` now for a baseline that a later drift test would refuse (a
    stream checks its header's baseline before its rows arrive)."""
    drift_test(None, baseline, options)


def _placed(sweep: Sweep) -> Placements | None:
    """DeLong's placement values, or None when a class is missing (no AUC)."""
    if sweep.n_positive == 0 or sweep.n_negative == 0:
        return None
    return placements(sweep)
