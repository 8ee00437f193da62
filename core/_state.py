"""What every task's exact, mergeable state offers the ``Accumulator``.

A task state is the sufficient statistic of the rows seen so far: immutable, merged into a new
state (associative and commutative), exact (it never samples or bins), and made of numpy
arrays only, so that :mod:`core._state_format` writes and reads it without pickle. Each task
registers a :class:`StateKind`: how to build the state of one batch of rows, and how to rebuild
a state from its arrays (checking them, since they may come from anywhere).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, Protocol, TypeVar

import numpy as np
from numpy.typing import NDArray

from evalserve.core._errors import InvalidInputError
from evalserve.core._options import Options
from evalserve.core._result import TaskOutput

__all__ = [
    "Arrays",
    "StateKind",
    "TaskState",
    "Waiting",
    "array_of",
    "check_ascending",
    "check_masses",
    "count_of",
    "flag_of",
    "joined_weights",
]

Arrays = dict[str, NDArray[Any]]


class TaskState(Protocol):
    """One task's state. ``merge`` takes a state of the same task built with the same options
    and classes (the ``Accumulator`` checks those) and raises ``InvalidInputError`` when the two
    cannot be combined for a reason of their own (a different number of columns, predictions in
    one and not the other)."""

    @property
    def n_rows(self) -> int:
        """Rows that went in (weight-zero rows included)."""
        ...

    @property
    def size(self) -> int:
        """Entries held (distinct scores, cells, matched detections): what a merge costs."""
        ...

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays held."""
        ...

    @property
    def weightless(self) -> bool:
        """Rows came, but every one of them had weight zero (a batch may weigh nothing; the
        whole may not, as in ``evaluate``)."""
        ...

    def check_merge(self, other: Any) -> None:
        """Raise ``InvalidInputError`` naming the field when ``other`` cannot merge with this
        state (a batch of another width, predictions in some batches only); ``merge`` checks
        it too, and ``Accumulator.update`` calls it at once, so a bad batch is refused when it
        comes, not at a later merge."""
        ...

    def merge(self, other: Any) -> Any:
        """The state of both row sets."""
        ...

    def compact(self) -> Any:
        """The same state with its entries merged as far as they go, so that ``size`` and
        ``nbytes`` are exact (a state that merges at once returns itself)."""
        ...

    def for_result(self) -> Any:
        """The state as its result reads it best: ``compact`` (what waited unfolded, folded
        once and kept for a second result), unless its ``output`` reads waiting rows better
        as they came."""
        ...

    def to_bytes_arrays(self) -> tuple[Arrays, dict[str, Any]]:
        """``to_arrays`` for ``Accumulator.to_bytes``, and the arrays a merge writes straight
        into their places in the bytes (``core._state_format.Later``; task binary's merged
        classes), not built beside them."""
        ...

    def to_arrays(self) -> Arrays:
        """Every value of the state as named arrays (scalars as 0-d arrays of float64, int64 or
        bool); ``StateKind.from_arrays`` is its inverse."""
        ...

    def output(self, options: Options, classes: tuple[str, ...] | None) -> TaskOutput:
        """Every metric of the task from the state, as ``compute_<task>`` gives on all rows."""
        ...


S = TypeVar("S", bound=TaskState, covariant=True)


class BatchBuilder(Protocol[S]):
    def __call__(
        self,
        y_true: Any,
        y_score: Any,
        y_pred: Any,
        sample_weight: Any,
        options: Options,
        classes: tuple[str, ...] | None,
    ) -> S: ...


class ArrayReader(Protocol[S]):
    def __call__(
        self, arrays: Mapping[str, NDArray[Any]], options: Options, classes: tuple[str, ...] | None
    ) -> S: ...


@dataclass(frozen=True, slots=True)
class StateKind:
    """How a task makes its state: ``of_batch`` checks one batch of rows (raising
    ``InvalidInputError`` naming the field, as ``evaluate`` does) and returns its state;
    ``from_arrays`` rebuilds a state from ``to_arrays``'s output, raising
    ``InvalidInputError`` (field ``state``) for arrays no state could have written.
    ``size_doc`` says, in Markdown, what the state holds and how its size grows (the metric
    pages of the docs show it)."""

    of_batch: BatchBuilder[Any]
    from_arrays: ArrayReader[Any]
    size_doc: str


class WaitingPart(Protocol):
    """A batch's rows kept as they came until they are folded into a state."""

    @property
    def entries(self) -> int:
        """What the part adds to its state's ``size`` (rows, or cells of a matrix)."""
        ...

    @property
    def nbytes(self) -> int: ...

    def sample(self, limit: int) -> NDArray[np.float64]:
        """At most ``limit`` of its values (the ones a fold sorts), for the estimate of how
        many are distinct."""
        ...


P = TypeVar("P", bound=WaitingPart)

# Folding waiting batches never pays below this many entries: a fold of them costs about a
# millisecond at most, and they hold at most a few hundred kilobytes.
MIN_FOLD = 1 << 12
# A state whose folds kept more than this share of what went in holds (nearly) distinct values:
# folding early saves no memory there, so its batches wait for the task's lazy threshold.
DISTINCT_SHARE = 0.5
# Before its first fold, a state learns whether its values repeat from this many of them.
SAMPLE = 1 << 12
# Batches of distinct values wait, unfolded, until there are more than this many of them: a
# fold of such batches saves no memory, and one fold when the result is asked sorts each value
# once (a file of 100 batches of a million rows: one sort, not three of growing size).
MAX_WAITING_PARTS = 256


