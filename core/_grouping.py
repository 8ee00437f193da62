"""Rows grouped by a small integer key, each group in the rows' order: one sort.

numpy's stable sort of small integers is a radix sort, but a sort of ``key << b | row`` (the
row's position in the low ``b`` bits: distinct values, so any sort is stable) in 32-bit or
64-bit integers is faster still on CPUs with a vectorised integer sort (2.5 ms against 6.6 ms
for a million rows in 100 groups, on AMD Zen 5), and gives the order itself.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["grouped"]


def grouped(key: NDArray[np.integer[Any]], groups: int) -> tuple[NDArray[np.intp], list[int]]:
    """The rows by ``key`` (each in [0, groups)), each group in the rows' order, and where each
    group starts: group ``g`` is ``order[bounds[g] : bounds[g + 1]]``."""
    n = key.size
    shift = max(n - 1, 1).bit_length()
    wide = (max(groups, 1) - 1) << shift >= 2**32
    dtype: type[np.unsignedinteger[Any]] = np.uint64 if wide else np.uint32
    packed = key.astype(dtype)
    bounds = np.concatenate(([0], np.cumsum(np.bincount(packed, minlength=groups)))).tolist()
    packed <<= dtype(shift)
    packed |= np.arange(n, dtype=dtype)
    packed.sort()
    packed &= dtype((1 << shift) - 1)
    # As numpy's index type (a take converts other integers row by row, four times slower).
    return packed.view(np.intp) if wide else packed.astype(np.intp), bounds
