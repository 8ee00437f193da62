"""``TaskSpec``: everything the rest of evalserve needs to know about one task, in one place.

Each task package declares its spec (``core/<task>/_spec.py``) and ``core/_tasks.py`` registers
it, once. The core's ``evaluate`` and ``Accumulator``, the service's decoding, streams and memory
budget, the offline evaluator, the Dask engine and the report ask the spec what a task takes
and how; none of them compares task names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from evalserve.core._metric_info import MetricInfo
from evalserve.core._options import Options
from evalserve.core._result import EvaluationResult, TaskOutput
from evalserve.core._state import StateKind

if TYPE_CHECKING:
    from evalserve.core._segments import Segmentation

__all__ = [
    "MemoryCost",
    "MonitorRequest",
    "OutputComputer",
    "RowsEvaluator",
    "SegmentsEvaluator",
    "StateEvaluator",
    "TaskInputs",
    "TaskSpec",
    "evaluators_of",
    "output_result",
]


@dataclass(frozen=True, slots=True)
class MonitorRequest:
    """The monitor's part of a request: the state the last window returned (None for the first
    window) and this window's id (None: unnamed, counted each time it is sent)."""

    state: bytes | None = None
    window: str | None = None


class RowsEvaluator(Protocol):
    """Every metric of the task from its rows (the arguments of ``evaluate``, options parsed);
    ``baseline``, ``challenger`` and ``monitor`` reach only a task that ``compares``."""

    def __call__(
        self,
        y_true: Any,
        y_score: Any,
        y_pred: Any,
        sample_weight: Any,
        options: Options,
        classes: Sequence[str] | None,
        baseline: Mapping[str, Any] | None,
        challenger: Mapping[str, Any] | None,
        monitor: MonitorRequest | None,
    ) -> EvaluationResult: ...


class SegmentsEvaluator(Protocol):
    """The overall result and each segment's (by name) from the rows at once, sharing the work
    the separate evaluations would repeat; None when the request takes the general path (each
    segment's rows evaluated as a request of their own). ``monitors``: each segment's monitor
    request (with a baseline)."""

    def __call__(
        self,
        y_true: Any,
        y_score: Any,
        y_pred: Any,
        sample_weight: Any,
        options: Options,
        classes: Sequence[str] | None,
        baseline: Mapping[str, Any] | None,
        challenger: Mapping[str, Any] | None,
        monitor: MonitorRequest | None,
        segmentation: Segmentation,
        monitors: Mapping[str, MonitorRequest | None],
    ) -> tuple[EvaluationResult, dict[str, EvaluationResult]] | None: ...


class StateEvaluator(Protocol):
    """Every metric of the task from an ``Accumulator``'s merged state."""

    def __call__(
        self,
        state: Any,
        options: Options,
        classes: tuple[str, ...] | None,
        baseline: Mapping[str, Any] | None,
        monitor: MonitorRequest | None,
    ) -> EvaluationResult: ...


@dataclass(frozen=True, slots=True)
class TaskInputs:
    """What a task's rows are, as a transport or a file carries them.

    ``images``: per-image targets and predictions, no row columns (detection).
    ``score_matrix``: the scores are n x k, one column per class; ``label_matrix``: so are the
    labels and the hard predictions (multilabel). A flat matrix (protobuf, raw bytes) is
    reshaped with the width from ``n_classes`` or ``classes``, or, with ``width_from_scores``,
    from the ratio of scores to labels (multiclass).
    ``named_labels``: labels may be class names rather than numbers.
    ``predictions_from_scores``: the score column is read as the predictions (regression).
    ``optional``: the columns the task's rows may go without; a stream sends each of them in
    every batch or in none.
    """

    images: bool = False
    score_matrix: bool = False
    label_matrix: bool = False
    width_from_scores: bool = False
    named_labels: bool = False
    predictions_from_scores: bool = False
    optional: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class MemoryCost:
    """What evaluating the task allocates, per byte of decoded input (``evaluation``) and per
    byte of a stream's state (``result``; None: as ``evaluation``). Measured by
    ``bench/memory_cost.py``; a server's memory budget reserves by these."""

    evaluation: float
    result: float | None = None


@dataclass(frozen=True, slots=True)
class TaskSpec:
    """One task. ``unit``: what ``n_samples`` counts ("rows", or "images" for detection).
    ``compares``: takes a baseline (drift test) and a challenger (comparison).
    ``takes_classes``: takes class names. ``bootstraps``: its intervals may bootstrap rows
    (``bootstrap_replicates`` x rows is a server's compute budget). ``ranges``: an
    ``Accumulator`` of it can give its score classes to the Dask engine's ranges path.
    ``headline``: the few metrics a model owner reads first (the report's top table).
    ``segments``: evaluates a request with segments at once (None: each segment's rows as a
    request of their own)."""

    name: str
    unit: str
    catalog: tuple[MetricInfo, ...]
    conventions: Mapping[str, str]
    state: StateKind
    evaluate: RowsEvaluator
    state_result: StateEvaluator
    inputs: TaskInputs
    memory: MemoryCost
    headline: tuple[str, ...]
    compares: bool = False
    takes_classes: bool = True
    bootstraps: bool = False
    ranges: bool = False
    segments: SegmentsEvaluator | None = None


class OutputComputer(Protocol):
    """A task's ``compute``: every metric from its rows, as a ``TaskOutput``."""

    def __call__(
        self,
        y_true: Any,
        y_score: Any,
        *,
        y_pred: Any,
        sample_weight: Any,
        classes: Any,
        options: Options,
    ) -> TaskOutput: ...


def output_result(
    task: str, conventions: Mapping[str, str], output: TaskOutput
) -> EvaluationResult:
    """The result of what a task's ``compute`` (or its state's ``output``) gave."""
    sink = output.sink
    # Detection counts images: its rows are the images of the request.
    n_samples = sink.metrics.get("n_samples", sink.metrics.get("n_images"))
    return EvaluationResult(
        task=task,
        n_samples=int(n_samples) if n_samples is not None else 0,
        metrics=sink.metrics,
        undefined=sink.undefined,
        curves=output.curves,
        intervals=sink.intervals,
        per_class=output.per_class,
        conventions={**conventions, **output.conventions},
        warnings=sink.warnings,
    )


def evaluators_of(
    task: str, conventions: Mapping[str, str], compute: OutputComputer
) -> tuple[RowsEvaluator, StateEvaluator]:
    """The evaluators of a task whose rows and states give a ``TaskOutput`` (every task but
    binary, whose result also carries drift tests and comparisons)."""

    def from_rows(
        y_true: Any,
        y_score: Any,
        y_pred: Any,
        sample_weight: Any,
        options: Options,
        classes: Sequence[str] | None,
        baseline: Mapping[str, Any] | None,
        challenger: Mapping[str, Any] | None,
        monitor: MonitorRequest | None,
    ) -> EvaluationResult:
        output = compute(
            y_true, y_score, y_pred=y_pred, sample_weight=sample_weight, classes=classes,
            options=options,
        )  # fmt: skip
        return output_result(task, conventions, output)

    def from_state(
        state: Any,
        options: Options,
        classes: tuple[str, ...] | None,
        baseline: Mapping[str, Any] | None,
        monitor: MonitorRequest | None,
    ) -> EvaluationResult:
        return output_result(task, conventions, state.output(options, classes))

    return from_rows, from_state
