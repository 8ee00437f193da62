"""Task detection's spec: per image, ground-truth boxes and scored predicted boxes."""

from __future__ import annotations

from typing import Any

from evalserve.core._options import Options
from evalserve.core._result import TaskOutput
from evalserve.core._task_spec import MemoryCost, TaskInputs, TaskSpec, evaluators_of
from evalserve.core.detection._catalog import CATALOG_ENTRIES, CONVENTIONS
from evalserve.core.detection._inputs import refuse_row_columns
from evalserve.core.detection._state import DETECTION_STATE
from evalserve.core.detection._suite import compute_detection

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
    refuse_row_columns(y_pred, sample_weight)
    return compute_detection(y_true, y_score, classes=classes, options=options)


_FROM_ROWS, _FROM_STATE = evaluators_of("detection", CONVENTIONS, _compute)

SPEC = TaskSpec(
    name="detection",
    unit="images",
    catalog=CATALOG_ENTRIES,
    conventions=CONVENTIONS,
    state=DETECTION_STATE,
    evaluate=_FROM_ROWS,
    state_result=_FROM_STATE,
    inputs=TaskInputs(images=True),
    # Ranks and area-range flags (COCO AR@k, APs/m/l) added about 0.75 x the input at the peak.
    memory=MemoryCost(evaluation=6.25),
    headline=("map", "map_50", "map_75", "recall_50"),
)
