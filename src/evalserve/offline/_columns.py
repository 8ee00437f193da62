"""Which columns of a table feed which argument of ``Accumulator.update``, per task.

``ColumnSpec`` is what the user asked for (``--label-column``, ``--score-column`` ...); ``plan``
resolves it against a table's column names into a ``Plan``, which turns a batch of columns into
the arguments of ``update``. The same plan serves the offline evaluator (pyarrow batches) and
the Dask engine (pandas partitions): a batch is anything that maps a column name to its values.

Defaults: labels ``label``, scores ``score``, weights ``weight`` when such a column exists;
regression predictions ``prediction`` when it exists, else the score column. Multiclass and
multilabel scores (and multilabel labels) are a list column, or several columns named
explicitly or by a prefix (``score_`` or ``score_*``: every column that starts with it, in the
table's order, the rest of each name being the class name). Detection reads one row per image
with list columns ``gt_boxes gt_classes pred_boxes pred_classes pred_scores`` (in CSV, each cell
a JSON array), as the REST request's images. ``--segment-column`` names each row's segment
(text; read as codes into each batch's distinct names, see :mod:`evalserve.offline._segments`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from evalserve.core import InvalidInputError, Options, TaskInputs, parse_options, task_spec

__all__ = ["DETECTION_COLUMNS", "ColumnError", "ColumnSpec", "Plan", "plan"]

DETECTION_COLUMNS = ("gt_boxes", "gt_classes", "pred_boxes", "pred_classes", "pred_scores")


class ColumnError(ValueError):
    """A table that lacks a column the task needs, or one of the wrong kind."""


@dataclass(frozen=True)
class ColumnSpec:
    """The columns asked for; None takes the task's default."""

    task: str = "binary"
    label: tuple[str, ...] = ()
    score: tuple[str, ...] = ()
    weight: str | None = None
    prediction: str | None = None
    classes: tuple[str, ...] | None = None
    segment: str | None = None
    delimiter: str | None = None  # CSV files: the field delimiter (None: tab for .tsv, else ,)


@dataclass(frozen=True)
class Plan:
    """Resolved columns: ``label`` and ``score`` hold one name, or one per class."""

    task: str
    label: tuple[str, ...]
    score: tuple[str, ...]
    weight: str | None
    prediction: str | None
    classes: tuple[str, ...] | None
    segment: str | None = None
    # Binary labels may be text (names read with options.positive_label, see ``text_labels``).
    text_labels: bool = False

    @property
    def inputs(self) -> TaskInputs:
        return task_spec(self.task).inputs

    @property
    def columns(self) -> list[str]:
        """Every column to read, each once, in a stable order."""
        names = [*self.label, *self.score, self.prediction, self.weight, self.segment]
        return list(dict.fromkeys(name for name in names if name is not None))

    @property
    def numeric(self) -> list[str]:
        """The columns that must hold numbers (multiclass labels may be class names, binary
        labels too with ``options.positive_label``)."""
        if self.inputs.images:
            return []
        names = [name for name in self.columns if name != self.segment]
        if self.inputs.named_labels or self.text_labels:
            names = [name for name in names if name not in self.label]
        return names

    def field_columns(self) -> dict[str, tuple[str, ...]]:
        """The request field each column feeds (for error messages)."""
        fields: dict[str, tuple[str, ...]] = {"labels": self.label, "scores": self.score}
        if self.inputs.predictions_from_scores:
            fields["predictions"] = (self.prediction or self.score[0],)
        elif self.prediction is not None:
            fields["predictions"] = (self.prediction,)
        if self.weight is not None:
            fields["weights"] = (self.weight,)
        if self.segment is not None:
            fields["segments"] = fields["segment_names"] = (self.segment,)
        return fields

    def arguments(self, get: Callable[[str], Any]) -> dict[str, Any]:
        """The keyword arguments of ``Accumulator.update`` for one batch; ``get(name)`` gives a
        column's values (a 1-d array, or for a list column a sequence of sequences)."""
        inputs = self.inputs
        if inputs.images:
            return _detection(get)
        labels = (
            _matrix(self.label, get, self.task, "label")
            if inputs.label_matrix
            else get(self.label[0])
        )
        arguments: dict[str, Any] = {"y_true": labels}
        if inputs.predictions_from_scores:
            arguments["y_pred"] = get(self.prediction or self.score[0])
        else:
            matrix = inputs.score_matrix
            arguments["y_score"] = (
                _matrix(self.score, get, self.task, "score") if matrix else get(self.score[0])
            )
            if self.prediction is not None:
                arguments["y_pred"] = get(self.prediction)
        if self.weight is not None:
            arguments["sample_weight"] = get(self.weight)
        return arguments


