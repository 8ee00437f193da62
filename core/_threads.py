"""How many threads an evaluation may use, and running independent numpy work on them.

numpy releases the GIL while it sorts, partitions, takes and compresses large arrays, so the
sorts of a large evaluation run on threads of one process, without copying the rows to other
processes. The count is a context setting (``using_threads``; ``evaluate(threads=...)`` sets it
for one call): by default the CPUs this process may run on (its affinity mask, which follows
a container's cpuset), so a data job uses its machine; the server sets it per request, capped
so that concurrent requests are not starved; a Dask task uses one (the cluster's workers are
the parallelism there).

Threads are started for one call and joined before it returns (a few hundred microseconds,
paid only by evaluations large enough to use them): no pool outlives the call, and a thread
started here inherits its caller's CPU priority (the server's evaluation threads run below its
event loop's). Work handed to a thread runs with one thread of its own: nothing nests.
"""

from __future__ import annotations

import contextvars
import itertools
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from functools import partial
from typing import Generic, TypeVar

from evalserve.core._errors import InvalidInputError

__all__ = [
    "MAX_THREADS",
    "MIN_ROWS_PER_THREAD",
    "Ahead",
    "Later",
    "available_cpus",
    "by_shares",
    "current_threads",
    "run_all",
    "shares",
    "threads_for",
    "using_threads",
]

T = TypeVar("T")

# No more threads than this for one evaluation (and the cap on the setting).
MAX_THREADS = 64

# A thread is worth starting for at least this many rows of its own: below it, starting and
# joining threads costs more than the sort it would share.
MIN_ROWS_PER_THREAD = 500_000

_THREADS: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "evalserve_threads", default=None
)


def available_cpus() -> int:
    """The CPUs this process may run on: its affinity mask where the OS has one (Linux: a
    container's cpuset, ``taskset``), else every CPU of the machine."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS and Windows have no affinity call
        return max(1, os.cpu_count() or 1)


def check_threads(threads: object, field_name: str = "threads") -> int:
    """``threads`` as a count of threads, or ``InvalidInputError`` naming ``field_name``."""
    if isinstance(threads, bool) or not isinstance(threads, int):
        raise InvalidInputError(field_name, f"expected a whole number, got {threads!r}")
    if not 1 <= threads <= MAX_THREADS:
        raise InvalidInputError(field_name, f"must be between 1 and {MAX_THREADS}, got {threads}")
    return threads


def current_threads() -> int:
    """The threads evaluations in this context may use (``using_threads``; unset: the CPUs
    this process may run on, at most ``MAX_THREADS``)."""
    threads = _THREADS.get()
    return min(available_cpus(), MAX_THREADS) if threads is None else threads


@contextmanager
def using_threads(threads: int | None) -> Iterator[None]:
    """Evaluations inside this block use at most ``threads`` threads (None: the CPUs this
    process may run on). Raises ``InvalidInputError`` for a count outside [1, 64]."""
    token = _THREADS.set(None if threads is None else check_threads(threads))
    try:
        yield
    finally:
        _THREADS.reset(token)


def threads_for(rows: int) -> int:
    """The threads worth using for work on ``rows`` rows in this context: at most the
    setting, and at least ``MIN_ROWS_PER_THREAD`` rows each."""
    return max(1, min(current_threads(), rows // MIN_ROWS_PER_THREAD))


def shares(rows: int, threads: int) -> list[int]:
    """Where each of ``threads`` (nearly) equal shares of ``rows`` begins, and the end: share
    ``k`` is ``[bounds[k], bounds[k + 1])``."""
    return [rows * part // threads for part in range(threads + 1)]


def by_shares(rows: int, threads: int, call: Callable[[int, int], T]) -> list[T]:
    """``call(start, stop)`` for each of the ``threads`` shares of ``rows`` (``shares``), on
    ``threads`` threads (``run_all``): the results in the shares' order."""
    bounds = shares(rows, threads)
    return run_all([partial(call, a, b) for a, b in itertools.pairwise(bounds)], threads)


def run_all(calls: Sequence[Callable[[], T]], threads: int) -> list[T]:
    """Every call's result, in order: on up to ``threads`` threads started for them (taken in
    order: put the longest first), each call with one thread of its own; in order on this
    thread when ``threads`` is 1 or there is one call. An exception of any call is raised
    here, after every call has ended."""
    if threads <= 1 or len(calls) <= 1:
        return [call() for call in calls]
    with ThreadPoolExecutor(max_workers=min(threads, len(calls))) as pool:
        futures = [pool.submit(_single, call) for call in calls]
        for future in futures:  # every call ends before an error is raised
            future.exception()
        return [future.result() for future in futures]


class Later(Generic[T]):
    """A call's result: computed on another thread when ``Ahead`` had one to give, else when
    first asked for (so that, on one thread, the work runs where and when it always did)."""

    def __init__(self, call: Callable[[], T], pool: ThreadPoolExecutor | None) -> None:
        self._call = call
        self._future: Future[T] | None = None if pool is None else pool.submit(_single, call)
        self._values: list[T] = []

    def result(self) -> T:
        if self._future is not None:
            return self._future.result()
        if not self._values:
            self._values.append(self._call())
        return self._values[0]


class Ahead:
    """Independent work started early on the threads beside this one (``threads - 1`` of
    them), while this thread goes on; leaving the block waits for every call started."""

    def __init__(self, threads: int) -> None:
        self._pool = ThreadPoolExecutor(max_workers=threads - 1) if threads > 1 else None

    def __enter__(self) -> Ahead:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    def start(self, call: Callable[[], T]) -> Later[T]:
        return Later(call, self._pool)


def _single(call: Callable[[], T]) -> T:
    """``call()`` with one thread: work already shared out is not shared again."""
    context = contextvars.copy_context()
    context.run(_THREADS.set, 1)
    return context.run(call)
