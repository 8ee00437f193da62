"""Task binary's spec: 0/1 labels and one score per row."""

from __future__ import annotations

from evalserve.core._task_spec import MemoryCost, TaskInputs, TaskSpec
from evalserve.core.binary._catalog import CATALOG_ENTRIES, CONVENTIONS
from evalserve.core.binary._result import evaluate_binary_rows, evaluate_binary_state
from evalserve.core.binary._segmented import evaluate_binary_segments
from evalserve.core.binary._state import BINARY_STATE

__all__ = ["SPEC"]

SPEC = TaskSpec(
    name="binary",
    unit="rows",
    catalog=CATALOG_ENTRIES,
    conventions=CONVENTIONS,
    state=BINARY_STATE,
    evaluate=evaluate_binary_rows,
    state_result=evaluate_binary_state,
    inputs=TaskInputs(optional=("predictions", "scores")),
    memory=MemoryCost(evaluation=5.5, result=5.0),
    headline=(
        "roc_auc",
        "average_precision",
        "ks_statistic",
        "log_loss",
        "brier_score",
        "accuracy",
        "precision",
        "recall",
        "f1",
    ),
    compares=True,
    takes_classes=False,
    bootstraps=True,
    ranges=True,
    segments=evaluate_binary_segments,
)
