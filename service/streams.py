"""Streams: the one stream protocol both transports speak, and a stream's merged state.

A stream is a header (the task and how to evaluate it) and batches of rows, sent as NDJSON
lines (REST) or as messages (gRPC). ``StreamSession`` holds the protocol, the same for both
transports: the header comes in the first message and only there, any message may carry rows, a
stream without a header is refused. Each transport reads its messages (``StreamMessage``) and
says how its errors name a place in the stream (``StreamPlaces``: "line 3", "message 3").
``StreamAccumulator`` merges the batches into the core's ``Accumulator``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from evalserve.core import (
    Accumulator,
    EvaluationResult,
    InvalidInputError,
    StateTooLargeError,
    check_baseline,
    check_comparison,
    check_coverage,
    check_monitor,
    task_spec,
)
from evalserve.service.budget import (
    COST_MODEL,
    Reservation,
    input_bytes,
    reserve_decode,
    reserve_read,
)
from evalserve.service.config import Settings
from evalserve.service.errors import (
    OverBudgetError,
    PayloadTooLargeError,
    ServiceError,
    StreamProtocolError,
)
from evalserve.service.limits import check_bootstrap_work, check_detection_pairs
from evalserve.service.records import Batch, Header, Request, Segments
from evalserve.service.shapes import with_task_matrices
from evalserve.service.usecase import (
    EvaluationObserver,
    check_segment_model,
    curve_points,
    images_of,
    no_images,
)

__all__ = ["StreamAccumulator", "StreamMessage", "StreamPlaces", "StreamSession"]

MATRIX_COLUMNS = ("scores", "labels", "predictions")


class StreamPlaces(Protocol):
    """How a transport names the places of its stream in errors."""

    def place(self, position: int) -> str:
        """The message at ``position`` (1-based): "line 3", "message 3"."""
        ...

    def no_header(self, position: int) -> StreamProtocolError:
        """The stream's first message (at ``position``) carries no header."""
        ...

    def second_header(self, position: int, header_position: int) -> StreamProtocolError:
        """The message at ``position`` carries a header; the header was ``header_position``."""
        ...

    def empty(self) -> StreamProtocolError:
        """The stream ended without a message."""
        ...

    def located(
        self, error: ServiceError | InvalidInputError, position: int, batch: str
    ) -> Exception:
        """An error of the message at ``position``, named as the transport names it (the
        errors of its rows name them ``batch``: "batch 3")."""
        ...


@dataclass(frozen=True, slots=True)
class StreamMessage:
    """One message of a stream, read by its transport: whether it carries the header, and how
    to decode it (the header, if any, and its rows)."""

    has_header: bool
    decode: Callable[[], tuple[Header | None, Batch]]


class StreamSession:
    """One stream, either transport: the header first and once, batches merged as they come,
    then the result. Its methods are CPU-bound: call them through ``Evaluator.run``, one at a
    time. ``keep``: what the reservation keeps between messages on top of the state, when the
    transport's next message arrives before it can reserve it (gRPC)."""

    def __init__(
        self,
        settings: Settings,
        observer: EvaluationObserver | None,
        reservation: Reservation,
        places: StreamPlaces,
        keep: int | None = None,
    ) -> None:
        self.settings = settings
        self.observer = observer
        self.reservation = reservation
        self.places = places
        self.keep = keep
        self.accumulator: StreamAccumulator | None = None
        self.header_position = 0

    @property
    def held(self) -> int | None:
        """The bytes the stream's state holds; None before the header (then the stream's
        first message is reserved as a whole request's body is)."""
        return None if self.accumulator is None else self.accumulator.state_bytes

    @property
    def n_batches(self) -> int:
        return 0 if self.accumulator is None else self.accumulator.n_batches

    def receiving(self, position: int, size: int) -> None:
        """Reserve what receiving the message at ``position`` costs so far (``size`` bytes),
        on top of the stream's state."""
        reserve_read(self.reservation, size, self.held or 0, self.places.place(position))

    def feed(
        self,
        position: int,
        data: bytes | bytearray,
        encoding: str,
        read: Callable[[bytes | bytearray], StreamMessage],
    ) -> None:
        """Decode (``read``, then the message's own ``decode``) and merge the message at
        ``position``; ``encoding``: "json" or "protobuf", for what decoding it costs."""
        where = self.places.place(position)
        reserve_decode(self.reservation, encoding, data, self.held, where)
        message = read(data)
        if self.accumulator is None and not message.has_header:
            raise self.places.no_header(position)
        if self.accumulator is not None and message.has_header:
            raise self.places.second_header(position, self.header_position)
        batch_name = f"batch {self.n_batches + 1}"
        try:
            header, batch = message.decode()
            if header is not None:
                self.accumulator = StreamAccumulator(
                    header, self.settings, self.observer, self.reservation
                )
                if self.keep is not None:
                    self.accumulator.keep = self.keep
                self.header_position = position
            assert self.accumulator is not None
            self.accumulator.add(batch, held_bytes=len(data))
        except (ServiceError, InvalidInputError) as error:
            raise self.places.located(error, position, batch_name) from None

    def finish(self, encode: Callable[[EvaluationResult, Header], bytes]) -> bytes:
        """The stream's result, encoded; refused when the stream had no header."""
        if self.accumulator is None:
            raise self.places.empty()
        return encode(self.accumulator.finish(), self.accumulator.header)


