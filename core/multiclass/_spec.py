"""Task multiclass's spec: one true class per row (an index or a name) and n x k scores."""

from __future__ import annotations

from evalserve.core._task_spec import MemoryCost, TaskInputs, TaskSpec, evaluators_of
from evalserve.core.multiclass._catalog import CATALOG_ENTRIES, CONVENTIONS
from evalserve.core.multiclass._state import MULTICLASS_STATE
from evalserve.core.multiclass._suite import compute_multiclass

__all__ = ["SPEC"]


_FROM_ROWS, _FROM_STATE = evaluators_of("multiclass", CONVENTIONS, compute_multiclass)

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
