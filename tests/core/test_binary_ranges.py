"""The ranges path of task binary (core/binary/_ranges.py) against the one-shot evaluation: the
rows split by score into ranges, each range passed over on its own, the summaries added up,
must give ``evaluate("binary", ...)``'s answer: every metric, undefined value, interval, curve
point and warning. Integer weights and counts give the same numbers to the last bits except
for sums regrouped (AUC pairs, areas), which are compared to 1e-12."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalserve.core import (
    Accumulator,
    EvaluationResult,
    InvalidInputError,
    StateTooLargeError,
    evaluate,
    parse_options,
)
from evalserve.core.binary import _range_rows, _ranges
from evalserve.core.binary._ranges import ranges_result
from evalserve.core.ranges import range_classes, range_rows

OPTION_CASES: list[dict[str, Any]] = [
    {},
    {"max_fpr": 0.3, "head_k": [1, 5, 1000], "threshold": 0.4},
    {"head_k": [0.5, 2.5, 7, 40, 10**6]},  # ndcg_at_{k} too: cuts within and past a range
    {"max_curve_points": 6},
    {"max_curve_points": 2, "auc_interval": "wald"},
    {"max_curve_points": 0, "calibration_bins": 3},
    {
        "recall_at_precision": [0.3, 0.6, 0.95, 1.0],
        "precision_at_recall": [0.1, 0.5, 1.0],
        "tpr_at_fpr": [0.0, 0.05, 0.5],
        "specificity_at_sensitivity": [0.2, 0.9, 1.0],
        "flagged_share": [0.01, 0.3, 1.0],
    },
]


def _split(
    labels: np.ndarray,
    scores: np.ndarray,
    weights: np.ndarray | None,
    cuts: list[float],
    options: dict[str, Any],
) -> EvaluationResult:
    """The ranges (low, high] between ``cuts``, from the top down, each its own accumulator."""
    edges = [-np.inf, *sorted(set(cuts)), np.inf]
    ranges = []
    for low, high in reversed(list(itertools.pairwise(edges))):
        inside = (scores > low) & (scores <= high)
        accumulator = Accumulator("binary", options)
        if inside.any():
            accumulator.update(
                labels[inside],
                scores[inside],
                sample_weight=None if weights is None else weights[inside],
            )
        ranges.append(accumulator.score_classes())
    return ranges_result(ranges, parse_options(options))


def _same(ranged: EvaluationResult, whole: EvaluationResult) -> None:
    assert ranged.n_samples == whole.n_samples
    assert ranged.undefined == whole.undefined
    assert set(ranged.metrics) == set(whole.metrics)
    for name, value in whole.metrics.items():
        if value is None:
            assert ranged.metrics[name] is None, name
        else:
            assert ranged.metrics[name] == pytest.approx(value, rel=1e-12, abs=1e-12), name
    assert set(ranged.intervals) == set(whole.intervals)
    for name, interval in whole.intervals.items():
        for key, value in interval.to_dict().items():
            got = ranged.intervals[name].to_dict()[key]
            if isinstance(value, str):
                assert got == value
            else:
                assert got == pytest.approx(value, rel=1e-9, abs=1e-12), (name, key)
    assert set(ranged.curves) == set(whole.curves)
    for name, curve in whole.curves.items():
        for key, values in curve.items():
            np.testing.assert_allclose(ranged.curves[name][key], values, rtol=1e-12, atol=1e-12)
    bootstrap = [w for w in ranged.warnings if "bootstrap" in w]
    assert [w for w in ranged.warnings if w not in bootstrap] == whole.warnings


@st.composite
def _rows(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, list[float]]:
    n = draw(st.integers(1, 60))
    levels = draw(st.sampled_from([3, 8, 1000]))  # few levels: many ties
    scores = np.array(draw(st.lists(st.integers(0, levels), min_size=n, max_size=n))) / levels
    labels = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    weighted = draw(st.booleans())
    weights = (
        np.array(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)), dtype=float)
        if weighted
        else None
    )
    if weights is not None and not weights.any():
        weights[0] = 1.0
    cuts = draw(
        st.lists(st.sampled_from([*sorted(set(scores.tolist())), 0.5, -1.0, 2.0]), max_size=5)
    )
    return labels, scores, weights, cuts


@settings(max_examples=300, deadline=None)
@given(_rows(), st.sampled_from(OPTION_CASES))
def test_ranges_give_the_whole_answer(
    rows: tuple[np.ndarray, np.ndarray, np.ndarray | None, list[float]], options: dict[str, Any]
) -> None:
    labels, scores, weights, cuts = rows
    whole = evaluate("binary", labels, scores, sample_weight=weights, options=options)
    _same(_split(labels, scores, weights, cuts, options), whole)


@settings(max_examples=200, deadline=None)
@given(_rows(), st.sampled_from(OPTION_CASES), st.sampled_from([1, 2, 3, 7]))
def test_passes_in_blocks_give_the_whole_answer(
    rows: tuple[np.ndarray, np.ndarray, np.ndarray | None, list[float]],
    options: dict[str, Any],
    block: int,
) -> None:
    """Passes 2 and 3 run over each range's hits block by block (``PASS_BLOCK``, 32,768 hits):
    blocks of a few hits put every boundary case (the top hit, the envelope carried up, the
    negatives between hits across blocks, the first tie found in a later block) at a block's
    edge."""
    labels, scores, weights, cuts = rows
    whole = evaluate("binary", labels, scores, sample_weight=weights, options=options)
    saved = _ranges.PASS_BLOCK
    _ranges.PASS_BLOCK = block
    try:
        _same(_split(labels, scores, weights, cuts, options), whole)
    finally:
        _ranges.PASS_BLOCK = saved


@pytest.mark.parametrize("options", OPTION_CASES)
def test_continuous_scores_many_ranges(options: dict[str, Any]) -> None:
    rng = np.random.default_rng(7)
    n = 20_000
    labels = rng.random(n) < 0.3
    scores = np.clip(rng.normal(labels * 0.8, 1.0) / 4 + 0.5, 0, 1)
    cuts = np.quantile(scores, np.linspace(0, 1, 17)[1:-1]).tolist()
    whole = evaluate("binary", labels, scores, options=options)
    _same(_split(labels, scores, None, cuts, options), whole)


def test_bootstrap_is_named_not_computed() -> None:
    labels = np.array([0, 1, 0, 1, 1, 0])
    scores = np.array([0.1, 0.9, 0.4, 0.6, 0.3, 0.2])
    result = _split(labels, scores, None, [0.35], {"bootstrap_replicates": 200})
    assert any("bootstrap" in warning for warning in result.warnings)
    assert "f1" not in result.intervals  # the bootstrap's; the Wilson and DeLong ones remain
    assert "roc_auc" in result.intervals


def test_a_single_class_is_undefined_not_zero() -> None:
    labels = np.ones(5)
    scores = np.linspace(0.1, 0.9, 5)
    ranged = _split(labels, scores, None, [0.5], {})
    assert ranged.metrics["roc_auc"] is None
    assert "only one class" in ranged.undefined["roc_auc"]
    _same(ranged, evaluate("binary", labels, scores))


def test_ndcg_sums_each_range_given_the_mass_above_it() -> None:
    """A range's DCG counts its hits at their places in the whole ranking: cuts in the top
    range, across several ranges and past the total, weighted and tied."""
    rng = np.random.default_rng(11)
    n = 3_000
    labels = rng.random(n) < 0.25
    scores = np.round(rng.random(n), 2)
    weights = rng.uniform(0.0, 3.0, n).round(1)
    options = {"head_k": [3, 99.5, 1500, 4000.25, 10**5]}
    whole = evaluate("binary", labels, scores, sample_weight=weights, options=options)
    ranged = _split(labels, scores, weights, [0.2, 0.5, 0.9, 0.95], options)
    names = [f"ndcg_at_{k}" for k in ("3", "99.5", "1500", "4000.25", "100000")]
    for name in names:
        assert ranged.metrics[name] == pytest.approx(whole.metrics[name], rel=1e-12), name
    _same(ranged, whole)


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    cuts=st.lists(st.sampled_from([-1.0, -0.25, 0.0, 0.25, 0.5, 1.5]), max_size=4),
    weighted=st.booleans(),
)
def test_range_rows_place_every_row_in_its_range(
    seed: int, cuts: list[float], weighted: bool
) -> None:
    """``range_rows`` (a batch split into every range at once) gives each range the rows whose
    score lies in (low, high], in their order, and the ranges joined by ``range_classes`` give
    the classes one state of the rows holds (counts and integer weights: to the bit)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 60))
    labels = rng.random(n) < 0.4
    scores = np.round(rng.normal(size=n), 1)  # ties, and scores on the cuts
    weights = rng.integers(0, 3, n).astype(np.float64) if weighted else None
    edges = sorted(set(cuts))
    pieces = range_rows(labels, scores, weights, edges)
    bounds = [-np.inf, *edges, np.inf]
    assert len(pieces) == len(edges) + 1
    for piece, (low, high) in zip(pieces, reversed(list(itertools.pairwise(bounds))), strict=True):
        inside = (scores > low) & (scores <= high)
        assert piece.n_rows == int(inside.sum())
        for part, chosen in (
            (piece.positives, inside & labels),
            (piece.negatives, inside & ~labels),
        ):
            np.testing.assert_array_equal(part.scores, scores[chosen])
            if weights is not None:
                assert part.weights is not None
                np.testing.assert_array_equal(part.weights, weights[chosen])
    if n == 0:
        return
    joined = range_classes(pieces)
    accumulator = Accumulator("binary").update(labels, scores, sample_weight=weights)
    positives, negatives, rows, was_weighted = accumulator.score_classes()
    for got, want in ((joined.positives, positives), (joined.negatives, negatives)):
        np.testing.assert_array_equal(got.scores, want.scores)
        np.testing.assert_array_equal(got.masses(), want.masses())
    assert (joined.n_rows, joined.weighted) == (rows, was_weighted)