def text_labels(task: str, options: Mapping[str, Any] | Options | None) -> bool:
    """Whether the label column may hold text: task binary with ``options.positive_label``
    (the core compares each label with it). Options that do not parse say no here: the
    accumulator refuses them, naming the option."""
    if task != "binary":
        return False
    try:
        return parse_options(options).positive_label is not None
    except InvalidInputError:
        return False


def plan(spec: ColumnSpec, names: Sequence[str]) -> Plan:
    """The plan of ``spec`` for a table with columns ``names``; raises ``ColumnError`` naming
    the missing column and the table's columns."""
    names = list(names)
    if spec.segment is not None:
        _require(spec.segment, names, "segment column")
    return replace(_plan(spec, names), segment=spec.segment)


def _plan(spec: ColumnSpec, names: list[str]) -> Plan:
    task = task_spec(spec.task)
    if task.inputs.images:
        if spec.label or spec.score or spec.weight or spec.prediction:
            raise ColumnError(
                f"task {task.name!r} reads the columns "
                + ", ".join(DETECTION_COLUMNS)
                + "; --label-column, --score-column, --weight-column and --prediction-column "
                "do not apply"
            )
        for name in DETECTION_COLUMNS:
            _require(name, names, "detection column")
        return Plan(task.name, (), DETECTION_COLUMNS, None, None, spec.classes)
    weight = spec.weight or ("weight" if "weight" in names else None)
    if spec.weight is not None:
        _require(spec.weight, names, "weight column")
    if spec.prediction is not None:
        _require(spec.prediction, names, "prediction column")
    classes = spec.classes
    if task.inputs.score_matrix:
        score, score_classes = _many(spec.score or ("score",), names, "score", "score_")
        classes = classes or score_classes
        if task.inputs.label_matrix:
            label, label_classes = _many(spec.label or ("label",), names, "label", "label_")
            if label_classes and score_classes and label_classes != score_classes:
                raise ColumnError(
                    f"the label columns name classes {list(label_classes)} but the score "
                    f"columns name {list(score_classes)}: they must match, in the same order"
                )
            classes = classes or label_classes
        else:
            label = (_one(spec.label, "label", names, "label column"),)
        return Plan(spec.task, label, score, weight, spec.prediction, classes)
    label = (_one(spec.label, "label", names, "label column"),)
    prediction = spec.prediction
    if task.inputs.predictions_from_scores:
        if prediction is None and not spec.score and "prediction" in names:
            prediction = "prediction"
        if prediction is None:
            score = (_one(spec.score, "score", names, "score column"),)
            return Plan(task.name, label, score, weight, None, None)
        return Plan(task.name, label, (), weight, prediction, None)
    score = (_one(spec.score, "score", names, "score column"),)
    return Plan(spec.task, label, score, weight, prediction, classes)


def _one(given: tuple[str, ...], default: str, names: list[str], what: str) -> str:
    if len(given) > 1:
        raise ColumnError(f"expected one {what}, but got {len(given)}: {list(given)}")
    name = given[0] if given else default
    _require(name, names, what)
    return name


