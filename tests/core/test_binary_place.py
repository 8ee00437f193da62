"""Placing the positives among the negatives (core/binary/_sweep.py ``place``): numpy's
``searchsorted`` and the ties for every key, on one thread and in shares of the chunks on
several, and shares of about equal cost where the positives are sparse among the negatives."""

from __future__ import annotations

import itertools
from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from evalserve.core import _threads
from evalserve.core._threads import using_threads
from evalserve.core.binary import _sweep
from evalserve.core.binary._classes import class_scores


@settings(max_examples=300, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    positives=st.integers(0, 400),
    negatives=st.integers(0, 400),
    chunk=st.integers(1, 9),
    threads=st.integers(1, 5),
    ties=st.booleans(),
)
def test_the_places_are_numpys_on_any_threads(
    seed: int, positives: int, negatives: int, chunk: int, threads: int, ties: bool
) -> None:
    rng = np.random.default_rng(seed)

    def distinct(n: int) -> np.ndarray:
        return np.unique(rng.integers(0, 30, n) / 4 if ties else rng.random(n))

    pos, neg = distinct(positives), distinct(negatives)
    with (
        mock.patch.object(_sweep, "SEARCH_CHUNK", chunk),
        mock.patch.object(_threads, "MIN_ROWS_PER_THREAD", 1),
        using_threads(threads),
    ):
        below, tied = _sweep.place(class_scores(pos, None), class_scores(neg, None))
    want = np.searchsorted(neg, pos, "left")
    np.testing.assert_array_equal(below, want)
    np.testing.assert_array_equal(tied, np.isin(pos, neg))


def test_shares_cover_every_chunk_once() -> None:
    ends = np.array([0, 0, 5, 9, 9, 40, 41, 41])
    for threads in range(1, 12):
        cuts = _sweep._balanced_cuts(ends, 8 * 4096, threads)
        assert cuts[0] == 0 and cuts[-1] == ends.size
        assert all(a < b for a, b in itertools.pairwise(cuts))  # none empty
        assert len(cuts) - 1 <= threads


def test_where_positives_are_sparse_a_share_holds_fewer_of_them() -> None:
    """Half the chunks of keys span 90% of the negatives: the first share ends well before
    the middle chunk, and the two shares cost about the same."""
    chunks, negatives = 200, 1_000_000
    spans = np.concatenate(
        [np.full(100, 0.9 * negatives / 100), np.full(100, 0.1 * negatives / 100)]
    )
    ends = np.cumsum(spans).astype(np.intp)
    keys = chunks * _sweep.SEARCH_CHUNK
    first, cut, last = _sweep._balanced_cuts(ends, keys, 2)
    assert (first, last) == (0, chunks) and cut < 100

    def cost(a: int, b: int) -> float:
        spanned = int(ends[b - 1]) - (int(ends[a - 1]) if a else 0)
        return (b - a) * _sweep.SEARCH_CHUNK + _sweep.NEGATIVE_COST * spanned

    assert abs(cost(0, cut) - cost(cut, chunks)) <= 2 * cost(0, 1)
