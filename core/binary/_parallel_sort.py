"""Sorting a column (a class's scores, or the packed keys that order weighted scores) on
several threads: a sample sort by rank.

numpy has no parallel sort and no merge, but its selection (``partition``, vectorised like its
sort, about a sixth of a sort's time) splits an array by rank in place: every value left of
the ``k``-th is at most it, every value right of it at least it. So an array is cut into one
piece per thread by selection (halving, both halves at once on the next level), and the
pieces are sorted each on its own thread: side by side they are the sorted array, the same
values in the same places as one sort gives (equal values are interchangeable). Weighted
scores are ordered through keys that are all distinct (``_key_sort``), so no weights travel
through a selection or a sort here.

The rows of a batch reach the two classes by the same split on threads: each thread copies
its share of the rows into each class's array, at the offset its earlier shares leave.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

from evalserve.core._threads import run_all, shares

__all__ = ["Column", "Piece", "cut_by_rank", "each_class", "sort_columns", "split_classes"]

Floats = NDArray[np.float64]
Indices = NDArray[np.intp]
ColumnValue = TypeVar("ColumnValue", np.float64, np.uint64)
# What is sorted: scores, the unsigned keys that order weighted scores, or the signed keys that
# sort both classes at once.
Column = NDArray[np.float64] | NDArray[np.uint64] | NDArray[np.int64]
Bools = NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class Piece:
    """``column[start:stop]``, still to be cut at ``cuts`` (positions in the column, each
    strictly inside the piece, ascending)."""

    column: Column
    start: int
    stop: int
    cuts: tuple[int, ...] = ()

    def halves(self) -> tuple[Piece, Piece, int]:
        """The two pieces the selection at the middle cut makes, and the rank it selects (in
        the piece)."""
        middle = len(self.cuts) // 2
        cut = self.cuts[middle]
        return (
            Piece(self.column, self.start, cut, self.cuts[:middle]),
            Piece(self.column, cut, self.stop, self.cuts[middle + 1 :]),
            cut - self.start,
        )

    def select(self, rank: int) -> None:
        """Put the value of ``rank`` in its sorted place, smaller values left, larger right."""
        self.column[self.start : self.stop].partition(rank)

    def sort(self) -> None:
        self.column[self.start : self.stop].sort()


def cut_by_rank(pieces: list[Piece], threads: int) -> list[Piece]:
    """Each piece cut at its ``cuts`` by selection, the middle cut first, level by level;
    the selections of one level run on ``threads`` threads."""
    done: list[Piece] = []
    while pieces:
        calls: list[Callable[[], None]] = []
        following: list[Piece] = []
        for piece in pieces:
            if not piece.cuts:
                done.append(piece)
                continue
            left, right, rank = piece.halves()
            calls.append(partial(piece.select, rank))
            following += [left, right]
        run_all(calls, threads)
        pieces = following
    return done


def sort_columns(columns: list[Column], threads: int) -> None:
    """Sort each column in place on ``threads`` threads: the columns side by side are cut by
    selection where each thread's equal share of their rows ends, then each thread sorts the
    pieces of its share."""
    total = sum(column.size for column in columns)
    bounds = shares(total, threads)
    offsets: dict[int, int] = {}
    whole: list[Piece] = []
    offset = 0
    for column in columns:
        if column.size:
            inside = tuple(
                sorted({b - offset for b in bounds[1:-1] if offset < b < offset + column.size})
            )
            whole.append(Piece(column, 0, column.size, inside))
            offsets[id(column)] = offset
        offset += column.size
    jobs: list[list[Piece]] = [[] for _ in range(threads)]
    for piece in cut_by_rank(whole, threads):
        start = offsets[id(piece.column)] + piece.start
        jobs[bisect.bisect_right(bounds, start) - 1].append(piece)
    run_all([partial(_sort_all, job) for job in jobs if job], threads)


def _sort_all(pieces: list[Piece]) -> None:
    for piece in pieces:
        piece.sort()


# Rows a block of the class split takes: its index arrays stay in the CPU's cache.
SPLIT_BLOCK = 1 << 16


def split_classes(labels: Bools, column: Floats, threads: int) -> tuple[Floats, Floats]:
    """The positives' and the negatives' values of ``column`` (in the rows' order, fresh
    arrays; ``each_class``): a ``take`` at the ``flatnonzero`` of each block's labels is a third
    faster than a boolean mask, and releases the interpreter lock."""

    def write(piece: Floats, taken: Indices, start: int) -> None:
        np.take(column[start:], taken, out=piece, mode="clip")

    return each_class(labels, np.dtype(np.float64), threads, write)


def each_class(
    labels: Bools,
    dtype: np.dtype[ColumnValue],
    threads: int,
    write: Callable[[NDArray[ColumnValue], Indices, int], None],
) -> tuple[NDArray[ColumnValue], NDArray[ColumnValue]]:
    """An array of ``dtype`` for the positives' rows and one for the negatives', in the rows'
    order, filled block by block of ``SPLIT_BLOCK`` rows by ``write(piece, taken, start)``:
    ``taken`` the block's rows of one class (positions from the block's ``start``), ``piece``
    where they go. Each of ``threads`` threads writes its share of the rows, at the offset its
    earlier shares leave."""
    n = labels.size
    bounds = shares(n, threads)
    ones = [int(np.count_nonzero(labels[a:b])) for a, b in itertools.pairwise(bounds)]
    positives = np.empty(sum(ones), dtype=dtype)
    negatives = np.empty(n - positives.size, dtype=dtype)

    def share(part: int) -> None:
        p = sum(ones[:part])
        q = bounds[part] - p  # the negatives among the rows before this share
        for a in range(bounds[part], bounds[part + 1], SPLIT_BLOCK):
            rows = labels[a : min(a + SPLIT_BLOCK, bounds[part + 1])]
            taken = np.flatnonzero(rows)
            write(positives[p : p + taken.size], taken, a)
            p += taken.size
            taken = np.flatnonzero(~rows)
            write(negatives[q : q + taken.size], taken, a)
            q += taken.size

    run_all([partial(share, part) for part in range(threads)], threads)
    return positives, negatives
