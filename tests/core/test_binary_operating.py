"""The operating points of task binary (core/binary/_operating.py) against their definitions.

Each operating point is recomputed from scikit-learn's own curves (``roc_curve`` and
``precision_recall_curve`` with ``drop_intermediate=False``: every distinct threshold) by the
literal definition, the alert budget by trying every distinct threshold, and the documented
cases of torchmetrics' functional metrics (its docstring examples, with ``thresholds=None``)
are fixtures. Where torchmetrics answers 0 (and a threshold of 1e6 or NaN) for a target no
threshold reaches, ours is null with a reason; where its specificity at sensitivity keeps a
higher threshold of the same specificity, ours takes the one with the higher sensitivity.
"""

from __future__ import annotations

from typing import Any
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from numpy.typing import NDArray
from sklearn.metrics import precision_recall_curve, roc_curve

from evalserve import core
from evalserve.core import parse_options
from evalserve.core.binary import _operating as operating
from evalserve.core.binary._bootstrap import _curve_metrics
from evalserve.core.binary._operating import (
    TOLERANCE,
    Classes,
    Point,
    eer_sides,
    flagged_point,
    operating_names,
    target_label,
    value_names,
)
from evalserve.core.binary._sweep import sweep_of_rows

Floats = NDArray[np.float64]
Bools = NDArray[np.bool_]

FUZZ = 1e-9  # the oracles' tolerance on a target: far below any gap between these fractions
TARGETS = st.sampled_from([0.05, 0.1, 0.25, 1 / 3, 0.5, 2 / 3, 0.75, 0.9, 0.95, 1.0])
FPR_BOUNDS = st.sampled_from([0.0, 0.05, 0.1, 0.25, 0.5, 0.9, 1.0])
GRID = st.integers(0, 8).map(lambda i: i / 8)
properties = settings(max_examples=300, deadline=None)


@st.composite
def both_classes(draw: st.DrawFn, max_size: int = 20) -> tuple[Bools, Floats, Floats | None]:
    n = draw(st.integers(2, max_size))
    y = draw(arrays(np.bool_, n))
    y[0], y[1] = True, False
    scores = draw(st.sampled_from([GRID, st.floats(-5, 5, allow_nan=False, width=32)]))
    s = draw(arrays(np.float64, n, elements=scores))
    w = None
    if draw(st.booleans()):
        w = draw(arrays(np.float64, n, elements=st.integers(1, 3).map(float)))
    return y, s, w


def _options(**targets: list[float]) -> dict[str, Any]:
    return {"max_curve_points": 0, **targets}


def _evaluate(
    y: Bools, s: Floats, w: Floats | None, **targets: list[float]
) -> core.EvaluationResult:
    return core.evaluate("binary", y, s, sample_weight=w, options=_options(**targets))


def _ones(y: Bools, w: Floats | None) -> Floats:
    return np.ones(y.size) if w is None else w


# --- the oracles: each definition on scikit-learn's curves ---------------------------------------


def recall_at_precision(
    y: Bools, s: Floats, w: Floats | None, p: float
) -> tuple[float, float] | None:
    precision, recall, thresholds = precision_recall_curve(
        y, s, sample_weight=w, drop_intermediate=False
    )
    found = [
        (round(recall[i], 12), round(precision[i], 12), thresholds[i])
        for i in range(thresholds.size)
        if precision[i] >= p * (1 - FUZZ)
    ]
    if not found:
        return None
    best = max(found)
    return best[0], best[2]


def precision_at_recall(y: Bools, s: Floats, w: Floats | None, r: float) -> tuple[float, float]:
    precision, recall, thresholds = precision_recall_curve(
        y, s, sample_weight=w, drop_intermediate=False
    )
    found = [
        (round(precision[i], 12), round(recall[i], 12), thresholds[i])
        for i in range(thresholds.size)
        if recall[i] >= r * (1 - FUZZ)
    ]
    best = max(found)
    return best[0], best[2]


def tpr_at_fpr(y: Bools, s: Floats, w: Floats | None, f: float) -> tuple[float, float | None]:
    fpr, tpr, thresholds = roc_curve(y, s, sample_weight=w, drop_intermediate=False)
    found = [
        (round(tpr[i], 12), -round(fpr[i], 12), thresholds[i])
        # Not the start point (flagging nothing), nor a point that flags negatives only: the
        # start point dominates those (TPR 0 at FPR 0).
        for i in range(1, thresholds.size)
        if fpr[i] <= f * (1 + FUZZ) + 1e-15 and tpr[i] > 0
    ]
    if not found:
        return 0.0, None
    best = max(found)
    return best[0], best[2]


