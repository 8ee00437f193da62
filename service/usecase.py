"""The one use case behind both transports: evaluate a request, or a stream of batches.

Inputs are the request records of ``service.records`` (made by ``service.json_codec`` and
``service.proto_codec``); the result is ``core.EvaluationResult``. No transport, no HTTP or gRPC
type, appears here. ``evaluate_payload`` is the one-shot pipeline of both transports (reserve,
decode, evaluate, encode); ``service.streams`` holds the stream protocol. After a successful
evaluation the use case tells an ``EvaluationObserver`` (the Prometheus model series of
``service.metrics``) the model the request named and the result: one place for both
transports, whole requests and streams.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from evalserve.core import (
    OPTIONS,
    REGISTRY,
    EvaluationResult,
    InvalidInputError,
    evaluate,
    task_spec,
)
from evalserve.service.budget import (
    COST_MODEL,
    GROW_WAIT_SECONDS,
    Reservation,
    input_bytes,
    reserve_decode,
)
from evalserve.service.config import Settings
from evalserve.service.limits import whole_option
from evalserve.service.records import Batch, Header, ModelRef, Request

__all__ = [
    "EvaluationObserver",
    "PayloadCodec",
    "check_segment_model",
    "curve_points",
    "evaluate_payload",
    "evaluate_request",
    "images_of",
    "no_images",
]


class EvaluationObserver(Protocol):
    """Told of every successful evaluation (``service.metrics.RequestObserver``)."""

    def evaluated(self, model: ModelRef | None, result: EvaluationResult) -> None: ...


@dataclass(frozen=True, slots=True)
class PayloadCodec:
    """How a transport reads one whole request and writes its answer: ``encoding`` ("json" or
    "protobuf", for what decoding costs), ``decode`` (body to request record) and ``encode``
    (the result, and the request's header, to the answer's bytes)."""

    encoding: str
    decode: Callable[[bytes | bytearray, Settings], Request]
    encode: Callable[[EvaluationResult, Header], bytes]


def evaluate_payload(
    body: bytes | bytearray,
    codec: PayloadCodec,
    settings: Settings,
    observer: EvaluationObserver | None,
    reservation: Reservation,
) -> bytes:
    """Reserve, decode, evaluate, encode one whole request: the CPU-bound part of a one-shot
    call of either transport, run off the event loop (``Evaluator.run``)."""
    reserve_decode(reservation, codec.encoding, body)
    request = codec.decode(body, settings)
    result = evaluate_request(
        request, observer, reservation, held_bytes=len(body), max_segments=settings.max_segments
    )
    return codec.encode(result, request.header)


def evaluate_request(
    request: Request,
    observer: EvaluationObserver | None = None,
    reservation: Reservation | None = None,
    held_bytes: int = 0,
    max_segments: int | None = None,
) -> EvaluationResult:
    """Evaluate one whole request (CPU-bound: call it through ``Evaluator.run``). With a
    ``reservation``, first resize it to what evaluating the decoded request costs (its body,
    ``held_bytes``, is still held; with segments, their grouping and results too):
    ``MemoryBusyError`` / ``OverBudgetError`` before any work when that does not fit. At most
    ``max_segments`` distinct segments (the setting; None: the core's default)."""
    check_segment_model(request)
    if reservation is not None:
        extras = [part.given() for part in (request.challenger, request.header.baseline) if part]
        decoded = input_bytes(request.batch, extras)
        cost = COST_MODEL.evaluation(request.header.task, decoded, held_bytes)
        if request.segments is not None and request.segments.values is not None:
            cost += COST_MODEL.segments(
                rows=len(request.segments.values),
                column_bytes=input_bytes(Batch(), [request.segments.values]),
                decoded_bytes=decoded,
                count=min(request.segments.count_bound, max_segments or DEFAULT_MAX_SEGMENTS),
                curve_points=curve_points(request.header.options),
            )
        reservation.resize(cost, wait=GROW_WAIT_SECONDS)
    result = _evaluate(request, max_segments)
    if observer is not None:
        observer.evaluated(request.header.model, result)
    return result


def check_segment_model(request: Request) -> None:
    """A request with segments exports each segment's series under the Prometheus label
    ``segment`` (its name): a ``model.segment`` of its own would be overwritten, so the
    combination is refused, naming ``model.segment`` (a stream's at its first batch with
    segments)."""
    model, segments = request.header.model, request.segments
    if model is not None and model.segment and segments is not None and segments.values is not None:
        raise InvalidInputError(
            "model.segment",
            "a request with segments labels each segment's series by its name (label "
            "segment): leave model.segment empty, or send one request per model.segment",
        )


def curve_points(options: Mapping[str, Any], name: str = "segment_curve_points") -> int:
    """The curve points a result may hold (by default a segment's): the option as sent, else
    its default."""
    points = whole_option(options, name)
    if points is not None and points >= 0:
        return points
    default: int = OPTIONS[name].default
    return default


# As core.evaluate's default: the cost model's count of segments when no cap is given.
DEFAULT_MAX_SEGMENTS = Settings.model_fields["max_segments"].default


def _evaluate(request: Request, max_segments: int | None = None) -> EvaluationResult:
    header, batch = request.header, request.batch
    coverage = None if header.coverage is None else header.coverage.given()
    segments: dict[str, Any] = {}
    if request.segments is not None:
        segments = {
            "segments": request.segments.values,
            "segment_names": request.segments.names,
            "fold_segments": request.segments.fold,
            "segment_monitor_states": request.segments.monitor_states,
        }
        if max_segments is not None:
            segments["max_segments"] = max_segments
    if task_spec(header.task).inputs.images:
        targets, predictions = images_of(header.task, batch)
        return evaluate(
            header.task, targets, predictions, options=header.options, classes=header.classes,
            coverage=coverage, monitor_state=header.monitor_state, window=header.window,
            **segments,
        )  # fmt: skip
    no_images(header.task, batch)
    return evaluate(
        header.task,
        batch.truth,
        batch.scores,
        y_pred=batch.predictions,
        sample_weight=batch.weights,
        options=header.options,
        baseline=None if header.baseline is None else header.baseline.given(),
        challenger=None if request.challenger is None else request.challenger.given(),
        classes=header.classes,
        coverage=coverage,
        monitor_state=header.monitor_state,
        window=header.window,
        **segments,
    )


def images_of(
    task: str, batch: Batch
) -> tuple[tuple[dict[str, Any], ...], tuple[dict[str, Any], ...]]:
    """The images of a request or stream batch of a task that takes images (detection), which
    carries no row column."""
    if batch.images is None:
        raise InvalidInputError("images", f"is required for task {task!r}")
    if batch.has_rows:
        raise InvalidInputError("labels", f"task {task!r} takes images, not row columns")
    return batch.images


def no_images(task: str, batch: Batch) -> None:
    if batch.images is not None:
        takers = ", ".join(repr(spec.name) for spec in REGISTRY if spec.inputs.images)
        raise InvalidInputError("images", f"only task {takers} takes images, not {task!r}")