class StreamAccumulator:
    """One stream's batches, merged into the core's ``Accumulator`` as they come: the exact,
    mergeable state of the task (for binary, per distinct score the positive and the negative
    mass), so memory grows with what the metrics need, not with the rows.

    Each batch is checked as one payload would be (its errors name the batch: ``batch 5.scores``)
    and against the stream's earlier batches (the same score columns, optional columns in every
    batch or in none). Batches may carry segments (every batch with rows, or none): the state
    then holds one state per segment too, the union of the batches' segments at most
    ``max_segments``, and the answer each segment's result. The stream is bounded by
    ``max_stream_rows`` (images for detection) and its state, its segments' included, by
    ``max_stream_state_bytes``: past either it is refused (413 / RESOURCE_EXHAUSTED), with a
    hint to round the scores for the state.
    """

    def __init__(
        self,
        header: Header,
        settings: Settings,
        observer: EvaluationObserver | None = None,
        reservation: Reservation | None = None,
    ) -> None:
        self.header = header
        self.settings = settings
        self.observer = observer
        self.reservation = reservation
        # What the reservation keeps on top of the state between batches (a transport whose
        # next batch arrives before it can reserve it raises it to that batch's share).
        self.keep = COST_MODEL.fixed
        task = header.task
        self.spec = task_spec(task)
        # Everything the header alone decides is checked now, not after the last batch.
        baseline = None if header.baseline is None else header.baseline.given()
        check_comparison(task, baseline)
        self.accumulator = Accumulator(
            task, header.options, header.classes,
            max_state_bytes=settings.max_stream_state_bytes, max_segments=settings.max_segments,
        )  # fmt: skip
        if baseline is not None:
            check_baseline(baseline, self.accumulator.options)
        check_monitor(baseline, header.monitor_state, header.window)
        if header.coverage is not None:
            # its values now; n_predictions >= rows is checked at the end
            check_coverage(header.coverage.given())
        self.max_rows = settings.max_stream_rows
        self.n_batches = 0
        # What the first batch with rows sent: the stream's other batches must match it.
        self.first: _Layout | None = None

    @property
    def n_rows(self) -> int:
        """Rows merged so far (images for detection)."""
        return self.accumulator.n_rows

    @property
    def state_bytes(self) -> int:
        """What the stream's state holds, which its reservation keeps between batches."""
        return self.accumulator.nbytes

    def add(self, batch: Batch, held_bytes: int = 0) -> None:
        """Check one batch and merge it (CPU-bound). A refused batch leaves the stream's state
        as it was. With a reservation, merging first reserves what the batch costs over the
        state (``held_bytes``: its body, still held), then keeps the state's size."""
        self.n_batches += 1
        where = f"batch {self.n_batches}"
        with self._located(where):
            rows = self._rows_of(batch)
        if rows is None:
            return  # a message that carries no rows
        if self.n_rows + rows.count > self.max_rows:
            raise PayloadTooLargeError(
                where, f"the stream is over the limit of {self.max_rows} {self.spec.unit}"
            )
        if self.spec.inputs.images:
            max_detections = self.accumulator.options.max_detections
            check_detection_pairs(where, (rows.truth, rows.scores), max_detections, self.settings)
        if self.spec.bootstraps:
            replicates = self.accumulator.options.bootstrap_replicates
            check_bootstrap_work(where, replicates, self.n_rows + rows.count, self.settings)
        segments = rows.segments
        if segments is not None:
            check_segment_model(Request(self.header, batch, segments=segments))
        if self.reservation is not None:
            decoded = input_bytes(batch)
            cost = COST_MODEL.evaluation(self.header.task, decoded, held_bytes)
            if segments is not None and segments.values is not None:
                # The column, its grouping and each segment's copy of the batch's rows.
                cost += COST_MODEL.segments(
                    rows=len(segments.values),
                    column_bytes=input_bytes(Batch(), [segments.values, segments.names]),
                    decoded_bytes=decoded,
                    count=0,
                    curve_points=0,
                )
            self.reservation.resize(self.state_bytes + cost, where)
        with self._located(where):
            self.accumulator.update(
                rows.truth, rows.scores, y_pred=rows.predictions, sample_weight=rows.weights,
                segments=None if segments is None else segments.values,
                segment_names=None if segments is None else segments.names,
            )  # fmt: skip
        if self.reservation is not None:
            self.reservation.resize(self.state_bytes + self.keep, where)
            # A state whose result could never be computed inside the budget is refused at
            # the batch that grew it so far, not after the last batch.
            needed = COST_MODEL.result(self.header.task, self.state_bytes)
            if needed > self.reservation.budget.total:
                raise OverBudgetError.of(where, needed, self.reservation.budget.total)
        if self.first is None:
            self.first = rows.layout

    def _rows_of(self, batch: Batch) -> _Rows | None:
        """The batch as the ``Accumulator`` takes it, checked against the stream's first batch;
        None for a batch without rows."""
        task = self.header.task
        images = self.spec.inputs.images
        if not images:
            no_images(task, batch)
        if batch.is_empty:
            return None
        if images:
            targets, predictions = images_of(task, batch)
            return _Rows(len(targets), targets, predictions, None, None, _Layout(), batch.segments)
        # Names as binary labels: the core reads them with options.positive_label, or says to
        # set it, as for a one-shot request.
        batch = with_task_matrices(self.header, batch, self.settings)
        # With the header's classes the core checks every batch's width against them.
        optional = self.spec.inputs.optional
        layout = _Layout.of(batch, optional, width=self.header.classes is None)
        if self.first is not None:
            layout.check_against(self.first)
        truth = batch.truth
        count = 0 if truth is None else len(truth)
        return _Rows(
            count, truth, batch.scores, batch.predictions, batch.weights, layout, batch.segments
        )

    @contextmanager
    def _located(self, where: str) -> Iterator[None]:
        """Errors of a batch name it (``batch 5.scores``); the state cap says what to do."""
        try:
            yield
        except StateTooLargeError:
            raise StateTooLargeError(
                where,
                f"the stream's {self.header.task} state would grow past max_stream_state_bytes"
                f" ({self.settings.max_stream_state_bytes} bytes): split the stream into shorter"
                " ones, raise max_stream_state_bytes, or make the state smaller (it grows as the"
                " task's metric page says: round continuous scores, for example to 6 decimals)",
            ) from None
        except (ServiceError, InvalidInputError) as error:  # 4xx as in one payload, located
            raise type(error)(f"{where}.{error.field}", error.message) from None

    def finish(self) -> EvaluationResult:
        if self.n_rows == 0:
            raise StreamProtocolError(
                "rows", f"the stream carried a header but no {self.spec.unit}"
            )
        header = self.header
        if self.reservation is not None:
            needed = COST_MODEL.result(header.task, self.state_bytes)
            # Each segment's result, held until the answer is encoded.
            count = len(self.accumulator.segment_names)
            needed += COST_MODEL.segment_results(count, curve_points(header.options))
            self.reservation.resize(needed, "rows")
        result = self.accumulator.result(
            baseline=None if header.baseline is None else header.baseline.given(),
            coverage=None if header.coverage is None else header.coverage.given(),
            monitor_state=header.monitor_state,
            window=header.window,
            segment_monitor_states=header.segment_monitor_states,
        )
        if self.observer is not None:
            self.observer.evaluated(self.header.model, result)
        return result


