"""Where every score sits among the true-class scores: the one rank transform behind every
multiclass ranking metric.

Each row has one true-class score t_i = s[i, y_i]. Let T be their distinct values, ascending.
A score x is *located* in T by ``p`` = |{t in T : t < x}| and ``tie`` = (x in T); its slot is
``2 p + tie``. Slots are monotone in x, and two scores in the same slot compare alike with every
t in T. That is all a ranking metric needs:

* one-vs-rest, class j: the positives are the class-j rows' scores of column j, all of them in
  T, so every positive-negative comparison of column j is decided by the slots;
* micro (the flattened one-vs-rest problem): the positives are exactly T;
* one-vs-one, A(j|c): class j's column-j scores against class c's, again positives in T.

Finding a slot is a binary search, but ``np.searchsorted`` with unsorted keys costs a
mispredicted branch and often a cache miss per level (about 20 levels for 10^6 values), and
sorting the keys first costs more than the search. Instead the range of T's order-preserving
integer keys is cut into cells holding a few values of T each (``TrueScores``); a table says
how many values of T lie below each cell, so a score's cell gives its slot at once when the
cell holds no value of T, after one comparison when it holds one, and otherwise after a short
search among the values of its cell. Data crowded into a few cells makes those searches
longer, never wrong. On 10^6 softmax scores this costs about half a sort of them
(``bench/multiclass_core.py``); the table takes 32 to 64 bytes per distinct value of T.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["Cells", "Located", "TrueScores", "order_keys"]

Floats = NDArray[np.float64]
Keys = NDArray[np.uint64]
Indices = NDArray[np.intp]
Bools = NDArray[np.bool_]

_SIGN = np.uint64(1 << 63)
_MAGNITUDE = np.uint64((1 << 63) - 1)
COARSE_BITS = 16
CELLS_PER_VALUE = 4
_LOW_32 = np.int64((1 << 32) - 1)
BLOCK = 1 << 16  # keys per block of ``TrueScores.locate``


def order_keys(values: Floats, *, nonnegative: bool) -> Keys:
    """Unsigned integer keys in the order of the floats: a < b iff key(a) < key(b), and
    key(-0.0) = key(+0.0). ``nonnegative`` (every value >= 0) takes the one-pass shortcut:
    the bits of a non-negative float already sort like the float, once -0.0 loses its sign."""
    bits = values.view(np.uint64)
    if nonnegative:
        return np.bitwise_and(bits, _MAGNITUDE)
    normal = values + 0.0  # -0.0 + 0.0 is +0.0
    bits = normal.view(np.uint64)
    negative = bits >> np.uint64(63)
    # Negative floats: flip every bit (larger magnitude, smaller key); others: set the sign bit.
    flip = np.subtract(np.uint64(0), negative) | _SIGN
    np.bitwise_xor(bits, flip, out=bits)
    return bits


@dataclass(frozen=True, slots=True, eq=False)
class Located:
    """Where each score sits: ``position`` = the values of T below it; ``tied`` = the
    (ascending) indices of the scores equal to a value of T."""

    position: Indices
    tied: Indices

    @property
    def tie(self) -> Bools:
        tie = np.zeros(self.position.size, dtype=np.bool_)
        tie[self.tied] = True
        return tie

    @property
    def slots(self) -> Indices:
        slots = 2 * self.position
        slots[self.tied] += 1
        return slots


@dataclass(frozen=True, slots=True, eq=False)
class Cells:
    """A monotone map from keys to cells with a few cells per value of T wherever T is.

    T's key range is cut into at most ``2**COARSE_BITS`` equal coarse cells, and each coarse
    cell into a power of two of equal fine cells, at least ``CELLS_PER_VALUE`` per value of T
    in it: a key's fine cell is the fine cells before its coarse cell plus the top bits of its
    offset inside the coarse cell. Integer arithmetic only; keys outside T's range clamp to it.

    The offset shifted by its coarse cell's ``fine_shift`` is its fine cell inside that coarse
    cell plus the coarse cell's own offset shifted alike, c << fine_bits: one addition of
    ``fine_offset`` = (fine cells before c) - (c << fine_bits), modulo 2**64, gives the fine
    cell without masking the offset first.
    """

    low: np.uint64  # the smallest key of T
    high: np.uint64  # the largest
    shift: np.uint64  # a coarse cell spans 2**shift keys
    fine_shift: NDArray[np.uint64]  # per coarse cell: offset >> this = its fine cell inside
    fine_offset: NDArray[np.uint64]  # per coarse cell: added to that, the fine cell

    @classmethod
    def fitted(cls, keys: Keys) -> Cells:
        """Cells for the sorted keys of T."""
        low, high = int(keys[0]), int(keys[-1])
        span = high - low
        coarse_bits = min(COARSE_BITS, max(1, (keys.size // 4).bit_length()))
        shift = max(0, span.bit_length() - coarse_bits)
        n_coarse = (span >> shift) + 1
        coarse = ((keys - np.uint64(low)) >> np.uint64(shift)).astype(np.intp)
        wanted = CELLS_PER_VALUE * np.bincount(coarse, minlength=n_coarse)
        # ceil(log2(wanted)) bits of fine cells, no finer than one key per cell.
        fine_bits = np.minimum(np.ceil(np.log2(np.maximum(wanted, 1))).astype(np.int64), shift)
        fine = np.left_shift(1, fine_bits)
        fine_first = np.zeros(n_coarse, dtype=np.uint64)
        np.cumsum(fine[:-1], out=fine_first[1:])
        coarse_start = np.left_shift(
            np.arange(n_coarse, dtype=np.uint64), fine_bits.astype(np.uint64)
        )
        return cls(
            low=np.uint64(low),
            high=np.uint64(high),
            shift=np.uint64(shift),
            fine_shift=(shift - fine_bits).astype(np.uint64),
            fine_offset=fine_first - coarse_start,  # wraps modulo 2**64
        )

    def of(
        self, keys: Keys, out: Keys | None = None, coarse: NDArray[np.int64] | None = None
    ) -> NDArray[np.int64]:
        """Each key's fine cell, into ``out`` (``coarse``: scratch of the keys' size) when
        given: buffers reused block after block cost no fresh pages."""
        offset = np.clip(keys, self.low, self.high, out=out)
        offset -= self.low
        scratch = None if coarse is None else coarse.view(np.uint64)
        index = np.right_shift(offset, self.shift, out=scratch).view(np.int64)
        offset >>= self.fine_shift.take(index)
        offset += self.fine_offset.take(index)
        return offset.view(np.int64)


@dataclass(frozen=True, slots=True, eq=False)
class TrueScores:
    """The distinct true-class scores T (ascending), their keys and weight, and the cell table
    that locates other scores among them.

    The table counts the values of T in each cell by applying the same ``Cells.of`` to T, so
    the values of T below a key are those of the cells before its cell plus those of its own
    cell below it, exactly: a monotone map puts every value of T in an earlier cell below the
    key and every value in a later cell above it.
    """

    values: Floats
    keys: Keys
    mass: Floats
    cells: Cells
    # Per cell, packed in one int64 so that one gather fetches both: the values of T before
    # the cell (low 32 bits) and the values of T in it (high bits).
    bounds: NDArray[np.int64]

    @classmethod
    def build(cls, values: Floats, mass: Floats, *, nonnegative: bool) -> TrueScores:
        """``values``: distinct, ascending, non-empty; ``mass``: the weight at each."""
        if values.size >= 1 << 31:  # positions are packed in 32 bits, class counts in int32
            raise ValueError("at most 2**31 - 1 distinct true-class scores")
        # Under the shortcut, positive values (the smallest is) are their own keys: no copy.
        raw_bits = nonnegative and bool(values[0] > 0)
        keys = values.view(np.uint64) if raw_bits else order_keys(values, nonnegative=nonnegative)
        cells = Cells.fitted(keys)
        return cls(values, keys, mass, cells, _packed_bounds(cells.of(keys)))

    @property
    def size(self) -> int:
        return int(self.values.size)

    def locate(self, keys: Keys, out: NDArray[np.int64] | None = None) -> Located:
        """The slot of every key (keys made by ``order_keys`` with the same ``nonnegative``),
        block by block so that the temporaries stay in cache; the positions go to ``out``
        when given (as many entries as keys: a buffer reused column after column costs no
        fresh pages), which may be the keys' own memory: a block's keys are read before its
        positions are written."""
        position = np.empty(keys.size, dtype=np.int64) if out is None else out
        scratch = _Scratch.of(min(BLOCK, keys.size))
        tied = [
            start
            + self._locate_block(
                keys[start : start + BLOCK], position[start : start + BLOCK], scratch
            )
            for start in range(0, keys.size, BLOCK)
        ]
        return Located(position, np.concatenate(tied) if tied else np.empty(0, np.intp))

    def _locate_block(self, keys: Keys, position: NDArray[np.int64], scratch: _Scratch) -> Indices:
        """Write the positions of ``keys`` into ``position``; return the indices of the keys
        equal to a value of T. Gathers are ``take``s, the full-block ones into ``scratch``:
        cheaper than fancy indexing into fresh arrays."""
        size = keys.size
        cell = self.cells.of(keys, scratch.offset[:size], scratch.coarse[:size])
        packed = np.take(self.bounds, cell, out=scratch.packed[:size], mode="clip")
        occupied = np.flatnonzero(packed > _LOW_32)  # cells holding a value of T
        wanted = keys.take(occupied)  # before ``position`` is written: it may hold the keys
        np.bitwise_and(packed, _LOW_32, out=position)
        if not occupied.size:
            return occupied
        count = packed.take(occupied)
        count >>= 32
        table = self.keys
        start = position.take(occupied)
        first = table.take(start)
        found_tie = first == wanted
        above = first < wanted
        start += above
        # Cells with more values of T whose first lies below the key: the answer lies in
        # [start, last value of the cell + 1].
        several = np.flatnonzero(above & (count > 1))
        if several.size:
            last = position.take(occupied.take(several)) + count.take(several)
            at, tie = _within(table, wanted.take(several), start.take(several), last)
            start[several] = at
            found_tie[several] = tie
        position[occupied] = start
        tied: Indices = occupied.compress(found_tie)
        return tied


@dataclass(frozen=True, slots=True, eq=False)
class _Scratch:
    """Block-sized buffers of ``TrueScores.locate``, reused block after block."""

    offset: Keys
    coarse: NDArray[np.int64]
    packed: NDArray[np.int64]

    @classmethod
    def of(cls, size: int) -> _Scratch:
        return cls(np.empty(size, np.uint64), np.empty(size, np.int64), np.empty(size, np.int64))


def _packed_bounds(cell: NDArray[np.int64]) -> NDArray[np.int64]:
    """``TrueScores.bounds`` from the cell of each value of T, up to the cell of T's largest
    value (``Cells.of`` clamps every key to it), built in place: two arrays of the table's
    size, not three."""
    inside = np.bincount(cell)
    bounds = np.empty(inside.size, dtype=np.int64)
    bounds[0] = 0
    np.cumsum(inside[:-1], out=bounds[1:])
    np.left_shift(inside, 32, out=inside)
    bounds |= inside
    return bounds


def _within(
    table: Keys, wanted: Keys, start: NDArray[np.int64], last: NDArray[np.int64]
) -> tuple[NDArray[np.int64], Bools]:
    """For each key, the first index in [start, last] with table[index] >= key (last when
    none, start < last) and whether it equals the key. Most such cells hold two values of T:
    one step settles those, a search the rest."""
    value = table.take(start)
    tie = value == wanted
    below = value < wanted
    start += below
    more = np.flatnonzero(below & (start < last))
    if more.size:
        found = _search(table, wanted[more], start[more], last[more])
        start[more] = found
        candidate = table[np.minimum(found, table.size - 1)]
        tie[more] = (found < table.size) & (candidate == wanted[more])
    return start, tie


def _search(
    table: Keys, wanted: Keys, low: NDArray[np.int64], high: NDArray[np.int64]
) -> NDArray[np.int64]:
    """For each key, the first index in [low, high] with table[index] >= key (high when
    none), the searches still open shrinking every round."""
    result = low.copy()
    rows = np.arange(wanted.size)
    while rows.size:
        middle = (low + high) >> 1
        less = table[np.minimum(middle, table.size - 1)] < wanted
        low = np.where(less, middle + 1, low)
        high = np.where(less, high, middle)
        open_ = low < high
        if not open_.all():
            done = ~open_
            result[rows[done]] = low[done]
            low, high, wanted, rows = low[open_], high[open_], wanted[open_], rows[open_]
    return result
