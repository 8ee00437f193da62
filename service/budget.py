"""The memory budget: every evaluation reserves what it will allocate before it allocates it.

``MemoryBudget`` holds ``memory_budget_bytes``; each admitted request gets a ``Reservation``
that the transports and the use case resize as they learn more about the request:

1. before its body is read, from its size (``Content-Length``; a chunked body or a stream's
   line as it arrives): ``CostModel.read``. A gRPC message's size is not known before it
   arrives: each call reserves ``budget / max_inflight_requests`` first, and gRPC refuses a
   message over half of that, or over ``GRPC_MESSAGE_CAP`` (``grpc_message_limit``);
2. once read, before it is decoded: ``CostModel.decode``, from its size and (JSON) its values;
3. once decoded, before evaluating, from the decoded arrays: ``CostModel.evaluation``;
4. a stream: each batch as in 1 to 3, on top of its state (``Accumulator.nbytes``), which
   the reservation keeps between batches (with a gRPC message's share); the result as in 3,
   over the state.

A reservation that does not fit in what is free now raises ``MemoryBusyError`` (503 +
Retry-After / RESOURCE_EXHAUSTED with a retry hint), one over the whole budget
``OverBudgetError`` (413 / RESOURCE_EXHAUSTED): nothing is allocated for a request that would
not fit. When the last reservation of a burst is released the budget calls ``on_idle`` (the
server returns freed memory to the system there).

The model's factors are measured by ``bench/memory_cost.py`` (its figures are in
``bench/memory_cost.json``; a test checks that every factor here covers the measured one).
"""

from __future__ import annotations

import math
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from evalserve.core import task_spec
from evalserve.service.errors import MemoryBusyError, OverBudgetError
from evalserve.service.records import Batch

__all__ = [
    "COST_MODEL",
    "GRPC_MESSAGE_CAP",
    "CostModel",
    "MemoryBudget",
    "Reservation",
    "grpc_message_limit",
    "input_bytes",
    "json_counts",
    "receive_share",
    "reserve_decode",
    "reserve_read",
]

MIB: Final = 1 << 20


