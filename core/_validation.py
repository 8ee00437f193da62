"""Input checks for the core: one place, messages that name the field, the row and what came.

Every public entry point of the core runs its arrays through these functions once; the service
relies on them too, so both transports report the same error for the same bad input.
"""

from __future__ import annotations

import math
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalserve.core._errors import InvalidInputError
from evalserve.core._threads import by_shares, threads_for

__all__ = [
    "BinaryInputs",
    "binary_inputs",
    "binary_labels",
    "finite_floats",
    "labels_of_positive",
    "same_length",
    "sample_weights",
]

Floats = NDArray[np.float64]
Bools = NDArray[np.bool_]

MIN_WEIGHT = 1e-100
MAX_WEIGHT = 1e100


def _as_array(field: str, values: Any, dtype: type | None = None) -> NDArray[Any]:
    if values is None:
        raise InvalidInputError(field, "is required")
    try:
        array = np.asarray(values) if dtype is None else np.asarray(values, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            field, f"expected numbers, but could not read them ({exc})"
        ) from exc
    return array


def finite_floats(field: str, values: Any) -> Floats:
    """A non-empty 1-d float64 array with no NaN or infinity."""
    array = _as_array(field, values)
    if array.dtype.kind not in "biuf":
        raise InvalidInputError(field, f"expected numbers, but got values of type {array.dtype}")
    array = array.astype(np.float64, copy=False)
    if array.ndim != 1:
        raise InvalidInputError(field, f"expected a 1-d array, but got shape {array.shape}")
    if array.size == 0:
        raise InvalidInputError(field, "is empty; expected at least one value")
    # The sum is NaN or infinite when any value is (or when finite values overflow it): one
    # reduction decides the common case without a temporary; the exact check runs only then.
    if not _finite_sum(array) and not np.isfinite(array).all():
        row = int(np.argmin(np.isfinite(array)))
        raise InvalidInputError(
            field, f"expected finite numbers, but row {row} is {float(array[row])}"
        )
    return array


def _finite_sum(array: Floats) -> bool:
    """Whether the sum of ``array`` is finite, summed in shares on the context's threads (a
    pass over memory, which two threads make faster)."""

    def share(start: int, stop: int) -> float:
        with np.errstate(over="ignore", invalid="ignore"):
            return float(array[start:stop].sum())

    return math.isfinite(sum(by_shares(array.size, threads_for(array.size), share)))


def binary_labels(field: str, values: Any, positive_label: str | None = None) -> Bools:
    """Binary ground truth as booleans: accepts bool, or numbers equal to 0 or 1; with
    ``positive_label`` (the option), any two labels, names or numbers, of which the ones equal
    to it are positive (see ``labels_of_positive``)."""
    array = _as_array(field, values)
    if array.ndim != 1:
        raise InvalidInputError(field, f"expected a 1-d array, but got shape {array.shape}")
    if array.size == 0:
        raise InvalidInputError(field, "is empty; expected at least one label")
    if positive_label is not None:
        return labels_of_positive(field, array, positive_label)
    if array.dtype == np.bool_:
        return array
    if array.dtype.kind in "USO":
        raise InvalidInputError(field, _names_for_binary(field, array))
    if array.dtype.kind not in "iuf":
        raise InvalidInputError(
            field, f"expected labels 0 or 1 for task 'binary', but got values of type {array.dtype}"
        )
    if array.dtype.kind in "iu":
        converted = _integer_flags(array)
        if converted is not None:
            return converted
    positive = array == 1
    valid = positive | (array == 0)
    if not valid.all():
        row = int(np.argmin(valid))
        # Only labels take the option; hard predictions are always 0 or 1.
        hint = " (or set options.positive_label)" if field.endswith("labels") else ""
        raise InvalidInputError(
            field,
            f"expected labels 0 or 1 for task 'binary'{hint}, but row {row} is "
            f"{array[row].item()!r}",
        )
    return np.asarray(positive, dtype=np.bool_)


# Integer labels a block of their check takes: checked and converted while in the cache.
FLAG_BLOCK = 1 << 16