@pytest.mark.parametrize("cuts", [1, 40, 300])
def test_range_rows_count_ranges_by_comparison_and_by_search_alike(cuts: int) -> None:
    """Up to ``COMPARED_CUTS`` cuts a row's range is counted by comparisons (block by block),
    past it by a binary search: both put every row where its score lies, scores on a cut
    included (in the range below it: (low, high])."""
    rng = np.random.default_rng(cuts)
    n = 3 * _range_rows.BLOCK + 17  # several blocks and a short one
    scores = np.round(rng.normal(size=n), 2)
    labels = rng.random(n) < 0.3
    edges = np.unique(np.round(rng.normal(size=cuts), 2))
    edges = np.unique(np.concatenate([edges, scores[:3]]))  # rows on a cut
    assert (edges.size > _range_rows.COMPARED_CUTS) == (cuts > 64)  # both ways are taken
    pieces = range_rows(labels, scores, None, list(edges))
    bounds = [-np.inf, *edges, np.inf]
    for piece, (low, high) in zip(pieces, reversed(list(itertools.pairwise(bounds))), strict=True):
        inside = (scores > low) & (scores <= high)
        np.testing.assert_array_equal(piece.positives.scores, scores[inside & labels])
        np.testing.assert_array_equal(piece.negatives.scores, scores[inside & ~labels])