def specificity_at_sensitivity(
    y: Bools, s: Floats, w: Floats | None, sensitivity: float
) -> tuple[float, float]:
    fpr, tpr, thresholds = roc_curve(y, s, sample_weight=w, drop_intermediate=False)
    found = [
        (round(1 - fpr[i], 12), round(tpr[i], 12), thresholds[i])
        for i in range(1, thresholds.size)
        if tpr[i] >= sensitivity * (1 - FUZZ)
    ]
    best = max(found)
    return best[0], best[2]


def equal_error_rate(y: Bools, s: Floats, w: Floats | None) -> tuple[float, float]:
    """torchmetrics' binary_eer: the first point of the smallest |FPR - FNR| (within the
    float epsilon) on the ROC curve of every distinct threshold."""
    fpr, tpr, thresholds = roc_curve(y, s, sample_weight=w, drop_intermediate=False)
    fpr, tpr, thresholds = fpr[1:], tpr[1:], thresholds[1:]
    gap = np.abs(fpr - (1 - tpr))
    first = int(np.argmax(gap <= gap.min() + 1e-12))
    return (fpr[first] + 1 - tpr[first]) / 2, thresholds[first]


def _close(value: float | None, expected: float | None) -> None:
    if expected is None:
        assert value is None
    else:
        assert value == pytest.approx(expected, rel=1e-9, abs=1e-12)


@properties
@given(both_classes(), st.lists(TARGETS, min_size=1, max_size=3), FPR_BOUNDS)
def test_operating_points_match_their_definition_on_sklearn_curves(
    data: tuple[Bools, Floats, Floats | None], targets: list[float], bound: float
) -> None:
    y, s, w = data
    # The metrics checked here, by the names operating_names gives them:
    assert operating_names("recall_at_precision", 0.5) == (
        "recall_at_precision_0.5",
        "recall_at_precision_0.5_threshold",
    )
    assert operating_names("precision_at_recall", 0.5) == (
        "precision_at_recall_0.5",
        "precision_at_recall_0.5_threshold",
    )
    assert operating_names("tpr_at_fpr", 0.5) == ("tpr_at_fpr_0.5", "tpr_at_fpr_0.5_threshold")
    assert operating_names("specificity_at_sensitivity", 0.5) == (
        "specificity_at_sensitivity_0.5", "specificity_at_sensitivity_0.5_threshold",
    )  # fmt: skip
    result = _evaluate(
        y, s, w,
        recall_at_precision=targets,
        precision_at_recall=targets,
        tpr_at_fpr=[bound],
        specificity_at_sensitivity=targets,
    )  # fmt: skip
    metrics = result.metrics
    for k in set(targets):
        value, threshold = operating_names("recall_at_precision", k)
        expected = recall_at_precision(y, s, w, k)
        if expected is None:
            assert metrics[value] is None and metrics[threshold] is None
            assert result.undefined[value] == f"no threshold reaches precision >= {k:g}"
        else:
            _close(metrics[value], expected[0])
            assert metrics[threshold] == expected[1]
        value, threshold = operating_names("precision_at_recall", k)
        expected_precision = precision_at_recall(y, s, w, k)
        _close(metrics[value], expected_precision[0])
        assert metrics[threshold] == expected_precision[1]
        value, threshold = operating_names("specificity_at_sensitivity", k)
        expected_specificity = specificity_at_sensitivity(y, s, w, k)
        _close(metrics[value], expected_specificity[0])
        assert metrics[threshold] == expected_specificity[1]
    value, threshold = operating_names("tpr_at_fpr", bound)
    expected_tpr = tpr_at_fpr(y, s, w, bound)
    _close(metrics[value], expected_tpr[0])
    assert metrics[threshold] == expected_tpr[1]
    if expected_tpr[1] is None:
        assert "only flagging nothing" in result.undefined[threshold]


@properties
@given(both_classes())
def test_equal_error_rate_matches_its_definition(data: tuple[Bools, Floats, Floats | None]) -> None:
    y, s, w = data
    result = _evaluate(y, s, w)
    value, threshold = equal_error_rate(y, s, w)
    _close(result.metrics["equal_error_rate"], value)
    assert result.metrics["equal_error_rate_threshold"] == threshold