def _integer_flags(array: NDArray[Any]) -> Bools | None:
    """Integer labels all 0 or 1 as booleans; None when one is not. Seen as unsigned, a
    negative integer is huge: one reduction a block checks 0 <= x <= 1, then the block is
    converted while it is in the cache (10M int64 labels: 4.3 ms, against 5.6 ms for a
    reduction of all of them and then a conversion); in shares of the rows on the context's
    threads."""
    unsigned = array.view(np.dtype(f"u{array.dtype.itemsize}"))
    flags = np.empty(array.size, dtype=np.bool_)

    def share(start: int, stop: int) -> bool:
        for at in range(start, stop, FLAG_BLOCK):
            block = unsigned[at : min(at + FLAG_BLOCK, stop)]
            if block.max() > 1:
                return False
            np.not_equal(block, 0, out=flags[at : at + block.size])
        return True

    return flags if all(by_shares(array.size, threads_for(array.size), share)) else None


POSITIVE_FIELD = "options.positive_label"


def labels_of_positive(field: str, array: NDArray[Any], positive_label: str) -> Bools:
    """``array == positive_label``, as scikit-learn's ``pos_label``: names are compared as
    text, numbers (and booleans, as 0 and 1) with the option read as a number. At most two
    distinct labels, and with two one of them must be ``positive_label``; one (every row
    positive, or every row negative) is taken. One pass per check, no sort."""
    if array.dtype.kind in "USO":
        text = array if array.dtype.kind == "U" else array.astype(str)
        return _two_labels(field, text, text == positive_label, repr(positive_label))
    if array.dtype.kind not in "biuf":
        raise InvalidInputError(
            field, f"expected labels (names or numbers), but got values of type {array.dtype}"
        )
    try:
        target = float(positive_label)
    except ValueError:
        raise InvalidInputError(
            POSITIVE_FIELD,
            f"the labels are numbers, so expected a number, but got {positive_label!r}",
        ) from None
    numbers = array.astype(np.float64, copy=False)
    finite = np.isfinite(numbers)
    if not finite.all():
        row = int(np.argmin(finite))
        raise InvalidInputError(
            field, f"expected finite labels, but row {row} is {float(numbers[row])}"
        )
    return _two_labels(field, numbers, numbers == target, _shown(target))


def _two_labels(field: str, array: NDArray[Any], positive: Bools, shown: str) -> Bools:
    """``positive`` once ``array`` is known to hold at most two distinct values, one of them
    the positive label (``shown`` as messages show it) when there are two."""
    rest = ~positive
    if not rest.any():
        return positive
    first = array[int(np.argmax(rest))]
    other = rest & (array != first)
    if not other.any():
        return positive
    row = int(np.argmax(other))
    second = array[row]
    if positive.any():
        raise _a_third(field, row, _shown(second), (shown, _shown(first)))
    third = other & (array != second)
    if third.any():
        row = int(np.argmax(third))
        raise _a_third(field, row, _shown(array[row]), (_shown(first), _shown(second)))
    raise InvalidInputError(
        POSITIVE_FIELD,
        f"is {shown}, but the {field} are {_shown(first)} and {_shown(second)}: "
        "expected one of them",
    )


def _a_third(field: str, row: int, shown: str, two: tuple[str, str]) -> InvalidInputError:
    """A label at ``row`` that is neither of the ``two`` labels seen before it."""
    return InvalidInputError(
        field,
        f"expected two distinct labels for task 'binary', but row {row} is {shown}, a third "
        f"after {two[0]} and {two[1]}",
    )


def _shown(value: Any) -> str:
    """A label as messages show it: names quoted, whole numbers without ".0"."""
    item = value.item() if isinstance(value, np.generic) else value
    if isinstance(item, float) and item.is_integer():
        return str(int(item))
    return repr(item)