def test_range_cuts_share_the_work_not_the_rows() -> None:
    """Positives (the hits every pass works on) weigh ``HIT_COST`` negatives: where the
    positives crowd the high scores, the top ranges hold fewer rows, and every range about
    the same work."""
    rng = np.random.default_rng(5)
    n = 200_000
    labels = rng.random(n) < 0.3
    scores = rng.normal(size=n) + 2.0 * labels
    count = 4
    cuts = _range_rows.range_cuts(scores, labels, count)
    assert len(cuts) == count - 1 and cuts == sorted(set(cuts))
    bounds = [-np.inf, *cuts, np.inf]
    work, rows = [], []
    for low, high in itertools.pairwise(bounds):
        inside = (scores > low) & (scores <= high)
        rows.append(int(inside.sum()))
        work.append(float(inside.sum() + (_range_rows.HIT_COST - 1) * (inside & labels).sum()))
    assert max(work) - min(work) <= 2 * _range_rows.HIT_COST
    assert rows[-1] < rows[0] / 2  # the top range: mostly positives, fewer rows


def test_range_cuts_of_a_degenerate_sample() -> None:
    labels = np.array([True, False, True])
    assert _range_rows.range_cuts(np.ones(3), labels, 4) == []  # one score: one range
    assert _range_rows.range_cuts(np.arange(3.0), labels, 1) == []
    assert _range_rows.range_cuts(np.empty(0), np.empty(0, dtype=bool), 3) == []
    cuts = _range_rows.range_cuts(np.array([0.0, 0.0, 0.0, 1.0]), labels[[0, 1, 2, 0]], 2)
    assert cuts == [0.0]  # the ties stay in one range


def test_range_rows_name_a_bad_row_as_evaluate_does() -> None:
    with pytest.raises(InvalidInputError) as refused:
        range_rows([0, 1, 2], [0.1, 0.2, 0.3], None, [0.15])
    assert refused.value.field == "labels"
    assert "row 2" in refused.value.message


def test_a_range_over_its_cap_is_refused() -> None:
    pieces = range_rows([0, 1] * 50, np.linspace(0, 1, 100), None, [0.5])
    with pytest.raises(StateTooLargeError):
        range_classes(pieces[:1], max_bytes=100)
