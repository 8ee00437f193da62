"""Task binary's state for the ``Accumulator``: the mergeable statistic of the scores and, when
the batches carry hard predictions, that of the predictions."""

from __future__ import annotations

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
from evalserve.core.binary._stats import BinaryStats

__all__ = ["BINARY_STATE", "BinaryState"]


@dataclass(frozen=True, slots=True, eq=False)
class BinaryState:
    """The statistic of the scores, and of the hard predictions when the batches sent them."""

    scores: BinaryStats
    predictions: BinaryStats | None

    @property
    def n_rows(self) -> int:
        return self.scores.n_rows

    @property
    def size(self) -> int:
        extra = 0 if self.predictions is None else self.predictions.n_distinct
        return self.scores.n_distinct + extra

    @property
    def nbytes(self) -> int:
        return 24 * self.size

    @property
    def weightless(self) -> bool:
        return not (self.scores.pos.any() or self.scores.neg.any())

    def merge(self, other: BinaryState) -> BinaryState:
        if (self.predictions is None) != (other.predictions is None):
            raise InvalidInputError("predictions", "send predictions with every batch or with none")
        predictions = None
        if self.predictions is not None and other.predictions is not None:
            predictions = self.predictions.merge(other.predictions)
        return BinaryState(self.scores.merge(other.scores), predictions)

    def to_arrays(self) -> Arrays:
        arrays = _stats_arrays("scores", self.scores)
        if self.predictions is not None:
            arrays |= _stats_arrays("predictions", self.predictions)
        return arrays

    def output(self, options: Options, classes: tuple[str, ...] | None) -> TaskOutput:
        raise NotImplementedError("task binary's result comes from evaluate_binary_stats")


def _stats_arrays(prefix: str, stats: BinaryStats) -> Arrays:
    return {
        f"{prefix}.values": stats.scores,
        f"{prefix}.positive": stats.pos,
        f"{prefix}.negative": stats.neg,
        f"{prefix}.n_rows": np.array(stats.n_rows, dtype=np.int64),
        f"{prefix}.weighted": np.array(stats.weighted),
    }


def _stats_of(arrays: Mapping[str, NDArray[Any]], prefix: str) -> BinaryStats:
    values = array_of(arrays, f"{prefix}.values", np.float64, 1)
    check_ascending(f"{prefix}.values", values)
    masses = []
    for column in ("positive", "negative"):
        name = f"{prefix}.{column}"
        mass = array_of(arrays, name, np.float64, 1, length=values.size)
        check_masses(name, mass)
        masses.append(mass)
    n_rows = count_of(arrays, f"{prefix}.n_rows")
    weighted = flag_of(arrays, f"{prefix}.weighted")
    if not weighted and float(masses[0].sum() + masses[1].sum()) != n_rows:
        raise InvalidInputError(
            "state", f"array {prefix!r}: unweighted counts do not add up to its {n_rows} rows"
        )
    return BinaryStats(values, masses[0], masses[1], n_rows, weighted)


def _of_batch(
    y_true: Any,
    y_score: Any,
    y_pred: Any,
    sample_weight: Any,
    options: Options,
    classes: tuple[str, ...] | None,
) -> BinaryState:
    if classes is not None:
        raise InvalidInputError("classes", "task 'binary' takes no class names")
    rows = binary_inputs(y_true, y_score, y_pred, sample_weight)
    scores = BinaryStats.from_arrays(rows.labels, rows.scores, rows.weights)
    predictions = None
    if rows.predicted is not None:
        predictions = BinaryStats.from_arrays(
            rows.labels, rows.predicted.astype(np.float64), rows.weights
        )
    return BinaryState(scores, predictions)


def _from_arrays(
    arrays: Mapping[str, NDArray[Any]], options: Options, classes: tuple[str, ...] | None
) -> BinaryState:
    scores = _stats_of(arrays, "scores")
    predictions = _stats_of(arrays, "predictions") if "predictions.values" in arrays else None
    if predictions is not None and predictions.n_rows != scores.n_rows:
        raise InvalidInputError("state", "predictions and scores count different rows")
    return BinaryState(scores, predictions)


SIZE_DOC = (
    "Per distinct score: the positive and the negative mass (three float64 values, 24 bytes); "
    "the same again for the distinct hard predictions when batches carry them. Continuous "
    "scores make every row a distinct score (24 bytes a row); scores rounded to 4 decimals "
    "hold at most 10,001 entries (240 kB) whatever the number of rows."
)

BINARY_STATE = StateKind(of_batch=_of_batch, from_arrays=_from_arrays, size_doc=SIZE_DOC)
