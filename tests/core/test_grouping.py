"""``grouped``: rows by a small integer key, each group in the rows' order, by a one-byte
radix sort up to 256 groups and a packed sort past them; both are numpy's stable argsort."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from evalserve.core._grouping import BYTE_GROUPS, grouped


@settings(max_examples=200, deadline=None)
@given(
    groups=st.sampled_from([1, 2, 7, BYTE_GROUPS, BYTE_GROUPS + 1, 5000]),
    n=st.integers(0, 3000),
    dtype=st.sampled_from([np.uint8, np.uint16, np.int32, np.intp]),
    seed=st.integers(0, 2**32 - 1),
)
def test_grouped_is_the_stable_order_by_key(groups: int, n: int, dtype: type, seed: int) -> None:
    if np.iinfo(dtype).max < groups - 1:
        return
    rng = np.random.default_rng(seed)
    used = int(rng.integers(1, groups + 1))  # some groups empty, the last ones too
    key: NDArray[np.integer[Any]] = rng.integers(0, used, n).astype(dtype)
    order, bounds = grouped(key, groups)
    assert order.dtype == np.intp
    np.testing.assert_array_equal(order, np.argsort(key, kind="stable"))
    assert len(bounds) == groups + 1 and bounds[0] == 0 and bounds[-1] == n
    for g in range(groups):
        assert (key[order[bounds[g] : bounds[g + 1]]] == g).all()


@pytest.mark.parametrize("groups", [4, BYTE_GROUPS + 1])
def test_grouped_rows_of_a_million(groups: int) -> None:
    """Both ways at the size they are timed at."""
    key = np.random.default_rng(groups).integers(0, groups, 1_000_000)
    order, bounds = grouped(key, groups)
    np.testing.assert_array_equal(order, np.argsort(key, kind="stable"))
    np.testing.assert_array_equal(np.diff(bounds), np.bincount(key, minlength=groups))
