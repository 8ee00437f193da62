"""The one use case behind both transports: evaluate a request, or a stream of batches.

Inputs are the plain values of ``service.decode``; the result is ``core.EvaluationResult``. No
transport, no HTTP or gRPC type, appears here. After a successful evaluation the use case tells
an ``EvaluationObserver`` (the Prometheus model series of ``service.metrics``) the model the
request named and the result: one place for both transports, whole requests and streams.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from evalserve.core import (
    REGISTRY,
    Accumulator,
    EvaluationResult,
    InvalidInputError,
    StateTooLargeError,
    check_baseline,
    check_comparison,
    check_coverage,
    evaluate,
    task_spec,
)
from evalserve.service.budget import (
    COST_MODEL,
    MemoryBudget,
    Reservation,
    input_bytes,
    json_counts,
)
from evalserve.service.config import Settings
from evalserve.service.decode import (
    Batch,
    Header,
    ModelRef,
    Request,
    check_bootstrap_work,
    check_detection_pairs,
    shaped,
)
from evalserve.service.errors import (
    BusyError,
    ClientBusyError,
    OverBudgetError,
    PayloadTooLargeError,
    ServiceError,
    ShuttingDownError,
    StreamProtocolError,
)

__all__ = [
    "EvaluationObserver",
    "Evaluator",
    "StreamAccumulator",
    "current_reservation",
    "evaluate_request",
    "reserve_decode",
    "reserve_read",
]

T = TypeVar("T")

MATRIX_COLUMNS = ("scores", "labels", "predictions")
# How long a one-payload request that has read its body waits for the memory its next step
# needs, before it is refused as busy (a burst of large requests would otherwise refuse them
# all: each holding its body, none with room to decode).
GROW_WAIT_SECONDS = 5.0


class EvaluationObserver(Protocol):
    """Told of every successful evaluation (``service.metrics.RequestObserver``)."""

    def evaluated(self, model: ModelRef | None, result: EvaluationResult) -> None: ...


def evaluate_request(
    request: Request,
    observer: EvaluationObserver | None = None,
    reservation: Reservation | None = None,
    held_bytes: int = 0,
) -> EvaluationResult:
    """Evaluate one whole request (CPU-bound: call it through ``Evaluator.run``). With a
    ``reservation``, first resize it to what evaluating the decoded request costs (its body,
    ``held_bytes``, is still held): ``MemoryBusyError`` / ``OverBudgetError`` before any
    work when that does not fit."""
    if reservation is not None:
        extras = (request.challenger or {}, request.header.baseline or {})
        decoded = input_bytes(request.batch, extras)
        reservation.resize(
            COST_MODEL.evaluation(request.header.task, decoded, held_bytes), wait=GROW_WAIT_SECONDS
        )
    result = _evaluate(request)
    if observer is not None:
        observer.evaluated(request.header.model, result)
    return result


def _evaluate(request: Request) -> EvaluationResult:
    header, batch = request.header, request.batch
    if task_spec(header.task).inputs.images:
        targets, predictions = _images_of(header.task, batch)
        return evaluate(
            header.task, targets, predictions, options=header.options, classes=header.classes,
            coverage=header.coverage,
        )  # fmt: skip
    _no_images(header.task, batch)
    labels = batch.labels if batch.labels is not None else batch.label_names
    return evaluate(
        header.task,
        labels,
        batch.scores,
        y_pred=batch.predictions,
        sample_weight=batch.weights,
        options=header.options,
        baseline=header.baseline,
        challenger=request.challenger,
        classes=header.classes,
        coverage=header.coverage,
    )


def reserve_read(
    reservation: Reservation,
    body_bytes: int,
    stream: StreamAccumulator | None = None,
    field: str = "body",
) -> None:
    """Resize ``reservation`` to what receiving a body of ``body_bytes`` costs (before it is
    read), on top of ``stream``'s state when it is a batch of a stream."""
    held = 0 if stream is None else stream.state_bytes
    reservation.resize(held + COST_MODEL.read(body_bytes), field)


def reserve_decode(
    reservation: Reservation,
    encoding: str,
    body: bytes | bytearray,
    stream: StreamAccumulator | None = None,
    field: str = "body",
) -> None:
    """Resize ``reservation`` to what decoding ``body`` costs (``encoding``: "json" or
    "protobuf"), before it is decoded, on top of ``stream``'s state for a stream's batch."""
    values, strings = json_counts(body) if encoding == "json" else (0, 0)
    held = 0 if stream is None else stream.state_bytes
    cost = held + COST_MODEL.decode(encoding, len(body), values, strings)
    # One payload decodes on a worker thread: it may wait there for room (a stream's batch
    # is refused at once, its client sends it again).
    reservation.resize(cost, field, wait=GROW_WAIT_SECONDS if stream is None else 0.0)


