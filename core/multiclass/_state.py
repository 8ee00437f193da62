"""Task multiclass's state for the ``Accumulator``: the exact, mergeable statistics of the rows
so far, from which ``multiclass_output`` computes what ``compute_multiclass`` gives on all rows.

What it holds (k classes; the options are fixed per accumulator, so the state reduces with them
as rows arrive):

* ``blocks``: per score column and true class, the distinct scores with their weight
  (``_blocks.ScoreBlocks``): one-vs-rest, one-vs-one and micro rankings, log loss and the
  true-class part of the Brier score;
* ``matrix``: the k x k confusion matrix (the sent predictions, or the argmax of the scores);
* ``ranks``: the rank table of top-k accuracy, one row per rank up to the largest k asked for;
* ``check`` and ``sums``: whether the rows are probabilities (the range of their scores, the
  first row whose sum is off 1) and the exact sums of the Brier score and the calibration bins.

Rows count in the order they were added and merged (an accumulator's rows, then those of the
one merged into it): only the row named by "row i sums to ..." depends on that order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalserve.core._errors import InvalidInputError
from evalserve.core._exact_sum import MAX_COMPONENTS, from_components, rounded, to_components
from evalserve.core._options import Options
from evalserve.core._result import TaskOutput
from evalserve.core._state import (
    Arrays,
    StateKind,
    Waiting,
    array_of,
    check_masses,
    count_of,
    flag_of,
    joined_weights,
)
from evalserve.core._state_format import Later
from evalserve.core._validation import MAX_WEIGHT, MIN_WEIGHT
from evalserve.core.multiclass._blocks import ScoreBlocks
from evalserve.core.multiclass._inputs import MulticlassInputs, multiclass_inputs
from evalserve.core.multiclass._probability import (
    LEGACY_ROW_SUM_TOLERANCE,
    ProbabilityCheck,
    ProbabilitySums,
)
from evalserve.core.multiclass._ranking import RankingStats, ranking_stats, true_class_scores
from evalserve.core.multiclass._stats import MulticlassStats, row_stats
from evalserve.core.multiclass._suite import multiclass_output
from evalserve.core.multiclass._topk import table_depth

__all__ = ["MULTICLASS_STATE", "MulticlassState"]

Floats = NDArray[np.float64]


# Batches' score rows wait as they came until they hold more cells than three times the blocks'
# entries, and at least this many: then one sort builds their blocks.
MIN_PENDING_CELLS = 1 << 22


@dataclass(frozen=True, slots=True, eq=False)
class RawRows:
    """A batch's score matrix, true classes and weights as they came (copied): its blocks are
    built with the other waiting batches' in one sort."""

    scores: Floats
    labels: NDArray[np.intp]
    weights: Floats | None

    @property
    def entries(self) -> int:
        return int(self.scores.size)

    def sample(self, limit: int) -> Floats:
        return self.scores.reshape(-1)[:limit]

    @property
    def nbytes(self) -> int:
        extra = 0 if self.weights is None else self.weights.nbytes
        return self.scores.nbytes + self.labels.nbytes + extra

    @property
    def weighs(self) -> bool:
        return self.weights is None or bool(self.weights.any())


def _folded(blocks: ScoreBlocks, raw: tuple[RawRows, ...]) -> ScoreBlocks:
    """``blocks`` with the waiting batches' blocks merged in."""
    if not raw:
        return blocks
    weights = joined_weights([(part.labels.size, part.weights) for part in raw])
    built = ScoreBlocks.of_rows(
        np.concatenate([part.scores for part in raw]),
        np.concatenate([part.labels for part in raw]),
        weights,
    )
    return blocks.merge(built)


