"""``ndcg_at_{k}`` of task binary (core/binary/_ndcg.py) against its references.

* scikit-learn's ``ndcg_score([labels], [scores], k=k, ignore_ties=False)`` on unweighted rows
  with heavy ties (few score levels), every integer k from 1 to past the row count;
* integer weights against the same rows repeated (and scikit-learn on those rows);
* the definition itself: the expected DCG over every order of the tied rows, enumerated, and
  for fractional weights and k the discount integrated rank by rank in plain Python;
* the discount sums the module builds on: the table and its Euler-Maclaurin continuation
  against exact sums (``math.fsum``) and against scipy's exponential integral far beyond them,
  and runs of ranks deep in the ranking against their terms summed exactly;
* merged states (batches through ``Accumulator``) give the one-shot answer exactly.

The ranges path is compared with the one-shot answer in tests/core/test_binary_ranges.py.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
import scipy.special
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray
from sklearn.metrics import ndcg_score

from evalserve.core import Accumulator, evaluate
from evalserve.core.binary._ndcg import (
    NO_IDEAL,
    SHORT,
    TABLE,
    _li,
    discount_sums,
    rank_sums,
)

Floats = NDArray[np.float64]
Bools = NDArray[np.bool_]


def _discount(rank: int) -> float:
    return 1.0 / math.log2(rank + 1)


def _exact_rank_sum(first: int, count: int) -> float:
    """The discount of ranks first + 1 .. first + count, each term rounded once, summed exactly."""
    ranks = np.arange(first + 1, first + count + 1, dtype=np.float64)
    return math.fsum((1.0 / np.log2(ranks + 1.0)).tolist())


def _sklearn(labels: Bools, scores: Floats, k: int) -> float:
    return float(ndcg_score([labels.astype(float)], [scores], k=k, ignore_ties=False))


def _tied_rows(rng: np.random.Generator) -> tuple[Bools, Floats]:
    n = int(rng.integers(2, 300))
    levels = int(rng.integers(1, 7))  # few levels: heavy ties
    labels = rng.random(n) < rng.uniform(0.05, 0.9)
    return labels, rng.integers(0, levels, n).astype(np.float64)


# --- scikit-learn ------------------------------------------------------------------------------


@pytest.mark.parametrize("case", range(60))
def test_ndcg_matches_sklearn_with_heavy_ties(case: int) -> None:
    rng = np.random.default_rng([11, case])
    labels, scores = _tied_rows(rng)
    n = labels.size
    ks = sorted({1, 2, int(rng.integers(1, n + 1)), int(rng.integers(1, n + 1)), n, n + 7})
    result = evaluate("binary", labels, scores, options={"head_k": ks})
    for k in ks:
        name = f"ndcg_at_{k}"
        if not labels.any():
            assert result.metrics[name] is None
            assert result.undefined[name] == NO_IDEAL
            continue
        value = result.metrics[name]
        assert value == pytest.approx(_sklearn(labels, scores, k), rel=1e-12, abs=1e-15), name
    assert any("head_k" in warning for warning in result.warnings)  # n + 7 is capped


def test_continuous_scores_match_sklearn_deep_in_the_ranking() -> None:
    rng = np.random.default_rng(5)
    n = 200_000
    labels = rng.random(n) < 0.02
    scores = np.round(rng.normal(labels * 1.5, 1.0), 2)  # ties of every size
    ks = [1, 10, 5_000, 150_000, n]
    result = evaluate("binary", labels, scores, options={"head_k": ks})
    for k in ks:
        got = result.metrics[f"ndcg_at_{k}"]
        assert got == pytest.approx(_sklearn(labels, scores, k), rel=1e-11), k


def test_no_positives_is_null_and_only_positives_is_one() -> None:
    scores = np.array([0.3, 0.3, 0.9, 0.1])
    none = evaluate("binary", np.zeros(4, bool), scores, options={"head_k": [2, 2.5]})
    for name in ("ndcg_at_2", "ndcg_at_2.5"):
        assert none.metrics[name] is None
        assert "ideal DCG is 0" in none.undefined[name]
    every = evaluate("binary", np.ones(4, bool), scores, options={"head_k": [1, 2.5, 10]})
    found = [every.metrics[f"ndcg_at_{k}"] for k in ("1", "2.5", "10")]
    assert found == pytest.approx([1.0, 1.0, 1.0], rel=1e-15)


def test_a_worked_example() -> None:
    """Ranks 1-2 tied (one positive of two), rank 3 positive, rank 4 negative: at k = 3 the DCG
    is (1 + 1/log2 3) / 2 + 1/2 and the ideal 1 + 1/log2 3."""
    labels = np.array([True, False, True, False])
    scores = np.array([0.9, 0.9, 0.5, 0.1])
    result = evaluate("binary", labels, scores, options={"head_k": [3]})
    dcg = (1 + 1 / math.log2(3)) / 2 + 1 / 2
    assert result.metrics["ndcg_at_3"] == pytest.approx(dcg / (1 + 1 / math.log2(3)), rel=1e-15)


# --- weights ----------------------------------------------------------------------------------


@pytest.mark.parametrize("case", range(40))
def test_integer_weights_are_repeated_rows(case: int) -> None:
    rng = np.random.default_rng([13, case])
    labels, scores = _tied_rows(rng)
    weights = rng.integers(0, 5, labels.size).astype(np.float64)
    weights[0] = max(weights[0], 1.0)
    total = int(weights.sum())
    ks = sorted({1, 3.5, int(rng.integers(1, total + 1)), total / 2, total})
    weighted = evaluate("binary", labels, scores, sample_weight=weights, options={"head_k": ks})
    counts = weights.astype(np.intp)
    rows = np.repeat(labels, counts), np.repeat(scores, counts)
    repeated = evaluate("binary", *rows, options={"head_k": ks})
    for k in ks:
        name = f"ndcg_at_{k:g}"
        assert weighted.metrics[name] == pytest.approx(repeated.metrics[name], rel=1e-12), name
        if rows[0].any() and float(k).is_integer() and total > 1:
            expected = _sklearn(*rows, int(k))
            assert weighted.metrics[name] == pytest.approx(expected, rel=1e-12, abs=1e-15)


def _integrated_dcg(labels: Bools, scores: Floats, weights: Floats, k: float) -> float:
    """The definition in plain Python: every tie group spans its mass on the rank axis (rank r
    covers (r - 1, r]); each unit of it carries the group's mean gain and the discount of the
    rank it lies in; only the mass up to k counts."""
    dcg = 0.0
    above = 0.0
    for score in sorted(set(scores[weights > 0].tolist()), reverse=True):
        group = scores == score
        mass = math.fsum(weights[group])
        gain = math.fsum(weights[group & labels]) / mass
        start, stop = above, min(above + mass, k)
        rank = math.floor(start) + 1
        while rank - 1 < stop:
            overlap = min(stop, rank) - max(start, rank - 1)
            dcg += gain * max(overlap, 0.0) * _discount(rank)
            rank += 1
        above += mass
    return dcg


@st.composite
def _weighted_rows(draw: st.DrawFn) -> tuple[Bools, Floats, Floats, float]:
    n = draw(st.integers(1, 25))
    levels = draw(st.sampled_from([1, 2, 4, 100]))
    scores = np.array(draw(st.lists(st.integers(0, levels), min_size=n, max_size=n)), float)
    labels = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    unit = st.floats(0.0, 6.0, allow_nan=False).map(lambda w: round(w, 3))
    weights = np.array(draw(st.lists(unit, min_size=n, max_size=n)))
    if weights.sum() <= 0:
        weights[0] = 1.0
    k = draw(st.floats(0.001, 1.2 * float(weights.sum()), allow_nan=False))
    return labels, scores, weights, round(k, 3) or 0.001


@settings(max_examples=300, deadline=None)
@given(_weighted_rows())
def test_fractional_weights_follow_the_integrated_definition(
    rows: tuple[Bools, Floats, Floats, float],
) -> None:
    labels, scores, weights, k = rows
    result = evaluate("binary", labels, scores, sample_weight=weights, options={"head_k": [k]})
    name = f"ndcg_at_{k!r}" if not float(k).is_integer() else f"ndcg_at_{int(k)}"
    positives = math.fsum(weights[labels])
    if positives == 0:
        assert result.metrics[name] is None
        return
    cut = min(k, math.fsum(weights))
    ideal = _integrated_dcg(np.ones(1, bool), np.zeros(1), np.array([positives]), cut)
    expected = _integrated_dcg(labels, scores, weights, cut) / ideal
    assert result.metrics[name] == pytest.approx(expected, rel=1e-12, abs=1e-15)


def _enumerated_dcg(labels: Bools, scores: Floats, k: int) -> float:
    """The mean DCG@k over every arrangement of the positives inside each tie group."""
    dcg = 0.0
    position = 0
    for score in sorted(set(scores.tolist()), reverse=True):
        group = scores == score
        size, hits = int(group.sum()), int((group & labels).sum())
        places = list(itertools.combinations(range(size), hits))
        total = math.fsum(
            _discount(position + place + 1)
            for chosen in places
            for place in chosen
            if position + place < k
        )
        dcg += total / len(places)
        position += size
    return dcg


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.booleans(), st.integers(0, 3)), min_size=1, max_size=10),
    st.integers(1, 12),
)
def test_ties_are_the_expected_dcg_over_every_order(rows: list[tuple[bool, int]], k: int) -> None:
    labels = np.array([label for label, _ in rows])
    scores = np.array([score for _, score in rows], dtype=np.float64)
    result = evaluate("binary", labels, scores, options={"head_k": [k]})
    positives = int(labels.sum())
    if not positives:
        assert result.metrics[f"ndcg_at_{k}"] is None
        return
    ideal = math.fsum(_discount(rank) for rank in range(1, min(positives, k) + 1))
    expected = _enumerated_dcg(labels, scores, k) / ideal
    assert result.metrics[f"ndcg_at_{k}"] == pytest.approx(expected, rel=1e-12, abs=1e-15)


# --- merged states -----------------------------------------------------------------------------


def test_merged_states_give_the_one_shot_answer() -> None:
    rng = np.random.default_rng(3)
    n = 5_000
    labels = rng.random(n) < 0.2
    scores = np.round(rng.random(n), 2)
    weights = rng.integers(0, 4, n).astype(np.float64)
    options: dict[str, Any] = {"head_k": [1, 10, 99.5, 2_000, 10**6]}
    whole = evaluate("binary", labels, scores, sample_weight=weights, options=options)
    accumulator = Accumulator("binary", options)
    for part in np.array_split(np.arange(n), 7):
        accumulator.update(labels[part], scores[part], sample_weight=weights[part])
    merged = accumulator.result()
    names = [name for name in whole.metrics if name.startswith("ndcg_at_")]
    assert names == ["ndcg_at_1", "ndcg_at_10", "ndcg_at_99.5", "ndcg_at_2000", "ndcg_at_1000000"]
    assert {name: merged.metrics[name] for name in names} == {
        name: whole.metrics[name] for name in names
    }


# --- the discount sums --------------------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 2, 1_000, TABLE - 1, TABLE, TABLE + 1, 10**5, 3 * 10**6])
def test_rank_sums_are_exact_sums(n: int) -> None:
    got = float(rank_sums(np.array([float(n)]))[0])
    assert got == pytest.approx(_exact_rank_sum(0, n), rel=1e-15, abs=0.0)


def test_the_logarithmic_integral_matches_scipy() -> None:
    """li(x) = Ei(ln x) inherits the rounding of ln x times ln x (Ei's condition number): both
    evaluations agree within a few ln(x) ulps, 8e-14 at 1e300."""
    x = np.logspace(math.log10(TABLE + 1.0), 300.0, 400)
    expected = scipy.special.expi(np.log(x))
    allowed = 4 * np.log(x) * np.finfo(np.float64).eps
    assert (np.abs(_li(x) / expected - 1) <= allowed).all()


@pytest.mark.parametrize("n", [10**7, 10**9, 10**12, 10**15, 10**18, 1e300])
def test_euler_maclaurin_far_beyond_exact_sums(n: float) -> None:
    """S(n) from an exact sum up to 3e6 continued by Euler-Maclaurin with scipy's Ei and four
    correction terms (the module's continues from TABLE, with its own li and two terms): the
    two agree to 1e-13 relative (li's own conditioning, a few ln(n) ulps), inside the 1e-12
    promised for large ranks."""
    base = 3 * 10**6
    ends = np.array([float(base), float(n)])
    u = ends + 1.0
    z, v = 1.0 / np.log(u), 1.0 / u
    ln2 = math.log(2.0)
    f1 = -ln2 * z * z * v
    f3 = -ln2 * z * z * (2 + 6 * z + 6 * z * z) * v**3
    f5 = -ln2 * z * z * (24 + z * (100 + z * (210 + z * (240 + 120 * z)))) * v**5
    parts = ln2 * scipy.special.expi(np.log(u)) + ln2 * z / 2 + f1 / 12 - f3 / 720 + f5 / 30240
    expected = _exact_rank_sum(0, base) + float(parts[1] - parts[0])
    assert float(rank_sums(np.array([float(n)]))[0]) == pytest.approx(expected, rel=1e-13)


def _runs() -> list[tuple[int, int]]:
    """Runs of whole ranks (first, count) deep in the ranking, on both sides of the switch from
    the midpoint series to the difference of S at count = (centre + 1) / SHORT."""
    runs: list[tuple[int, int]] = []
    for first in (0, 1, 5, 100, TABLE - 3, 10**5, 10**7, 10**12):
        switch = max(1, int((first + 1) / (SHORT - 0.5)))
        counts = {1, 2, 3, switch - 1, switch, switch + 1, 2 * switch, 4 * switch}
        runs.extend((first, count) for count in sorted(counts) if 1 <= count <= 400_000)
    return runs


@pytest.mark.parametrize(("first", "count"), _runs())
def test_runs_of_ranks_keep_their_digits(first: int, count: int) -> None:
    """A short run (SHORT * count <= centre + 1: every single rank) is summed from its own
    terms, never as the difference of two large sums: within 1e-14 (a single rank at 1e7 as a
    difference of S would keep 1e-9). A longer run is such a difference, which loses at most a
    factor 2 SHORT on S's few ln(n) ulps."""
    got = float(discount_sums(np.array([float(first)]), np.array([float(first + count)]))[0])
    centre = first + (count + 1) / 2
    short = SHORT * count <= centre + 1
    eps = float(np.finfo(np.float64).eps)
    allowed = 1e-14 if short else 2 * SHORT * 4 * math.log(first + count + 1) * eps
    assert got == pytest.approx(_exact_rank_sum(first, count), rel=allowed)


def test_fractional_stretches_take_their_share_of_each_rank() -> None:
    start = np.array([0.0, 2.3, 2.3, 0.25, 9.0])
    stop = np.array([0.5, 2.7, 5.5, 1.0, 9.0])
    expected = [
        0.5,
        0.4 * _discount(3),
        0.7 * _discount(3) + _discount(4) + _discount(5) + 0.5 * _discount(6),
        0.75,
        0.0,
    ]
    np.testing.assert_allclose(discount_sums(start, stop), expected, rtol=1e-14, atol=1e-16)
