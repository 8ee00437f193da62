"""The core's threads (core/_threads.py, core/binary/_parallel_sort.py): the setting, running
calls on threads, and threaded answers against one-thread answers. A thread takes at least
half a million rows in production; the tests lower that to a few rows so that every size,
tie pattern and thread count goes through the threaded split, selection and sorts.

Every answer is the same bit for bit on any number of threads, real weights included: the
weights of tied scores are added in row order on one thread and on many (the packed keys of
``core/binary/_key_sort.py`` order ties by row)."""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalserve import core
from evalserve.core import _threads
from evalserve.core._threads import Ahead, check_threads, current_threads, run_all, using_threads
from evalserve.core.binary import _suite as suite
from evalserve.core.binary._classes import RawScores, merge_classes
from evalserve.core.binary._parallel_sort import (
    Column,
    Piece,
    cut_by_rank,
    sort_columns,
    split_classes,
)

OPTIONS = {"max_fpr": 0.3, "head_k": [3, 50], "recall_at_precision": [0.5]}


@contextmanager
def tiny_threads(rows_per_thread: int = 1) -> Iterator[None]:
    """Threads for inputs of a few rows (production: half a million rows a thread)."""
    with mock.patch.object(_threads, "MIN_ROWS_PER_THREAD", rows_per_thread):
        yield


def _json(result: core.EvaluationResult) -> str:
    return json.dumps(result.to_dict(), sort_keys=True)


# --- the setting ---------------------------------------------------------------------------


def test_default_is_the_cpus_the_process_may_use() -> None:
    assert current_threads() == min(core.available_cpus(), _threads.MAX_THREADS)
    assert core.available_cpus() >= 1


def test_using_threads_sets_and_restores() -> None:
    before = current_threads()
    with using_threads(3):
        assert current_threads() == 3
        with using_threads(1):
            assert current_threads() == 1
        assert current_threads() == 3
        with using_threads(None):
            assert current_threads() == before
    assert current_threads() == before


@pytest.mark.parametrize("bad", [0, -1, 65, 1.5, True, "2", None])
def test_a_bad_count_names_the_field(bad: Any) -> None:
    with pytest.raises(core.InvalidInputError) as caught:
        check_threads(bad)
    assert caught.value.field == "threads"
    if bad is not None:
        with pytest.raises(core.InvalidInputError, match="threads"):
            core.evaluate("binary", [0, 1], [0.2, 0.7], threads=bad)


def test_threads_for_keeps_half_a_million_rows_a_thread() -> None:
    with using_threads(8):
        assert _threads.threads_for(0) == 1
        assert _threads.threads_for(999_999) == 1
        assert _threads.threads_for(1_000_000) == 2
        assert _threads.threads_for(100_000_000) == 8
    with using_threads(1):
        assert _threads.threads_for(100_000_000) == 1


# --- running calls on threads -----------------------------------------------------------------


def test_run_all_keeps_the_order_and_uses_threads() -> None:
    names: list[str] = []
    barrier = threading.Barrier(3, timeout=10)

    def call(value: int) -> int:
        barrier.wait()  # all three run at once, or this times out
        names.append(threading.current_thread().name)
        return value * value

    assert run_all([functools.partial(call, v) for v in range(3)], threads=3) == [0, 1, 4]
    assert len(set(names)) == 3


def test_run_all_on_one_thread_runs_in_this_thread() -> None:
    here = threading.get_ident()
    assert run_all([threading.get_ident, threading.get_ident], threads=1) == [here, here]


def test_work_on_a_thread_does_not_share_out_again() -> None:
    with using_threads(4):
        assert run_all([current_threads, current_threads], threads=2) == [1, 1]
        assert current_threads() == 4


def test_an_error_is_raised_after_every_call_ended() -> None:
    ended = threading.Event()

    def slow() -> None:
        ended.wait(0.2)
        ended.set()

    def failing() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        run_all([failing, slow], threads=2)
    assert ended.is_set()


def test_ahead_on_one_thread_runs_when_asked() -> None:
    ran: list[str] = []

    def call() -> int:
        ran.append("call")
        return 7

    with Ahead(1) as ahead:
        later = ahead.start(call)
        ran.append("before")
        assert later.result() == 7
        assert later.result() == 7  # once
    assert ran == ["before", "call"]