@dataclass(frozen=True, slots=True)
class _Layout:
    """Which optional columns a batch sent and how wide its matrices are: what every batch of a
    stream must repeat (the states of two layouts do not merge)."""

    sent: tuple[tuple[str, bool], ...] = ()  # (optional column, whether the batch has it)
    width: tuple[str, int] | None = None  # (the column it was read from, its columns)

    @classmethod
    def of(cls, batch: Batch, optional: tuple[str, ...], *, width: bool) -> _Layout:
        wide = None
        if width:
            for name in MATRIX_COLUMNS:
                values = getattr(batch, name)
                if values is not None and values.ndim == 2:
                    wide = (name, int(values.shape[1]))
                    break
        return cls(tuple((name, getattr(batch, name) is not None) for name in optional), wide)

    def check_against(self, first: _Layout) -> None:
        for (name, sent), (_, first_sent) in zip(self.sent, first.sent, strict=True):
            if sent != first_sent:
                raise StreamProtocolError(
                    name, f"send {name} in every batch of a stream or in none"
                )
        if self.width is not None and first.width is not None and self.width[1] != first.width[1]:
            raise StreamProtocolError(
                self.width[0],
                f"expected {first.width[1]} columns, as the stream's first batch has, but got"
                f" {self.width[1]}",
            )


@dataclass(frozen=True, slots=True)
class _Rows:
    """One batch's rows as ``Accumulator.update`` takes them."""

    count: int  # rows, or images for detection
    truth: Any
    scores: Any
    predictions: Any
    weights: Any
    layout: _Layout
    segments: Segments | None = None  # the batch's, as sent
