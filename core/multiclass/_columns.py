"""The score matrix one column at a time, contiguous.

A column of a row-major n x k matrix is strided by k * 8 bytes: reading it touches a cache
line per value. Copying a group of columns through row blocks that fit in cache (a blocked
transpose) reads every line once; the group's buffer stays under ``BUFFER_BYTES``, and no larger
than the fewest groups need.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from numpy.typing import NDArray

__all__ = ["columns"]

BUFFER_BYTES = 64 << 20
_ROW_BLOCK = 4096


def columns(scores: NDArray[np.float64]) -> Iterator[tuple[int, NDArray[np.float64]]]:
    """(j, contiguous copy of scores[:, j]) for j = 0..k-1; each copy is valid until the next
    one is yielded."""
    n_rows, width = scores.shape
    most = max(1, min(width, BUFFER_BYTES // max(1, 8 * n_rows)))
    # As few groups as the buffer allows, of equal size: 10 columns go as 5 + 5, not 8 + 2.
    group = -(-width // -(-width // most))
    buffer = np.empty((group, n_rows), dtype=np.float64)
    for first in range(0, width, group):
        last = min(width, first + group)
        block = buffer[: last - first]
        for start in range(0, n_rows, _ROW_BLOCK):
            stop = min(n_rows, start + _ROW_BLOCK)
            block[:, start:stop] = scores[start:stop, first:last].T
        for offset in range(last - first):
            yield first + offset, block[offset]
