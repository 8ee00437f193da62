"""Sorting a class's scores (with their weights) on several threads: a sample sort by rank.

numpy has no parallel sort and no merge, but its selection (``partition``, vectorised like its
sort, about a sixth of a sort's time) splits an array by rank in place: every value left of
the ``k``-th is at most it, every value right of it at least it. So an array is cut into one
piece per thread by selection (halving, both halves at once on the next level), and the
pieces are sorted each on its own thread: side by side they are the sorted array, the same
values in the same places as one sort gives (equal values are interchangeable). With weights
the selection and the sorts permute the weights alongside (``argpartition``, ``argsort``).

The rows of a batch reach the two classes by the same split on threads: each thread copies
its share of the rows into each class's array, at the offset its earlier shares leave.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
from numpy.typing import NDArray

from evalserve.core._threads import run_all

__all__ = ["Piece", "cut_by_rank", "sort_columns", "sort_pieces", "split_classes"]

Floats = NDArray[np.float64]
Bools = NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class Piece:
    """``parts`` pieces still to come from ``scores[start:stop]`` (with its ``weights``)."""

    scores: Floats
    weights: Floats | None
    start: int
    stop: int
    parts: int

    @property
    def size(self) -> int:
        return self.stop - self.start

    def halves(self) -> tuple[Piece, Piece, int]:
        """The two pieces the next selection makes, and the rank it selects (in the piece)."""
        left = self.parts // 2
        rank = self.size * left // self.parts
        middle = self.start + rank
        return (
            Piece(self.scores, self.weights, self.start, middle, left),
            Piece(self.scores, self.weights, middle, self.stop, self.parts - left),
            rank,
        )

    def select(self, rank: int) -> None:
        """Put the value of ``rank`` in its sorted place, smaller values left, larger right."""
        scores = self.scores[self.start : self.stop]
        if self.weights is None:
            scores.partition(rank)
            return
        order = np.argpartition(scores, rank)
        _permute(scores, order)
        _permute(self.weights[self.start : self.stop], order)

    def sort(self) -> None:
        scores = self.scores[self.start : self.stop]
        if self.weights is None:
            scores.sort()
            return
        order = np.argsort(scores)
        _permute(scores, order)
        _permute(self.weights[self.start : self.stop], order)


def _permute(column: Floats, order: NDArray[np.intp]) -> None:
    """``column`` rearranged in place to ``column[order]`` (through one copy)."""
    np.take(column.copy(), order, out=column, mode="clip")


def cut_by_rank(pieces: list[Piece], threads: int) -> list[Piece]:
    """Each piece cut into its ``parts`` pieces of (nearly) equal size by selection, level by
    level; the selections of one level run on ``threads`` threads."""
    done: list[Piece] = []
    while pieces:
        calls: list[Callable[[], None]] = []
        following: list[Piece] = []
        for piece in pieces:
            if piece.parts <= 1 or piece.size < 2:
                done.append(Piece(piece.scores, piece.weights, piece.start, piece.stop, 1))
                continue
            left, right, rank = piece.halves()
            calls.append(partial(piece.select, rank))
            following += [left, right]
        run_all(calls, threads)
        pieces = following
    return done


def sort_pieces(pieces: list[Piece], threads: int) -> None:
    """Sort every piece in place on ``threads`` threads, the largest first."""
    ordered = sorted(pieces, key=lambda piece: piece.size, reverse=True)
    run_all([piece.sort for piece in ordered], threads)


def pieces_of(columns: list[tuple[Floats, Floats | None]], threads: int) -> list[Piece]:
    """The pieces the columns (each a class's scores and weights) are cut into for
    ``threads`` threads: each column in pieces of about its share of the rows."""
    total = sum(scores.size for scores, _ in columns)
    share = max(1, -(-total // threads))
    return [
        Piece(scores, weights, 0, scores.size, max(1, -(-scores.size // share)))
        for scores, weights in columns
        if scores.size
    ]


def sort_columns(columns: list[tuple[Floats, Floats | None]], threads: int) -> None:
    """Sort each column in place (weights alongside) on ``threads`` threads."""
    pieces = cut_by_rank(pieces_of(columns, threads), threads)
    sort_pieces(pieces, threads)


def split_classes(labels: Bools, column: Floats, threads: int) -> tuple[Floats, Floats]:
    """The positives' and the negatives' values of ``column`` (in the rows' order, fresh
    arrays), each thread copying its share of the rows."""
    n = column.size
    bounds = [n * part // threads for part in range(threads + 1)]
    ones = [int(np.count_nonzero(labels[a:b])) for a, b in itertools.pairwise(bounds)]
    positives = np.empty(sum(ones), dtype=np.float64)
    negatives = np.empty(n - positives.size, dtype=np.float64)

    def share(part: int) -> None:
        a, b = bounds[part], bounds[part + 1]
        p = sum(ones[:part])
        q = a - p  # the negatives among the rows before this share
        rows = labels[a:b]
        np.compress(rows, column[a:b], out=positives[p : p + ones[part]])
        np.compress(~rows, column[a:b], out=negatives[q : q + (b - a) - ones[part]])

    run_all([partial(share, part) for part in range(threads)], threads)
    return positives, negatives