def test_ahead_on_threads_runs_beside_this_thread() -> None:
    started = threading.Event()
    here = threading.get_ident()

    def call() -> int:
        started.set()
        return threading.get_ident()

    with Ahead(2) as ahead:
        later = ahead.start(call)
        assert started.wait(10)  # running before anyone asked
        assert later.result() != here
        threads_there = ahead.start(current_threads)
        assert threads_there.result() == 1


def test_ahead_raises_a_calls_error_where_its_result_is_asked() -> None:
    def failing() -> int:
        raise ValueError("boom")

    for threads in (1, 2):
        with Ahead(threads) as ahead:
            later = ahead.start(failing)
            with pytest.raises(ValueError, match="boom"):
                later.result()


# --- the pieces: selection by rank and the sorts -----------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(st.integers(-5, 5) | st.floats(-1e3, 1e3, width=64), max_size=60),
    data=st.data(),
    keys=st.booleans(),
)
def test_cut_by_rank_then_sort_is_a_sort(
    values: list[float], data: st.DataObject, keys: bool
) -> None:
    column: Column = np.array(values, dtype=np.float64)
    if keys:  # the unsigned keys that order weighted scores are cut and sorted alike
        column = np.array([int(v * 10) + 20_000 for v in values], dtype=np.uint64)
    wanted = np.sort(column)
    inside = list(range(1, column.size))
    cuts = tuple(sorted(data.draw(st.sets(st.sampled_from(inside)))) if inside else ())
    pieces = cut_by_rank([Piece(column, 0, column.size, cuts)], threads=3)
    bounds = sorted((piece.start, piece.stop) for piece in pieces)
    assert [stop for _, stop in bounds[:-1]] == list(cuts)  # cut where asked, nowhere else
    assert bounds[0][0] == 0 and bounds[-1][1] == column.size
    assert all(a[1] == b[0] for a, b in itertools.pairwise(bounds))
    for (a, b), (c, d) in itertools.pairwise(bounds):
        assert column[a:b].max() <= column[c:d].min()
    for piece in pieces:
        piece.sort()
    np.testing.assert_array_equal(column, wanted)


@settings(max_examples=100, deadline=None)
@given(sizes=st.lists(st.integers(0, 40), min_size=1, max_size=3), threads=st.integers(1, 7))
def test_sort_columns_sorts_every_column(sizes: list[int], threads: int) -> None:
    rng = np.random.default_rng(sum(sizes) + threads)
    columns: list[Column] = [rng.integers(0, 9, size).astype(float) for size in sizes]
    wanted = [np.sort(column) for column in columns]
    sort_columns(columns, threads)
    for column, want in zip(columns, wanted, strict=True):
        np.testing.assert_array_equal(column, want)


def test_sort_columns_shares_the_threads_among_columns() -> None:
    rng = np.random.default_rng(7)
    small, large = rng.random(300), rng.integers(0, 1 << 40, 5000).astype(np.uint64)
    want_small, want_large = np.sort(small), np.sort(large)
    sort_columns([small, large], threads=4)
    np.testing.assert_array_equal(small, want_small)
    np.testing.assert_array_equal(large, want_large)


@settings(max_examples=100, deadline=None)
@given(labels=st.lists(st.booleans(), max_size=80), threads=st.integers(1, 6))
def test_split_classes_is_boolean_indexing(labels: list[bool], threads: int) -> None:
    mask = np.array(labels, dtype=np.bool_)
    column = np.arange(mask.size, dtype=np.float64) * 1.5
    positives, negatives = split_classes(mask, column, threads)
    np.testing.assert_array_equal(positives, column[mask])
    np.testing.assert_array_equal(negatives, column[~mask])


# --- threaded answers against one thread ------------------------------------------------------