@dataclass(frozen=True, slots=True)
class Waiting(Generic[P]):
    """The batches a state holds as they came, not yet folded into its sorted statistic, with
    their entries and bytes counted as they are added: a state's ``size`` and ``nbytes`` cost
    nothing per batch, however many batches wait (summing them per batch made a stream of
    small batches quadratic).

    It also remembers what its state's folds made of their input (entries in, entries kept), to
    decide the next fold (``due``): while folds compact (repeated values), waiting batches are
    folded as soon as they outweigh the folded statistic, so memory follows the distinct
    values, not the rows; while folds keep nearly everything (distinct values), batches wait
    until there are more than ``MAX_WAITING_PARTS`` of them and they pass three times the
    statistic and the task's lazy threshold, so a stream of distinct values costs about one
    sort, as the one-shot evaluation does (a few large batches: exactly one, when the result
    is asked). A state that has not folded yet counts the distinct values of a sample of what
    waits (``SAMPLE`` values, once, when its batches first pass ``MIN_FOLD`` entries)
    instead: every new level of an ``Accumulator`` starts without a history, and folding each
    of them early to learn it would sort every row of a stream of distinct values twice."""

    parts: tuple[P, ...] = ()
    entries: int = 0
    nbytes: int = 0
    folded_in: int = 0
    folded_kept: int = 0

    @classmethod
    def of(cls, part: P) -> Waiting[P]:
        return cls((part,), part.entries, part.nbytes)

    def joined(self, other: Waiting[P]) -> Waiting[P]:
        joined = Waiting(
            self.parts + other.parts,
            self.entries + other.entries,
            self.nbytes + other.nbytes,
            self.folded_in + other.folded_in,
            self.folded_kept + other.folded_kept,
        )
        if joined.folded_in == 0 and joined.entries > MIN_FOLD:
            sample = joined._sample()
            joined = replace(joined, folded_in=sample.size, folded_kept=np.unique(sample).size)
        return joined

    def _sample(self) -> NDArray[np.float64]:
        """Up to ``SAMPLE`` values of the latest batches."""
        taken: list[NDArray[np.float64]] = []
        left = SAMPLE
        for part in reversed(self.parts):
            values = part.sample(left)
            taken.append(values)
            left -= values.size
            if left <= 0:
                break
        return np.concatenate(taken)

    def due(self, held: int, lazy_min: int) -> bool:
        """Whether to fold now, into a statistic of ``held`` entries."""
        if self.entries <= MIN_FOLD:
            return False
        if self.folded_kept <= DISTINCT_SHARE * self.folded_in:  # folds compact
            return self.entries > held
        many = len(self.parts) > MAX_WAITING_PARTS
        return many and self.entries > max(3 * held, lazy_min)

    def emptied(self, held_before: int, held_after: int) -> Waiting[P]:
        """No batch waiting, after a fold of these into ``held_before`` entries that kept
        ``held_after``."""
        return Waiting(
            (),
            0,
            0,
            self.folded_in + held_before + self.entries,
            self.folded_kept + held_after,
        )


def joined_weights(
    parts: Sequence[tuple[int, NDArray[np.float64] | None]],
) -> NDArray[np.float64] | None:
    """The row weights of batches joined end to end, from (rows, weights or None) of each:
    None when no batch carried weights, else ones for the rows of those that did not."""
    if all(weights is None for _, weights in parts):
        return None
    return np.concatenate(
        [np.ones(rows) if weights is None else weights for rows, weights in parts]
    )


# --- helpers for ``from_arrays``: every read checks what it reads -----------------------------


def _bad(name: str, what: str) -> InvalidInputError:
    return InvalidInputError("state", f"array {name!r} {what}")


def array_of(
    arrays: Mapping[str, NDArray[Any]],
    name: str,
    dtype: type[np.generic],
    ndim: int,
    *,
    length: int | None = None,
) -> NDArray[Any]:
    """``arrays[name]``, checked to exist with this dtype, number of dimensions and (when
    given) first dimension."""
    if name not in arrays:
        raise _bad(name, "is missing")
    array = arrays[name]
    if array.dtype != np.dtype(dtype):
        raise _bad(name, f"has dtype {array.dtype}, expected {np.dtype(dtype)}")
    if array.ndim != ndim:
        raise _bad(name, f"has {array.ndim} dimensions, expected {ndim}")
    if length is not None and array.shape[0] != length:
        raise _bad(name, f"has {array.shape[0]} entries, expected {length}")
    return array


def count_of(arrays: Mapping[str, NDArray[Any]], name: str) -> int:
    """A non-negative 0-d int64 count."""
    value = int(array_of(arrays, name, np.int64, 0))
    if value < 0:
        raise _bad(name, f"is {value}, expected a count >= 0")
    return value


def flag_of(arrays: Mapping[str, NDArray[Any]], name: str) -> bool:
    """A 0-d bool."""
    return bool(array_of(arrays, name, np.bool_, 0))


def check_ascending(name: str, values: NDArray[np.float64]) -> None:
    """Finite, strictly ascending values (the distinct scores of a state)."""
    if values.size and not np.isfinite(values).all():
        raise _bad(name, "holds a value that is not finite")
    if values.size > 1 and not (values[1:] > values[:-1]).all():
        raise _bad(name, "is not strictly ascending")


def check_masses(name: str, values: NDArray[np.float64]) -> None:
    """Finite, non-negative masses (counts or sums of weights)."""
    if values.size and not (np.isfinite(values).all() and (values >= 0).all()):
        raise _bad(name, "holds a mass that is negative or not finite")
