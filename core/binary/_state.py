"""Task binary's state for the ``Accumulator``: each class's distinct scores with their mass.

The state keeps the positives' and the negatives' ``ClassScores`` (core/binary/_classes.py) as
*parts*: a batch adds its two classes as new parts, a merge joins the lists, and the parts are
merged into one per class (one sort of their scores, ``merge_classes``) only when they hold more
entries than that would keep, or when a result or the bytes are asked for. So a stream of
batches costs one sort of its distinct scores per class, about what the one-shot evaluation's
own sort costs, instead of a merge per batch. The same is kept for the hard predictions when
the batches carry them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalserve.core._errors import InvalidInputError
from evalserve.core._options import Options
from evalserve.core._result import TaskOutput
from evalserve.core._state import (
    Arrays,
    StateKind,
    array_of,
    check_ascending,
    check_masses,
    count_of,
    flag_of,
)
from evalserve.core._validation import binary_inputs
from evalserve.core.binary._classes import (
    ClassScores,
    RawScores,
    class_scores,
    merge_classes,
    raw_classes_of_rows,
)
from evalserve.core.binary._sweep import Sweep, sweep

__all__ = ["BINARY_STATE", "BinaryState", "Classes"]

BYTES_PER_ENTRY = 16  # a distinct score and its mass, float64 each
# Parts are merged once they hold more than twice the entries of the merged state, and at least
# this many: small batches of repeated scores then cost a sort per million entries, not one each.
MIN_PENDING = 1 << 20


@dataclass(frozen=True, slots=True, eq=False)
class Classes:
    """The positives' and the negatives' scores, each as a tuple of canonical parts."""

    positives: tuple[ClassScores | RawScores, ...]
    negatives: tuple[ClassScores | RawScores, ...]

    @classmethod
    def of_rows(cls, labels: NDArray[np.bool_], scores: Any, weights: Any) -> Classes:
        """A batch's classes, kept raw: sorted with the other parts when they are merged."""
        positives, negatives = raw_classes_of_rows(labels, scores, weights)
        return cls((positives,), (negatives,))

    @property
    def size(self) -> int:
        return sum(part.size for part in (*self.positives, *self.negatives))

    def joined(self, other: Classes) -> Classes:
        joined = Classes(self.positives + other.positives, self.negatives + other.negatives)
        merged_size = max(part.size for part in (*joined.positives, *joined.negatives))
        if len(joined.positives) + len(joined.negatives) > 2 and joined.size > max(
            3 * merged_size, MIN_PENDING
        ):
            return joined.merged()
        return joined

    def merged(self) -> Classes:
        """One canonical part per class."""
        return Classes((merge_classes(self.positives),), (merge_classes(self.negatives),))

    def canonical(self) -> tuple[ClassScores, ClassScores]:
        merged = self.merged()
        positives, negatives = merged.positives[0], merged.negatives[0]
        assert isinstance(positives, ClassScores) and isinstance(negatives, ClassScores)
        return positives, negatives

    def sweep(self) -> Sweep:
        return sweep(*self.canonical())

    def weightless(self) -> bool:
        """No part holds any mass (canonical parts hold none of weight zero)."""
        return not any(
            part.size and (isinstance(part, ClassScores) or part.masses().any())
            for part in (*self.positives, *self.negatives)
        )


@dataclass(frozen=True, slots=True, eq=False)
class BinaryState:
    """The scores' classes, the hard predictions' classes when the batches sent them, the rows
    that went in, and whether any batch carried weights."""

    scores: Classes
    predictions: Classes | None
    n_rows: int
    weighted: bool

    @property
    def size(self) -> int:
        extra = 0 if self.predictions is None else self.predictions.size
        return self.scores.size + extra

    @property
    def nbytes(self) -> int:
        return BYTES_PER_ENTRY * self.size

    @property
    def weightless(self) -> bool:
        return self.scores.weightless()

    def merge(self, other: BinaryState) -> BinaryState:
        if (self.predictions is None) != (other.predictions is None):
            raise InvalidInputError("predictions", "send predictions with every batch or with none")
        predictions = None
        if self.predictions is not None and other.predictions is not None:
            predictions = self.predictions.joined(other.predictions)
        return BinaryState(
            self.scores.joined(other.scores),
            predictions,
            self.n_rows + other.n_rows,
            self.weighted or other.weighted,
        )

    def compact(self) -> BinaryState:
        predictions = None if self.predictions is None else self.predictions.merged()
        return BinaryState(self.scores.merged(), predictions, self.n_rows, self.weighted)

    def to_arrays(self) -> Arrays:
        state = self.compact()
        arrays = _class_arrays("scores", state.scores)
        if state.predictions is not None:
            arrays |= _class_arrays("predictions", state.predictions)
        arrays["n_rows"] = np.array(self.n_rows, dtype=np.int64)
        arrays["weighted"] = np.array(self.weighted)
        return arrays

    def output(self, options: Options, classes: tuple[str, ...] | None) -> TaskOutput:
        raise NotImplementedError("task binary's result comes from core._evaluate.binary_result")


