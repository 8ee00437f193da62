"""Task multilabel's spec: n x k 0/1 labels, scores and hard predictions."""

from __future__ import annotations

from evalserve.core._task_spec import MemoryCost, TaskInputs, TaskSpec, evaluators_of
from evalserve.core.multilabel._catalog import CATALOG_ENTRIES, CONVENTIONS
from evalserve.core.multilabel._state import MULTILABEL_STATE
from evalserve.core.multilabel._suite import compute_multilabel

__all__ = ["SPEC"]


_FROM_ROWS, _FROM_STATE = evaluators_of("multilabel", CONVENTIONS, compute_multilabel)

SPEC = TaskSpec(
    name="multilabel",
    unit="rows",
    catalog=CATALOG_ENTRIES,
    conventions=CONVENTIONS,
    state=MULTILABEL_STATE,
    evaluate=_FROM_ROWS,
    state_result=_FROM_STATE,
    inputs=TaskInputs(score_matrix=True, label_matrix=True, optional=("predictions", "scores")),
    memory=MemoryCost(evaluation=8.0, result=12.0),
    headline=(
        "subset_accuracy",
        "hamming_loss",
        "f1_micro",
        "f1_macro",
        "roc_auc_macro",
        "average_precision_macro",
    ),
)
