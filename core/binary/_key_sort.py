"""The order that sorts a column of scores, by one sort of packed keys (no ``argsort``).

A weighted class needs the order of its scores, to carry the weights along. numpy's
``argsort`` is several times slower than its ``sort`` (the floors of ``bench/binary_core.py``
at 10M doubles), so the order is taken from a plain sort of unsigned 64-bit keys
instead: each key holds a score's place on the score axis in its high bits and the score's row
in its low ``b`` bits (``b`` bits number the rows). The place is the score's IEEE 754 bits,
turned so that unsigned order is numeric order (the sign bit flipped for non-negative
numbers, every bit for negative ones), less the smallest such value, shifted right until it
fits the ``64 - b`` bits left. The sorted keys' low bits are the order, and the rows of equal
scores stay in row order: the order of a stable sort.

Shifting drops the places' low bits, so two scores that differ only there share a key's high
bits and stay in row order, out of numeric order. Every such run of equal high bits (a
*group*) is contiguous in the sorted keys, and the scores of one group all lie between those
of the groups around it, so a group out of order is found from the sorted scores (a score less
than the one before it), bounded by two binary searches for the group's first and last
possible score, and sorted again on its own (stably: ties keep row order). Continuous scores
leave few groups to mend; scores whose places fit unshifted leave none. The result is exactly
a stable ``argsort``'s, which is what a column of fewer than ``KEYS_FROM`` scores takes.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from evalserve.core._threads import by_shares
from evalserve.core.binary._parallel_sort import each_class, sort_columns

__all__ = ["class_orders", "sorted_order"]

Floats = NDArray[np.float64]
Bools = NDArray[np.bool_]
Indices = NDArray[np.intp]
Keys = NDArray[np.uint64]

SIGN = np.uint64(1 << 63)
# Below this many scores numpy's stable argsort (a merge sort) is the faster way to the same
# order: the keys have a fixed cost a call (a dozen numpy calls) that a small column's argsort
# does not pay, and past a few thousand scores the merge sort is the slower.
KEYS_FROM = 2048
# Rows whose keys are packed at once: their row numbers are a temporary of this many (a whole
# column's would add 8 bytes a score to the peak).
PACK_BLOCK = 1 << 16


def sorted_order(column: Floats, threads: int = 1) -> tuple[Floats, Indices]:
    """``column`` sorted, and the order that sorts it (``column[order]``), ties in row order;
    the keys sort on ``threads`` threads. The order is a fresh array the caller may keep or
    reuse; ``column`` is not changed."""
    m = column.size
    if m < max(KEYS_FROM, 2):  # a stable argsort: the same order, without the keys' cost
        order = np.argsort(column, kind="stable")
        return np.take(column, order), order
    bits = (m - 1).bit_length()
    keys, low, high = _places(column, threads)
    shift = max(0, (high - low).bit_length() - (64 - bits))

    def pack(start: int, stop: int) -> None:
        for at in range(start, stop, PACK_BLOCK):  # the row numbers a block at a time
            share = keys[at : min(at + PACK_BLOCK, stop)]
            share -= np.uint64(low)
            share >>= np.uint64(shift)
            share <<= np.uint64(bits)
            share |= np.arange(at, at + share.size, dtype=np.uint64)

    by_shares(m, threads, pack)
    sort_columns([keys], threads)
    return _unpacked(keys, column, bits, (low, high, shift), threads)


def class_orders(labels: Bools, scores: Floats, threads: int = 1) -> list[tuple[Floats, Indices]]:
    """The positives' and the negatives' scores sorted, each with the rows they are at
    (``scores[rows]``), ties in row order, as ``sorted_order`` gives them for each class's
    column. The keys are packed from the rows block by block (a row's own number in the low
    bits) into one array per class, so no class's column is copied before its sort, and the
    sorted keys are the rows that both the scores and the weights are gathered from."""
    n = scores.size
    if n < max(KEYS_FROM, 2):  # a stable argsort of each class: the same orders
        orders = []
        for rows in (np.flatnonzero(labels), np.flatnonzero(~labels)):
            column = np.take(scores, rows)
            order = np.argsort(column, kind="stable")
            orders.append((np.take(column, order), np.take(rows, order)))
        return orders
    bits = max(1, (n - 1).bit_length())
    least = scores.min()
    low, high = (int(place) for place in _place(np.array([least, scores.max()])))
    shift = max(0, (high - low).bit_length() - (64 - bits))
    signed = bool(least < 0)

    def pack(keys: Keys, taken: Indices, start: int) -> None:
        np.take(scores[start:], taken, out=keys.view(np.float64), mode="clip")
        _turn(keys, signed)
        keys -= np.uint64(low)
        keys >>= np.uint64(shift)
        keys <<= np.uint64(bits)
        taken += start
        keys |= taken.view(np.uint64)

    positives, negatives = each_class(labels, np.dtype(np.uint64), threads, pack)
    sort_columns([positives, negatives], threads)
    span = (low, high, shift)
    return [_unpacked(keys, scores, bits, span, threads) for keys in (positives, negatives)]


def _unpacked(
    keys: Keys, scores: Floats, bits: int, span: tuple[int, int, int], threads: int
) -> tuple[Floats, Indices]:
    """The rows in sorted keys (their low ``bits``, in place: the keys become the order) and
    the scores at them, mended where the keys' shift left scores out of order."""
    rows = np.uint64((1 << bits) - 1)
    ordered = np.empty(keys.size, dtype=np.float64)

    def take(start: int, stop: int) -> None:
        share = keys[start:stop]
        share &= rows
        np.take(scores, share.view(np.intp), out=ordered[start:stop], mode="clip")

    by_shares(keys.size, threads, take)
    order = keys.view(np.intp)
    low, high, shift = span
    if shift and keys.size > 1:
        _mend(ordered, order, (low, high), shift)
    return ordered, order


