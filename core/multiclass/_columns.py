"""The score matrix a group of columns at a time, each column contiguous.

A column of a row-major n x k matrix is strided by k * 8 bytes: reading it touches a cache
line per value. Copying a group of columns through row blocks that fit in cache (a blocked
transpose) reads every line once; the group's buffer stays under ``BUFFER_BYTES``, and no larger
than the fewest groups need.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from numpy.typing import NDArray

__all__ = ["column_groups"]

BUFFER_BYTES = 64 << 20
_ROW_BLOCK = 4096


def column_groups(scores: NDArray[np.float64]) -> Iterator[tuple[int, NDArray[np.float64]]]:
    """(first, block) for groups of columns covering 0..k-1: ``block[i]`` is a contiguous copy
    of ``scores[:, first + i]``. A block is valid until the next one is yielded, and is the
    caller's to overwrite meanwhile."""
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
        yield first, block
