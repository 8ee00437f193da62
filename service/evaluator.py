"""The evaluator: admission and the worker threads, shared by both transports.

``Evaluator.admitted`` holds one of ``max_inflight_requests`` places for a request (and one of
its client's ``max_inflight_per_client``) with its memory reservation, or refuses it at once
(503 / UNAVAILABLE); ``Evaluator.run`` runs the CPU-bound part of a request on a worker thread
below the event loop's priority, so health checks and refusals stay fast; ``Evaluator.drain``
ends it all at shutdown.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from typing import Any, TypeVar

from evalserve.core import using_threads
from evalserve.service.budget import MemoryBudget, Reservation
from evalserve.service.errors import BusyError, ClientBusyError, ShuttingDownError

__all__ = ["Evaluator", "current_reservation"]

T = TypeVar("T")


class Evaluator:
    """Runs CPU-bound evaluation off the event loop, at most ``workers`` at a time, so a big
    request never stalls health checks or other connections; and admits at most
    ``max_inflight`` evaluation requests at once (both transports), at most ``max_per_client`` of
    them from one client (None: no per-client limit; each transport says who the client is,
    as ``client_identity`` asks), so a burst of large uploads is refused early (clients retry)
    instead of piling up in memory, and one client cannot take every place. An evaluation
    sorts on at most ``threads`` threads of its own (``Settings.evaluation_threads``).

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
        threads: int = 1,
    ) -> None:
        # Unlimited unless given: tests and embedders that do not budget memory.
        self.budget = budget or MemoryBudget(1 << 62)
        self._pool = ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix="evaluate", initializer=_below_the_loop
        )
        self._slots = asyncio.Semaphore(workers)
        self.threads = threads
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
                future = self._pool.submit(_with_threads, self.threads, function, *args)
            except BaseException:
                if reservation is not None:
                    reservation.unpin()
                raise
            if reservation is not None:
                future.add_done_callback(lambda _: reservation.unpin())
            return await asyncio.wrap_future(future)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def _with_threads(threads: int, function: Callable[..., T], *args: object) -> T:
    """``function(*args)`` whose evaluations sort on at most ``threads`` threads (started by
    this worker thread, so they inherit its priority)."""
    with using_threads(threads):
        return function(*args)


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
