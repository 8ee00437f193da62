"""Checks of one multiclass request: every message names the field, what was expected and,
where it helps, the row.

Fields: ``labels`` (class indices or names), ``scores`` (n x k), ``predictions`` (like labels),
``weights``, ``classes`` (names in score-column order).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalserve.core._errors import InvalidInputError
from evalserve.core._validation import sample_weights

__all__ = ["MulticlassInputs", "multiclass_inputs"]

Floats = NDArray[np.float64]
Indices = NDArray[np.intp]


@dataclass(frozen=True, slots=True, eq=False)
class MulticlassInputs:
    """Checked rows. ``scores`` is C-contiguous float64 n x k with finite values; ``low`` and
    ``high`` are its smallest and largest value."""

    labels: Indices
    scores: NDArray[np.float64]
    predicted: Indices | None
    weights: Floats | None
    classes: tuple[str, ...]
    low: float
    high: float

    @property
    def n_rows(self) -> int:
        return int(self.labels.size)

    @property
    def n_classes(self) -> int:
        return len(self.classes)


def multiclass_inputs(
    y_true: Any,
    y_score: Any,
    y_pred: Any = None,
    sample_weight: Any = None,
    classes: Sequence[str] | None = None,
) -> MulticlassInputs:
    """Every check of a multiclass request, in the order the fields are read."""
    scores = _score_matrix(y_score)
    low, high = _finite_range(scores)
    n_rows, width = scores.shape
    names = _class_names(classes, width)
    named = classes is not None
    labels = _class_column("labels", y_true, names, named=named)
    if labels.size == 0:
        raise InvalidInputError("labels", "is empty; expected at least one row")
    if n_rows != labels.size:
        raise InvalidInputError(
            "scores", f"expected {labels.size} rows (one per label), but got {n_rows}"
        )
    predicted = None
    if y_pred is not None:
        predicted = _class_column("predictions", y_pred, names, named=named)
        if predicted.size != labels.size:
            raise InvalidInputError(
                "predictions",
                f"expected {labels.size} values (one per label), but got {predicted.size}",
            )
    weights = sample_weights("weights", sample_weight, labels.size)
    return MulticlassInputs(labels, scores, predicted, weights, names, low, high)


def _score_matrix(values: Any) -> NDArray[np.float64]:
    if values is None:
        raise InvalidInputError("scores", "is required for task 'multiclass'")
    try:
        array = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            "scores", f"expected an n x k matrix of numbers, but could not read it ({exc})"
        ) from exc
    if array.dtype.kind not in "biuf":
        raise InvalidInputError("scores", f"expected numbers, but got values of type {array.dtype}")
    if array.ndim != 2:
        raise InvalidInputError(
            "scores",
            f"expected an n x k matrix (one column per class), but got shape {array.shape}",
        )
    if array.shape[1] < 2:
        raise InvalidInputError(
            "scores", f"expected at least 2 columns (one per class), but got {array.shape[1]}"
        )
    return np.ascontiguousarray(array, dtype=np.float64)


def _finite_range(scores: NDArray[np.float64]) -> tuple[float, float]:
    """(min, max) of the scores; NaN and infinities show in them, so two reductions check
    finiteness too."""
    if scores.size == 0:
        return 0.0, 0.0  # no rows: the labels' check says so
    low, high = float(scores.min()), float(scores.max())
    if math.isfinite(low) and math.isfinite(high):
        return low, high
    finite = np.isfinite(scores)
    row = int(np.argmin(finite.all(axis=1)))
    column = int(np.argmin(finite[row]))
    raise InvalidInputError(
        "scores",
        f"expected finite numbers, but row {row} column {column} is {float(scores[row, column])}",
    )


def _class_names(classes: Sequence[str] | None, width: int) -> tuple[str, ...]:
    if classes is None:
        return tuple(str(index) for index in range(width))
    if isinstance(classes, str) or not isinstance(classes, Sequence | np.ndarray):
        raise InvalidInputError("classes", f"expected a list of class names, but got {classes!r}")
    names = tuple(classes)
    for index, name in enumerate(names):
        if not isinstance(name, str):
            raise InvalidInputError(
                "classes", f"expected class names (strings), but entry {index} is {name!r}"
            )
    if len(names) != width:
        raise InvalidInputError(
            "scores",
            f"expected {len(names)} columns (one per name in classes), but got {width}",
        )
    seen: dict[str, int] = {}
    for index, name in enumerate(names):
        if name in seen:
            raise InvalidInputError(
                "classes",
                f"expected distinct names, but entries {seen[name]} and {index} are both {name!r}",
            )
        seen[name] = index
    return names


def _class_column(field: str, values: Any, names: tuple[str, ...], *, named: bool) -> Indices:
    """Class indices from indices (integers or integral floats) or from class names (which
    need ``classes``: ``named``)."""
    width = len(names)
    if values is None:
        raise InvalidInputError(field, "is required")
    try:
        array = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(field, f"expected class indices or names ({exc})") from exc
    if array.ndim != 1:
        raise InvalidInputError(
            field, f"expected a 1-d array (one class per row), but got shape {array.shape}"
        )
    if array.dtype.kind in "USO":
        if not named and array.size:
            raise InvalidInputError(
                "classes",
                f"is required when {field} are class names (row 0 of {field} is "
                f"{array[0].item()!r}): send the names in score-column order",
            )
        return _names_to_indices(field, array, names)
    if array.dtype.kind not in "biuf":
        raise InvalidInputError(
            field, f"expected class indices or names, but got values of type {array.dtype}"
        )
    if array.dtype.kind == "f":
        integral = np.isfinite(array) & (array == np.floor(array))
        if not integral.all():
            row = int(np.argmin(integral))
            raise InvalidInputError(
                field,
                f"expected class indices 0..{width - 1}, but row {row} is {array[row].item()!r}",
            )
    inside = (array >= 0) & (array < width)
    if not inside.all():
        row = int(np.argmin(inside))
        raise InvalidInputError(
            field,
            f"expected class indices 0..{width - 1} (one per score column), but row {row} is "
            f"{array[row].item()!r}",
        )
    return array.astype(np.intp)


def _names_to_indices(field: str, array: NDArray[Any], names: tuple[str, ...]) -> Indices:
    if array.dtype.kind == "O":
        for row, value in enumerate(array.tolist()):
            if not isinstance(value, str):
                raise InvalidInputError(
                    field, f"expected class names or indices, but row {row} is {value!r}"
                )
        array = array.astype(str)
    elif array.dtype.kind == "S":
        array = np.char.decode(array, "utf-8")
    order = np.argsort(np.asarray(names))
    ordered = np.asarray(names)[order]
    at = np.minimum(np.searchsorted(ordered, array), ordered.size - 1)
    known = ordered[at] == array
    if not known.all():
        row = int(np.argmin(known))
        raise InvalidInputError(
            field,
            f"row {row} is {str(array[row])!r}, which is not one of classes {_shown(names)}",
        )
    return order[at].astype(np.intp)


def _shown(names: tuple[str, ...], limit: int = 10) -> str:
    listed = ", ".join(repr(name) for name in names[:limit])
    more = f", ... ({len(names)} in all)" if len(names) > limit else ""
    return f"[{listed}{more}]"