def _many(
    given: tuple[str, ...], names: list[str], default: str, default_prefix: str
) -> tuple[tuple[str, ...], tuple[str, ...] | None]:
    """Columns named exactly, or by a prefix (``p_`` or ``p_*``); the class names are the
    suffixes when one prefix named them all."""
    if given == (default,) and default not in names:
        given = (default_prefix,)
    if len(given) == 1 and given[0] not in names:
        prefix = given[0].removesuffix("*")
        matched = [name for name in names if name.startswith(prefix) and name != prefix]
        if not matched:
            raise ColumnError(
                f"no column {given[0]!r} and none starting with {prefix!r}; the table has "
                f"{_listed(names)}"
            )
        return tuple(matched), tuple(name[len(prefix) :] for name in matched)
    for name in given:
        _require(name, names, "column")
    return given, None


def _require(name: str, names: list[str], what: str) -> None:
    if name not in names:
        raise ColumnError(f"no {what} {name!r}; the table has {_listed(names)}")


def _listed(names: list[str]) -> str:
    shown = ", ".join(repr(name) for name in names[:20])
    more = f" and {len(names) - 20} more" if len(names) > 20 else ""
    return f"columns {shown}{more}" if names else "no columns"


def _matrix(
    columns: tuple[str, ...], get: Callable[[str], Any], task: str = "", role: str = "score"
) -> Any:
    """An n x k matrix: one column per class, or the rows of one list column (``task`` and
    ``role``, label or score, for the message when the column holds one number a row)."""
    if len(columns) > 1:
        return np.column_stack([np.asarray(get(name)) for name in columns])
    values = get(columns[0])
    if isinstance(values, np.ndarray) and values.ndim == 2:
        return values
    return matrix_of_rows(columns[0], values, task, role)


def matrix_of_rows(column: str, rows: Any, task: str = "", role: str = "score") -> Any:
    """The rows of a list column (each a sequence of k numbers) as an n x k array; a column
    of single values (one number a row) raises ``InvalidInputError`` saying what ``task``
    reads as its ``role`` (label or score) columns."""
    for index, row in enumerate(rows):
        if row is not None and (isinstance(row, str) or not hasattr(row, "__len__")):
            reads = f"task {task!r} reads" if task else "this task reads"
            value = row.item() if isinstance(row, np.generic) else row
            raise InvalidInputError(
                column,
                f"holds a single value in row {index} ({value!r:.40}); {reads} its {role}s as "
                f"one list per row (a list column, Parquet) or one column per class "
                f"(--{role}-column {role}_ for {role}_<class> columns, or each column named)",
            )
        break  # a list column: the first row tells
    lengths = {len(row) if row is not None else -1 for row in rows}
    if len(lengths) > 1 or -1 in lengths:
        for index, row in enumerate(rows):
            if row is None:
                raise InvalidInputError(column, f"row {index} is empty (null)")
        raise InvalidInputError(
            column,
            f"expected lists of the same length in every row, but got lengths "
            f"{sorted(lengths)[:5]}",
        )
    if not len(rows):
        return np.empty((0, 0))
    return np.stack([np.asarray(row) for row in rows])


def _detection(get: Callable[[str], Any]) -> dict[str, Any]:
    columns = {name: list(get(name)) for name in DETECTION_COLUMNS}
    cells = {
        name: [_cell(name, i, value) for i, value in enumerate(values)]
        for name, values in columns.items()
    }
    n = len(cells["gt_boxes"])
    targets = [{"boxes": cells["gt_boxes"][i], "classes": cells["gt_classes"][i]} for i in range(n)]
    predictions = [
        {
            "boxes": cells["pred_boxes"][i],
            "classes": cells["pred_classes"][i],
            "scores": cells["pred_scores"][i],
        }
        for i in range(n)
    ]
    return {"y_true": targets, "y_score": predictions}


def _cell(column: str, row: int, value: Any) -> Any:
    """A detection cell: a list (Parquet), or its JSON text (CSV); None stays None."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError as error:
            raise InvalidInputError(
                f"images[{row}].{column}",
                f"expected a JSON array, but got {value[:40]!r} ({error.msg})",
            ) from None
    if isinstance(value, np.ndarray) and value.dtype == object:
        return [item.tolist() if isinstance(item, np.ndarray) else item for item in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value
