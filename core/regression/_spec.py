"""Task regression's spec: a target and a prediction per row."""

from __future__ import annotations

from typing import Any

from evalserve.core._options import Options
from evalserve.core._result import TaskOutput
from evalserve.core._task_spec import MemoryCost, TaskInputs, TaskSpec, evaluators_of
from evalserve.core.regression._catalog import CATALOG_ENTRIES, CONVENTIONS
from evalserve.core.regression._rows import regression_predictions
from evalserve.core.regression._state import REGRESSION_STATE
from evalserve.core.regression._suite import compute_regression

__all__ = ["SPEC"]


def _compute(
    y_true: Any,
    y_score: Any,
    *,
    y_pred: Any,
    sample_weight: Any,
    classes: Any,
    options: Options,
) -> TaskOutput:
    predicted = regression_predictions(y_score, y_pred, classes)
    return compute_regression(y_true, predicted, sample_weight=sample_weight, options=options)


_FROM_ROWS, _FROM_STATE = evaluators_of("regression", CONVENTIONS, _compute)

SPEC = TaskSpec(
    name="regression",
    unit="rows",
    catalog=CATALOG_ENTRIES,
    conventions=CONVENTIONS,
    state=REGRESSION_STATE,
    evaluate=_FROM_ROWS,
    state_result=_FROM_STATE,
    inputs=TaskInputs(predictions_from_scores=True),
    # bench/memory_cost.py --quick --task regression (200,000 distinct pairs): evaluating
    # took 6.9 bytes per byte of input besides it. A stream's result, at 2M rows whose pairs
    # all wait unfolded (batches of distinct values wait until the result): 7.1 to 7.75 per
    # byte of state besides it (the waiting pairs sorted into the distinct pairs, the ranks
    # of spearman_r; 5.3 at 200,000); 10% over.
    memory=MemoryCost(evaluation=10.4, result=8.6),
    headline=("rmse", "mae", "r2", "mape", "median_absolute_error", "max_error"),
    takes_classes=False,
)
