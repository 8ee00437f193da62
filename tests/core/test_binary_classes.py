"""Merging one class's scores (core/binary/_classes.py): the canonical and raw parts a state
folds give what one sort of every row gives (to the last bit with counts and integer
weights)."""

from __future__ import annotations

from typing import Any
from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from evalserve.core.binary import _classes as classes_module
from evalserve.core.binary._classes import (
    ClassScores,
    RawScores,
    merge_classes,
    unweighted_class,
    weighted_class,
)

properties = settings(max_examples=300, deadline=None)


def _part(rng: np.random.Generator, ties: bool, weights: str | None) -> tuple[Any, Any]:
    n = int(rng.integers(0, 60))
    scores = rng.integers(0, 12, n) / 4 if ties else rng.normal(size=n)
    if weights is None:
        return scores, None
    if weights == "whole":
        return scores, rng.integers(0, 4, n).astype(np.float64)
    return scores, rng.uniform(0.1, 3.0, n)


def _canonical(scores: Any, weights: Any) -> ClassScores:
    if weights is None:
        return unweighted_class(np.array(scores, dtype=np.float64))
    return weighted_class(np.asarray(scores, dtype=np.float64), np.asarray(weights))


def _one_sort(drawn: list[tuple[Any, Any]], weights: str | None) -> ClassScores:
    """The class of every drawn part's rows, by one sort."""
    every = np.concatenate([scores for scores, _ in drawn])
    if weights is None:
        return _canonical(every, None)
    return _canonical(every, np.concatenate([w for _, w in drawn]))


def _same(got: ClassScores, expected: ClassScores, exact: bool) -> None:
    np.testing.assert_array_equal(got.scores, expected.scores)
    if exact:
        np.testing.assert_array_equal(got.masses(), expected.masses())
        assert (got.mass is None) == (expected.mass is None)
    else:
        np.testing.assert_allclose(got.masses(), expected.masses(), rtol=1e-12)


@properties
@given(
    seed=st.integers(0, 2**32 - 1),
    parts=st.integers(1, 6),
    ties=st.booleans(),
    weights=st.sampled_from([None, "whole", "fractions"]),
    folded=st.integers(0, 6),
)
def test_merged_parts_equal_one_sort_of_every_row(
    seed: int, parts: int, ties: bool, weights: str | None, folded: int
) -> None:
    """Some parts canonical (folded earlier), the rest raw: the merge is the class one sort
    of all their rows makes; masses of a shared score added, weight-0 scores dropped."""
    rng = np.random.default_rng(seed)
    drawn = [_part(rng, ties, weights) for _ in range(parts)]
    given_parts: list[ClassScores | RawScores] = [
        _canonical(scores, w) if i < folded else RawScores(np.asarray(scores, np.float64), w)
        for i, (scores, w) in enumerate(drawn)
    ]
    expected = _one_sort(drawn, weights)
    _same(merge_classes(given_parts), expected, exact=weights != "fractions")


def test_raw_parts_are_left_as_they_came() -> None:
    """A fold sorts a copy: the waiting batches a state shares with its copies are unchanged."""
    scores = np.array([0.5, 0.1, 0.3])
    merge_classes([RawScores(scores, None)])
    np.testing.assert_array_equal(scores, [0.5, 0.1, 0.3])


@properties
@given(
    seed=st.integers(0, 2**32 - 1),
    parts=st.integers(2, 6),
    ties=st.booleans(),
    weights=st.sampled_from([None, "whole", "fractions"]),
    stretch=st.integers(1, 40),
)
def test_canonical_parts_merge_stretch_by_stretch_as_one_sort(
    seed: int, parts: int, ties: bool, weights: str | None, stretch: int
) -> None:
    """Canonical parts only (merged states, a Dask tree's partitions), lowered thresholds so
    that every size goes stretch by stretch of the score axis: the class one sort of all
    their rows makes, with integer masses to the last bit."""
    rng = np.random.default_rng(seed)
    drawn = [_part(rng, ties, weights) for _ in range(parts)]
    given_parts = [_canonical(scores, w) for scores, w in drawn]
    expected = _one_sort(drawn, weights)
    with (
        mock.patch.object(classes_module, "CHUNKED_MERGE_MIN", 0),
        mock.patch.object(classes_module, "MERGE_STRETCH", stretch),
    ):
        got = merge_classes(given_parts)
    _same(got, expected, exact=weights != "fractions")
    got_top, expected_top = got.from_top, expected.from_top
    if got_top is not None and expected_top is not None:
        np.testing.assert_allclose(got_top, expected_top, rtol=1e-12)


def test_from_top_is_summed_when_first_read() -> None:
    part = weighted_class(np.array([0.3, 0.1, 0.3, 0.7]), np.array([1.0, 2.0, 0.5, 0.25]))
    assert part._from_top == []  # nothing summed at construction
    np.testing.assert_array_equal(part.from_top, [0.0, 0.25, 1.75, 3.75])
    assert part.from_top is part.from_top  # once
    assert part.total == 3.75
