"""Task multiclass's spec: one true class per row (an index or a name) and n x k scores."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evalserve.core._options import Options
from evalserve.core._result import TaskOutput
from evalserve.core._task_spec import MemoryCost, TaskInputs, TaskSpec, evaluators_of
from evalserve.core.multiclass._catalog import CATALOG_ENTRIES, CONVENTIONS
from evalserve.core.multiclass._state import MULTICLASS_STATE
from evalserve.core.multiclass._suite import compute_multiclass

__all__ = ["SPEC"]


def _compute(
    y_true: Any,
    y_score: Any,
    y_pred: Any,
    sample_weight: Any,
    options: Options,
    classes: Sequence[str] | None,
) -> TaskOutput:
    return compute_multiclass(
        y_true, y_score, y_pred=y_pred, sample_weight=sample_weight, classes=classes,
        options=options,
    )  # fmt: skip


_FROM_ROWS, _FROM_STATE = evaluators_of("multiclass", CONVENTIONS, _compute)

SPEC = TaskSpec(
    name="multiclass",
    unit="rows",
    catalog=CATALOG_ENTRIES,
    conventions=CONVENTIONS,
    state=MULTICLASS_STATE,
    evaluate=_FROM_ROWS,
    state_result=_FROM_STATE,
    inputs=TaskInputs(
        score_matrix=True, width_from_scores=True, named_labels=True, optional=("predictions",)
    ),
    memory=MemoryCost(evaluation=4.5, result=5.0),
    headline=(
        "accuracy",
        "balanced_accuracy",
        "f1_macro",
        "roc_auc_ovr_macro",
        "average_precision_macro",
        "log_loss",
    ),
)