def _images_of(
    task: str, batch: Batch
) -> tuple[tuple[dict[str, Any], ...], tuple[dict[str, Any], ...]]:
    """The images of a request or stream batch of a task that takes images (detection), which
    carries no row column."""
    if batch.images is None:
        raise InvalidInputError("images", f"is required for task {task!r}")
    if batch.has_rows:
        raise InvalidInputError("labels", f"task {task!r} takes images, not row columns")
    return batch.images


def _no_images(task: str, batch: Batch) -> None:
    if batch.images is not None:
        takers = ", ".join(repr(spec.name) for spec in REGISTRY if spec.inputs.images)
        raise InvalidInputError("images", f"only task {takers} takes images, not {task!r}")


class StreamAccumulator:
    """One stream's batches, merged into the core's ``Accumulator`` as they come: the exact,
    mergeable state of the task (for binary, per distinct score the positive and the negative
    mass), so memory grows with what the metrics need, not with the rows.

    Each batch is checked as one payload would be (its errors name the batch: ``batch 5.scores``)
    and against the stream's earlier batches (the same score columns, optional columns in every
    batch or in none). The stream is bounded by ``max_stream_rows`` (images for detection) and
    its state by ``max_stream_state_bytes``: past either it is refused (413 /
    RESOURCE_EXHAUSTED), with a hint to round the scores for the state.
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
        check_comparison(task, header.baseline)
        self.accumulator = Accumulator(
            task, header.options, header.classes,
            max_state_bytes=settings.max_stream_state_bytes,
        )  # fmt: skip
        if header.baseline is not None:
            check_baseline(header.baseline, self.accumulator.options)
        if header.coverage is not None:
            check_coverage(header.coverage)  # its values now; n_predictions >= rows at the end
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
        if self.reservation is not None:
            cost = COST_MODEL.evaluation(self.header.task, input_bytes(batch), held_bytes)
            self.reservation.resize(self.state_bytes + cost, where)
        with self._located(where):
            self.accumulator.update(
                rows.truth, rows.scores, y_pred=rows.predictions, sample_weight=rows.weights
            )
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
            _no_images(task, batch)
        if batch.is_empty:
            return None
        if images:
            targets, predictions = _images_of(task, batch)
            return _Rows(len(targets), targets, predictions, None, None, _Layout())
        values = self.spec.inputs.label_values
        if values is not None and batch.label_names is not None:
            raise InvalidInputError("labels", f"expected {values} labels for task {task!r}")
        batch = shaped(self.header, batch, self.settings)
        # With the header's classes the core checks every batch's width against them.
        optional = self.spec.inputs.optional
        layout = _Layout.of(batch, optional, width=self.header.classes is None)
        if self.first is not None:
            layout.check_against(self.first)
        truth = batch.labels if batch.labels is not None else batch.label_names
        count = 0 if truth is None else len(truth)
        return _Rows(count, truth, batch.scores, batch.predictions, batch.weights, layout)

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
        if self.reservation is not None:
            self.reservation.resize(COST_MODEL.result(self.header.task, self.state_bytes), "rows")
        result = self.accumulator.result(
            baseline=self.header.baseline, coverage=self.header.coverage
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


class Evaluator:
    """Runs CPU-bound evaluation off the event loop, at most ``workers`` at a time, so a big
    request never stalls health checks or other connections; and admits at most
    ``max_inflight`` evaluation requests at once (both doors), at most ``max_per_client`` of
    them from one client (None: no per-client limit; each transport says who the client is,
    as ``client_identity`` asks), so a burst of large uploads is refused early (clients retry)
    instead of piling up in memory, and one client cannot take every place.

    On shutdown (``drain``) new requests are refused with ``ShuttingDownError``, and those still
    in flight when the grace period ends are cut off with it too (503 / UNAVAILABLE): the
    transports answer it, never a 500. A call already running on a worker thread is not
    interrupted (numpy cannot be); nobody waits for its result any more."""

    def __init__(
        self,
        workers: int,
        max_inflight: int = 16,
        max_per_client: int | None = None,
        budget: MemoryBudget | None = None,
    ) -> None:
        # Unlimited unless given: tests and embedders that do not budget memory.
        self.budget = budget or MemoryBudget(1 << 62)
        self._pool = ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix="evaluate", initializer=_below_the_loop
        )
        self._slots = asyncio.Semaphore(workers)
        self.max_inflight = max_inflight
        self.max_per_client = max_per_client
        self.inflight = 0
        self._per_client: dict[str, int] = {}
        self._count = threading.Lock()
        self._tasks: set[asyncio.Task[Any]] = set()
        self.draining = False
        self._cut_off = False

    @contextmanager
    def admitted(self, client: str | None = None) -> Iterator[Reservation]:
        """Hold one of the ``max_inflight`` places for a request (and one of its ``client``'s
        ``max_per_client``; no client, or no per-client limit: none is counted); ``BusyError``
        when none is free (raised at once: a request never waits for a place),
        ``ShuttingDownError`` once the server drains. Yields the request's reservation of the
        memory budget (0 bytes: the request resizes it as it learns its size), released with
        the place; ``current_reservation`` finds it too."""
        if self.draining:
            raise ShuttingDownError()
        if self.max_per_client is None:
            client = None
        with self._count:
            if self.inflight >= self.max_inflight:
                raise BusyError(self.max_inflight)
            if client is not None:
                self._client_in(client)
            self.inflight += 1
        task = _current_task()
        if task is not None:
            self._tasks.add(task)
        reservation = self.budget.reservation()
        token = _reservation.set(reservation)
        try:
            yield reservation
        except asyncio.CancelledError:
            if self._cut_off and task is not None:  # cut off by ``drain``: answer, not a 500
                task.uncancel()
                raise ShuttingDownError() from None
            raise
        finally:
            _reservation.reset(token)
            reservation.release()
            if task is not None:
                self._tasks.discard(task)
            with self._count:
                self.inflight -= 1
                if client is not None:
                    self._client_out(client)

    def _client_in(self, client: str) -> None:
        """Count one more request of ``client`` (under ``_count``), or ``ClientBusyError``."""
        held = self._per_client.get(client, 0)
        if self.max_per_client is not None and held >= self.max_per_client:
            raise ClientBusyError(self.max_per_client)
        self._per_client[client] = held + 1

    def _client_out(self, client: str) -> None:
        left = self._per_client[client] - 1
        if left:
            self._per_client[client] = left
        else:
            del self._per_client[client]

    async def drain(self, grace: float) -> None:
        """Refuse new requests, give those in flight ``grace`` seconds, then cut off the rest
        (each answers ``ShuttingDownError``); returns once none is in flight (or 5 s later)."""
        self.draining = True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        while self.inflight and loop.time() < deadline:
            await asyncio.sleep(0.05)
        self._cut_off = True
        for task in list(self._tasks):
            task.cancel()
        deadline = loop.time() + 5
        while self.inflight and loop.time() < deadline:
            await asyncio.sleep(0.02)

    async def run(self, function: Callable[..., T], *args: object) -> T:
        """``function(*args)`` on a worker thread. Cancelled before a worker picks it up, the
        call never starts; cancelled while it runs, it runs to its end, unawaited, and keeps
        the request's memory reservation until then."""
        reservation = _reservation.get()
        async with self._slots:
            if reservation is not None:
                reservation.pin()
            try:
                future = self._pool.submit(function, *args)
            except BaseException:
                if reservation is not None:
                    reservation.unpin()
                raise
            if reservation is not None:
                future.add_done_callback(lambda _: reservation.unpin())
            return await asyncio.wrap_future(future)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


# How much nicer evaluation threads are than the event loop's (Linux: a thread's own nice).
WORKER_NICENESS = 10


def _below_the_loop() -> None:
    """Run this worker thread at a lower CPU priority than the event loop: when the cores are
    saturated with evaluations, the loop (health checks, admission, refusals) still gets a
    core at once. Where threads cannot be given a priority, nothing changes."""
    with suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), WORKER_NICENESS)


# The reservation of the request the current task serves (``Evaluator.run`` pins it).
_reservation: ContextVar[Reservation | None] = ContextVar("reservation", default=None)


def current_reservation() -> Reservation:
    """The reservation of the request the current task serves: a transport that admits a
    request in one layer (``Evaluator.admitted``) and serves it in another finds it here."""
    reservation = _reservation.get()
    if reservation is None:
        raise RuntimeError("no request is admitted here: serve it inside Evaluator.admitted()")
    return reservation


def _current_task() -> asyncio.Task[Any] | None:
    try:
        return asyncio.current_task()
    except RuntimeError:  # no event loop: a synchronous caller (tests)
        return None
