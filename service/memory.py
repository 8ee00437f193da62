"""Process-level tuning for a numpy-heavy service: the allocator and BLAS threads.

glibc serves allocations above ``M_MMAP_THRESHOLD`` (at most 32 MiB by default) with a fresh
``mmap`` and returns them to the kernel on ``free``. An evaluation of 10 million rows makes a
few dozen arrays of 80 MB, so every request would fault in a few GB of fresh pages; on
virtual machines a page fault costs several times more than on bare metal. Raising the
threshold and the trim threshold keeps freed arrays in the process heap, where the next request
reuses pages that are already mapped. The price is a resident size that stays at its peak,
which is how a long-running evaluation service wants it anyway.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
import os
import sys
import threading

__all__ = [
    "BLAS_THREAD_VARIABLES",
    "Trimmer",
    "default_memory_budget",
    "limit_blas_threads",
    "memory_limit",
    "release_freed_memory",
    "resident_bytes",
    "retain_freed_memory",
    "trim_freed_memory",
]

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_ONE_GIB = 1 << 30


@functools.cache
def _libc() -> ctypes.CDLL | None:
    """glibc, found once: ``find_library`` runs ``ldconfig`` in a subprocess, which no
    request should wait for (a fork of a process holding gigabytes takes a while)."""
    if not sys.platform.startswith("linux"):
        return None
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
    except OSError:
        return None
    if hasattr(libc, "mallopt"):
        libc.mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
        libc.mallopt.restype = ctypes.c_int
    if hasattr(libc, "malloc_trim"):
        libc.malloc_trim.argtypes = (ctypes.c_size_t,)
        libc.malloc_trim.restype = ctypes.c_int
    return libc


def retain_freed_memory(limit: int = _ONE_GIB) -> bool:
    """Ask glibc to keep freed blocks up to ``limit`` bytes in the heap; False where it
    cannot (not Linux/glibc)."""
    mallopt = getattr(_libc(), "mallopt", None)
    if mallopt is None:
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, limit)) and bool(mallopt(_M_TRIM_THRESHOLD, limit))


def trim_freed_memory() -> bool:
    """Give the heap's free pages back to the system (glibc's ``malloc_trim``, every arena):
    what ``retain_freed_memory`` kept for the next request. ctypes lets go of the GIL for the
    call, but the calling thread waits for it (tens of milliseconds on a large heap): the
    service calls it from a ``Trimmer``'s thread. False where it cannot."""
    trim = getattr(_libc(), "malloc_trim", None)
    if trim is None:
        return False
    trim(0)
    return True


def release_freed_memory() -> bool:
    """Give freed memory back to the system, once a burst is over: first what only Python's
    cycle collector frees (an exception's traceback can keep the frames of a refused request,
    and their arrays, in a cycle), then ``trim_freed_memory``. False where the second cannot
    be done."""
    gc.collect()
    return trim_freed_memory()


class Trimmer:
    """Gives freed memory back on a thread of its own, so that no request (and not the event
    loop, where a reservation may grow or end) waits for it. ``trim`` and ``release`` only ask
    and return at once; requests made while one runs are served by one more run."""

    def __init__(self) -> None:
        self._wanted = threading.Event()
        self._lock = threading.Lock()
        self._collect = False
        self.runs = 0
        self._thread = threading.Thread(target=self._serve, name="evalserve-trim", daemon=True)
        self._thread.start()

    def trim(self) -> None:
        """Ask for ``trim_freed_memory``."""
        self._wanted.set()

    def release(self) -> None:
        """Ask for ``release_freed_memory`` (a cycle collection first)."""
        with self._lock:
            self._collect = True
        self._wanted.set()

    def _serve(self) -> None:
        while True:
            self._wanted.wait()
            self._wanted.clear()
            with self._lock:
                collect, self._collect = self._collect, False
            if collect:
                release_freed_memory()
            else:
                trim_freed_memory()
            self.runs += 1


_PAGE = os.sysconf("SC_PAGE_SIZE")


def resident_bytes() -> int:
    """This process's resident memory (``/proc/self/statm``: a read of a few bytes); 0 where
    there is no such file."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


# cgroup v2, then v1: the container's memory limit. v1 reports "no limit" as a huge number.
_CGROUP_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")
_NO_LIMIT = 1 << 60


def memory_limit() -> tuple[int, str]:
    """The memory this process may use and where that figure comes from: the container's
    cgroup limit when there is one, else the machine's physical memory."""
    physical = _PAGE * os.sysconf("SC_PHYS_PAGES")
    for path in _CGROUP_LIMITS:
        try:
            with open(path) as limit_file:
                text = limit_file.read().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < min(_NO_LIMIT, physical):
            return int(text), path
    return physical, "physical memory"


# The share of the memory limit evaluations may reserve: the rest is the interpreter, the
# libraries, connections and gRPC's receive buffers, and the allocator's fragmentation.
BUDGET_SHARE = 0.7


def default_memory_budget() -> int:
    """``memory_budget_bytes`` when it is not set: ``BUDGET_SHARE`` of ``memory_limit``."""
    return int(memory_limit()[0] * BUDGET_SHARE)


BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def limit_blas_threads() -> bool:
    """One BLAS thread per evaluation thread, unless the operator set a thread count.

    The service already runs ``workers`` evaluations at once on its own threads; a BLAS library
    that also splits each dot product over every core only oversubscribes them (measured: one
    evaluation took 5x longer under load). threadpoolctl sets the limit in the loaded BLAS
    library itself, so it holds whenever numpy was imported. False when the operator's
    variables decide instead."""
    if any(name in os.environ for name in BLAS_THREAD_VARIABLES):
        return False
    # Here, not at the top: the offline command imports this module without the service extra.
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")
    return True