def flagged(
    y: Bools, s: Floats, w: Floats | None, q: float
) -> tuple[float, float, float, float | None] | None:
    weight = _ones(y, w)
    total = float(weight.sum())
    best: tuple[float, float, float, float | None] | None = None
    for t in sorted(set(s[weight > 0].tolist()), reverse=True):
        mass = float(weight[s >= t].sum())
        if mass <= q * total * (1 + FUZZ):
            tp = float(weight[(s >= t) & y].sum())
            positives = float(weight[y].sum())
            best = (t, mass / total, tp / mass, tp / positives if positives else None)
    return best


@properties
@given(both_classes(), st.lists(TARGETS, min_size=1, max_size=3))
def test_flagged_share_matches_brute_force(
    data: tuple[Bools, Floats, Floats | None], shares: list[float]
) -> None:
    y, s, w = data
    assert operating_names("flagged_share", 0.5) == (
        "flagged_share_0.5_threshold", "flagged_share_0.5_actual",
        "precision_at_flagged_share_0.5", "recall_at_flagged_share_0.5",
    )  # fmt: skip
    result = _evaluate(y, s, w, flagged_share=shares)
    for q in set(shares):
        names = operating_names("flagged_share", q)
        expected = flagged(y, s, w, q)
        if expected is None:
            assert all(result.metrics[name] is None for name in names)
            assert "tied at the highest score" in result.undefined[names[0]]
            continue
        assert result.metrics[names[0]] == expected[0]
        for name, value in zip(names[1:], expected[1:], strict=True):
            _close(result.metrics[name], value)


def test_flagged_share_takes_ties_together() -> None:
    """Four rows tied at the top: a budget of 2 of 8 rows flags only the row above them."""
    y = np.array([1, 1, 0, 1, 0, 0, 0, 0], dtype=bool)
    s = np.array([0.9, 0.8, 0.8, 0.8, 0.8, 0.1, 0.1, 0.1])
    metrics = _evaluate(y, s, None, flagged_share=[0.25, 0.1]).metrics
    assert metrics["flagged_share_0.25_threshold"] == 0.9
    assert metrics["flagged_share_0.25_actual"] == 1 / 8
    assert metrics["precision_at_flagged_share_0.25"] == 1.0
    assert metrics["recall_at_flagged_share_0.25"] == 1 / 3
    # 0.1 of 8 rows is 0.8 row: not even the top row fits.
    assert metrics["flagged_share_0.1_threshold"] is None


# --- torchmetrics' documented cases (thresholds=None) --------------------------------------------

TM_PREDS = [0, 0.5, 0.7, 0.8]
TM_TARGET = [0, 1, 1, 0]
TM_MULTICLASS = [
    [0.75, 0.05, 0.05, 0.05, 0.05],
    [0.05, 0.75, 0.05, 0.05, 0.05],
    [0.05, 0.05, 0.75, 0.05, 0.05],
    [0.05, 0.05, 0.05, 0.75, 0.05],
]
TM_MULTICLASS_TARGET = [0, 1, 3, 2]
TM_MULTILABEL = [[0.75, 0.05, 0.35], [0.45, 0.75, 0.05], [0.05, 0.55, 0.75], [0.05, 0.65, 0.05]]
TM_MULTILABEL_TARGET = [[1, 0, 1], [0, 0, 0], [0, 1, 1], [1, 1, 1]]


def test_torchmetrics_binary_cases() -> None:
    metrics = core.evaluate(
        "binary", TM_TARGET, TM_PREDS,
        options={"recall_at_precision": [0.5], "precision_at_recall": [0.5]},
    ).metrics  # fmt: skip
    # binary_recall_at_fixed_precision(min_precision=0.5): (1.0, 0.5)
    assert metrics["recall_at_precision_0.5"] == 1.0
    assert metrics["recall_at_precision_0.5_threshold"] == 0.5
    # binary_precision_at_fixed_recall(min_recall=0.5): (0.6667, 0.5)
    assert metrics["precision_at_recall_0.5"] == pytest.approx(2 / 3)
    assert metrics["precision_at_recall_0.5_threshold"] == 0.5
    # binary_eer: 0.5; and the legacy example's 0.5833
    assert metrics["equal_error_rate"] == 0.5
    legacy = core.evaluate("binary", [0, 0, 1, 1, 1], [0.13, 0.26, 0.08, 0.19, 0.34]).metrics
    assert legacy["equal_error_rate"] == pytest.approx(0.5833, abs=5e-5)