def _names_for_binary(field: str, array: NDArray[Any]) -> str:
    """Why names (strings) are no binary labels by themselves, in the caller's words."""
    seen: list[str] = []
    for value in array[:10_000].flat:  # the first few distinct names; no sort of every row
        if value not in seen:
            seen.append(value)
            if len(seen) == 3:
                break
    shown = ", ".join(repr(str(value)) for value in seen[:2]) + (", ..." if len(seen) > 2 else "")
    example = repr(str(seen[0]))
    if not field.endswith("labels"):
        return (
            f"expected labels 0 or 1 for task 'binary', but got names ({shown}): hard "
            "predictions are numbers; send 1 for the positive class and 0 for the other"
        )
    return (
        f"expected labels 0 or 1 for task 'binary', but got names ({shown}): set "
        f"options.positive_label to the name of the positive class (for example {example}), "
        "or send 1 for the positive class and 0 for the other"
    )


# A batch of an ``Accumulator`` may weigh nothing (a shard of weight-zero rows): only the whole
# must weigh something, which ``Accumulator.result`` checks. ``Accumulator.update`` sets this
# while it checks a batch.
WEIGHTLESS_BATCHES: ContextVar[bool] = ContextVar("weightless_batches", default=False)


def sample_weights(field: str, values: Any, n_rows: int) -> Floats | None:
    """Non-negative finite weights, not all zero (except in a batch of an ``Accumulator``);
    None stays None."""
    if values is None:
        return None
    weights = finite_floats(field, values)
    same_length(field, weights.size, n_rows)
    # Two reductions decide the common case; the rows are looked for only when one fails.
    low, high = float(weights.min()), float(weights.max())
    if low < 0:
        row = int(np.argmax(weights < 0))
        raise InvalidInputError(
            field, f"expected non-negative weights, but row {row} is {float(weights[row])}"
        )
    if high == 0 and not WEIGHTLESS_BATCHES.get():
        raise InvalidInputError(field, "all weights are zero; nothing to evaluate")
    # Weights far from 1 overflow or underflow the sums and products of the metrics.
    if high > MAX_WEIGHT or low < MIN_WEIGHT:
        out_of_range = (weights > MAX_WEIGHT) | ((weights > 0) & (weights < MIN_WEIGHT))
        if out_of_range.any():
            row = int(np.argmax(out_of_range))
            raise InvalidInputError(
                field,
                f"expected 0 or a weight in [{MIN_WEIGHT:g}, {MAX_WEIGHT:g}], "
                f"but row {row} is {float(weights[row])}",
            )
    return weights


def same_length(field: str, got: int, expected: int) -> None:
    if got != expected:
        raise InvalidInputError(field, f"expected {expected} values (one per label), but got {got}")


@dataclass(frozen=True, slots=True)
class BinaryInputs:
    """Checked binary rows: ``predicted`` is set only when both scores and hard predictions
    came (the predictions then set the confusion counts)."""

    labels: Bools
    scores: Floats
    weights: Floats | None
    predicted: Bools | None


def binary_inputs(
    y_true: Any,
    y_score: Any,
    y_pred: Any,
    sample_weight: Any,
    *,
    prefix: str = "",
    positive_label: str | None = None,
) -> BinaryInputs:
    """Every check of one batch of binary rows; without scores, predictions serve as scores.
    ``prefix`` names where the rows sit in the request (``baseline.``); ``positive_label``
    (the option) reads the labels, not the hard predictions, which stay 0/1."""
    labels = binary_labels(f"{prefix}labels", y_true, positive_label)
    if y_score is None and y_pred is None:
        raise InvalidInputError(
            f"{prefix}scores", "is required for task 'binary' (or send predictions)"
        )
    scores = finite_floats(f"{prefix}scores", y_score if y_score is not None else y_pred)
    same_length(f"{prefix}scores", scores.size, labels.size)
    weights = sample_weights(f"{prefix}weights", sample_weight, labels.size)
    predicted = None
    if y_pred is not None and y_score is not None:
        predicted = binary_labels(f"{prefix}predictions", y_pred)
        same_length(f"{prefix}predictions", predicted.size, labels.size)
    return BinaryInputs(labels, scores, weights, predicted)
