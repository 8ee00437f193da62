"""Task multilabel's state for the ``Accumulator``: the statistic of :mod:`._stats` (the one
``compute_multilabel`` derives its metrics from), and which inputs the batches carried.

The threshold is the accumulator's option (fixed for its life), so each batch's hard predictions
are made when it arrives. Without class names the first batch sets the number of labels; a
batch of another width, scores or predictions in some batches only, cannot be merged. A batch
may weigh nothing (every weight zero): its rows count in ``n_rows`` and nowhere else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalserve.core._errors import InvalidInputError
from evalserve.core._options import Options
from evalserve.core._result import TaskOutput
from evalserve.core._state import Arrays, StateKind, Waiting, joined_weights
from evalserve.core._state_format import Later
from evalserve.core.multilabel._columns import ColumnStats, column_stats
from evalserve.core.multilabel._inputs import multilabel_inputs
from evalserve.core.multilabel._state_arrays import stats_arrays, stats_of_arrays
from evalserve.core.multilabel._stats import MultilabelStats, multilabel_stats
from evalserve.core.multilabel._suite import multilabel_output

__all__ = ["MULTILABEL_STATE", "MultilabelState"]


# Batches' label columns wait as they came until they hold more cells than three times the
# merged columns' entries, and at least this many: then one sort folds them all.
MIN_PENDING_CELLS = 1 << 22


@dataclass(frozen=True, slots=True, eq=False)
class RawColumns:
    """A batch's label and score matrices (and row weights) as they came, copied: its columns'
    statistic is built with the other waiting batches' in one sort."""

    labels: NDArray[np.bool_]
    scores: NDArray[np.float64]
    weights: NDArray[np.float64] | None

    @property
    def entries(self) -> int:
        return int(self.labels.size)

    def sample(self, limit: int) -> NDArray[np.float64]:
        return self.scores.reshape(-1)[:limit]

    @property
    def nbytes(self) -> int:
        extra = 0 if self.weights is None else self.weights.nbytes
        return self.labels.nbytes + self.scores.nbytes + extra


def _folded(columns: ColumnStats, raw: tuple[RawColumns, ...]) -> ColumnStats:
    """``columns`` with the waiting batches' columns merged in."""
    if not raw:
        return columns
    built = column_stats(
        np.concatenate([part.labels for part in raw]),
        np.concatenate([part.scores for part in raw]),
        joined_weights([(part.labels.shape[0], part.weights) for part in raw]),
    )
    return columns.merge(built)


@dataclass(frozen=True, slots=True, eq=False)
class MultilabelState:
    """The statistic of the rows so far; ``scores`` and ``predictions`` say whether the batches
    sent scores and hard predictions (every batch alike). The label columns of the latest
    batches may still wait in ``raw`` (their counts and sample sums are in ``stats``)."""

    stats: MultilabelStats
    scores: bool
    predictions: bool
    raw: Waiting[RawColumns] = field(default_factory=Waiting)

    @property
    def n_rows(self) -> int:
        return self.stats.n_rows

    @property
    def size(self) -> int:
        return self.stats.size + self.raw.entries

    @property
    def nbytes(self) -> int:
        arrays = stats_arrays(self.stats, scores=self.scores, predictions=self.predictions)
        return sum(array.nbytes for array in arrays.values()) + self.raw.nbytes

    @property
    def weightless(self) -> bool:
        return self.stats.samples.rows.size == 0

    def for_result(self) -> MultilabelState:
        return self.compact()

    def compact(self) -> MultilabelState:
        if not self.raw.parts:
            return self
        columns = _folded(self.stats.columns, self.raw.parts)
        raw = self.raw.emptied(self.stats.columns.size, columns.size)
        return MultilabelState(
            replace(self.stats, columns=columns), self.scores, self.predictions, raw
        )

    def merge(self, other: MultilabelState) -> MultilabelState:
        self.check_merge(other)
        merged = MultilabelState(
            self.stats.merge(other.stats), self.scores, self.predictions, self.raw.joined(other.raw)
        )
        if merged.raw.due(merged.stats.columns.size, MIN_PENDING_CELLS):
            return merged.compact()
        return merged

    def check_merge(self, other: MultilabelState) -> None:
        mine, theirs = self.stats.n_labels, other.stats.n_labels
        if mine != theirs:
            raise InvalidInputError(
                "labels",
                f"cannot combine rows of {mine} and of {theirs} label columns: every batch "
                "needs the same label columns",
            )
        for name, sent in (("scores", self.scores), ("predictions", self.predictions)):
            if sent != getattr(other, name):
                raise InvalidInputError(name, f"send {name} with every batch or with none")

    def to_bytes_arrays(self) -> tuple[Arrays, dict[str, Later]]:
        return self.to_arrays(), {}

    def to_arrays(self) -> Arrays:
        stats = self.compact().stats
        return stats_arrays(stats, scores=self.scores, predictions=self.predictions)

    def output(self, options: Options, classes: tuple[str, ...] | None) -> TaskOutput:
        if classes is None:
            classes = tuple(str(j) for j in range(self.stats.n_labels))
        return multilabel_output(self.compact().stats, classes, options)


def _of_batch(
    y_true: Any,
    y_score: Any,
    y_pred: Any,
    sample_weight: Any,
    options: Options,
    classes: tuple[str, ...] | None,
) -> MultilabelState:
    rows = multilabel_inputs(
        y_true, y_score, y_pred, sample_weight, classes, threshold=options.threshold
    )
    stats = multilabel_stats(rows, columns=False)
    raw = RawColumns(
        rows.labels.copy(),
        rows.scores.copy(),
        None if rows.weights is None else rows.weights.copy(),
    )
    return MultilabelState(stats, y_score is not None, y_pred is not None, Waiting.of(raw))


def _from_arrays(
    arrays: Mapping[str, NDArray[Any]], options: Options, classes: tuple[str, ...] | None
) -> MultilabelState:
    stats, scores, predictions = stats_of_arrays(arrays)
    if classes is not None and len(classes) != stats.n_labels:
        raise InvalidInputError(
            "state",
            f"holds {stats.n_labels} label columns, but the accumulator names {len(classes)}",
        )
    return MultilabelState(stats, scores, predictions)


SIZE_DOC = (
    "Per label, its distinct scores, each with the positive and the negative mass (three "
    "float64 values, 24 bytes an entry): task binary's state for every label column. Per "
    "label, 40 bytes more (its weighted TP, FP and FN, its coverage weight, its offset). The "
    "per-sample metrics keep weighted sums: 40 bytes per distinct (TP, FP, FN) of a row, at "
    "most (k + 1)(k + 2)(k + 3) / 6 of them (56 for k = 5), and 16 bytes per distinct label "
    "ranking average precision of a row (a fraction set by the row's ranks; few distinct ones "
    "for small k, at most one a row). Continuous scores make every cell an entry (24 bytes a "
    "cell, n x k of them); scores rounded to 4 decimals hold at most 10,001 entries per label "
    "(240 kB a label) whatever the number of rows. Hard predictions sent alone serve as the "
    "scores: two entries per label."
)

MULTILABEL_STATE = StateKind(of_batch=_of_batch, from_arrays=_from_arrays, size_doc=SIZE_DOC)