def _turn(keys: Keys, signed: bool) -> None:
    """Scores' bits (in ``keys``) turned, in place, into their places on the score axis."""
    as_floats = keys.view(np.float64)
    np.add(as_floats, 0.0, out=as_floats)  # -0.0 becomes 0.0: one place for zero
    if signed:
        negative = (keys & SIGN).astype(np.bool_)
        np.invert(keys, out=keys, where=negative)
        np.bitwise_or(keys, SIGN, out=keys, where=~negative)
    else:
        keys |= SIGN  # non-negative: one add of the sign bit (no change to their order)


def _places(column: Floats, threads: int) -> tuple[Keys, int, int]:
    """Each score's place on the score axis (a fresh array) and the smallest and largest."""
    keys = column.copy().view(np.uint64)
    signed = bool(column.min() < 0)
    by_shares(keys.size, threads, lambda start, stop: _turn(keys[start:stop], signed))
    return keys, int(keys.min()), int(keys.max())


def _place(scores: Floats) -> Keys:
    """``_places`` of a few scores."""
    normal = np.add(scores, 0.0)  # -0.0 becomes 0.0, as in ``_turn``
    keys = normal.view(np.uint64)
    return np.where(np.signbit(normal), ~keys, keys | SIGN)


def _score(places: Keys) -> Floats:
    """The scores at ``places`` (the inverse of ``_place``)."""
    return np.where((places & SIGN) != 0, places & ~SIGN, ~places).view(np.float64)


def _mend(ordered: Floats, order: Indices, span: tuple[int, int], shift: int) -> None:
    """Sort again, in place, each group whose scores are out of order (see the module's
    docstring): its first and last possible places bound it in ``ordered``."""
    late = np.flatnonzero(ordered[1:] < ordered[:-1])
    if late.size == 0:
        return
    low, high = span
    groups = np.unique((_place(ordered[late]) - np.uint64(low)) >> np.uint64(shift))
    first = _score(np.uint64(low) + (groups << np.uint64(shift)))
    ends = ((groups + np.uint64(1)) << np.uint64(shift)) - np.uint64(1)
    last = _score(np.uint64(low) + np.minimum(ends, np.uint64(high - low)))
    # Below a group every score is less than its first, above it every score greater than
    # its last: each bound is a monotone predicate over ``ordered``, so a binary search holds.
    starts = np.searchsorted(ordered, first, side="left")
    stops = np.searchsorted(ordered, last, side="right")
    lengths = stops - starts
    at = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())
    scores = ordered[at]
    again = np.argsort(scores, kind="stable")  # groups are apart on the score axis
    ordered[at] = scores[again]
    order[at] = order[at][again]
