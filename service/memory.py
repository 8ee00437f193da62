"""Process-level memory tuning for a numpy-heavy service.

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
import sys

__all__ = ["retain_freed_memory"]

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
