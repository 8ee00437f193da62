"""``evaluate``: the one public use case of the core."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalserve.core._coverage import check_coverage, coverage_report
from evalserve.core._errors import InvalidInputError
from evalserve.core._options import Options, parse_options
from evalserve.core._result import EvaluationResult
from evalserve.core._segments import (
    DEFAULT_MAX_SEGMENTS,
    Segmentation,
    segment_options,
    segment_result,
    segment_rows,
    take_rows,
)
from evalserve.core._task_spec import MonitorRequest, RowsEvaluator, TaskSpec
from evalserve.core._tasks import TASKS, comparing_tasks, task_spec
from evalserve.core._threads import check_threads, using_threads
from evalserve.core.binary._monitor_format import decode as decode_monitor_state
from evalserve.core.binary._result import check_baseline, evaluate_binary_stats

__all__ = [
    "TASKS",
    "check_baseline",
    "check_comparison",
    "check_monitor",
    "check_segment_states",
    "evaluate",
    "evaluate_binary_stats",
    "monitor_request",
    "with_coverage",
]


def evaluate(
    task: str,
    y_true: Any,
    y_score: Any = None,
    *,
    y_pred: Any = None,
    sample_weight: Any = None,
    options: Mapping[str, Any] | Options | None = None,
    baseline: Mapping[str, Any] | None = None,
    challenger: Mapping[str, Any] | None = None,
    classes: Sequence[str] | None = None,
    coverage: Mapping[str, Any] | None = None,
    monitor_state: bytes | None = None,
    window: str | None = None,
    segments: Any = None,
    segment_names: Sequence[str] | None = None,
    max_segments: int | None = DEFAULT_MAX_SEGMENTS,
    fold_segments: bool = False,
    segment_monitor_states: Mapping[str, bytes] | None = None,
    threads: int | None = None,
) -> EvaluationResult:
    """Evaluate a model's scores against ground truth; see README "Metric catalog".

    ``task``: binary (0/1 labels, n scores), multiclass (class indices or names, n x k scores),
    multilabel (n x k 0/1 labels and scores), regression (``y_true`` targets and ``y_pred``
    predictions; ``y_score`` is taken for ``y_pred`` when that is absent) or detection
    (``y_true`` per-image targets, ``y_score`` per-image predictions). ``classes`` names the
    score columns (multiclass, multilabel) or the class ids (detection). ``coverage``
    (``n_predictions``, ``label_delay_seconds``) reports the share of the window's predictions
    that were labelled, in ``result.coverage``. With a ``baseline`` (task binary) the result
    also has the AUC monitor's verdict (``result.monitor``) and its next state
    (``result.monitor_state``): send that state back as ``monitor_state`` with the next window,
    named by ``window`` (a window sent again is not counted twice).

    ``segments`` names a segment per row (per image for detection), or with ``segment_names``
    gives each row's integer code into them (a dictionary-encoded column): the result then has
    ``result.segments``, each segment's own result by name (as a separate call with its rows;
    with a baseline each has its own monitor, whose state ``segment_monitor_states[name]``
    carries from window to window). At most ``max_segments`` distinct segments (None: no cap),
    or with ``fold_segments`` the smallest folded into ``"__other__"``.

    ``threads``: the most threads the evaluation's sorts use (None: the setting of the context,
    ``using_threads``, whose own default is the CPUs this process may run on); rows under half
    a million a thread are evaluated on one.

    Raises ``InvalidInputError`` (naming the field) for input that cannot be evaluated.
    """
    if threads is not None:
        with using_threads(check_threads(threads)):
            return evaluate(
                task, y_true, y_score, y_pred=y_pred, sample_weight=sample_weight,
                options=options, baseline=baseline, challenger=challenger, classes=classes,
                coverage=coverage, monitor_state=monitor_state, window=window,
                segments=segments, segment_names=segment_names, max_segments=max_segments,
                fold_segments=fold_segments, segment_monitor_states=segment_monitor_states,
            )  # fmt: skip
    spec = task_spec(task)
    parsed = parse_options(options)
    if coverage is not None:
        check_coverage(coverage)  # before the work; n_predictions >= rows once they are counted
    check_comparison(task, baseline, challenger)
    monitor = monitor_request(baseline, monitor_state, window)
    segmentation = None
    if segments is not None:
        segmentation = segment_rows(
            segments, _count(y_true), unit=spec.unit, max_segments=max_segments,
            fold=fold_segments, names=segment_names,
        )  # fmt: skip
        states = check_segment_states(segment_monitor_states, segmentation.names, baseline, window)
    else:
        for name, value in (("segment_names", segment_names),
                            ("segment_monitor_states", segment_monitor_states)):  # fmt: skip
            if value is not None:
                raise InvalidInputError(name, "only a request with segments takes it")
    rows = Rows(y_true, y_score, y_pred, sample_weight, parsed, classes, baseline, challenger)
    if segmentation is None:
        return with_coverage(rows.evaluate(spec.evaluate, monitor), coverage)
    result = _segmented(spec, rows, monitor, segmentation, states, window)
    if (warning := segmentation.warning()) is not None:
        result.warnings.append(warning)
    return with_coverage(result, coverage)


def _count(y_true: Any) -> int:
    try:
        return len(y_true)
    except TypeError:
        return int(np.asarray(y_true).shape[0]) if np.ndim(y_true) else 0


def check_segment_states(
    states: Mapping[str, bytes] | None,
    names: Sequence[str],
    baseline: Mapping[str, Any] | None,
    window: str | None,
) -> Mapping[str, bytes]:
    """Each segment's monitor state, checked before any work (a state of a segment the rows
    lack is refused: its name is likely mistyped); raises naming ``segment_monitor_states``."""
    if states is None:
        return {}
    field_name = "segment_monitor_states"
    if not isinstance(states, Mapping):
        raise InvalidInputError(field_name, "expected a mapping of segment names to states")
    for name, state in states.items():
        if name not in names:
            raise InvalidInputError(field_name, f"names a segment the rows lack: {name!r}")
        try:
            monitor_request(baseline, state, window)
        except InvalidInputError as error:
            raise InvalidInputError(f"{field_name}.{name}", error.message) from None
    return states


@dataclass(frozen=True, slots=True)
class Rows:
    """The arguments of ``evaluate`` a task's evaluator takes (options parsed)."""

    y_true: Any
    y_score: Any
    y_pred: Any
    sample_weight: Any
    options: Options
    classes: Sequence[str] | None
    baseline: Mapping[str, Any] | None
    challenger: Mapping[str, Any] | None

    def evaluate(
        self, evaluator: RowsEvaluator, monitor: MonitorRequest | None
    ) -> EvaluationResult:
        return evaluator(
            self.y_true, self.y_score, self.y_pred, self.sample_weight, self.options,
            self.classes, self.baseline, self.challenger, monitor,
        )  # fmt: skip

    def segment(self, rows: NDArray[np.intp]) -> Rows:
        """The rows ``rows`` of every column, with a segment's options."""
        return Rows(
            take_rows(self.y_true, rows), take_rows(self.y_score, rows),
            take_rows(self.y_pred, rows), take_rows(self.sample_weight, rows),
            segment_options(self.options),
            self.classes, self.baseline, take_rows(self.challenger, rows),
        )  # fmt: skip