class MemoryBudget:
    """``total`` bytes shared by every request in flight (thread-safe).

    The allocator may hold freed memory for reuse (``service.memory.retain_freed_memory``):
    resident, but in no reservation. With ``resident`` (the process's resident bytes) and
    ``trim`` (give that memory back), a reservation that grows first checks that the process
    stays under ``baseline + total`` (``baseline``: resident bytes when the budget was made),
    trimming when it would not: reuse is kept while there is room, and the budget holds for
    the process, not only for the reservations."""

    def __init__(
        self,
        total: int,
        on_idle: Callable[[], object] | None = None,
        *,
        resident: Callable[[], int] | None = None,
        trim: Callable[[], object] | None = None,
    ) -> None:
        self.total = total
        self.reserved = 0
        self._on_idle = on_idle
        self._resident = resident
        self._trim = trim
        self.baseline = resident() if resident is not None else 0
        self.trims = 0
        # The most reserved since the budget was last idle: ``on_idle`` runs after a burst
        # (a quarter of the budget or more), not after every small request.
        self._high = 0
        self._lock = threading.Lock()
        # Growth that waits for room (``Reservation.resize(wait=...)``): the reservations that
        # hold bytes, and those of them waiting, each with its arrival number.
        self._room = threading.Condition(self._lock)
        self._holders = 0
        self._waiting: dict[int, int] = {}
        self._arrivals = 0

    @property
    def free(self) -> int:
        return self.total - self.reserved

    def _make_room(self) -> None:
        """Trim the allocator's retained memory when the process might pass its budget:
        when what it holds now and every reservation (which may all still be allocated, from
        fresh pages) together pass it. Checked at every resize, shrinks too (memory a request
        gave back is retained, and another's next allocation may not reuse it). Conservative
        (memory in use is counted twice); a trim costs page faults later, never memory."""
        if self._resident is None or self._trim is None:
            return
        if self._resident() + self.reserved > self.baseline + self.total:
            self._trim()
            self.trims += 1

    def reservation(self) -> Reservation:
        """A reservation of 0 bytes, to be resized as the request is read."""
        return Reservation(self)

    def _resize(self, reservation: Reservation, nbytes: int, field: str, wait: float) -> None:
        idle = False
        with self._lock:
            grow = nbytes - reservation.nbytes
            if grow > 0:
                if nbytes > self.total:
                    raise OverBudgetError.of(field, nbytes, self.total)
                if self.reserved + grow > self.total:
                    self._wait_for_room(reservation, nbytes, field, wait)
                    grow = nbytes - reservation.nbytes
            self._holders += (nbytes > 0) - (reservation.nbytes > 0)
            self.reserved += grow
            reservation.nbytes = nbytes
            if grow < 0:
                self._room.notify_all()
            self._high = max(self._high, self.reserved)
            idle = grow < 0 and self.reserved == 0 and self._high >= self.total // 4
            if idle:
                self._high = 0
            self._make_room()
        if idle and self._on_idle is not None:
            self._on_idle()

    def _wait_for_room(
        self, reservation: Reservation, nbytes: int, field: str, wait: float
    ) -> None:
        """Wait up to ``wait`` seconds (lock held, released while waiting) until ``nbytes``
        fit, for a reservation that already holds bytes (a request past its first step:
        refusing it would waste what it has read). Requests that all hold part of the budget
        and all wait for more would wait for each other: then the one that came last gives up
        (``MemoryBusyError``), and the memory it releases lets the others on. A reservation
        that holds nothing yet, or ``wait`` 0, is refused at once."""
        busy = MemoryBusyError.of(
            field, nbytes, self.total - self.reserved + reservation.nbytes, self.total
        )
        if wait <= 0 or reservation.nbytes == 0:
            raise busy
        self._arrivals += 1
        self._waiting[id(reservation)] = self._arrivals
        self._room.notify_all()  # a new waiter: the others look again at who must give up
        deadline = time.monotonic() + wait
        try:
            while self.reserved + nbytes - reservation.nbytes > self.total:
                stuck = len(self._waiting) >= self._holders
                if stuck and self._waiting[id(reservation)] == max(self._waiting.values()):
                    raise busy
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise busy
                self._room.wait(remaining)
        finally:
            del self._waiting[id(reservation)]
            self._room.notify_all()


@dataclass(eq=False)
class Reservation:
    """One request's share of a ``MemoryBudget``; ``release`` (or the end of a ``with`` block)
    gives it back, but not while work that uses it is still running (``pin``): a worker
    thread that nobody awaits any more keeps its memory until it ends."""

    budget: MemoryBudget
    nbytes: int = 0
    _pins: int = 0
    _released: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def resize(self, nbytes: int, field: str = "body", wait: float = 0.0) -> None:
        """Hold exactly ``nbytes`` (``field``: what errors name). Growing past what is free
        raises and leaves the reservation as it was; with ``wait`` (seconds, from a worker
        thread only: it blocks), a reservation that holds bytes first waits for room."""
        self.budget._resize(self, max(0, int(nbytes)), field, wait)

    def pin(self) -> None:
        """Work that uses the reserved memory starts (``unpin`` when it ends)."""
        with self._lock:
            self._pins += 1

    def unpin(self) -> None:
        with self._lock:
            self._pins -= 1
            free = self._released and not self._pins
        if free:
            self.resize(0)

    def release(self) -> None:
        """Give the reservation back now, or when the last pinned work ends."""
        with self._lock:
            self._released = True
            free = not self._pins
        if free:
            self.resize(0)

    def __enter__(self) -> Reservation:
        return self

    def __exit__(self, *_: object) -> None:
        self.release()


# Python's own cost of a tuple of label strings: a pointer and a str object each.
_STR_OVERHEAD: Final = 8 + sys.getsizeof("")


def _nbytes(value: Any) -> int:
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, str):
        return _STR_OVERHEAD + len(value)
    if isinstance(value, Mapping):
        return sum(_nbytes(item) for item in value.values())
    if isinstance(value, (tuple, list)):
        return sum(_nbytes(item) for item in value)
    return 0


