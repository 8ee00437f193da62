"""``Accumulator``: evaluate rows that arrive in batches or live on several machines.

``update`` adds a batch, ``merge`` combines accumulators built apart (other shards, other
processes, other machines through ``to_bytes`` / ``from_bytes``), and ``result`` gives what
``evaluate`` would give on all the rows. The state behind it is each task's exact sufficient
statistic (:mod:`core._state`): its size grows with what the metrics need (distinct scores per
class, confusion counts, residuals), never by sampling or binning.

Batches are merged like a binary counter: a state is merged into the one below it only when that
one is not more than twice its size, so each entry takes part in about log2(batches) merges
instead of one per batch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np

from evalserve.core._errors import InvalidInputError, StateTooLargeError
from evalserve.core._evaluate import check_segment_states, monitor_request, with_coverage
from evalserve.core._options import OPTIONS, Options, parse_options
from evalserve.core._result import EvaluationResult
from evalserve.core._segments import (
    DEFAULT_MAX_SEGMENTS,
    segment_options,
    segment_result,
    segment_rows,
    take_rows,
)
from evalserve.core._state import TaskState
from evalserve.core._state_format import SEGMENT_PREFIX, Later, StateDocument, decode, encode
from evalserve.core._tasks import comparing_tasks, task_spec
from evalserve.core._validation import WEIGHTLESS_BATCHES
from evalserve.core.binary._classes import ClassScores, class_scores
from evalserve.core.binary._state import BinaryState

__all__ = ["Accumulator"]


class Accumulator:
    """The exact, mergeable evaluation state of one task.

    ``Accumulator(task, options, classes)`` fixes what every batch is evaluated with: accumulators
    merge only with others of the same task, options and classes. ``max_state_bytes`` caps the
    memory of the state: an ``update`` or ``merge`` that would grow it past the cap raises
    ``StateTooLargeError`` and leaves the accumulator as it was.

    Batches may carry ``segments`` (as ``evaluate``): the accumulator then keeps, beside the
    state of every row, one state per segment, and ``result`` gives each segment's result in
    ``result.segments``. Either every batch carries segments or none does; merging keeps the
    union of the segments, at most ``max_segments`` of them (folding into ``__other__`` needs
    every row at once, and is ``evaluate``'s alone).
    """

    def __init__(
        self,
        task: str,
        options: Mapping[str, Any] | Options | None = None,
        classes: Sequence[str] | None = None,
        *,
        max_state_bytes: int | None = None,
        max_segments: int | None = DEFAULT_MAX_SEGMENTS,
    ) -> None:
        self.spec = task_spec(task)
        self.task = self.spec.name
        self.options = parse_options(options)
        self.classes = _class_names(classes)
        if self.classes is not None and not self.spec.takes_classes:
            raise InvalidInputError("classes", f"task {self.task!r} takes no class names")
        self.kind = self.spec.state
        if max_state_bytes is not None and max_state_bytes < 0:
            raise InvalidInputError("max_state_bytes", f"expected >= 0, got {max_state_bytes}")
        self.max_state_bytes = max_state_bytes
        self.max_segments = max_segments
        self._levels: list[TaskState] = []
        # None: no batch carried segments; else each segment's own accumulator, by name.
        self._segments: dict[str, Accumulator] | None = None

    # --- adding rows --------------------------------------------------------------------------

    def update(
        self,
        y_true: Any,
        y_score: Any = None,
        *,
        y_pred: Any = None,
        sample_weight: Any = None,
        segments: Any = None,
        segment_names: Sequence[str] | None = None,
    ) -> Accumulator:
        """Add one batch of rows (the arguments of ``evaluate``, ``segments`` and
        ``segment_names`` too); returns this accumulator.

        A batch without rows changes nothing. Bad rows raise ``InvalidInputError`` naming the
        field, and the accumulator stays as it was."""
        if _no_rows(y_true, y_score, y_pred, sample_weight):
            return self
        state = self._batch_state(y_true, y_score, y_pred, sample_weight)
        if self._levels:
            self._levels[0].check_merge(state)
        parts = self._segment_parts(y_true, (y_score, y_pred, sample_weight), segments,
                                    segment_names)  # fmt: skip
        levels = self._pushed(list(self._levels), state)
        if parts is None:
            self._levels = levels
            return self
        children = dict(self._segments or {})
        for name, part in parts.items():
            child = children.get(name) or self._child()
            children[name] = child._with(part)
        self._check_cap(levels, children)
        self._levels, self._segments = levels, children
        return self

    def _batch_state(self, y_true: Any, y_score: Any, y_pred: Any, weights: Any) -> TaskState:
        token = WEIGHTLESS_BATCHES.set(True)
        try:
            state: TaskState = self.kind.of_batch(
                y_true, y_score, y_pred, weights, self.options, self.classes
            )
            return state
        finally:
            WEIGHTLESS_BATCHES.reset(token)

    def _segment_parts(
        self, y_true: Any, columns: tuple[Any, Any, Any], segments: Any, names: Any
    ) -> dict[str, TaskState] | None:
        """Each segment's state of a batch (None: the batch has no segments); refused when
        the batch and the accumulator disagree on carrying segments, or past max_segments."""
        if segments is None:
            if self._segments is not None:
                raise InvalidInputError(
                    "segments", "this accumulator's batches carry segments: every batch must"
                )
            if names is not None:
                raise InvalidInputError("segment_names", "only a batch with segments takes it")
            return None
        if self._segments is None and self._levels:
            raise InvalidInputError(
                "segments", "this accumulator's earlier batches carry no segments"
            )
        found = segment_rows(
            segments, _length(y_true) or 0, unit=self.spec.unit, max_segments=None,
            fold=False, names=names,
        )  # fmt: skip
        union = set(self._segments or {}) | set(found.names)
        if self.max_segments is not None and len(union) > self.max_segments:
            raise InvalidInputError(
                "segments",
                f"expected at most {self.max_segments} distinct segments, but the batches "
                f"have {len(union)}",
            )
        y_score, y_pred, weights = columns
        return {
            name: self._batch_state(
                take_rows(y_true, rows),
                take_rows(y_score, rows),
                take_rows(y_pred, rows),
                take_rows(weights, rows),
            )
            for name, rows in zip(found.names, found.rows(), strict=True)
        }

    def _child(self) -> Accumulator:
        return Accumulator(self.task, self.options, self.classes, max_segments=None)

    def _with(self, state: TaskState) -> Accumulator:
        """A copy of this accumulator with ``state`` pushed in (this one unchanged)."""
        if self._levels:
            self._levels[0].check_merge(state)
        copy = self._child()
        copy._levels = copy._pushed(list(self._levels), state)
        return copy

    def _check_cap(self, levels: list[TaskState], children: Mapping[str, Accumulator]) -> None:
        cap = self.max_state_bytes
        if cap is None:
            return
        held = sum(level.nbytes for level in levels) + sum(
            child.nbytes for child in children.values()
        )
        if held > cap:
            raise StateTooLargeError(
                "state",
                f"the {self.task} state and its segments' would hold {held} bytes, over its "
                f"cap of {cap} bytes: evaluate fewer rows or segments per state",
            )

    def merge(self, other: Accumulator) -> Accumulator:
        """A new accumulator holding the rows of both (neither is changed), this one's first
        (task detection ranks tied scores image by image in that order). Raises
        ``InvalidInputError`` when the two differ in task, options or classes."""
        if not isinstance(other, Accumulator):
            raise InvalidInputError("other", f"expected an Accumulator, got {type(other).__name__}")
        for name in ("task", "options", "classes"):
            if getattr(self, name) != getattr(other, name):
                raise InvalidInputError(
                    name,
                    f"cannot merge accumulators of different {name}: "
                    f"{_shown(getattr(self, name))} and {_shown(getattr(other, name))}",
                )
        if (self._segments is None) != (other._segments is None) and self.n_rows and other.n_rows:
            raise InvalidInputError(
                "segments", "cannot merge an accumulator with segments and one without"
            )
        merged = Accumulator(self.task, self.options, self.classes,
                             max_state_bytes=self.max_state_bytes,
                             max_segments=self.max_segments)  # fmt: skip
        levels: list[TaskState] = []
        for state in (self._state(), other._state()):
            if state is not None:
                levels = self._pushed(levels, state)
        merged._levels = levels
        if self._segments is not None or other._segments is not None:
            children = dict(self._segments or {})
            for name, child in (other._segments or {}).items():
                children[name] = children[name].merge(child) if name in children else child
            if self.max_segments is not None and len(children) > self.max_segments:
                raise InvalidInputError(
                    "segments",
                    f"expected at most {self.max_segments} distinct segments, but the merged "
                    f"accumulators have {len(children)}",
                )
            merged._check_cap(levels, children)
            merged._segments = children
        return merged

    def _pushed(self, levels: list[TaskState], state: TaskState) -> list[TaskState]:
        # The older level merges first: rows keep the order in which they were added.
        while levels and levels[-1].size <= 2 * state.size:
            state = levels.pop().merge(state)
        levels.append(state)
        cap = self.max_state_bytes
        if cap is not None and sum(level.nbytes for level in levels) > cap:
            # The levels may share entries: merge them all to measure the state exactly.
            levels = [_merge_all(levels).compact()]
            if levels[0].nbytes > cap:
                raise StateTooLargeError(
                    "state",
                    f"the {self.task} state would hold {levels[0].nbytes} bytes, over its cap "
                    f"of {cap} bytes: evaluate fewer rows per state and merge the states "
                    "elsewhere, raise the cap, or make the state smaller (it grows as the "
                    "task's metric page says: rounding continuous scores, for example to 6 "
                    "decimals, bounds the distinct scores)",
                )
        return levels

    def _state(self) -> TaskState | None:
        if not self._levels:
            return None
        if len(self._levels) > 1:
            self._levels = [_merge_all(self._levels)]
        return self._levels[0]

    # --- reading ------------------------------------------------------------------------------

    @property
    def n_rows(self) -> int:
        """Rows added so far (images for task detection)."""
        return sum(level.n_rows for level in self._levels)

    @property
    def nbytes(self) -> int:
        """Bytes of the state's arrays (its segments' included)."""
        own = sum(level.nbytes for level in self._levels)
        return own + sum(child.nbytes for child in (self._segments or {}).values())

    @property
    def segment_names(self) -> tuple[str, ...]:
        """The segments the batches named so far, sorted (none without segments)."""
        return tuple(sorted(self._segments or {}))

    def result(
        self,
        *,
        baseline: Mapping[str, Any] | None = None,
        coverage: Mapping[str, Any] | None = None,
        monitor_state: bytes | None = None,
        window: str | None = None,
        segment_monitor_states: Mapping[str, bytes] | None = None,
    ) -> EvaluationResult:
        """What ``evaluate`` gives on all rows added (and merged) so far; ``baseline`` (task
        binary), ``coverage``, ``monitor_state``, ``window`` and ``segment_monitor_states`` as
        in ``evaluate``. Raises ``InvalidInputError`` when no row was added."""
        if self._segments is None and segment_monitor_states is not None:
            raise InvalidInputError(
                "segment_monitor_states", "only an accumulator with segments takes them"
            )
        states = check_segment_states(segment_monitor_states, self.segment_names, baseline, window)
        result = self._result(baseline, coverage, monitor_state, window)
        for name in self.segment_names:
            child = (self._segments or {})[name]
            compute = partial(
                child._result,
                baseline,
                None,
                states.get(name),
                window,
                segment_options(self.options),
            )
            result.segments[name] = segment_result(self.task, name, child.n_rows, compute)
        return result

    def _result(
        self,
        baseline: Mapping[str, Any] | None,
        coverage: Mapping[str, Any] | None,
        monitor_state: bytes | None,
        window: str | None,
        options: Options | None = None,
    ) -> EvaluationResult:
        """The result of the rows added; ``options``: other options to read it with (a
        segment's), the accumulator's by default."""
        state = self._state()
        if state is None:
            raise InvalidInputError("labels", "is empty; no rows were added")
        # Compacted in place (``for_result``): the batches waiting unfolded are freed before
        # the result's own arrays are built (at 100 million rows, 8 bytes a row of peak
        # memory), and a second result does not fold them again.
        state = self._levels[0] = state.for_result()
        if state.weightless:
            raise InvalidInputError("weights", "all weights are zero; nothing to evaluate")
        if baseline is not None and not self.spec.compares:
            raise InvalidInputError(
                "baseline", f"drift tests take task {comparing_tasks()}, not {self.task!r}"
            )
        monitor = monitor_request(baseline, monitor_state, window)
        result = self.spec.state_result(
            state, options or self.options, self.classes, baseline, monitor
        )
        return with_coverage(result, coverage)  # checks it

    def score_classes(self) -> tuple[ClassScores, ClassScores, int, bool]:
        """Task binary: the positives' and the negatives' distinct scores with their masses,
        the rows and whether any batch was weighted (the ranges path reads a range this way).
        Raises ``InvalidInputError`` for other tasks and for hard predictions."""
        if not self.spec.ranges:
            raise InvalidInputError(
                "task", f"score classes are those of a task with ranges, not {self.task!r}"
            )
        state = self._state()
        if state is None:
            empty = class_scores(np.empty(0), None)
            return empty, empty, 0, False
        assert isinstance(state, BinaryState)
        if state.predictions is not None:
            raise InvalidInputError("predictions", "the ranges path takes scores only")
        positives, negatives = state.scores.canonical()
        return positives, negatives, state.n_rows, state.weighted

    # --- bytes --------------------------------------------------------------------------------

    def to_bytes(self) -> bytes:
        """The accumulator in the versioned binary format of :mod:`core._state_format`."""
        arrays, later = _bytes_arrays(self._state())
        names = None
        if self._segments is not None:
            names = self.segment_names
            for index, name in enumerate(names):
                child, child_later = _bytes_arrays(self._segments[name]._state())
                prefix = f"{SEGMENT_PREFIX}{index}."
                arrays |= {prefix + key: array for key, array in child.items()}
                later |= {prefix + key: array for key, array in child_later.items()}
        document = StateDocument(
            self.task, _options_json(self.options), self.classes, arrays, names
        )
        return encode(document, later)

    @classmethod
    def from_bytes(
        cls, data: bytes | bytearray | memoryview, *, max_state_bytes: int | None = None
    ) -> Accumulator:
        """The accumulator ``to_bytes`` wrote. Raises ``InvalidInputError`` (field ``state``)
        for bytes of another format version, damaged or truncated bytes, or arrays no
        accumulator could have written."""
        document = decode(data)
        try:
            accumulator = cls(document.task, document.options, document.classes,
                              max_state_bytes=max_state_bytes)  # fmt: skip
        except InvalidInputError as error:
            message = f"holds a bad {error.field}: {error.message}"
            raise InvalidInputError("state", message) from None
        own = {k: v for k, v in document.arrays.items() if not k.startswith(SEGMENT_PREFIX)}
        if own:
            state = accumulator.kind.from_arrays(own, accumulator.options, accumulator.classes)
            accumulator._levels = accumulator._pushed([], state)
        if document.segments is not None:
            accumulator._segments = {}
            for index, name in enumerate(document.segments):
                prefix = f"{SEGMENT_PREFIX}{index}."
                arrays = {
                    key.removeprefix(prefix): value
                    for key, value in document.arrays.items()
                    if key.startswith(prefix)
                }
                child = accumulator._child()
                if arrays:
                    child._levels = child._pushed(
                        [], accumulator.kind.from_arrays(arrays, accumulator.options,
                                                         accumulator.classes)
                    )  # fmt: skip
                accumulator._segments[name] = child
        elif len(own) != len(document.arrays):
            raise InvalidInputError("state", "holds segments' arrays but names no segments")
        return accumulator

    def __repr__(self) -> str:
        return f"Accumulator({self.task!r}, n_rows={self.n_rows}, nbytes={self.nbytes})"


def _bytes_arrays(state: TaskState | None) -> tuple[dict[str, Any], dict[str, Later]]:
    """A state's arrays for its bytes, and those its merge writes into them."""
    if state is None:
        return {}, {}
    arrays, later = state.to_bytes_arrays()
    return dict(arrays), later


def _merge_all(levels: list[TaskState]) -> TaskState:
    state = levels[-1]
    for level in reversed(levels[:-1]):  # smallest first
        state = level.merge(state)
    return state


def _class_names(classes: Sequence[str] | None) -> tuple[str, ...] | None:
    if classes is None:
        return None
    if isinstance(classes, str) or not isinstance(classes, Sequence | np.ndarray):
        raise InvalidInputError("classes", f"expected a list of class names, but got {classes!r}")
    names = tuple(classes)
    for index, name in enumerate(names):
        if not isinstance(name, str):
            raise InvalidInputError(
                "classes", f"expected class names (strings), but entry {index} is {name!r}"
            )
    return names


def _options_json(options: Options) -> dict[str, Any]:
    values = {}
    for name in OPTIONS:
        value = getattr(options, name)
        values[name] = list(value) if isinstance(value, tuple) else value
    return values


def _length(value: Any) -> int | None:
    if value is None:
        return None
    try:
        return len(value)
    except TypeError:
        return -1  # a scalar or an object without length: the task's checks say what is wrong


def _no_rows(*columns: Any) -> bool:
    lengths = [_length(column) for column in columns]
    return lengths[0] == 0 and all(length in (None, 0) for length in lengths[1:])


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."
