"""Checks of multilabel rows: n x k matrices of 0/1 labels, scores and predictions.

Every message names the request field and says what was expected and what came, with the row
and column of the first offending cell (the row and column a user can find in their file).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalserve.core._errors import InvalidInputError
from evalserve.core._validation import sample_weights

__all__ = ["MultilabelInputs", "multilabel_inputs"]

Floats = NDArray[np.float64]
Bools = NDArray[np.bool_]

TASK = "for task 'multilabel'"


@dataclass(frozen=True, slots=True)
class MultilabelInputs:
    """Checked rows: ``labels`` and ``predicted`` are n x k booleans, ``scores`` n x k floats
    (the predictions as 0.0/1.0 when no scores came), ``classes`` the k column names."""

    labels: Bools
    scores: Floats
    predicted: Bools
    weights: Floats | None
    classes: tuple[str, ...]


def multilabel_inputs(
    y_true: Any,
    y_score: Any,
    y_pred: Any,
    sample_weight: Any,
    classes: Any,
    *,
    threshold: float,
) -> MultilabelInputs:
    """Every check of one batch of multilabel rows. Hard predictions are ``y_pred`` when sent,
    else ``score >= threshold``; without scores, the predictions serve as scores."""
    labels = _zero_one("labels", y_true)
    n_rows, n_labels = labels.shape
    if y_score is None and y_pred is None:
        raise InvalidInputError("scores", f"is required {TASK} (or send predictions)")
    predicted: Bools | None = None
    if y_pred is not None:
        predicted = _zero_one("predictions", y_pred)
        _same_shape("predictions", predicted.shape, labels.shape)
    if y_score is not None:
        scores = _finite_matrix("scores", y_score)
        _same_shape("scores", scores.shape, labels.shape)
    else:
        assert predicted is not None
        scores = predicted.astype(np.float64)
    if predicted is None:
        predicted = scores >= threshold
    weights = sample_weights("weights", sample_weight, n_rows)
    return MultilabelInputs(labels, scores, predicted, weights, _class_names(classes, n_labels))


def _matrix(field: str, values: Any) -> NDArray[Any]:
    """A non-empty 2-d array (n rows x k labels), or a message that says what is wrong."""
    if values is None:
        raise InvalidInputError(field, "is required")
    try:
        array = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(field, _unreadable(values, exc)) from exc
    if array.ndim != 2:
        raise InvalidInputError(
            field, f"expected a 2-d array (n rows x k labels) {TASK}, but got shape {array.shape}"
        )
    if array.shape[0] == 0:
        raise InvalidInputError(field, "is empty; expected at least one row")
    if array.shape[1] == 0:
        raise InvalidInputError(field, "has rows of no values; expected at least one label column")
    return array


def _unreadable(values: Any, exc: Exception) -> str:
    """Name the first row whose length differs from row 0 when the rows are ragged."""
    if isinstance(values, Sequence) and not isinstance(values, (str, bytes)) and values:
        lengths = [_length(row) for row in values]
        for row, length in enumerate(lengths):
            if length is None:
                return f"expected every row to be a list of values, but row {row} is not"
            if length != lengths[0]:
                return (
                    f"expected rows of equal length, but row 0 has {lengths[0]} values and "
                    f"row {row} has {length}"
                )
    return f"expected numbers, but could not read them ({exc})"


def _length(row: Any) -> int | None:
    if isinstance(row, (str, bytes)) or not hasattr(row, "__len__"):
        return None
    return len(row)


def _zero_one(field: str, values: Any) -> Bools:
    """0/1 cells as booleans: accepts bool, or numbers equal to 0 or 1."""
    array = _matrix(field, values)
    if array.dtype == np.bool_:
        return array
    if array.dtype.kind not in "iuf":
        raise InvalidInputError(
            field, f"expected 0 or 1 in every cell {TASK}, but got values of type {array.dtype}"
        )
    positive = array == 1
    valid = positive | (array == 0)
    if not valid.all():
        row, column = _first(~valid)
        raise InvalidInputError(
            field,
            f"expected 0 or 1 in every cell {TASK}, but row {row}, column {column} is "
            f"{array[row, column].item()!r}",
        )
    return np.asarray(positive, dtype=np.bool_)


def _finite_matrix(field: str, values: Any) -> Floats:
    array = _matrix(field, values)
    if array.dtype.kind not in "biuf":
        raise InvalidInputError(field, f"expected numbers, but got values of type {array.dtype}")
    floats = np.asarray(array, dtype=np.float64)
    finite = np.isfinite(floats)
    if not finite.all():
        row, column = _first(~finite)
        raise InvalidInputError(
            field,
            f"expected finite numbers, but row {row}, column {column} is "
            f"{float(floats[row, column])}",
        )
    return floats


def _first(bad: Bools) -> tuple[int, int]:
    row, column = np.unravel_index(int(np.argmax(bad)), bad.shape)
    return int(row), int(column)


def _same_shape(field: str, got: tuple[int, ...], expected: tuple[int, ...]) -> None:
    if got[0] != expected[0]:
        raise InvalidInputError(
            field, f"expected {expected[0]} rows (one per row of labels), but got {got[0]}"
        )
    if got[1] != expected[1]:
        raise InvalidInputError(
            field,
            f"expected {expected[1]} columns (one per label column), but got {got[1]}",
        )


def _class_names(classes: Any, n_labels: int) -> tuple[str, ...]:
    """The k label names: "0" .. "k-1" by default; given names must be distinct strings (or
    integers, kept as their decimal text), one per label column."""
    if classes is None:
        return tuple(str(j) for j in range(n_labels))
    if isinstance(classes, np.ndarray):
        if classes.ndim != 1:
            raise InvalidInputError(
                "classes", f"expected a list of names, but got an array of shape {classes.shape}"
            )
        classes = classes.tolist()
    if isinstance(classes, (str, bytes)) or not isinstance(classes, Sequence):
        raise InvalidInputError("classes", f"expected a list of names, but got {classes!r}")
    if len(classes) != n_labels:
        raise InvalidInputError(
            "classes",
            f"expected {n_labels} names (one per label column), but got {len(classes)}",
        )
    names: list[str] = []
    for index, name in enumerate(classes):
        if isinstance(name, (bool, np.bool_)) or not isinstance(name, (str, int, np.integer)):
            raise InvalidInputError(
                "classes", f"expected names (strings), but item {index} is {name!r}"
            )
        text = str(name)
        if not text:
            raise InvalidInputError("classes", f"expected non-empty names, but item {index} is ''")
        names.append(text)
    seen: dict[str, int] = {}
    for index, text in enumerate(names):
        if text in seen:
            raise InvalidInputError(
                "classes",
                f"expected distinct names, but items {seen[text]} and {index} are both {text!r}",
            )
        seen[text] = index
    return tuple(names)