def input_bytes(batch: Batch, extra: Iterable[Any] = ()) -> int:
    """Bytes of a decoded batch's values (arrays, label names, detection images), and of
    ``extra`` (a challenger, a baseline)."""
    columns = (batch.labels, batch.scores, batch.predictions, batch.weights)
    return sum(_nbytes(value) for value in (*columns, batch.label_names, batch.images, *extra))


# Bytes scanned per C call: each holds the GIL for about a millisecond, so the event loop
# thread gets its turn in between (one scan of a 100 MB body would hold it for 50 ms).
SCAN_BYTES = 1 << 20


def json_counts(body: bytes | bytearray) -> tuple[int, int]:
    """Upper bounds on the values and on the strings of a JSON body: one more than its commas,
    half its quotes (no allocation: C scans of the bytes, ``SCAN_BYTES`` at a time)."""
    commas = quotes = 0
    for start in range(0, len(body), SCAN_BYTES):
        commas += body.count(b",", start, start + SCAN_BYTES)
        quotes += body.count(b'"', start, start + SCAN_BYTES)
    return commas + 1, quotes // 2


@dataclass(frozen=True)
class CostModel:
    """What a request allocates at its peak, as a function of what is known when.

    Before the body is read only its size is known: ``read`` covers the body and the join of
    its chunks. Once read, before it is decoded: ``decode`` adds what decoding allocates, per
    byte of body (copies of it) and per value (JSON: counted by commas; a parser's tape and
    the arrays). Once decoded, before evaluating: ``evaluation``, per byte of decoded input
    (the task spec's ``memory.evaluation``, over the input itself; the worst case, every score
    distinct); a stream's result per byte of its state (``memory.result``).
    ``fixed``: what any request costs besides (response, small arrays)."""

    decode_per_body_byte: Mapping[str, float]
    decode_per_value: Mapping[str, float]
    decode_per_string: Mapping[str, float]
    receive_factor: float = 2.0
    fixed: int = 8 * MIB
    # Segments: the core's grouping per row (a sort order and each segment's positions, 8
    # bytes each; task binary's sort key and order, with its scores gathered by segment within
    # the one copy of the input ``segments`` counts); per segment its result with its encoded
    # response (metrics, warnings,
    # dictionaries: a response's fixed size, measured 4.5 KB of JSON and 3.8 KB of protobuf
    # for binary without curves) and per curve point its curves (the ROC's and PR's six
    # arrays: float64, protobuf's 9-12 bytes and JSON's 29 measured a value).
    segment_row_bytes: int = 16
    segment_result_bytes: int = 64 << 10
    segment_curve_point_bytes: int = 6 * (8 + 12 + 32)

    def read(self, body_bytes: int) -> int:
        """Before the body is read: the body and the join of its chunks."""
        return self.fixed + math.ceil(body_bytes * self.receive_factor)

    def decode(self, encoding: str, body_bytes: int, values: int = 0, strings: int = 0) -> int:
        """Once read, before decoding (``encoding``: "json" or "protobuf"). For JSON,
        ``values`` and ``strings`` are upper bounds on its values and its strings
        (``json_counts``): numbers cost a parser's tape and an array, strings a Python
        object each."""
        per_byte = 1 + self.decode_per_body_byte[encoding]
        return self.fixed + math.ceil(
            body_bytes * per_byte
            + values * self.decode_per_value[encoding]
            + strings * self.decode_per_string[encoding]
        )

    def evaluation(self, task: str, decoded_bytes: int, held_bytes: int = 0) -> int:
        """Once decoded: the input, what evaluating it allocates, and ``held_bytes`` still
        held (the body)."""
        factor = task_spec(task).memory.evaluation
        return self.fixed + held_bytes + math.ceil(decoded_bytes * (1 + factor))

    def segments(
        self, rows: int, column_bytes: int, decoded_bytes: int, count: int, curve_points: int
    ) -> int:
        """What segments add to ``evaluation``: the segment column (``column_bytes``), its
        grouping (per row), one segment's copy of the input at a time (at most all of it,
        ``decoded_bytes``; its evaluation's own work is within the input's factor) and
        ``count`` results held until the answer is encoded, each a response's fixed size and
        its curves of up to ``curve_points`` points."""
        held = column_bytes + rows * self.segment_row_bytes + decoded_bytes
        return held + self.segment_results(count, curve_points)

    def segment_results(self, count: int, curve_points: int) -> int:
        """``count`` segments' results held until the answer is encoded: each a response's
        fixed size and its curves of up to ``curve_points`` points."""
        return count * (self.segment_result_bytes + curve_points * self.segment_curve_point_bytes)

    def result(self, task: str, state_bytes: int) -> int:
        """A stream's result: the state and what computing the metrics from it allocates."""
        memory = task_spec(task).memory
        factor = memory.evaluation if memory.result is None else memory.result
        return self.fixed + math.ceil(state_bytes * (1 + factor))


