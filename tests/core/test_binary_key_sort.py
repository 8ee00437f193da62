"""The order of a column by packed keys (core/binary/_key_sort.py) against numpy's stable
``argsort``: the same order exactly, ties in row order, on one thread and on several; and the
mending of groups whose scores share a key's high bits."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalserve.core.binary import _key_sort
from evalserve.core.binary._key_sort import class_orders, sorted_order


def _stable(column: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(column, kind="stable")
    return column[order], order


def _check(column: np.ndarray, threads: int) -> None:
    before = column.copy()
    ordered, order = sorted_order(column, threads)
    want_ordered, want_order = _stable(column)
    np.testing.assert_array_equal(order, want_order)
    np.testing.assert_array_equal(ordered, want_ordered)
    assert order.dtype == np.intp and ordered.dtype == np.float64
    np.testing.assert_array_equal(column, before)  # the caller's column is not changed


finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
near_one = st.integers(0, 1 << 30).map(lambda k: 1.0 + k * 2.0**-52)  # apart in the last bits
SIGNED = [0.0, -0.0, 1.0, -1.0]
tiny = st.integers(-(1 << 20), 1 << 20).map(lambda k: k * 5e-324)  # subnormals and zeros


@settings(max_examples=400, deadline=None)
@given(
    values=st.lists(finite | near_one | tiny | st.sampled_from(SIGNED), max_size=300),
    threads=st.integers(1, 4),
)
def test_the_order_is_a_stable_argsort(values: list[float], threads: int) -> None:
    with mock.patch.object(_key_sort, "KEYS_FROM", 0):  # the keys, at every size
        _check(np.array(values, dtype=np.float64), threads)
    _check(np.array(values, dtype=np.float64), threads)  # small columns: a stable argsort


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_a_shifted_key_mends_every_group(threads: int) -> None:
    """Scores 1e300 apart take the whole key, so values a few ulps apart share their high bits:
    thousands of groups out of numeric order, every one mended."""
    rng = np.random.default_rng(3)
    ulps = rng.integers(0, 1 << 22, 200_000)
    column = np.concatenate([[1e-300, 1e300, -1e300], 1 + ulps * 2.0**-52, -(1 + ulps * 2.0**-52)])
    rng.shuffle(column)
    calls: list[int] = []
    real = _key_sort._mend

    def counted(ordered: np.ndarray, *args: object) -> None:
        calls.append(int(np.count_nonzero(ordered[1:] < ordered[:-1])))
        real(ordered, *args)  # type: ignore[arg-type]

    with mock.patch.object(_key_sort, "_mend", counted):
        _check(column, threads)
    assert calls and calls[0] > 1000  # the keys alone left these out of order


def test_unshifted_keys_need_no_mending() -> None:
    """Scores whose places fit beside the rows' bits are in order straight from the sort."""
    column = 1.0 + np.random.default_rng(4).integers(0, 1 << 30, 5000) * 2.0**-52
    assert column.size >= _key_sort.KEYS_FROM
    with mock.patch.object(_key_sort, "_mend", side_effect=AssertionError("mended")):
        _check(column, 2)


@pytest.mark.parametrize("size", [0, 1, 2])
def test_tiny_columns(size: int) -> None:
    with mock.patch.object(_key_sort, "KEYS_FROM", 0):
        _check(np.array([0.5, -0.0][:size]), 1)


@pytest.mark.parametrize("keys_from", [0, 2048])
def test_negative_and_positive_zero_are_one_score_in_row_order(keys_from: int) -> None:
    column = np.array([0.0, -0.0, -1.0, 0.0, -0.0, 1.0])
    with mock.patch.object(_key_sort, "KEYS_FROM", keys_from):
        ordered, order = sorted_order(column)
    assert order.tolist() == [2, 0, 1, 3, 4, 5]
    assert np.signbit(ordered).tolist() == [True, False, True, False, True, False]


@settings(max_examples=300, deadline=None)
@given(
    values=st.lists(
        st.tuples(st.booleans(), finite | near_one | tiny | st.sampled_from(SIGNED)),
        max_size=300,
    ),
    threads=st.integers(1, 4),
    keys=st.booleans(),
)
def test_class_orders_are_each_classes_stable_argsort(
    values: list[tuple[bool, float]], threads: int, keys: bool
) -> None:
    """Each class's scores in order and the rows they are at, as a stable argsort of the
    class's column gives them: with the keys (forced at every size) and without."""
    labels = np.array([label for label, _ in values], dtype=np.bool_)
    scores = np.array([score for _, score in values], dtype=np.float64)
    with mock.patch.object(_key_sort, "KEYS_FROM", 0 if keys else 2048):
        got = class_orders(labels, scores, threads)
    for (ordered, rows), mask in zip(got, (labels, ~labels), strict=True):
        want_rows = np.flatnonzero(mask)[np.argsort(scores[mask], kind="stable")]
        np.testing.assert_array_equal(rows, want_rows)
        np.testing.assert_array_equal(ordered, scores[want_rows])
        assert rows.dtype == np.intp


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_class_orders_mend_both_classes(threads: int) -> None:
    rng = np.random.default_rng(5)
    ulps = rng.integers(0, 1 << 22, 300_000)
    scores = np.concatenate([[1e-300, 1e300, -1e300], 1 + ulps * 2.0**-52])
    rng.shuffle(scores)
    labels = rng.random(scores.size) < 0.4
    for (ordered, rows), mask in zip(class_orders(labels, scores, threads), (labels, ~labels),
                                     strict=True):  # fmt: skip
        want_rows = np.flatnonzero(mask)[np.argsort(scores[mask], kind="stable")]
        np.testing.assert_array_equal(rows, want_rows)
        np.testing.assert_array_equal(ordered, scores[want_rows])


def test_a_negative_zero_at_the_bottom_is_zero() -> None:
    """-0.0 as the smallest score takes zero's place (its sign bit set, a naive turn would put
    it past every positive number and wrap the keys)."""
    scores = np.array([-0.0, 1e300, 1 + 2 * 2.0**-52, 1 + 2.0**-52, 1.0, 0.5])
    labels = np.ones(scores.size, dtype=np.bool_)
    with mock.patch.object(_key_sort, "KEYS_FROM", 0):
        (ordered, rows), _ = class_orders(labels, scores, 1)
        _check(scores, 1)
    assert rows.tolist() == [0, 5, 4, 3, 2, 1]
    np.testing.assert_array_equal(ordered, scores[rows])
