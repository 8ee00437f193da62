"""Invariants of every binary metric, checked by Hypothesis on small, tie-heavy and degenerate
inputs (sklearn ``metrics/tests/test_common.py`` style, but over whole results).

Weights are small integers where a test compares exactly: their sums are exact in float64, so
any difference is the core's, not rounding's. Float weights get the same invariants to 1e-9.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from numpy.typing import NDArray

from evalserve import core
from evalserve.core.binary._points import curve_points, every_point
from evalserve.core.binary._sweep import sweep_of_rows

Floats = NDArray[np.float64]
Bools = NDArray[np.bool_]

ALL_POINTS = 100_000  # the option's largest value: every point of these tests' curves
OPTIONS: dict[str, Any] = {
    "threshold": 0.5,
    "beta": 2.0,
    "head_k": [1, 2.5, 4, 100],
    "max_fpr": 0.3,
    "calibration_bins": 4,
    "max_curve_points": ALL_POINTS,
}
# Ranking metrics: functions of the order of the scores (and its ties) alone.
RANK_METRICS = (
    "roc_auc",
    "roc_auc_partial",
    "average_precision",
    "pr_auc_trapezoid",
    "ap_11_point",
    "ap_all_point",
    "break_even_point",
    "ks_statistic",
)
# Thresholds chosen by an argmax: a last-ulp difference in a float sum may move a tie.
ARGMAX_THRESHOLDS = ("ks_threshold", "optimal_threshold_youden", "optimal_threshold_f1")
# With fractional float weights, sums in another order differ in the last ulp. These metrics
# jump there: the two above at exact ties, and ap_11_point where recall is exactly i/10 (weights
# of 0.001 each: 4 of 20 positives may sum to a recall just under 0.2).
STEP_METRICS = ("ap_11_point", *ARGMAX_THRESHOLDS)

properties = settings(max_examples=200, deadline=None)


@dataclass(frozen=True, eq=False)
class Rows:
    y: Bools
    s: Floats
    w: Floats | None

    @property
    def size(self) -> int:
        return int(self.y.size)

    def take(self, index: NDArray[np.intp] | slice) -> Rows:
        return Rows(self.y[index], self.s[index], None if self.w is None else self.w[index])

    def evaluate(self, options: dict[str, Any] | None = None) -> core.EvaluationResult:
        return core.evaluate(
            "binary", self.y, self.s, sample_weight=self.w, options=options or OPTIONS
        )

    def stats(self) -> core.BinaryStats:
        return core.BinaryStats.from_arrays(self.y, self.s, self.w)


# Scores on a grid of eighths: heavy ties, exact under 3x + 1, distinct under exp.
GRID = st.integers(0, 8).map(lambda i: i / 8)
ANY_PROBABILITY = st.floats(0.0, 1.0, allow_nan=False, allow_subnormal=False)
ANY_SCORE = st.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=False)
INT_WEIGHT = st.integers(0, 3).map(float)
FLOAT_WEIGHT = st.one_of(st.just(0.0), st.floats(1e-3, 1e3, allow_nan=False, allow_infinity=False))


@st.composite
def rows(
    draw: st.DrawFn,
    *,
    min_size: int = 1,
    max_size: int = 24,
    scores: st.SearchStrategy[float] | None = None,
    weights: st.SearchStrategy[float] | None = INT_WEIGHT,
    weighted: bool | None = None,
) -> Rows:
    n = draw(st.integers(min_size, max_size))
    y = draw(arrays(np.bool_, n))
    # one element strategy per example, so that ties on the grid stay frequent
    score_strategy = (
        draw(st.sampled_from([GRID, GRID, ANY_PROBABILITY, ANY_SCORE]))
        if scores is None
        else scores
    )
    s = draw(arrays(np.float64, n, elements=score_strategy))
    use_weights = draw(st.booleans()) if weighted is None else weighted
    w = None
    if use_weights and weights is not None:
        w = draw(arrays(np.float64, n, elements=weights))
        if not w.any():
            w[draw(st.integers(0, n - 1))] = 1.0
    return Rows(y, s, w)


def assert_same_metrics(
    left: core.EvaluationResult,
    right: core.EvaluationResult,
    *,
    exact: bool = True,
    skip: tuple[str, ...] = (),
) -> None:
    assert set(left.metrics) == set(right.metrics)
    for name, value in left.metrics.items():
        if name in skip:
            continue
        other = right.metrics[name]
        if value is None or other is None:
            assert value is None and other is None, (name, value, other)
            assert left.undefined[name] == right.undefined[name], name
        elif exact:
            assert value == other, (name, value, other)
        else:
            assert value == pytest.approx(other, rel=1e-9, abs=1e-9), name


def assert_same_curves(left: core.EvaluationResult, right: core.EvaluationResult) -> None:
    assert set(left.curves) == set(right.curves)
    for name, curve in left.curves.items():
        assert set(curve) == set(right.curves[name])
        for key, values in curve.items():
            np.testing.assert_array_equal(values, right.curves[name][key], err_msg=key)


# --------------------------------------------------------------------------------------------
# Invariances


@properties
@given(data=rows(), seed=st.integers(0, 2**32 - 1))
def test_row_order_changes_nothing(data: Rows, seed: int) -> None:
    shuffled = data.take(np.random.default_rng(seed).permutation(data.size))
    base, other = data.evaluate(), shuffled.evaluate()
    assert_same_metrics(base, other)
    assert_same_curves(base, other)
    assert base.warnings == other.warnings


@properties
@given(data=rows(weights=FLOAT_WEIGHT, weighted=True), seed=st.integers(0, 2**32 - 1))
def test_row_order_changes_nothing_with_float_weights(data: Rows, seed: int) -> None:
    shuffled = data.take(np.random.default_rng(seed).permutation(data.size))
    assert_same_metrics(data.evaluate(), shuffled.evaluate(), exact=False, skip=STEP_METRICS)


@properties
@given(data=rows(weighted=True), pick=st.integers(0, 10**6))
def test_weight_two_equals_the_row_twice(data: Rows, pick: int) -> None:
    assert data.w is not None
    i = pick % data.size
    doubled_w = data.w.copy()
    doubled_w[i] *= 2
    doubled = Rows(data.y, data.s, doubled_w)
    repeated = Rows(
        np.append(data.y, data.y[i]), np.append(data.s, data.s[i]), np.append(data.w, data.w[i])
    )
    left, right = doubled.evaluate(), repeated.evaluate()
    assert left.metrics["n_samples"] == data.size
    assert right.metrics["n_samples"] == data.size + 1
    assert_same_metrics(left, right, skip=("n_samples",))
    assert_same_curves(left, right)


@properties
@given(data=rows(weighted=False), pick=st.integers(0, 10**6))
def test_weight_two_equals_the_row_twice_unweighted(data: Rows, pick: int) -> None:
    i = pick % data.size
    weights = np.ones(data.size)
    weights[i] = 2.0
    repeated = Rows(np.append(data.y, data.y[i]), np.append(data.s, data.s[i]), None)
    left, right = Rows(data.y, data.s, weights).evaluate(), repeated.evaluate()
    assert_same_metrics(left, right, skip=("n_samples",))
    assert_same_curves(left, right)


def _whole_and_halves(data: Rows, cut: int) -> tuple[core.EvaluationResult, core.BinaryStats]:
    cut = cut % (data.size + 1)
    first, second = data.take(slice(0, cut)), data.take(slice(cut, None))
    merged = first.stats().merge(second.stats())
    return data.evaluate(), merged


@properties
@given(data=rows(), cut=st.integers(0, 10**6))
def test_merged_halves_give_the_metrics_of_the_whole(data: Rows, cut: int) -> None:
    whole, merged = _whole_and_halves(data, cut)
    result = core.evaluate_binary_stats(merged, core.parse_options(OPTIONS))
    assert_same_metrics(whole, result)
    assert_same_curves(whole, result)
    assert result.n_samples == whole.n_samples == data.size


@properties
@given(data=rows(), cut=st.integers(0, 10**6))
def test_merge_is_commutative(data: Rows, cut: int) -> None:
    cut = cut % (data.size + 1)
    first, second = data.take(slice(0, cut)).stats(), data.take(slice(cut, None)).stats()
    options = core.parse_options(OPTIONS)
    left = core.evaluate_binary_stats(first.merge(second), options)
    right = core.evaluate_binary_stats(second.merge(first), options)
    assert_same_metrics(left, right)
    assert_same_curves(left, right)


@properties
@given(data=rows(), cuts=st.lists(st.integers(0, 10**6), max_size=4))
def test_update_batch_by_batch_gives_the_metrics_of_the_whole(data: Rows, cuts: list[int]) -> None:
    bounds = sorted({0, data.size, *(c % (data.size + 1) for c in cuts)})
    stats = core.BinaryStats.empty()
    for start, stop in itertools.pairwise(bounds):
        batch = data.take(slice(start, stop))
        stats = stats.update(batch.y, batch.s, batch.w)
    result = core.evaluate_binary_stats(stats, core.parse_options(OPTIONS))
    whole = data.evaluate()
    assert_same_metrics(whole, result)
    assert_same_curves(whole, result)


@properties
@given(data=rows(weights=FLOAT_WEIGHT, weighted=True), cut=st.integers(0, 10**6))
def test_merged_halves_with_float_weights(data: Rows, cut: int) -> None:
    whole, merged = _whole_and_halves(data, cut)
    result = core.evaluate_binary_stats(merged, core.parse_options(OPTIONS))
    assert_same_metrics(whole, result, exact=False, skip=STEP_METRICS)


TRANSFORMS: list[Any] = [
    pytest.param(lambda x: 3 * x + 1, id="3x+1"),
    pytest.param(np.exp, id="exp"),
    pytest.param(lambda x: x**3, id="cube"),
]


def at_point(transform: Callable[[Floats], Floats], value: float) -> float:
    return float(transform(np.array([value]))[0])


@pytest.mark.parametrize("transform", TRANSFORMS)
@properties
@given(data=rows(scores=st.integers(-16, 16).map(lambda i: i / 8)))
def test_increasing_transform_keeps_rank_metrics(
    transform: Callable[[Floats], Floats], data: Rows
) -> None:
    moved_scores = np.asarray(transform(data.s), dtype=np.float64)
    # the transform stays strictly increasing in float64 on these scores
    distinct = np.unique(data.s)
    assert np.all(np.diff(np.asarray(transform(distinct))) > 0)
    threshold = 0.25
    options = {**OPTIONS, "threshold": threshold}
    moved_options = {**OPTIONS, "threshold": at_point(transform, threshold)}
    base = data.evaluate(options)
    moved = Rows(data.y, moved_scores, data.w).evaluate(moved_options)
    heads = [name for name in base.metrics if name.startswith(("precision_at_", "recall_at_"))]
    counts = ("tp", "fp", "tn", "fn", "precision", "recall", "f1", "mcc", "cohen_kappa")
    for name in (*RANK_METRICS, *heads, *counts):
        assert base.metrics.get(name) == moved.metrics.get(name), name
    for name in ARGMAX_THRESHOLDS:
        value = base.metrics[name]
        expected = None if value is None else at_point(transform, value)
        assert moved.metrics[name] == expected, name
    if "roc" in base.curves:
        np.testing.assert_array_equal(base.curves["roc"]["fpr"], moved.curves["roc"]["fpr"])
        np.testing.assert_array_equal(base.curves["roc"]["tpr"], moved.curves["roc"]["tpr"])
        np.testing.assert_array_equal(
            transform(base.curves["roc"]["thresholds"]), moved.curves["roc"]["thresholds"]
        )


# --------------------------------------------------------------------------------------------
# Plain values: floats or None with a reason, never NaN, never a numpy scalar

DEGENERATE = st.one_of(
    rows(max_size=3),  # tiny
    rows(max_size=12, scores=st.just(0.5)),  # all scores tied
    rows(max_size=12, scores=st.sampled_from([0.0, 1.0, 0.5])),
    rows(max_size=12, weights=st.sampled_from([0.0, 0.0, 1.0]), weighted=True),  # mostly zero
    rows(max_size=12).map(lambda r: Rows(np.ones(r.size, np.bool_), r.s, r.w)),  # one class
    rows(max_size=12).map(lambda r: Rows(np.zeros(r.size, np.bool_), r.s, r.w)),
    rows(max_size=12, scores=ANY_SCORE, weights=FLOAT_WEIGHT),
)


def assert_plain_result(result: core.EvaluationResult) -> None:
    for name, value in result.metrics.items():
        if value is None:
            reason = result.undefined.get(name)
            assert isinstance(reason, str) and reason, f"{name} is None without a reason"
        else:
            assert type(value) is float, (name, type(value))
            assert math.isfinite(value), (name, value)
            assert name not in result.undefined, name
    assert set(result.undefined) <= set(result.metrics)
    assert type(result.n_samples) is int
    assert all(type(message) is str for message in result.warnings)
    for curve in result.curves.values():
        for values in curve.values():
            assert isinstance(values, np.ndarray) and values.dtype == np.float64
            assert not np.isnan(values).any()
    body = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert body["metrics"] == result.metrics
    assert body["undefined"] == result.undefined


@properties
@given(data=DEGENERATE)
def test_degenerate_inputs_give_floats_or_none_with_a_reason(data: Rows) -> None:
    assert_plain_result(data.evaluate())


@properties
@given(data=rows(max_size=40))
def test_any_input_gives_floats_or_none_with_a_reason(data: Rows) -> None:
    result = data.evaluate({**OPTIONS, "max_curve_points": 5})
    assert_plain_result(result)


@properties
@given(data=st.one_of(rows(max_size=3), rows(max_size=8, scores=st.just(0.25))))
def test_single_class_or_tied_scores_define_what_they_can(data: Rows) -> None:
    result = data.evaluate()
    positive = float(np.sum(data.y if data.w is None else data.w * data.y))
    negative = float(np.sum(~data.y if data.w is None else data.w * ~data.y))
    if positive == 0 or negative == 0:
        for name in (*RANK_METRICS, *ARGMAX_THRESHOLDS):
            assert result.metrics[name] is None and result.undefined[name], name
        assert set(result.curves) <= {"calibration"}  # the ranking curves need both classes
        assert result.warnings
    elif np.unique(data.s[data.w > 0] if data.w is not None else data.s).size == 1:
        # one threshold: the ROC curve is the diagonal, nothing ranks above anything
        assert result.metrics["roc_auc"] == 0.5
        assert result.metrics["ks_statistic"] == 0.0
    for name in ("accuracy", "error_rate", "prevalence", "n_positive", "n_negative"):
        assert type(result.metrics[name]) is float, name


# --------------------------------------------------------------------------------------------
# Curve thinning: fewer points for transport, never a different metric


def _positions(full: Floats, thinned: Floats) -> NDArray[np.intp]:
    """Where each thinned threshold sits in the full curve (thresholds are distinct)."""
    index = {value: i for i, value in enumerate(full.tolist())}
    return np.array([index[value] for value in thinned.tolist()], dtype=np.intp)


@properties
@given(
    data=rows(min_size=2, max_size=80, scores=ANY_PROBABILITY),
    max_points=st.integers(2, 90),
)
def test_thinning_keeps_metrics_endpoints_and_the_budget(data: Rows, max_points: int) -> None:
    full = data.evaluate({**OPTIONS, "max_curve_points": ALL_POINTS})
    thinned = data.evaluate({**OPTIONS, "max_curve_points": max_points})
    assert_same_metrics(full, thinned)
    assert set(thinned.curves) - {"calibration"} == set(full.curves) - {"calibration"}
    if "calibration" in thinned.curves:  # a point per used bin, never thinned, or left out
        assert thinned.curves["calibration"]["weight"].size <= max_points
        for key, values in thinned.curves["calibration"].items():
            np.testing.assert_array_equal(values, full.curves["calibration"][key])
    for name in ("roc", "pr"):
        if name not in full.curves:  # one class: no ranking curves
            continue
        curve, whole = thinned.curves[name], full.curves[name]
        sizes = {values.size for values in curve.values()}
        assert len(sizes) == 1 and sizes.pop() <= max_points
        at = _positions(whole["thresholds"], curve["thresholds"])
        assert at[0] == 0 and at[-1] == whole["thresholds"].size - 1
        assert np.all(np.diff(at) > 0)  # a subsequence of the full curve, in order
        for key, values in curve.items():
            np.testing.assert_array_equal(values, whole[key][at], err_msg=f"{name}.{key}")


@properties
@given(
    seed=st.integers(0, 2**32 - 1),
    ties=st.booleans(),
    weights=st.sampled_from([None, "whole", "spread"]),
    max_points=st.integers(2, 40),
)
def test_thinned_curves_are_the_points_evenly_spaced_along_the_arc(
    seed: int, ties: bool, weights: str | None, max_points: int
) -> None:
    """The definition, point by point: each of ``max_points`` marks evenly spaced along the
    arc TP N + FP P (from the first point's to 2 P N) takes the first point of the full curve
    at or past it (repeats once), with the arc computed as the thinning computes it. Rows of
    a seeded generator: Hypothesis' arrays repeat one value too often for a curve of many
    points. Weights spread over six decades put the thinning's read-off guess to the test."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(50, 400))
    y = rng.random(n) < rng.uniform(0.1, 0.9)
    s = rng.normal(y * rng.uniform(0, 2), 1.0)
    if ties:
        s = np.round(s, 1)
    w = None
    if weights == "whole":
        w = rng.integers(0, 4, n).astype(np.float64)
    elif weights == "spread":
        w = 10.0 ** rng.uniform(-3, 3, n)
    sweep = sweep_of_rows(y, s, w)
    if sweep.n_positive == 0 or sweep.n_negative == 0 or sweep.n_distinct <= max_points:
        return  # every point, or no curve
    thresholds, tps, fps = every_point(sweep)
    positives, negatives = sweep.n_positive, sweep.n_negative
    arc = tps * negatives + fps * positives
    marks = np.linspace(float(arc[0]), 2 * positives * negatives, max_points)
    first = [int(np.flatnonzero(arc >= mark)[0]) for mark in marks]
    chosen = [i for k, i in enumerate(first) if k == 0 or i != first[k - 1]]
    sampled = curve_points(sweep, max_points)
    for got, whole in zip(sampled, (thresholds, tps, fps), strict=True):
        np.testing.assert_array_equal(got, whole[chosen])


@properties
@given(data=rows(max_size=30))
def test_zero_curve_points_omits_curves_only(data: Rows) -> None:
    full = data.evaluate()
    none = data.evaluate({**OPTIONS, "max_curve_points": 0})
    assert none.curves == {}
    assert_same_metrics(full, none)


def test_hard_predictions_count_against_their_own_class_totals() -> None:
    """With hard predictions, tn and fn are the predictions' class totals minus their counts:
    the scores' totals are the same weights added in another order (here 13.579999999999998
    against 13.580000000000002), and tn came out -4e-15, which crashed MCC's square root."""
    result = core.evaluate(
        "binary",
        [1, 0, 0, 0],
        [0.1, 0.5, 0.7, 0.1],
        y_pred=[1, 1, 1, 1],
        sample_weight=[2.18, 4.87, 4.49, 4.22],
    )
    assert result.metrics["specificity"] == 0.0
    assert result.metrics["npv"] is None
    assert result.metrics["mcc"] is None
