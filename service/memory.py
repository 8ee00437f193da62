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
import os
import sys

__all__ = ["BLAS_THREAD_VARIABLES", "limit_blas_threads", "retain_freed_memory"]

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_ONE_GIB = 1 << 30


def retain_freed_memory(limit: int = _ONE_GIB) -> bool:
    """Ask glibc to keep freed blocks up to ``limit`` bytes in the heap; False where it
    cannot (not Linux/glibc)."""
    if not sys.platform.startswith("linux"):
        return False
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, limit)) and bool(mallopt(_M_TRIM_THRESHOLD, limit))


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