def _segmented(
    spec: TaskSpec,
    rows: Rows,
    monitor: MonitorRequest | None,
    segmentation: Segmentation,
    states: Mapping[str, bytes],
    window: str | None,
) -> EvaluationResult:
    """The overall result with each segment's: the task's own evaluator of segments when it
    has one and takes the request, else the overall rows and then each segment's rows."""
    monitors = {
        name: None if rows.baseline is None else MonitorRequest(states.get(name), window)
        for name in segmentation.names
    }
    if spec.segments is not None:
        found = spec.segments(
            rows.y_true, rows.y_score, rows.y_pred, rows.sample_weight, rows.options,
            rows.classes, rows.baseline, rows.challenger, monitor, segmentation, monitors,
        )  # fmt: skip
        if found is not None:
            result, parts = found
            result.segments = parts
            return result
    result = rows.evaluate(spec.evaluate, monitor)
    for name, taken in zip(segmentation.names, segmentation.rows(), strict=True):
        part = rows.segment(taken)
        result.segments[name] = segment_result(
            spec.name, name, int(taken.size),
            functools.partial(part.evaluate, spec.evaluate, monitors[name]),
        )  # fmt: skip
    return result


def check_comparison(
    task: str,
    baseline: Mapping[str, Any] | None = None,
    challenger: Mapping[str, Any] | None = None,
) -> None:
    """Raise ``InvalidInputError`` naming the field when ``task`` does not compare models but
    a baseline or a challenger was given."""
    if task_spec(task).compares:
        return
    for name, value in (("baseline", baseline), ("challenger", challenger)):
        if value is not None:
            raise InvalidInputError(
                name, f"drift tests and comparisons take task {comparing_tasks()}, not {task!r}"
            )


def monitor_request(
    baseline: Mapping[str, Any] | None, state: bytes | None, window: str | None
) -> MonitorRequest | None:
    """The monitor's part of a request; a state or a window without a baseline is refused (the
    monitor tests against the baseline)."""
    if baseline is None:
        for name, value in (("monitor_state", state), ("window", window)):
            if value is not None:
                raise InvalidInputError(name, "the AUC monitor needs a baseline")
        return None
    if window is not None and not isinstance(window, str):
        raise InvalidInputError("window", f"expected a string, but got {type(window).__name__}")
    if state is not None:
        decode_monitor_state(state)  # damaged or foreign bytes: refused before any work
        state = bytes(state)
    return MonitorRequest(state, window)


def check_monitor(
    baseline: Mapping[str, Any] | None, monitor_state: bytes | None, window: str | None
) -> None:
    """Raise ``InvalidInputError`` now for a monitor state or window that ``evaluate`` would
    refuse: without a baseline, or bytes that are not a monitor's state (a stream checks its
    header before its rows arrive)."""
    monitor_request(baseline, monitor_state, window)


def with_coverage(result: EvaluationResult, coverage: Mapping[str, Any] | None) -> EvaluationResult:
    """``result`` with its label coverage report when ``coverage`` is given."""
    if coverage is not None:
        result.coverage = coverage_report(coverage, result.n_samples)
    return result
