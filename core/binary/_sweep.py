"""The threshold sweep of both classes' scores, from the top score down.

Every binary metric is a function of the two class-conditional score distributions. Almost all
of them change only at thresholds that hold a positive, the *hits*: recall grows only there,
precision, F1 and Youden's J reach their maxima there, and between two hits the ROC curve runs
flat (Fawcett 2006, "An introduction to ROC analysis", algorithm 2). So nothing here builds the
union of all distinct scores. Each class keeps its own sorted distinct scores with their mass
(``ClassScores``); one binary search places every positive score among the negatives (on threads, in
slices of the positives, for a large evaluation); and the
``Sweep`` holds, per hit, the masses every metric is made of. After the sorts that build
the classes, the work is linear in the number of hits, with a handful of passes over the
negatives where a metric truly needs each of them (log loss, Brier score, calibration bins).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import partial

import numpy as np
from numpy.typing import NDArray

from evalserve.core._threads import run_all, threads_for
from evalserve.core.binary._classes import ClassScores, class_scores, classes_of_rows
from evalserve.core.binary._stats import BinaryStats

__all__ = [
    "Sweep",
    "place",
    "placed_sweep",
    "sweep",
    "sweep_of",
    "sweep_of_rows",
]

Floats = NDArray[np.float64]
Indices = NDArray[np.intp]
Bools = NDArray[np.bool_]


@dataclass(frozen=True, slots=True, eq=False)
class Sweep:
    """Both classes from the top score down, at the hits (distinct scores with positive mass),
    in descending order.

    Per hit: its score (``thresholds``), the positive mass there (``pos``; these two are
    read-only views of the positives' arrays, reversed), the positive and negative mass at or
    above it (``tps``, ``fps``), the positive mass strictly above it (``tps_above``, the
    previous hit's ``tps``) and the negative mass strictly above it (``fps_above``).
    ``neg_from`` is the position in ``negatives.scores`` of the lowest negative score at or
    above the hit, ``tied`` whether a negative ties with it. Derived when read, not held (16
    bytes a hit: at 100M rows about 450 MiB of the evaluation's peak): the negative mass tied
    with each hit (``neg_in``, for a slice of hits) and the position of the lowest negative
    strictly above it (``neg_from + tied``).
    """

    positives: ClassScores
    negatives: ClassScores
    thresholds: Floats
    pos: Floats
    tps: Floats
    fps: Floats
    tps_above: Floats
    fps_above: Floats
    neg_from: Indices
    tied: Bools

    def neg_in(self, start: int, stop: int) -> Floats:
        """The negative mass tied with hits ``start`` to ``stop`` (a fresh array)."""
        return self.fps[start:stop] - self.fps_above[start:stop]

    @property
    def n_positive(self) -> float:
        """The positive mass, as the sweep sums it (so that P - TP is never below 0)."""
        return float(self.tps[-1]) if self.size else 0.0

    @property
    def n_negative(self) -> float:
        return self.negatives.total

    @property
    def size(self) -> int:
        """Hits."""
        return int(self.thresholds.size)

    @property
    def n_distinct(self) -> int:
        """Distinct scores over both classes: the points of the full ROC curve."""
        shared = int(np.count_nonzero(self.tied))
        return self.positives.size + self.negatives.size - shared

    def highest(self) -> float:
        """The highest score of either class (the data must not be empty)."""
        tops = [c.scores[-1] for c in (self.positives, self.negatives) if c.size]
        return float(max(tops))

    def lowest(self) -> float:
        bottoms = [c.scores[0] for c in (self.positives, self.negatives) if c.size]
        return float(min(bottoms))

    def above_threshold(self, hit: int) -> float:
        """The lowest distinct score above hit ``hit`` (+inf where there is none): the
        threshold of the ROC point just before the hit."""
        above = np.inf
        position = int(self.neg_from[hit] + self.tied[hit])
        if position < self.negatives.size:
            above = float(self.negatives.scores[position])
        if hit > 0:
            above = min(above, float(self.thresholds[hit - 1]))
        return above

    def roc_corners(self) -> tuple[Floats, Floats]:
        """(FP, TP) at the corners of the ROC curve from (0, 0) to (N, P): before each hit and
        at it, then the end. Between corners the curve is straight (flat between hits, vertical
        or diagonal through a hit), so these points trace the whole curve."""
        fps = np.empty(2 * self.size + 2)
        tps = np.empty(2 * self.size + 2)
        fps[0] = tps[0] = 0.0
        fps[1:-1:2], fps[2:-1:2] = self.fps_above, self.fps
        tps[1:-1:2], tps[2:-1:2] = self.tps_above, self.tps
        fps[-1], tps[-1] = self.n_negative, self.n_positive
        return fps, tps

    def counts_at(self, threshold: float) -> tuple[float, float]:
        """(true positives, false positives) when ``score >= threshold`` is called positive."""
        hits_at_or_above = self.size - int(
            np.searchsorted(self.positives.scores, threshold, side="left")
        )
        tp = float(self.tps[hits_at_or_above - 1]) if hits_at_or_above else 0.0
        below = np.searchsorted(self.negatives.scores, [threshold], side="left")
        fp = float(self.negatives.mass_at_or_above(below)[0])
        return tp, fp


def sweep(positives: ClassScores, negatives: ClassScores) -> Sweep:
    """The sweep of two classes (either may be empty)."""
    return placed_sweep(positives, negatives, place(positives, negatives))


def place(positives: ClassScores, negatives: ClassScores) -> tuple[Indices, Bools]:
    """Where each positive score sits among the negative ones: the negative scores below it,
    and whether one equals it (a binary search, chunk by chunk of the positives, in shares
    of the chunks on threads when large). A sweep built again from the same classes (the
    ranges' passes) keeps this and skips the search."""
    ascending = positives.scores
    # Held in the sweep's (descending) order and handed out reversed: the sweep takes them as
    # they are, with no copy (a sweep is built again for each pass of the ranges).
    below = np.empty(ascending.size, dtype=np.intp)[::-1]
    tied = np.zeros(ascending.size, dtype=np.bool_)[::-1]
    ends = _chunk_ends(negatives.scores, ascending)
    threads = max(1, min(threads_for(ascending.size + negatives.size), ends.size))
    cuts = _balanced_cuts(ends, ascending.size, threads)

    def share(first: int, last: int) -> None:
        _place(negatives.scores, ascending, (below, tied), ends, range(first, last))

    run_all([partial(share, a, b) for a, b in itertools.pairwise(cuts)], threads)
    return below, tied


def placed_sweep(
    positives: ClassScores, negatives: ClassScores, placement: tuple[Indices, Bools]
) -> Sweep:
    """The sweep of two classes, given ``place``'s answer for them."""
    return _placed(positives, negatives, *placement)


def _place(
    negatives: Floats,
    scores: Floats,
    out: tuple[Indices, Bools],
    ends: Indices,
    chunks: range,
) -> None:
    """Into ``out`` (``below``, ``tied``), for the ``chunks`` of ``scores`` (ascending): the
    negative scores under each score, and whether one equals it (canonical negatives are
    distinct: at most one ties with each score)."""
    below, tied = out
    first = chunks.start * SEARCH_CHUNK
    stop = min(chunks.stop * SEARCH_CHUNK, scores.size)
    _sorted_search(negatives, scores, below, ends, chunks)
    if negatives.size and stop > first:
        places = below[first:stop]
        probe = np.minimum(places, negatives.size - 1)
        np.equal(np.take(negatives, probe, mode="clip"), scores[first:stop], out=tied[first:stop])
        tied[first:stop] &= places < negatives.size


# Sorted keys a bounded search takes at once.
SEARCH_CHUNK = 4096
# What the search spends on each negative score a share's windows span, against one search of
# a key: the windows stream through memory, about an eighth of a key's search per negative
# (fitted on 10M rows, AMD Zen 5). A share of the positives where they are sparse spans many
# negatives (the lowest half of the positives spans most of them): shares of equal cost, not
# of equal keys, keep the threads busy to the end.
NEGATIVE_COST = 1 / 8


def _chunk_ends(haystack: Floats, keys: Floats) -> Indices:
    """Per chunk of ``SEARCH_CHUNK`` sorted keys, where its last key sits in ``haystack``
    (numpy's ``searchsorted``, "left"; the last chunk's: the haystack's end). Every key of
    chunk ``j`` sits between the ends of chunks ``j - 1`` and ``j``."""
    ends = np.empty(-(-keys.size // SEARCH_CHUNK), dtype=np.intp)
    if ends.size:
        lasts = keys[SEARCH_CHUNK - 1 :: SEARCH_CHUNK][: ends.size - 1]
        ends[:-1] = np.searchsorted(haystack, lasts, side="left")
        ends[-1] = haystack.size
    return ends


def _balanced_cuts(ends: Indices, keys: int, threads: int) -> list[int]:
    """The chunks where each of ``threads`` shares of about equal cost begins, and the end:
    a share costs one unit a key and ``NEGATIVE_COST`` a negative its windows span."""
    if threads <= 1:
        return [0, ends.size]
    done = np.minimum(np.arange(1, ends.size + 1) * SEARCH_CHUNK, keys) + NEGATIVE_COST * ends
    targets = done[-1] * np.arange(1, threads) / threads
    inside = np.searchsorted(done, targets, side="left") + 1
    return [0, *sorted({int(cut) for cut in inside if 0 < cut < ends.size}), ends.size]


def _sorted_search(
    haystack: Floats, keys: Floats, out: Indices, ends: Indices, chunks: range
) -> None:
    """``out[i] = searchsorted(haystack, keys[i], "left")`` for the keys of ``chunks`` (sorted
    keys, ``ends`` their chunks' ``_chunk_ends``): each chunk searched only between the
    places of its first and last key (numpy's search of sorted keys bounds each search below
    by the last answer but not above: about 23 steps a key among 9M; here about 15, and the
    window in the CPU's cache: 30 ms against 37 for 1M keys among 9M)."""
    for chunk in chunks:
        low = int(ends[chunk - 1]) if chunk else 0
        start = chunk * SEARCH_CHUNK
        piece = out[start : start + SEARCH_CHUNK]
        piece[:] = np.searchsorted(
            haystack[low : int(ends[chunk])], keys[start : start + SEARCH_CHUNK]
        )
        piece += low


def _placed(positives: ClassScores, negatives: ClassScores, below: Indices, tied: Bools) -> Sweep:
    """The sweep, given each positive score's place among the negative ones (``below``: the
    negative scores under it; ``tied``: one equals it)."""
    ascending = positives.scores
    # From here on in descending order, each array contiguous: views where ``place`` held them
    # in this order (else a copy); the placement is kept by whoever keeps it, and nothing
    # here writes to it.
    neg_from = np.ascontiguousarray(below[::-1])
    tied_down = tied[::-1]
    fps = negatives.mass_at_or_above(neg_from)
    fps_above = negatives.mass_at_or_above(neg_from + tied_down)
    hits = positives.size
    # The positive mass from the top: what the class already summed from the top; TP at a hit
    # and strictly above it are two views of it. The scores and the positive mass per hit are
    # views of the class's own arrays, reversed: of the sweep's arrays, only those of the
    # negatives' side are new (at 100M rows the views save 24 bytes a hit).
    from_top = np.arange(hits + 1.0) if positives.from_top is None else positives.from_top
    pos = (
        np.broadcast_to(np.float64(1.0), (hits,))
        if positives.mass is None
        else positives.mass[::-1]
    )
    return Sweep(
        positives=positives,
        negatives=negatives,
        thresholds=ascending[::-1],
        pos=pos,
        tps=from_top[1:],
        fps=fps,
        tps_above=from_top[:-1],
        fps_above=fps_above,
        neg_from=neg_from,
        tied=tied_down,
    )


def sweep_of(stats: BinaryStats) -> Sweep:
    """The sweep of a mergeable statistic (streams, merged shards). Its scores are distinct
    and ascending, both classes' together: the negative scores below a positive one are the
    entries with negative mass before it, counted in one pass (no search)."""
    has_neg = stats.neg > 0
    # Index arrays and ``take``: several times faster than boolean masks; the cumsum of bools
    # into an integer ``out``, not with ``dtype=`` (a casting loop, ten times slower).
    positive, negative = np.flatnonzero(stats.pos > 0), np.flatnonzero(has_neg)
    before = np.empty(has_neg.size, dtype=np.intp)
    np.cumsum(has_neg, out=before)
    before -= has_neg
    return _placed(
        class_scores(stats.scores.take(positive), stats.pos.take(positive)),
        class_scores(stats.scores.take(negative), stats.neg.take(negative)),
        before.take(positive),
        has_neg.take(positive),
    )


def sweep_of_rows(labels: Bools, scores: Floats, weights: Floats | None) -> Sweep:
    """The sweep of validated rows (bool labels, finite scores, optional weights)."""
    return sweep(*classes_of_rows(labels, scores, weights))
