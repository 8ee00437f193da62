"""Task multilabel's spec: n x k 0/1 labels, scores and hard predictions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evalserve.core._options import Options
from evalserve.core._result import TaskOutput
from evalserve.core._task_spec import MemoryCost, TaskInputs, TaskSpec, evaluators_of
from evalserve.core.multilabel._catalog import CATALOG_ENTRIES, CONVENTIONS
from evalserve.core.multilabel._state import MULTILABEL_STATE
from evalserve.core.multilabel._suite import compute_multilabel

__all__ = ["SPEC"]


def _compute(
    y_true: Any,
    y_score: Any,
    y_pred: Any,
    sample_weight: Any,
    options: Options,
    classes: Sequence[str] | None,
) -> TaskOutput:
    return compute_multilabel(
        y_true, y_score, y_pred=y_pred, sample_weight=sample_weight, classes=classes,
        options=options,
    )  # fmt: skip


_FROM_ROWS, _FROM_STATE = evaluators_of("multilabel", CONVENTIONS, _compute)

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