def _class_arrays(prefix: str, classes: Classes) -> Arrays:
    arrays: Arrays = {}
    for name, part in zip(("positives", "negatives"), classes.canonical(), strict=True):
        arrays[f"{prefix}.{name}.scores"] = part.scores
        arrays[f"{prefix}.{name}.mass"] = part.masses()
    return arrays


def _classes_of(arrays: Mapping[str, NDArray[Any]], prefix: str) -> tuple[Classes, float]:
    """The classes under ``prefix`` and their whole mass."""
    parts = []
    for name in ("positives", "negatives"):
        scores = array_of(arrays, f"{prefix}.{name}.scores", np.float64, 1)
        check_ascending(f"{prefix}.{name}.scores", scores)
        mass = array_of(arrays, f"{prefix}.{name}.mass", np.float64, 1, length=scores.size)
        check_masses(f"{prefix}.{name}.mass", mass)
        if scores.size and not (mass > 0).all():
            raise InvalidInputError("state", f"array '{prefix}.{name}.mass' holds a zero mass")
        parts.append(class_scores(scores, mass))
    return Classes((parts[0],), (parts[1],)), float(sum(part.total for part in parts))


def _of_batch(
    y_true: Any,
    y_score: Any,
    y_pred: Any,
    sample_weight: Any,
    options: Options,
    classes: tuple[str, ...] | None,
) -> BinaryState:
    rows = binary_inputs(y_true, y_score, y_pred, sample_weight)
    predictions = None
    if rows.predicted is not None:
        predictions = Classes.of_rows(rows.labels, rows.predicted.astype(np.float64), rows.weights)
    scores = Classes.of_rows(rows.labels, rows.scores, rows.weights)
    return BinaryState(scores, predictions, int(rows.labels.size), rows.weights is not None)


def _from_arrays(
    arrays: Mapping[str, NDArray[Any]], options: Options, classes: tuple[str, ...] | None
) -> BinaryState:
    n_rows = count_of(arrays, "n_rows")
    weighted = flag_of(arrays, "weighted")
    scores, total = _classes_of(arrays, "scores")
    predictions = None
    if "predictions.positives.scores" in arrays:
        predictions, predicted_total = _classes_of(arrays, "predictions")
        if not math.isclose(predicted_total, total, rel_tol=1e-9):
            raise InvalidInputError("state", "predictions and scores hold different masses")
    if not weighted and total != n_rows:
        raise InvalidInputError(
            "state", f"unweighted counts add up to {total:g}, not to its {n_rows} rows"
        )
    if n_rows == 0 and total:
        raise InvalidInputError("state", "holds scores but no rows")
    return BinaryState(scores, predictions, n_rows, weighted)


SIZE_DOC = (
    "Per class (positives, negatives), each distinct score and its mass (two float64 values, "
    "16 bytes); the same again for the distinct hard predictions when batches carry them. "
    "Continuous scores make every row a distinct score (16 bytes a row); scores rounded to 4 "
    "decimals hold at most 2 x 10,001 entries (320 kB) whatever the number of rows. Between "
    "merges, batches wait as they came (a copy of their scores, and weights): at most three "
    "times the merged size, or a million entries."
)

BINARY_STATE = StateKind(of_batch=_of_batch, from_arrays=_from_arrays, size_doc=SIZE_DOC)
