"""The rank transform behind the multiclass ranking metrics: locating scores among the
distinct true-class scores must agree with ``np.searchsorted`` and ``np.isin`` exactly, for
any floats: signs, -0.0, subnormals, huge ranges, dense clusters, neighbours one ulp apart."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from numpy.typing import NDArray

from evalserve.core.multiclass._locate import BLOCK, TrueScores, order_keys

Floats = NDArray[np.float64]
finite = st.floats(allow_nan=False, allow_infinity=False)


def _check(truth_values: Floats, scores: Floats) -> None:
    values = np.unique(truth_values + 0.0)
    nonnegative = bool(min(values.min(), scores.min()) >= 0)
    for shortcut in {nonnegative, False}:
        truth = TrueScores.build(values, np.ones(values.size), nonnegative=shortcut)
        located = truth.locate(order_keys(scores, nonnegative=shortcut))
        np.testing.assert_array_equal(located.position, np.searchsorted(values, scores))
        np.testing.assert_array_equal(located.tie, np.isin(scores, values))
        slots = 2 * np.searchsorted(values, scores) + np.isin(scores, values)
        np.testing.assert_array_equal(located.slots, slots)


def _family(rng: np.random.Generator, kind: str) -> tuple[Floats, Floats]:
    m, n = int(rng.integers(1, 3000)), int(rng.integers(1, 3000))
    if kind == "uniform":
        return rng.random(m), rng.random(n)
    if kind == "rounded-normal":
        return np.round(rng.normal(size=m), 1), np.round(rng.normal(size=n), 1)
    if kind == "huge-range":
        truth = np.concatenate([rng.random(m) * 1e-300, [1.0, 1e300, 5e-324]])
        others = np.concatenate([rng.random(n) * 1e-300, rng.random(n), [-1e300, 0.0, -0.0]])
        return truth, others
    if kind == "single":
        value = rng.normal()
        return np.array([value]), np.concatenate([[value, -value], rng.normal(size=n)])
    if kind == "ulps":
        truth = rng.normal(size=m) * 10.0 ** rng.integers(-5, 5)
        near = np.concatenate([np.nextafter(truth, np.inf), np.nextafter(truth, -np.inf)])
        return truth, np.concatenate([truth, near, rng.normal(size=n)])
    if kind == "cluster":  # a dense cluster in a wide range: crowded cells
        cluster = 1000 + rng.random(m) * 1e-9
        truth = np.concatenate([cluster, [0.0, 1e12]])
        return truth, np.concatenate([cluster[: n // 2], 1000 + rng.random(n) * 1e-9, [-0.0]])
    raise AssertionError(kind)


KINDS = ("uniform", "rounded-normal", "huge-range", "single", "ulps", "cluster")


@pytest.mark.parametrize("kind", KINDS)
def test_locate_agrees_with_searchsorted(kind: str) -> None:
    rng = np.random.default_rng(sum(map(ord, kind)))
    for _ in range(25):
        _check(*_family(rng, kind))


def test_locate_over_several_blocks() -> None:
    rng = np.random.default_rng(8)
    truth = np.round(rng.random(5000), 4)
    scores = np.round(rng.random(2 * BLOCK + 123), 4)
    _check(truth, scores)


@settings(max_examples=200, deadline=None)
@given(
    arrays(np.float64, st.integers(1, 40), elements=finite),
    arrays(np.float64, st.integers(1, 40), elements=finite),
)
def test_locate_any_floats(truth: Floats, scores: Floats) -> None:
    _check(truth, np.concatenate([scores, truth]))


@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, st.integers(2, 50), elements=finite))
def test_order_keys_sort_like_the_floats(values: Floats) -> None:
    keys = order_keys(values, nonnegative=False)
    order = np.argsort(values, kind="stable")
    assert np.all(np.diff(keys[order].astype(object)) >= 0)
    equal = values[:, None] == values[None, :]
    np.testing.assert_array_equal(equal, keys[:, None] == keys[None, :])