@dataclass(frozen=True, slots=True, eq=False)
class MulticlassState:
    """The statistics of the rows so far (see the module's docstring). ``weighted``: some batch
    carried sample weights; ``predicted``: the batches carried hard predictions."""

    n_rows: int
    weighted: bool
    predicted: bool
    blocks: ScoreBlocks
    matrix: Floats
    ranks: Floats
    check: ProbabilityCheck
    sums: ProbabilitySums
    raw: Waiting[RawRows] = field(default_factory=Waiting)

    @property
    def n_classes(self) -> int:
        return self.blocks.n_classes

    @property
    def size(self) -> int:
        held = self.blocks.size + self.matrix.size + self.ranks.size + self.sums.correct.size
        return held + self.raw.entries

    @property
    def nbytes(self) -> int:
        blocks = self.blocks
        arrays = (blocks.values, blocks.mass, blocks.bounds, self.matrix, self.ranks)
        exact = sum(-(-total.bit_length() // 64) * 8 for total in self.sums.confidence)
        exact += -(-self.sums.squares.bit_length() // 64) * 8
        waiting = self.raw.nbytes
        return sum(array.nbytes for array in arrays) + self.sums.correct.nbytes + exact + waiting

    @property
    def weightless(self) -> bool:
        held = self.blocks.size or any(part.weighs for part in self.raw.parts)
        return self.n_rows > 0 and not held

    def for_result(self) -> MulticlassState:
        """Rows that all still wait as they came stay so: ``output`` reads them as the
        one-shot path does (3x faster and half the memory of folding them into blocks)."""
        return self if self.blocks.size == 0 else self.compact()

    def compact(self) -> MulticlassState:
        if not self.raw.parts:
            return self
        blocks = _folded(self.blocks, self.raw.parts)
        return replace(self, blocks=blocks, raw=self.raw.emptied(self.blocks.size, blocks.size))

    def merge(self, other: MulticlassState) -> MulticlassState:
        self.check_merge(other)
        merged = MulticlassState(
            n_rows=self.n_rows + other.n_rows,
            weighted=self.weighted or other.weighted,
            predicted=self.predicted,
            blocks=self.blocks.merge(other.blocks),
            matrix=self.matrix + other.matrix,
            ranks=self.ranks + other.ranks,
            check=self.check.merge(other.check, self.n_rows),
            sums=self.sums.merge(other.sums),
            raw=self.raw.joined(other.raw),
        )
        if merged.raw.due(merged.blocks.size, MIN_PENDING_CELLS):
            return merged.compact()
        return merged

    def check_merge(self, other: MulticlassState) -> None:
        if self.n_classes != other.n_classes:
            raise InvalidInputError(
                "scores",
                f"cannot merge batches of {self.n_classes} and {other.n_classes} score columns: "
                "send every batch with one column per class (or fix them with classes)",
            )
        if self.predicted != other.predicted:
            raise InvalidInputError("predictions", "send predictions with every batch or with none")

    def to_bytes_arrays(self) -> tuple[Arrays, dict[str, Later]]:
        return self.to_arrays(), {}

    def to_arrays(self) -> Arrays:
        if self.raw.parts:
            return self.compact().to_arrays()
        confidence = [to_components(total) for total in self.sums.confidence]
        width = max((parts.size for parts in confidence), default=0)
        padded = np.zeros((len(confidence), width))
        for row, parts in enumerate(confidence):
            padded[row, : parts.size] = parts
        return {
            "n_rows": np.array(self.n_rows, dtype=np.int64),
            "weighted": np.array(self.weighted),
            "predicted": np.array(self.predicted),
            "blocks.values": self.blocks.values,
            "blocks.mass": self.blocks.mass,
            "blocks.bounds": self.blocks.bounds,
            "matrix": self.matrix,
            "ranks": self.ranks,
            "check.low": np.array(self.check.low, dtype=np.float64),
            "check.high": np.array(self.check.high, dtype=np.float64),
            "check.row": np.array(self.check.row, dtype=np.int64),
            "check.row_sum": np.array(self.check.row_sum, dtype=np.float64),
            "sums.squares": to_components(self.sums.squares),
            "sums.correct": self.sums.correct,
            "sums.confidence": padded,
        }

    def output(self, options: Options, classes: tuple[str, ...] | None) -> TaskOutput:
        if self.n_rows == 0:
            raise InvalidInputError("labels", "is empty; expected at least one row")
        if self.weightless:
            raise InvalidInputError("weights", "all weights are zero; nothing to evaluate")
        names = classes if classes is not None else _index_names(self.n_classes)
        if self.blocks.size == 0:
            # Every row still waits as it came: the one-shot path's ranking statistics of all
            # of them at once (the same statistics as the blocks', one sort cheaper).
            ranking = _ranking_of_rows(self.raw.parts, names, options)
        else:
            state = self.compact()
            ranking = state.blocks.ranking_stats(self.n_rows, self.weighted)
        problem = self.check.problem(self.n_classes)
        stats = MulticlassStats(
            n_rows=self.n_rows,
            classes=names,
            matrix=self.matrix,
            ranks=self.ranks,
            probability=self.sums if problem is None else problem,
            ranking=ranking,
        )
        return multiclass_output(stats, options)


def _ranking_of_rows(
    raw: tuple[RawRows, ...], names: tuple[str, ...], options: Options
) -> RankingStats:
    """The ranking statistics of the waiting rows, as ``evaluate`` builds them."""
    scores = np.concatenate([part.scores for part in raw])
    labels = np.concatenate([part.labels for part in raw])
    weights = joined_weights([(part.labels.size, part.weights) for part in raw])
    low, high = float(scores.min()), float(scores.max())
    inputs = MulticlassInputs(labels, scores, None, weights, names, low, high)
    return ranking_stats(inputs, true_class_scores(scores, labels), options)


def _index_names(n_classes: int) -> tuple[str, ...]:
    return tuple(str(index) for index in range(n_classes))


def _of_batch(
    y_true: Any,
    y_score: Any,
    y_pred: Any,
    sample_weight: Any,
    options: Options,
    classes: tuple[str, ...] | None,
) -> MulticlassState:
    inputs = multiclass_inputs(y_true, y_score, y_pred, sample_weight, classes)
    rows = row_stats(inputs, true_class_scores(inputs.scores, inputs.labels), options)
    return MulticlassState(
        n_rows=inputs.n_rows,
        weighted=inputs.weights is not None,
        predicted=inputs.predicted is not None,
        blocks=ScoreBlocks.empty(inputs.n_classes),
        matrix=rows.matrix,
        ranks=rows.ranks,
        check=rows.check,
        sums=rows.sums,
        raw=Waiting.of(RawRows(inputs.scores.copy(), inputs.labels.copy(), _copy(inputs.weights))),
    )


def _copy(weights: Floats | None) -> Floats | None:
    return None if weights is None else weights.copy()


# --- reading a state back: every array checked -------------------------------------------------

_NAMES = frozenset(
    (
        "n_rows", "weighted", "predicted", "blocks.values", "blocks.mass", "blocks.bounds",
        "matrix", "ranks", "check.low", "check.high", "check.row", "check.row_sum",
        "sums.squares", "sums.correct", "sums.confidence",
    )
)  # fmt: skip
# A class's weight in two columns, or in the matrix and the blocks, is one sum taken in two
# orders: with float weights they differ by rounding only.
_SAME_SUM = 1e-6


def _refuse(message: str) -> InvalidInputError:
    return InvalidInputError("state", message)


def _from_arrays(
    arrays: Mapping[str, NDArray[Any]], options: Options, classes: tuple[str, ...] | None
) -> MulticlassState:
    unknown = sorted(set(arrays) - _NAMES)
    if unknown:
        raise _refuse(f"holds arrays no multiclass state has: {', '.join(map(repr, unknown))}")
    n_rows = count_of(arrays, "n_rows")
    weighted = flag_of(arrays, "weighted")
    blocks = _blocks_of(arrays, n_rows, weighted)
    n_classes = blocks.n_classes
    if classes is not None and len(classes) != n_classes:
        raise _refuse(f"has {n_classes} classes, but the accumulator names {len(classes)}")
    class_mass = _class_masses(blocks, weighted)
    total = float(class_mass.sum())
    if (not weighted and total != n_rows) or total > MAX_WEIGHT * n_rows:
        raise _refuse(f"arrays 'blocks.*' hold a weight of {total:g} for {n_rows} rows")
    matrix = _table_of(arrays, "matrix", (n_classes, n_classes), weighted)
    rows_of_matrix = matrix.sum(axis=1)
    if not ((rows_of_matrix > 0) == (class_mass > 0)).all() or not _same(
        rows_of_matrix, class_mass, weighted
    ):
        raise _refuse("array 'matrix' does not add up to the weight of each class")
    depth = table_depth(options.top_k, n_classes)
    ranks = _table_of(arrays, "ranks", (depth, n_classes), weighted)
    reach = np.arange(depth)[:, None] + np.arange(1, n_classes + 1)[None, :]  # g + e
    if ranks[reach > n_classes].any() or ranks.sum() > total * (1 + _SAME_SUM):
        raise _refuse("array 'ranks' holds rows no ranking of the classes has")
    return MulticlassState(
        n_rows=n_rows,
        weighted=weighted,
        predicted=flag_of(arrays, "predicted"),
        blocks=blocks,
        matrix=matrix,
        ranks=ranks,
        check=_check_of(arrays, n_rows, total),
        sums=_sums_of(arrays, options.calibration_bins, total, weighted),
    )


def _blocks_of(arrays: Mapping[str, NDArray[Any]], n_rows: int, weighted: bool) -> ScoreBlocks:
    bounds = array_of(arrays, "blocks.bounds", np.int64, 1)
    n_classes = math.isqrt(max(bounds.size - 1, 0))
    if n_classes < 2 or n_classes * n_classes + 1 != bounds.size:
        raise _refuse(f"array 'blocks.bounds' has {bounds.size} entries, not k * k + 1, k >= 2")
    values = array_of(arrays, "blocks.values", np.float64, 1)
    mass = array_of(arrays, "blocks.mass", np.float64, 1, length=values.size)
    if bounds[0] != 0 or bounds[-1] != values.size or (np.diff(bounds) < 0).any():
        raise _refuse("array 'blocks.bounds' does not cut 'blocks.values' into blocks")
    if values.size and not np.isfinite(values).all():
        raise _refuse("array 'blocks.values' holds a value that is not finite")
    starts = np.zeros(values.size + 1, dtype=np.bool_)
    starts[bounds] = True
    if not ((values[1:] > values[:-1]) | starts[1:-1]).all():
        raise _refuse("array 'blocks.values' is not strictly ascending within a block")
    check_masses("blocks.mass", mass)
    if mass.size and (mass.min() < MIN_WEIGHT or mass.max() > MAX_WEIGHT * n_rows):
        raise _refuse("array 'blocks.mass' holds a mass no rows could have")
    if not weighted and (mass != np.round(mass)).any():
        raise _refuse("array 'blocks.mass' holds counts that are not whole numbers")
    return ScoreBlocks(n_classes, values, mass, bounds)


def _class_masses(blocks: ScoreBlocks, weighted: bool) -> Floats:
    """Each class's weight, checked to be the same in every column."""
    k = blocks.n_classes
    per_block = np.bincount(blocks.block_ids(), weights=blocks.mass, minlength=k * k)
    per_column = np.asarray(per_block, dtype=np.float64).reshape(k, k)
    class_mass: Floats = per_column[0].copy()
    held = per_column > 0
    if not (held == held[0]).all() or not _same(per_column, class_mass[None, :], weighted):
        raise _refuse("arrays 'blocks.*' give a class different weights in different columns")
    return class_mass


def _same(first: Floats, second: Floats, weighted: bool) -> bool:
    if not weighted:
        return bool((first == second).all())
    return bool((np.abs(first - second) <= _SAME_SUM * np.maximum(first, second)).all())


def _table_of(
    arrays: Mapping[str, NDArray[Any]], name: str, shape: tuple[int, int], weighted: bool
) -> Floats:
    table = array_of(arrays, name, np.float64, 2)
    if table.shape != shape:
        raise _refuse(f"array {name!r} has shape {table.shape}, expected {shape}")
    check_masses(name, table)
    if not weighted and (table != np.round(table)).any():
        raise _refuse(f"array {name!r} holds counts that are not whole numbers")
    return table


def _check_of(arrays: Mapping[str, NDArray[Any]], n_rows: int, total: float) -> ProbabilityCheck:
    low = float(array_of(arrays, "check.low", np.float64, 0))
    high = float(array_of(arrays, "check.high", np.float64, 0))
    row = int(array_of(arrays, "check.row", np.int64, 0))
    row_sum = float(array_of(arrays, "check.row_sum", np.float64, 0))
    if total > 0:
        scored = math.isfinite(low) and math.isfinite(high) and low <= high
    else:
        scored = low == math.inf and high == -math.inf
    if not scored:
        raise _refuse("arrays 'check.low' and 'check.high' are not the range of the scores")
    if not -1 <= row < n_rows or not math.isfinite(row_sum):
        raise _refuse(f"array 'check.row' is {row}, not a row of the {n_rows} (or -1)")
    # A state written before the tolerance grew may name a row off by less than today's
    # tolerance (the rows after it were not looked at then): it is read as it was written.
    if row >= 0 and not abs(row_sum - 1.0) > LEGACY_ROW_SUM_TOLERANCE:
        raise _refuse("array 'check.row_sum' is not the sum of a row that is off 1")
    return ProbabilityCheck(low, high, row, row_sum)


def _sums_of(
    arrays: Mapping[str, NDArray[Any]], bins: int, total: float, weighted: bool
) -> ProbabilitySums:
    squares = _exact_of(array_of(arrays, "sums.squares", np.float64, 1), "sums.squares", total)
    correct = array_of(arrays, "sums.correct", np.float64, 1, length=bins)
    check_masses("sums.correct", correct)
    if correct.sum() > total * (1 + _SAME_SUM) or (
        not weighted and (correct != np.round(correct)).any()
    ):
        raise _refuse("array 'sums.correct' is not a weight of rows per bin")
    confidence = array_of(arrays, "sums.confidence", np.float64, 2, length=bins)
    return ProbabilitySums(
        squares,
        correct,
        tuple(_exact_of(row, "sums.confidence", total) for row in confidence),
    )


def _exact_of(components: Floats, name: str, total: float) -> int:
    """An exact sum of terms w_i x_i with 0 <= x_i <= 1 (within the row-sum tolerance)."""
    if components.size > MAX_COMPONENTS:
        raise _refuse(f"array {name!r} has {components.size} parts, more than an exact sum takes")
    if components.size and not np.isfinite(components).all():
        raise _refuse(f"array {name!r} holds a value that is not finite")
    exact = from_components(components)
    if exact < 0 or not rounded(exact) <= 2.0 * total:
        raise _refuse(f"array {name!r} is not a sum of weighted probabilities")
    return exact


SIZE_DOC = (
    "Per score column and true class, the distinct scores with their weight (two float64 "
    "values, 16 bytes an entry), which every ranking metric, the log loss and the Brier score "
    "follow from; beside them the k x k confusion matrix, the rank table of top-k accuracy "
    "(k values per rank up to the largest k asked for) and a few sums per calibration bin. "
    "Each row adds at most one entry per column: with continuous scores n rows take about "
    "16 n k bytes (twice the score matrix), with scores rounded to 4 decimals at most "
    "10,001 entries per column and class (160 kB each) whatever the number of rows."
)

MULTICLASS_STATE = StateKind(of_batch=_of_batch, from_arrays=_from_arrays, size_doc=SIZE_DOC)