# Measured by bench/memory_cost.py (bench/memory_cost.json), with a margin of 10% or more
# over the largest measured factor: a detection protobuf decode 3.9 per byte of body (a
# message and arrays per image). Each task's evaluation and result factors are in its spec
# (e.g. multilabel evaluation 6.8, regression 9.5, detection 4.45 per byte of input measured).
COST_MODEL: Final = CostModel(
    decode_per_body_byte={"json": 2.0, "protobuf": 4.5},
    decode_per_value={"json": 40.0, "protobuf": 0.0},
    decode_per_string={"json": 64.0, "protobuf": 0.0},
)


def receive_share(budget: int, max_inflight: int) -> int:
    """What a gRPC call reserves before its message arrives: an equal share of the budget."""
    return budget // max_inflight


# grpcio hands each received message over as one Python bytes object, copied out of its
# buffers while it holds the interpreter lock (measured: 65-77 ms for 60 MB on an idle AMD EPYC
# core, ~1.2 ms per MB): a larger message would hold up every endpoint, health checks included.
# 32 MiB is 2M rows of binary float64 columns; the clients stream inputs over 1M values.
GRPC_MESSAGE_CAP = 32 << 20


def grpc_message_limit(max_request_bytes: int, budget: int, max_inflight: int) -> int:
    """The largest gRPC message the server receives: ``max_request_bytes``, no more than half
    of ``receive_share`` (the message, and its copy out of gRPC's buffers), so that every
    message arrives inside what its call reserved, and no more than ``GRPC_MESSAGE_CAP``.
    Larger evaluations stream (REST bodies are read in chunks and are not bound by this)."""
    share = receive_share(budget, max_inflight) // 2
    return max(1024, min(max_request_bytes, share, GRPC_MESSAGE_CAP))


# How long a one-payload request that has read its body waits for the memory its next step
# needs, before it is refused as busy (a burst of large requests would otherwise refuse them
# all: each holding its body, none with room to decode).
GROW_WAIT_SECONDS = 5.0


def reserve_read(
    reservation: Reservation, body_bytes: int, held: int = 0, field: str = "body"
) -> None:
    """Resize ``reservation`` to what receiving a body of ``body_bytes`` costs (before it is
    read), on top of ``held`` bytes (a stream's state, for one of its batches)."""
    reservation.resize(held + COST_MODEL.read(body_bytes), field)


def reserve_decode(
    reservation: Reservation,
    encoding: str,
    body: bytes | bytearray,
    held: int | None = None,
    field: str = "body",
) -> None:
    """Resize ``reservation`` to what decoding ``body`` costs (``encoding``: "json" or
    "protobuf"), before it is decoded; ``held``: a stream's state, for one of its batches
    (None: a whole request)."""
    values, strings = json_counts(body) if encoding == "json" else (0, 0)
    cost = (held or 0) + COST_MODEL.decode(encoding, len(body), values, strings)
    # One payload decodes on a worker thread: it may wait there for room (a stream's batch
    # is refused at once, its client sends it again).
    reservation.resize(cost, field, wait=GROW_WAIT_SECONDS if held is None else 0.0)