def test_torchmetrics_specificity_at_sensitivity_and_the_tie_we_break_otherwise() -> None:
    """binary_specificity_at_sensitivity([0, 0.5, 0.4, 0.1], [0, 1, 1, 1], 0.5) is (1.0, 0.4):
    thresholds 0.4 and 0.1 both have specificity 1; 0.1 has sensitivity 1 instead of 2/3."""
    result = core.evaluate(
        "binary", [0, 1, 1, 1], [0, 0.5, 0.4, 0.1], options={"specificity_at_sensitivity": [0.5]}
    )
    assert result.metrics["specificity_at_sensitivity_0.5"] == 1.0
    assert result.metrics["specificity_at_sensitivity_0.5_threshold"] == 0.1


def test_target_labels_are_the_shortest_exact_names() -> None:
    assert [target_label(k) for k in (1.0, 0.95, 0.001, 1e-05, 0.5, 100.0)] == [
        "1", "0.95", "0.001", "1e-05", "0.5", "100",
    ]  # fmt: skip


# --- undefined, tiny and degenerate --------------------------------------------------------------


def test_one_class_leaves_every_operating_point_undefined_but_the_budget() -> None:
    result = core.evaluate(
        "binary",
        [1, 1, 1],
        [0.2, 0.5, 0.9],
        options={"recall_at_precision": [0.9], "tpr_at_fpr": [0.1], "flagged_share": [0.5]},
    )
    for name in ("recall_at_precision_0.9", "tpr_at_fpr_0.1_threshold", "equal_error_rate"):
        assert result.metrics[name] is None
        assert result.undefined[name].startswith("only one class is present")
    assert result.metrics["flagged_share_0.5_threshold"] == 0.9
    assert result.metrics["precision_at_flagged_share_0.5"] == 1.0
    assert result.metrics["recall_at_flagged_share_0.5"] == 1 / 3


def test_a_target_of_one() -> None:
    """Precision 1 is reached only above the first negative; recall 1 only at the lowest hit."""
    y = [1, 0, 1, 1, 0]
    s = [0.9, 0.7, 0.8, 0.3, 0.1]
    metrics = core.evaluate(
        "binary", y, s,
        options={
            "recall_at_precision": [1.0], "precision_at_recall": [1.0],
            "specificity_at_sensitivity": [1.0], "tpr_at_fpr": [0.0],
        },
    ).metrics  # fmt: skip
    assert metrics["recall_at_precision_1"] == 2 / 3
    assert metrics["recall_at_precision_1_threshold"] == 0.8
    assert metrics["precision_at_recall_1"] == 3 / 4
    assert metrics["precision_at_recall_1_threshold"] == 0.3
    assert metrics["specificity_at_sensitivity_1"] == 1 / 2
    assert metrics["tpr_at_fpr_0"] == 2 / 3
    assert metrics["tpr_at_fpr_0_threshold"] == 0.8


# --- merge = whole -------------------------------------------------------------------------------

ALL_TARGETS: dict[str, Any] = {
    "recall_at_precision": [0.5, 0.9],
    "precision_at_recall": [0.25, 0.75],
    "tpr_at_fpr": [0.0, 0.1],
    "specificity_at_sensitivity": [0.5, 1.0],
    "flagged_share": [0.1, 0.5],
}


@properties
@given(both_classes(), st.integers(0, 20))
def test_merged_halves_give_the_operating_points_of_the_whole(
    data: tuple[Bools, Floats, Floats | None], cut: int
) -> None:
    y, s, w = data
    cut = min(cut, y.size)
    whole = core.evaluate("binary", y, s, sample_weight=w, options=ALL_TARGETS)
    left = core.Accumulator("binary", ALL_TARGETS)
    right = core.Accumulator("binary", ALL_TARGETS)
    for accumulator, part in ((left, slice(0, cut)), (right, slice(cut, None))):
        if y[part].size:
            accumulator.update(y[part], s[part], sample_weight=None if w is None else w[part])
    merged = core.Accumulator.from_bytes(left.merge(right).to_bytes()).result()
    assert merged.metrics == whole.metrics
    assert merged.undefined == whole.undefined
    for key, values in whole.curves["det"].items():
        np.testing.assert_array_equal(merged.curves["det"][key], values)


# --- intervals ----------------------------------------------------------------------------------


