"""Binary search over a monotone sequence that is never materialized.

``np.searchsorted`` needs the whole array; when the sequence is a cheap function of arrays we
already hold (``tps + fps``, ``tps * N + fps * P``), computing it at the ~24 probe points of
each search costs nothing next to building a 10-million-entry array for a handful of look-ups.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["bisect_left"]

Floats = NDArray[np.float64]
Indices = NDArray[np.intp]


def bisect_left(value_at: Callable[[Indices], Floats], size: int, targets: ArrayLike) -> Indices:
    """For each target, the first index i in [0, size) with value_at(i) >= target (``size``
    when there is none); ``value_at`` must be non-decreasing. Same as
    ``np.searchsorted(values, targets, side="left")``."""
    wanted = np.asarray(targets, dtype=np.float64)
    low = np.zeros(wanted.shape, dtype=np.intp)
    high = np.full(wanted.shape, size, dtype=np.intp)
    while True:
        open_ = low < high
        if not open_.any():
            return low
        middle = (low + high) // 2
        probe = np.minimum(middle, size - 1) if size else middle
        below = open_ & (value_at(probe) < wanted)
        low = np.where(below, middle + 1, low)
        high = np.where(open_ & ~below, middle, high)
