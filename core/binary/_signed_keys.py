"""Both classes' scores sorted by one sort of all rows, the label in the sign bit.

Unweighted rows need each class's scores sorted, nothing more. Splitting the rows into two
columns and sorting each costs a pass that copies every score (about a third of a sort) on top
of the sorts. Where no score has its sign bit set (every score at least ``+0.0``: the usual
probabilities), the IEEE 754 bits of a score, read as a signed 64-bit integer, are non-negative
and ordered as the scores are. Setting the sign bit of each positive row's bits makes its key
negative and keeps the positives' keys in the same order among themselves. So one sort of the
keys puts every positive before every negative, each class ascending: the first ``P`` keys,
their sign bit cleared again, are the positives' scores, and the rest are the negatives'
scores as they are. The keys are written from the rows block by block (no copy of the column
first). On numpy's AVX-512 sort path 64-bit integers also sort faster than doubles (its float
sort first scans for NaN); on its AVX2 path they sort a little slower, and the split saved
still makes up for it.

A score with its sign bit set (a negative number, or ``-0.0``) has no such key: those rows
take the split and the two sorts (``split_classes``), with the same result.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from evalserve.core._threads import by_shares
from evalserve.core.binary._parallel_sort import sort_columns

__all__ = ["signed_classes"]

Floats = NDArray[np.float64]
Bools = NDArray[np.bool_]

SIGN = np.int64(-(1 << 63))
MAGNITUDE = np.int64((1 << 63) - 1)
# Rows whose keys are written at once: the block's temporaries stay in the CPU's cache.
KEY_BLOCK = 1 << 16


def signed_classes(labels: Bools, scores: Floats, threads: int) -> tuple[Floats, Floats] | None:
    """The positives' and the negatives' scores, each sorted ascending (views of one fresh
    array), sorting on ``threads`` threads; None where a score has its sign bit set."""
    bits = scores.view(np.int64)
    keys = np.empty(scores.size, dtype=np.int64)

    def write(start: int, stop: int) -> bool:
        for at in range(start, stop, KEY_BLOCK):
            end = min(at + KEY_BLOCK, stop)
            if bits[at:end].min() < 0:
                return False
            np.multiply(labels[at:end], SIGN, out=keys[at:end])
            keys[at:end] |= bits[at:end]
        return True

    if not all(by_shares(scores.size, threads, write)):
        return None
    sort_columns([keys], threads)
    n_positive = int(np.count_nonzero(labels))
    keys[:n_positive] &= MAGNITUDE
    ordered = keys.view(np.float64)
    return ordered[:n_positive], ordered[n_positive:]