@properties
@given(both_classes(), st.lists(TARGETS, min_size=1, max_size=3), FPR_BOUNDS)
def test_the_bootstraps_search_finds_the_exact_points_on_the_unresampled_curve(
    data: tuple[Bools, Floats, Floats | None], targets: list[float], bound: float
) -> None:
    """The bootstrap finds each operating point again in every replicate with its own
    vectorised search: on the data itself (one 'replicate' that redraws nothing) it must give
    the exact values."""
    y, s, w = data
    options = {
        "recall_at_precision": targets,
        "precision_at_recall": targets,
        "tpr_at_fpr": [bound],
        "specificity_at_sensitivity": targets,
        "flagged_share": targets,
    }
    exact = core.evaluate("binary", y, s, sample_weight=w, options=options).metrics
    stats = core.BinaryStats.from_arrays(y, s, w)
    pos, neg = stats.pos[None, ::-1], stats.neg[None, ::-1]
    found = _curve_metrics(pos, neg, float(pos.sum()), float(neg.sum()), parse_options(options))
    for name in value_names(parse_options(options)):
        value = float(found[name][0])
        if exact[name] is None and name.startswith("recall_at_precision_"):
            assert value == 0.0, name  # out of reach: recall 0 in a replicate
        elif exact[name] is None:
            assert np.isnan(value), name
        else:
            assert value == pytest.approx(exact[name], rel=1e-12, abs=1e-12), name


def test_operating_points_get_seeded_bootstrap_intervals() -> None:
    rng = np.random.default_rng(3)
    y = rng.random(4000) < 0.25
    s = rng.normal(size=4000) + 1.5 * y
    options = {**ALL_TARGETS, "bootstrap_replicates": 300, "bootstrap_seed": 7}
    result = core.evaluate("binary", y, s, options=options)
    again = core.evaluate("binary", y, s, options=options)
    for name in ("recall_at_precision_0.5", "tpr_at_fpr_0.1", "specificity_at_sensitivity_0.5",
                 "precision_at_recall_0.75", "precision_at_flagged_share_0.1",
                 "recall_at_flagged_share_0.5", "equal_error_rate"):  # fmt: skip
        interval = result.intervals[name]
        value = result.metrics[name]
        assert value is not None
        assert interval.method == "bootstrap-percentile"
        assert interval.lower <= value <= interval.upper, name
        assert 0.0 < interval.upper - interval.lower < 0.15, name
        assert again.intervals[name] == interval
    # Precision 0.9 is barely within this model's reach: a replicate out of reach counts as
    # recall 0, so the interval widens downwards rather than disappearing.
    hard = result.metrics["recall_at_precision_0.9"]
    assert hard is not None
    assert result.intervals["recall_at_precision_0.9"].lower <= hard
    # Thresholds get no interval: they are where the point is read, not a rate.
    assert not any(name.endswith("_threshold") for name in result.intervals)


def test_separated_classes_give_degenerate_intervals() -> None:
    result = core.evaluate(
        "binary",
        [0, 0, 0, 1, 1, 1],
        [0.1, 0.2, 0.3, 0.6, 0.7, 0.8],
        options={"recall_at_precision": [0.9], "bootstrap_replicates": 50},
    )
    assert result.intervals["recall_at_precision_0.9"].lower == 1.0
    assert result.intervals["equal_error_rate"].upper == 0.0


@properties
@given(both_classes(max_size=40), st.sampled_from([1, 2, 3, 64]))
def test_the_probing_search_finds_the_points_of_a_scan_of_every_score(
    data: tuple[Bools, Floats, Floats | None], probes: int
) -> None:
    """The searches over both classes' scores (``PROBES`` positions a step; small values here
    so that the small curves take several steps) find the points a scan of every distinct
    score finds: the equal error rate's two sides and the alert budget's cut."""
    y, s, w = data
    sweep = sweep_of_rows(y, s, w)
    classes = Classes(sweep.positives, sweep.negatives)
    p, n = sweep.n_positive, sweep.n_negative
    thresholds = np.concatenate((classes.positives.scores, classes.negatives.scores))
    tps, fps = classes.counts_of(thresholds)

    def scanned(holds: NDArray[np.bool_], lowest: bool) -> tuple[float, float, float] | None:
        if not holds.any():
            return None
        pick = np.argmin if lowest else np.argmax
        at = int(np.flatnonzero(holds)[pick(thresholds[holds])])
        return float(tps[at]), float(fps[at]), float(thresholds[at])

    below = fps * p < (p - tps) * n
    budget = 0.3 * (p + n) * (1.0 + TOLERANCE)
    with patch.object(operating, "PROBES", probes):
        before, after = eer_sides(classes, p, n)
        flagged = flagged_point(classes, 0.3 * (p + n))
    assert as_tuple(before) == scanned(below, lowest=True)
    assert as_tuple(after) == scanned(~below, lowest=False)
    assert as_tuple(flagged) == scanned(tps + fps <= budget, lowest=True)


def as_tuple(point: Point | None) -> tuple[float, float, float] | None:
    return None if point is None else (point.tp, point.fp, point.threshold)
