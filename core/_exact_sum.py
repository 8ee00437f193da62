"""Exact sums of float64 values: the same in any order, split or merged, and rounded once.

A float64 sum depends on the order of its additions, so the sum of two batches' sums can differ
in its last bits from the sum of all rows in one pass. Every finite double is an integer
multiple of 2**-1074, and so is any sum of doubles: here a sum is kept exactly, as a Python
integer in units of 2**-1074. Two exact sums add exactly, and the value is rounded once at the
end (Python's ``int / int`` is correctly rounded): the result does not depend on how the values
were split into batches or in which order those were merged.

The exact sum of a batch takes a few vectorized passes of float64 arithmetic, in one of two
ways (Demmel & Hida 2003, "Accurate and efficient floating point summation", SIAM J. Sci.
Comput. 25(4); Zhu & Hayes 2009, "Correct rounding and a hybrid approach to exact
floating-point summation", SIAM J. Sci. Comput. 31(4)):

* by levels (one sum): with n values below 2**e in magnitude, adding and subtracting
  1.5 * 2**(e + L + 1), L = ceil(log2 n), rounds each value to a multiple q of 2**(e + L - 51)
  (exactly, and the remainder is exact too); n such multiples sum exactly in any order, so
  numpy's own sum takes them, and the remainders, below q / 2, are the next level's values.
  Each level takes 52 - L bits off: two or three levels for values of similar size;
* by buckets (sums per key, and what levels leave): the values are grouped by their top 12 bits
  (sign and exponent), where every value is an integer multiple of one unit; each is split into
  its top 27 significant bits and the remaining 26, and float64 sums of at most 2**26 such
  halves per group are exact. Each group's two sums then enter the integer exactly.

In an array (``to_components``) an exact sum is written as non-overlapping doubles whose exact
sum it is: at most ``MAX_COMPONENTS`` of them (2098 bits of a double's range, 53 a part).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "MAX_COMPONENTS",
    "exact_sum",
    "exact_sums",
    "from_components",
    "rounded",
    "to_components",
]

Floats = NDArray[np.float64]
Indices = NDArray[np.intp]

UNIT_BITS = 1074  # an exact sum counts units of 2**-1074
MAX_COMPONENTS = 40  # parts of an exact sum below the largest double (to_components)
_SIGN_EXPONENT = np.uint64(52)  # bits >> 52: the sign and the biased exponent
_TOP_BITS = np.uint64(((1 << 64) - 1) ^ ((1 << 26) - 1))  # clears the low 26 mantissa bits
_GROUPS = 1 << 12
_CHUNK = 1 << 26  # values per pass: 2**26 halves of at most 27 bits sum below 2**53
_DENSE_CELLS = 1 << 20  # (key, group) cells counted in one array; beyond, cells are numbered
_LEVELS = 4  # levels before buckets take the rest (values spread over many binades)
_LOWEST_LEVEL = -1021  # 1.5 * 2**this is normal: its unit is a power of two
_HIGHEST_LEVEL = 1022  # 1.5 * 2**this is finite


def exact_sum(values: Floats) -> int:
    """The exact sum of the finite ``values``, in units of 2**-1074."""
    total = 0
    for start in range(0, values.size, _CHUNK):
        total += _by_levels(np.ascontiguousarray(values[start : start + _CHUNK], np.float64))
    return total


def exact_sums(values: Floats, keys: Indices, n_keys: int) -> list[int]:
    """For each key 0..n_keys-1, the exact sum of the finite ``values`` with that key, in units
    of 2**-1074."""
    totals = [0] * n_keys
    for start in range(0, values.size, _CHUNK):
        stop = start + _CHUNK
        chunk = np.ascontiguousarray(values[start:stop], dtype=np.float64)
        _add_chunk(totals, chunk, keys[start:stop])
    return totals


def _by_levels(values: Floats) -> int:
    """The exact sum of at most 2**26 values: by levels while they are cheap, then by buckets."""
    total = 0
    bits = max(2, (values.size - 1).bit_length())  # L: values <= 2**L
    rest = values
    part = np.empty_like(values)  # one buffer each for the rounded values and the remainders
    largest = max(float(values.max()), -float(values.min())) if values.size else 0.0
    for _ in range(_LEVELS):
        if largest == 0.0:
            return total
        exponent = math.frexp(largest)[1]  # largest < 2**exponent
        if not _LOWEST_LEVEL <= exponent + bits + 1 <= _HIGHEST_LEVEL:
            break  # the rounding constant would be subnormal or overflow: buckets take it
        shift = math.ldexp(1.5, exponent + bits + 1)
        np.add(rest, shift, out=part)
        part -= shift  # rest rounded to a multiple of 2**(exponent + bits - 51), exactly
        rest = np.subtract(rest, part, out=None if rest is values else rest)  # exact
        total += _units(float(part.sum()))  # exact: multiples of one unit, below 2**53 of it
        largest = max(float(rest.max()), -float(rest.min()))
    totals = [0]
    _add_chunk(totals, rest, None)
    return total + totals[0]


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
