"""Task binary's state for the ``Accumulator``: each class's distinct scores with their mass.

The state keeps the positives' and the negatives' ``ClassScores`` (core/binary/_classes.py) as
canonical *parts*, and the latest batches as they came (``Waiting``, core/_state.py): a merge
joins the lists, and everything is folded into one part per class (one sort of their scores,
``merge_classes``) when the waiting batches are due (``Waiting.due``: as soon as they outweigh
the folded state while folds compact repeated scores, so memory follows the distinct scores;
while the scores are distinct, only once many batches wait and they pass three times the state
and a million entries, so such a stream costs about one sort, as the one-shot evaluation's
own), or when a result or the bytes are asked for. The same is kept for the hard predictions
when the batches carry them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalserve.core._errors import InvalidInputError
from evalserve.core._options import Options
from evalserve.core._result import TaskOutput
from evalserve.core._state import (
    Arrays,
    StateKind,
    Waiting,
    array_of,
    check_ascending,
    check_masses,
    count_of,
    flag_of,
)
from evalserve.core._state_format import Later
from evalserve.core._validation import binary_inputs
from evalserve.core.binary._classes import (
    CanonicalMerge,
    ClassScores,
    RawScores,
    class_scores,
    merge_classes,
    merges_by_stretches,
    raw_classes_of_rows,
)
from evalserve.core.binary._sweep import Sweep, sweep

__all__ = ["BINARY_STATE", "BinaryState", "Classes"]

BYTES_PER_ENTRY = 16  # a distinct score and its mass, float64 each
# Batches of (nearly) distinct scores wait until they hold three times the entries of the folded
# state, and at least this many: a stream of them costs about one sort of its scores.
MIN_PENDING = 1 << 20


@dataclass(frozen=True, slots=True, eq=False)
class RawPair:
    """A batch's positives and negatives as they came, waiting to be folded."""

    positives: RawScores
    negatives: RawScores

    @property
    def entries(self) -> int:
        return self.positives.size + self.negatives.size

    @property
    def nbytes(self) -> int:
        return sum(
            part.scores.nbytes + (0 if part.weights is None else part.weights.nbytes)
            for part in (self.positives, self.negatives)
        )

    def sample(self, limit: int) -> NDArray[np.float64]:
        half = max(1, limit // 2)
        return np.concatenate([self.positives.scores[:half], self.negatives.scores[:half]])


@dataclass(frozen=True, slots=True, eq=False)
class Classes:
    """The positives' and the negatives' scores: canonical parts (``held`` entries in all)
    and the batches waiting to be folded into them."""

    positives: tuple[ClassScores, ...]
    negatives: tuple[ClassScores, ...]
    held: int
    waiting: Waiting[RawPair] = field(default_factory=Waiting)

    @classmethod
    def of_rows(cls, labels: NDArray[np.bool_], scores: Any, weights: Any) -> Classes:
        """A batch's classes, kept raw: sorted with the other parts when they are folded."""
        return cls((), (), 0, Waiting.of(RawPair(*raw_classes_of_rows(labels, scores, weights))))

    @classmethod
    def of_canonical(cls, positives: ClassScores, negatives: ClassScores) -> Classes:
        return cls((positives,), (negatives,), positives.size + negatives.size)

    @property
    def size(self) -> int:
        return self.held + self.waiting.entries

    @property
    def nbytes(self) -> int:
        """16 bytes an entry, waiting ones too (a weighted batch's score and weight)."""
        return BYTES_PER_ENTRY * self.size

    def joined(self, other: Classes) -> Classes:
        joined = Classes(
            self.positives + other.positives,
            self.negatives + other.negatives,
            self.held + other.held,
            self.waiting.joined(other.waiting),
        )
        if joined.waiting.due(joined.held, MIN_PENDING):
            return joined.merged()
        return joined

    def merged(self) -> Classes:
        """One canonical part per class."""
        waiting = self.waiting.parts
        if not waiting and len(self.positives) == len(self.negatives) == 1:
            return self
        positives = merge_classes((*self.positives, *(pair.positives for pair in waiting)))
        negatives = merge_classes((*self.negatives, *(pair.negatives for pair in waiting)))
        held = positives.size + negatives.size
        return Classes((positives,), (negatives,), held, self.waiting.emptied(self.held, held))

    def canonical(self) -> tuple[ClassScores, ClassScores]:
        merged = self.merged()
        return merged.positives[0], merged.negatives[0]

    def sweep(self) -> Sweep:
        return sweep(*self.canonical())

    def weightless(self) -> bool:
        """No part holds any mass (canonical parts hold none of weight zero)."""
        if any(part.size for part in (*self.positives, *self.negatives)):
            return False
        return not any(
            part.size and part.masses().any()
            for pair in self.waiting.parts
            for part in (pair.positives, pair.negatives)
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
        extra = 0 if self.predictions is None else self.predictions.nbytes
        return self.scores.nbytes + extra

    @property
    def weightless(self) -> bool:
        return self.scores.weightless()

    def check_merge(self, other: BinaryState) -> None:
        if (self.predictions is None) != (other.predictions is None):
            raise InvalidInputError("predictions", "send predictions with every batch or with none")

    def merge(self, other: BinaryState) -> BinaryState:
        self.check_merge(other)
        predictions = None
        if self.predictions is not None and other.predictions is not None:
            predictions = self.predictions.joined(other.predictions)
        return BinaryState(
            self.scores.joined(other.scores),
            predictions,
            self.n_rows + other.n_rows,
            self.weighted or other.weighted,
        )

    def for_result(self) -> BinaryState:
        return self.compact()

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

    def to_bytes_arrays(self) -> tuple[Arrays, dict[str, Later]]:
        """``to_arrays`` for the bytes: a class whose canonical parts merge stretch by stretch
        is merged straight into its place in the bytes (``Later``), not built beside them (a
        Dask tree's merges: the merged classes and the bytes would both be held)."""
        if self.scores.waiting.parts or (
            self.predictions is not None and self.predictions.waiting.parts
        ):
            return self.compact().to_arrays(), {}
        arrays, later = _later_class_arrays("scores", self.scores)
        if self.predictions is not None:
            more, more_later = _later_class_arrays("predictions", self.predictions)
            arrays |= more
            later |= more_later
        arrays["n_rows"] = np.array(self.n_rows, dtype=np.int64)
        arrays["weighted"] = np.array(self.weighted)
        return arrays, later

    def output(self, options: Options, classes: tuple[str, ...] | None) -> TaskOutput:
        raise NotImplementedError("task binary's result comes from core.binary._result")


def _class_arrays(prefix: str, classes: Classes) -> Arrays:
    arrays: Arrays = {}
    for name, part in zip(("positives", "negatives"), classes.canonical(), strict=True):
        arrays[f"{prefix}.{name}.scores"] = part.scores
        arrays[f"{prefix}.{name}.mass"] = part.masses()
    return arrays


class _MergeWriter:
    """Writes one class's merged scores and masses into their places."""

    def __init__(self, merge: CanonicalMerge) -> None:
        self.merge = merge

    def write(self, out: Sequence[NDArray[np.float64]]) -> None:
        scores, mass = out
        self.merge.write(scores, mass)


PLACEHOLDER = np.empty(0)


def _later_class_arrays(prefix: str, classes: Classes) -> tuple[Arrays, dict[str, Later]]:
    """``_class_arrays`` of classes without waiting batches, the ones merged stretch by stretch
    left to be written into the bytes."""
    arrays: Arrays = {}
    later: dict[str, Later] = {}
    for name, parts in (("positives", classes.positives), ("negatives", classes.negatives)):
        keys = f"{prefix}.{name}.scores", f"{prefix}.{name}.mass"
        if merges_by_stretches(parts):
            merge = CanonicalMerge(parts)
            size, writer = merge.size(), _MergeWriter(merge)
            for index, key in enumerate(keys):
                arrays[key] = PLACEHOLDER
                later[key] = Later(size, writer, index)
        else:
            part = merge_classes(parts)
            arrays[keys[0]], arrays[keys[1]] = part.scores, part.masses()
    return arrays, later


def _classes_of(arrays: Mapping[str, NDArray[Any]], prefix: str) -> tuple[Classes, float]:
    """The classes under ``prefix`` and their whole mass."""
    parts = []
    whole = 0.0  # summed here, not from the top: a class sums that only when a sweep reads it
    for name in ("positives", "negatives"):
        scores = array_of(arrays, f"{prefix}.{name}.scores", np.float64, 1)
        check_ascending(f"{prefix}.{name}.scores", scores)
        mass = array_of(arrays, f"{prefix}.{name}.mass", np.float64, 1, length=scores.size)
        check_masses(f"{prefix}.{name}.mass", mass)
        if scores.size and not (mass > 0).all():
            raise InvalidInputError("state", f"array '{prefix}.{name}.mass' holds a zero mass")
        parts.append(class_scores(scores, mass))
        whole += float(mass.sum())
    return Classes.of_canonical(parts[0], parts[1]), whole


def _of_batch(
    y_true: Any,
    y_score: Any,
    y_pred: Any,
    sample_weight: Any,
    options: Options,
    classes: tuple[str, ...] | None,
) -> BinaryState:
    rows = binary_inputs(
        y_true, y_score, y_pred, sample_weight, positive_label=options.positive_label
    )
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
    "folds, batches wait as they came (a copy of their scores, and weights): while folds "
    "compact repeated scores, until they outweigh the folded state (at least 4,096 entries); "
    "while the scores are distinct, up to three times the folded state, or a million entries."
)

BINARY_STATE = StateKind(of_batch=_of_batch, from_arrays=_from_arrays, size_doc=SIZE_DOC)
