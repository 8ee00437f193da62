"""Both classes sorted by one sort of signed keys (core/binary/_signed_keys.py) against a split
and two sorts: the same scores, on one thread and on several, and no keys where a score has its
sign bit set (negative numbers, ``-0.0``)."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalserve.core.binary import _signed_keys
from evalserve.core.binary._classes import classes_of_rows
from evalserve.core.binary._signed_keys import signed_classes

non_negative = st.floats(min_value=0.0, allow_nan=False, allow_infinity=False, width=64).map(
    abs  # +0.0, never -0.0
)
tiny = st.integers(0, 1 << 20).map(lambda k: k * 5e-324)  # subnormals and +0.0
ties = st.sampled_from([0.0, 0.5, 1.0, 1e300])


def _split_and_sorted(labels: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.sort(scores[labels]), np.sort(scores[~labels])


@settings(max_examples=400, deadline=None)
@given(
    rows=st.lists(st.tuples(st.booleans(), non_negative | tiny | ties), max_size=300),
    threads=st.integers(1, 4),
    block=st.sampled_from([1, 7, 64, 1 << 16]),
)
def test_the_classes_are_a_split_and_two_sorts(
    rows: list[tuple[bool, float]], threads: int, block: int
) -> None:
    labels = np.array([label for label, _ in rows], dtype=np.bool_)
    scores = np.array([score for _, score in rows], dtype=np.float64)
    before = scores.copy()
    with mock.patch.object(_signed_keys, "KEY_BLOCK", block):
        got = signed_classes(labels, scores, threads)
    assert got is not None
    for ours, want in zip(got, _split_and_sorted(labels, scores), strict=True):
        assert ours.dtype == np.float64
        np.testing.assert_array_equal(ours, want)
        assert not np.signbit(ours).any()  # every key's sign bit cleared again
    np.testing.assert_array_equal(scores, before)  # the caller's scores are not changed


@pytest.mark.parametrize("bad", [-1.0, -0.0, -5e-324, -1e300])
@pytest.mark.parametrize("at", [0, 4_000, 9_999])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_a_score_with_its_sign_bit_set_takes_the_split(bad: float, at: int, threads: int) -> None:
    """A sign bit anywhere (the first block, a later share's last block) gives no keys, and
    ``classes_of_rows`` then splits: the same classes as a split and two sorts, ``-0.0``
    kept."""
    rng = np.random.default_rng(at)
    labels = rng.random(10_000) < 0.3
    scores = rng.random(10_000)
    scores[at] = bad
    with mock.patch.object(_signed_keys, "KEY_BLOCK", 512):
        assert signed_classes(labels, scores, threads) is None
    positives, negatives = classes_of_rows(labels, scores, None)
    want_positive, want_negative = _split_and_sorted(labels, scores)
    np.testing.assert_array_equal(positives.scores, want_positive)
    np.testing.assert_array_equal(negatives.scores, want_negative)
    held = positives.scores if labels[at] else negatives.scores
    assert np.signbit(held).any()


def test_rows_of_one_class_and_ties() -> None:
    """Every row positive, every row negative, and ties across the classes: each class keeps
    its own count at each score."""
    scores = np.array([0.0, 0.5, 0.5, 1.0, 0.0, 0.5])
    for labels in (np.ones(6, np.bool_), np.zeros(6, np.bool_)):
        got = signed_classes(labels, scores, 1)
        assert got is not None
        whole = got[0] if labels[0] else got[1]
        np.testing.assert_array_equal(whole, np.sort(scores))
        assert (got[1] if labels[0] else got[0]).size == 0
    labels = np.array([True, True, False, False, False, True])
    positives, negatives = classes_of_rows(labels, scores, None)
    np.testing.assert_array_equal(positives.scores, [0.0, 0.5])
    np.testing.assert_array_equal(positives.masses(), [1.0, 2.0])
    np.testing.assert_array_equal(negatives.scores, [0.0, 0.5, 1.0])
    np.testing.assert_array_equal(negatives.masses(), [1.0, 1.0, 1.0])
