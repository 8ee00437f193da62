"""The sweep and the compute of a large evaluation (core/binary/_sweep.py, the PR areas, KS and
curve points): the sweep's per-hit arrays of the positives' side are views, and the passes over
the hits go in blocks, so what the compute holds beside the sweep is a few blocks, not several
arrays of every hit. Blocked or whole, the answers are the same."""

from __future__ import annotations

import tracemalloc
from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from evalserve.core._options import parse_options
from evalserve.core._threads import using_threads
from evalserve.core.binary import _precision_recall, _ranking, _suite, _sweep
from evalserve.core.binary._classes import classes_of_rows
from evalserve.core.binary._sweep import sweep, sweep_of_rows

properties = settings(max_examples=200, deadline=None)


@properties
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 300),
    ties=st.booleans(),
    weights=st.sampled_from([None, "whole", "fractions"]),
    block=st.integers(1, 9),
)
def test_blocked_passes_over_the_hits_equal_the_whole_pass(
    seed: int, n: int, ties: bool, weights: str | None, block: int
) -> None:
    rng = np.random.default_rng(seed)
    labels = rng.random(n) < 0.4
    labels[:2] = [True, False]
    scores = rng.integers(0, 7, n) / 6 if ties else rng.random(n)
    w = None
    if weights == "whole":
        w = rng.integers(1, 4, n).astype(np.float64)
    elif weights == "fractions":
        w = rng.uniform(0.1, 3.0, n)
    s = sweep_of_rows(labels, scores, w)
    whole_areas, whole_ks = _precision_recall.pr_areas(s), _ranking.ks_and_youden(s)
    whole_auc, whole_f1 = _ranking.roc_auc(s), _ranking.f1_optimal_threshold(s)
    whole_partial = [_ranking.partial_roc_auc(s, m) for m in (0.05, 0.3, 1.0)]
    with (
        mock.patch.object(_precision_recall, "PR_BLOCK", block),
        mock.patch.object(_ranking, "KS_BLOCK", block),
    ):
        areas, ks = _precision_recall.pr_areas(s), _ranking.ks_and_youden(s)
        auc, f1 = _ranking.roc_auc(s), _ranking.f1_optimal_threshold(s)
        partial = [_ranking.partial_roc_auc(s, m) for m in (0.05, 0.3, 1.0)]
    assert ks == whole_ks  # maxima and first positions: exact
    assert f1 == whole_f1
    assert abs(auc - whole_auc) <= 1e-12 * whole_auc  # pairs summed by block
    np.testing.assert_allclose(partial, whole_partial, rtol=1e-12)
    assert areas.ap_11_point == whole_areas.ap_11_point
    # The sums of precisions go block by block: the same terms, added in another order.
    np.testing.assert_allclose(areas, whole_areas, rtol=1e-12)


def test_the_sweep_views_the_positives_arrays() -> None:
    rng = np.random.default_rng(2)
    labels = rng.random(1000) < 0.3
    scores = np.round(rng.random(1000), 2)
    positives, negatives = classes_of_rows(labels, scores, None)
    s = sweep(positives, negatives)
    assert positives.mass is not None and positives.from_top is not None
    assert np.shares_memory(s.thresholds, positives.scores)
    assert np.shares_memory(s.pos, positives.mass)
    assert np.shares_memory(s.tps, positives.from_top)
    assert np.shares_memory(s.tps_above, positives.from_top)
    np.testing.assert_array_equal(s.tps_above[1:], s.tps[:-1])
    assert s.tps_above[0] == 0.0


def test_the_compute_holds_blocks_beside_the_sweep() -> None:
    """2M rows of distinct scores, blocks of 16k hits: the compute's own peak is under a
    third of the classes' bytes (it was 1.2x: the curve points and the PR areas made several
    arrays of every hit), the sweep's peak under 1.5x (it was 1.9x)."""
    rng = np.random.default_rng(7)
    n = 2_000_000
    labels = rng.random(n) < 0.3
    scores = np.clip(rng.normal(0.35 + 0.3 * labels, 0.2), 0.0, 1.0)  # ties at 0 and 1
    options = parse_options(None)
    with (
        using_threads(1),
        mock.patch.object(_precision_recall, "PR_BLOCK", 1 << 14),
        mock.patch.object(_ranking, "KS_BLOCK", 1 << 14),
    ):
        positives, negatives = classes_of_rows(labels, scores, None)
        state = 16 * (positives.size + negatives.size)
        tracemalloc.start()
        try:
            s = sweep(positives, negatives)
            held, sweep_peak = tracemalloc.get_traced_memory()
            tracemalloc.reset_peak()
            _suite.compute(s, options, n_rows=n)
            _, compute_peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert sweep_peak < 1.5 * state, sweep_peak / state
    assert compute_peak - held < 0.34 * state, (compute_peak - held) / state


@properties
@given(
    seed=st.integers(0, 2**32 - 1),
    keys=st.integers(0, 300),
    haystack=st.integers(0, 300),
    chunk=st.integers(1, 9),
    ties=st.booleans(),
)
def test_the_chunked_search_of_sorted_keys_is_numpys(
    seed: int, keys: int, haystack: int, chunk: int, ties: bool
) -> None:
    """The positives' places among the negatives, searched chunk by chunk of keys, each chunk
    only between its first and last key's places: numpy's answer for every key."""
    rng = np.random.default_rng(seed)

    def values(n: int) -> np.ndarray:
        return np.sort(rng.integers(0, 20, n) / 4 if ties else rng.random(n))

    sorted_keys, sorted_haystack = values(keys), values(haystack)
    out = np.empty(keys, dtype=np.intp)
    with mock.patch.object(_sweep, "SEARCH_CHUNK", chunk):
        ends = _sweep._chunk_ends(sorted_haystack, sorted_keys)
        _sweep._sorted_search(sorted_haystack, sorted_keys, out, ends, range(ends.size))
    np.testing.assert_array_equal(out, np.searchsorted(sorted_haystack, sorted_keys, "left"))
