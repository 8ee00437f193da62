"""Exact sums of float64 values: the same in any order, split or merged, and rounded once.

A float64 sum depends on the order of its additions, so the sum of two batches' sums can differ
in its last bits from the sum of all rows in one pass. Every finite double is an integer
multiple of 2**-1074, and so is any sum of doubles: here a sum is kept exactly, as a Python
integer in units of 2**-1074. Two exact sums add exactly, and the value is rounded once at the
end (Python's ``int / int`` is correctly rounded): the result does not depend on how the values
were split into batches or in which order those were merged.

The exact sum of a batch takes a few vectorized passes of float64 arithmetic, the way
exponent-indexed accumulators work (Demmel & Hida 2003, "Accurate and efficient floating point
summation", SIAM J. Sci. Comput. 25(4); Zhu & Hayes 2009, "Correct rounding and a hybrid
approach to exact floating-point summation", SIAM J. Sci. Comput. 31(4)): the values are grouped
by their top 12 bits (sign and exponent), where every value is an integer multiple of one unit;
each value is split into its top 27 significant bits and the remaining 26, both exact, and the
float64 sums of at most 2**26 such halves per group are exact as well. Each group's two sums
then enter the integer exactly.

In an array (``to_components``) an exact sum is written as non-overlapping doubles whose exact
sum it is: at most 40 of them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = ["exact_sums", "from_components", "rounded", "to_components"]

Floats = NDArray[np.float64]
Indices = NDArray[np.intp]

UNIT_BITS = 1074  # an exact sum counts units of 2**-1074
_SIGN_EXPONENT = np.uint64(52)  # bits >> 52: the sign and the biased exponent
_TOP_BITS = np.uint64(((1 << 64) - 1) ^ ((1 << 26) - 1))  # clears the low 26 mantissa bits
_GROUPS = 1 << 12
_CHUNK = 1 << 26  # values per pass: 2**26 halves of at most 27 bits sum below 2**53
_DENSE_CELLS = 1 << 20  # (key, group) cells counted in one array; beyond, cells are numbered


def exact_sums(values: Floats, keys: Indices | None = None, n_keys: int = 1) -> list[int]:
    """For each key 0..n_keys-1, the exact sum of the finite ``values`` with that key (all of
    them when ``keys`` is None), in units of 2**-1074."""
    totals = [0] * n_keys
    for start in range(0, values.size, _CHUNK):
        stop = start + _CHUNK
        chunk_keys = None if keys is None else keys[start:stop]
        _add_chunk(totals, np.ascontiguousarray(values[start:stop], dtype=np.float64), chunk_keys)
    return totals


def _add_chunk(totals: list[int], values: Floats, keys: Indices | None) -> None:
    if values.size == 0:
        return
    bits = values.view(np.uint64)
    group = (bits >> _SIGN_EXPONENT).view(np.int64)  # 0..4095
    span = _GROUPS
    if keys is None:
        cell = group
    elif len(totals) * _GROUPS <= _DENSE_CELLS:
        cell = keys.astype(np.int64) << 12  # key * 4096 + group
        cell |= group
    else:  # many keys: only the groups present, numbered
        low = int(group.min())
        span = int(group.max()) - low + 1
        cell = keys.astype(np.int64) * span
        cell += group
        cell -= low
    n_cells = len(totals) * span
    numbered = None
    if n_cells > max(_DENSE_CELLS, 4 * values.size):
        numbered, cell = np.unique(cell, return_inverse=True)
        n_cells = int(numbered.size)
    top = (bits & _TOP_BITS).view(np.float64)
    rest = values - top  # exact: the low 26 bits of the mantissa
    top_sums = np.bincount(cell, weights=top, minlength=n_cells)
    rest_sums = np.bincount(cell, weights=rest, minlength=n_cells)
    for index in np.flatnonzero((top_sums != 0) | (rest_sums != 0)).tolist():
        where = index if numbered is None else int(numbered[index])
        totals[where // span] += _units(float(top_sums[index])) + _units(float(rest_sums[index]))


def _units(value: float) -> int:
    """``value`` (finite) in units of 2**-1074, exactly."""
    if not math.isfinite(value):
        raise ArithmeticError("an exact sum overflowed: its values are too large")
    numerator, denominator = value.as_integer_ratio()
    return numerator << (UNIT_BITS - (denominator.bit_length() - 1))


def rounded(total: int) -> float:
    """The double nearest to the exact sum (ties to even); infinite when it is beyond the
    largest double."""
    try:
        return total / (1 << UNIT_BITS)
    except OverflowError:
        return math.inf if total > 0 else -math.inf


def to_components(total: int) -> Floats:
    """Non-overlapping doubles, largest first and all of the sign of ``total``, whose exact sum
    is ``total``; empty for 0. Raises ``OverflowError`` beyond the largest double's range."""
    sign = -1 if total < 0 else 1
    rest = abs(total)
    parts = []
    while rest:
        drop = max(rest.bit_length() - 53, 0)
        top = rest >> drop
        parts.append(sign * math.ldexp(top, drop - UNIT_BITS))
        rest -= top << drop
    return np.array(parts, dtype=np.float64)


def from_components(components: Sequence[float] | Floats) -> int:
    """The exact sum of finite doubles, in units of 2**-1074 (``to_components``'s inverse)."""
    return sum((_units(float(value)) for value in components), 0)