def _rows(draw: st.DrawFn, weights: str) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    n = draw(st.integers(1, 120))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    distinct = draw(st.sampled_from([1, 2, 5, 1000, 10**9]))
    labels = rng.random(n) < draw(st.sampled_from([0.0, 0.1, 0.5, 1.0]))
    scores = rng.integers(0, distinct, n) / distinct
    if weights == "none":
        return labels, scores, None
    if weights == "integer":
        counts = rng.integers(0, 4, n).astype(np.float64)
        counts[0] = 1.0  # not all zero: that is refused, threads or not
        return labels, scores, counts
    return labels, scores, rng.random(n) * 10.0 ** rng.integers(-3, 3, n)


@st.composite
def binary_rows(draw: st.DrawFn, weights: str) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    return _rows(draw, weights)


def _on_one_and_on(
    rows: tuple[np.ndarray, np.ndarray, np.ndarray | None], threads: int
) -> tuple[core.EvaluationResult, core.EvaluationResult]:
    """The rows evaluated on one thread, and on ``threads`` (a few rows a thread)."""
    labels, scores, weights = rows
    one = core.evaluate("binary", labels, scores, sample_weight=weights, options=OPTIONS, threads=1)
    with tiny_threads():
        many = core.evaluate(
            "binary", labels, scores, sample_weight=weights, options=OPTIONS, threads=threads
        )
    return one, many


@settings(max_examples=200, deadline=None)
@given(
    rows=binary_rows("none") | binary_rows("integer") | binary_rows("float"),
    threads=st.integers(2, 7),
)
def test_threaded_equals_one_thread_bit_for_bit(
    rows: tuple[np.ndarray, np.ndarray, np.ndarray | None], threads: int
) -> None:
    one, many = _on_one_and_on(rows, threads)
    assert _json(many) == _json(one)
    # Work started ahead on another thread is written where it always was.
    assert list(many.metrics) == list(one.metrics)
    assert many.warnings == one.warnings


def test_threaded_states_merge_as_one_thread() -> None:
    """A stream's parts are sorted at the end (``merge_classes``): the same classes."""
    rng = np.random.default_rng(3)
    parts = [RawScores(rng.integers(0, 40, 500) / 40, None) for _ in range(4)]
    weighted = [RawScores(p.scores, rng.integers(1, 3, p.size).astype(float)) for p in parts]
    for each in (parts, weighted):
        with using_threads(1):
            one = merge_classes(each)
        with tiny_threads(), using_threads(5):
            many = merge_classes(each)
        np.testing.assert_array_equal(many.scores, one.scores)
        assert (many.mass is None) == (one.mass is None)
        if one.mass is not None:
            np.testing.assert_array_equal(many.mass, one.mass)


def test_threads_of_the_context_reach_the_accumulator() -> None:
    rng = np.random.default_rng(5)
    labels, scores = rng.random(3000) < 0.3, rng.random(3000)
    accumulator = core.Accumulator("binary", OPTIONS)
    for rows in np.array_split(np.arange(3000), 3):
        accumulator.update(labels[rows], scores[rows])
    with using_threads(1):
        one = accumulator.result()
    with tiny_threads(), using_threads(4):
        many = accumulator.result()
    assert _json(many) == _json(one)


def test_the_other_thread_takes_the_calibration_and_the_placements() -> None:
    """On two threads the calibration sums and the DeLong placements run on the other thread
    and the PR areas and KS on this one (one set of hit-sized temporaries each): the same
    answer, written in the same order."""
    rng = np.random.default_rng(11)
    labels, scores = rng.random(4000) < 0.4, rng.random(4000)
    one = core.evaluate("binary", labels, scores, options=OPTIONS, threads=1)
    seen: dict[str, int] = {}

    def spy(name: str) -> Any:
        real = getattr(suite, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            seen[name] = threading.get_ident()
            return real(*args, **kwargs)

        return call

    names = ["pr_areas", "ks_and_youden", "_calibration", "placements"]
    with contextlib.ExitStack() as stack:
        for name in names:
            stack.enter_context(mock.patch.object(suite, name, spy(name)))
        stack.enter_context(tiny_threads())
        many = core.evaluate("binary", labels, scores, options=OPTIONS, threads=2)
    here = threading.get_ident()
    assert seen["pr_areas"] == seen["ks_and_youden"] == here
    assert seen["_calibration"] != here and seen["placements"] != here
    assert _json(many) == _json(one)
    assert list(many.metrics) == list(one.metrics)
