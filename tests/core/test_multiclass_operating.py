"""Multiclass operating points: each class's, one-vs-rest, and their macro averages.

The definition is task binary's on the class's one-vs-rest rows (the class's rows positive,
every other row negative, the class's score column): each per_class row must hold what binary
``evaluate`` gives there, value, threshold and reason alike, whichever form the class's
statistic takes (class slots from rows, scores from an accumulator's blocks). torchmetrics'
documented multiclass cases (``thresholds=None``) are fixtures; where torchmetrics answers 0
(and a threshold of 1e6 or NaN) for a class no threshold serves, ours is null with a reason.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from evalserve import core
from evalserve.core._options import parse_options
from evalserve.core.binary._operating import KINDS, operating_names
from evalserve.core.binary._sweep import sweep_of
from evalserve.core.multiclass._inputs import multiclass_inputs
from evalserve.core.multiclass._operating import class_operating
from evalserve.core.multiclass._ranking import ranking_stats, true_class_scores
from tests.core.test_binary_operating import TM_MULTICLASS, TM_MULTICLASS_TARGET

Floats = NDArray[np.float64]
Ints = NDArray[np.int64]

TARGETS: dict[str, Any] = {
    "recall_at_precision": [0.5, 0.9],
    "precision_at_recall": [0.25, 0.75],
    "tpr_at_fpr": [0.0, 0.1],
    "specificity_at_sensitivity": [0.5, 1.0],
    "flagged_share": [0.1, 0.5],
}
ONE_CLASS = "only one class is present: no actual positives (TP + FN = 0)"
LEVELS = (0.0, 0.1, 0.25, 0.5, 0.75, 1.0)
properties = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def names(options: dict[str, Any]) -> list[str]:
    """Every operating-point metric of a per_class row under ``options``."""
    found = [
        name for kind in KINDS for k in options.get(kind, []) for name in operating_names(kind, k)
    ]
    return [*found, "equal_error_rate", "equal_error_rate_threshold"]


@st.composite
def problems(draw: st.DrawFn) -> tuple[Ints, Floats, Floats | None]:
    n = draw(st.integers(2, 24))
    k = draw(st.integers(2, 5))
    present = draw(st.lists(st.integers(0, k - 1), min_size=1, max_size=k, unique=True))
    labels = np.array(draw(st.lists(st.sampled_from(present), min_size=n, max_size=n)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(("levels", "continuous", "logits")))
    if kind == "levels":  # ties within and across classes
        scores = rng.choice(LEVELS, size=(n, k))
    elif kind == "continuous":
        scores = rng.random((n, k))
    else:
        scores = rng.normal(size=(n, k)).round(1)
    weights = None
    if draw(st.booleans()):
        weights = rng.integers(0, 4, n).astype(np.float64)
        if not weights.any():
            weights[0] = 1.0
    return labels, scores, weights


def assert_rows_are_binary(
    result: core.EvaluationResult, labels: Ints, scores: Floats, weights: Floats | None
) -> None:
    for j, row in enumerate(result.per_class):
        binary = core.evaluate(
            "binary", (labels == j).astype(int), scores[:, j], sample_weight=weights,
            options={**TARGETS, "max_curve_points": 0},
        )  # fmt: skip
        for name in names(TARGETS):
            assert row.metrics[name] == binary.metrics[name], (j, name)
            assert row.undefined.get(name) == binary.undefined.get(name), (j, name)


@properties
@given(problems())
def test_each_class_is_binary_on_its_one_vs_rest_rows(
    problem: tuple[Ints, Floats, Floats | None],
) -> None:
    labels, scores, weights = problem
    result = core.evaluate("multiclass", labels, scores, sample_weight=weights, options=TARGETS)
    assert_rows_are_binary(result, labels, scores, weights)
    # The equal error rate is there without any option, and the same.
    plain = core.evaluate("multiclass", labels, scores, sample_weight=weights)
    for ours, row in zip(plain.per_class, result.per_class, strict=True):
        assert ours.metrics["equal_error_rate"] == row.metrics["equal_error_rate"]
        assert (
            ours.metrics["equal_error_rate_threshold"] == row.metrics["equal_error_rate_threshold"]
        )


@properties
@given(problems(), st.integers(0, 24), st.booleans())
def test_merged_states_give_the_operating_points_of_the_whole(
    problem: tuple[Ints, Floats, Floats | None], cut: int, via_bytes: bool
) -> None:
    labels, scores, weights = problem
    cut = min(cut, labels.size)
    whole = core.evaluate("multiclass", labels, scores, sample_weight=weights, options=TARGETS)
    left = core.Accumulator("multiclass", TARGETS)
    right = core.Accumulator("multiclass", TARGETS)
    for accumulator, part in ((left, slice(0, cut)), (right, slice(cut, None))):
        if labels[part].size:
            accumulator.update(
                labels[part], scores[part], sample_weight=None if weights is None else weights[part]
            )
    merged = left.merge(right)
    if via_bytes:  # the blocks: every class's statistic on scores, not on class slots
        merged = core.Accumulator.from_bytes(merged.to_bytes())
    result = merged.result()
    assert result.metrics == whole.metrics
    assert result.undefined == whole.undefined
    assert result.warnings == whole.warnings
    assert [row.to_dict() for row in result.per_class] == [row.to_dict() for row in whole.per_class]


def test_a_slot_not_kept_is_read_from_the_rows() -> None:
    """Statistics built without the options keep no alert budget's slots: a search reads them
    from the score matrix, with the same answer."""
    rng = np.random.default_rng(5)
    labels = rng.integers(0, 3, 200)
    scores = rng.random((200, 3))
    inputs = multiclass_inputs(labels, scores, None, None, None)
    bare = ranking_stats(inputs, true_class_scores(inputs.scores, inputs.labels))
    options = parse_options({"flagged_share": [0.05, 0.3]})
    for j, (stats, slots) in enumerate(zip(bare.one_vs_rest, bare.slots, strict=True)):
        before = set(slots.gaps)
        sink = class_operating(sweep_of(stats), slots, options)
        assert set(slots.gaps) > before  # read on demand
        binary = core.evaluate(
            "binary", labels == j, scores[:, j], options={"flagged_share": [0.05, 0.3]}
        )
        for name in names({"flagged_share": [0.05, 0.3]}):
            assert sink.metrics[name] == binary.metrics[name], name


# --- torchmetrics' documented cases ------------------------------------------------------------


def _rows(result: core.EvaluationResult, name: str) -> list[float | None]:
    return [row.metrics[name] for row in result.per_class]


def test_torchmetrics_multiclass_cases() -> None:
    result = core.evaluate(
        "multiclass", TM_MULTICLASS_TARGET, TM_MULTICLASS,
        options={
            "recall_at_precision": [0.5], "precision_at_recall": [0.5],
            "specificity_at_sensitivity": [0.5],
        },
    )  # fmt: skip
    rows = result.per_class
    # multiclass_recall_at_fixed_precision(min_precision=0.5): recall [1, 1, 0, 0, 0],
    # thresholds [0.75, 0.75, nan, nan, nan]. Ours: classes 2 and 3 null (no threshold reaches
    # the precision), class 4 (no positives) null with the one-class reason.
    assert _rows(result, "recall_at_precision_0.5") == [1.0, 1.0, None, None, None]
    assert _rows(result, "recall_at_precision_0.5_threshold")[:2] == [0.75, 0.75]
    for row in rows[2:4]:
        assert row.undefined["recall_at_precision_0.5"] == "no threshold reaches precision >= 0.5"
    assert rows[4].undefined["recall_at_precision_0.5"] == ONE_CLASS
    # multiclass_precision_at_fixed_recall(min_recall=0.5): [1, 1, 0.25, 0.25, 0], thresholds
    # [0.75, 0.75, 0.05, 0.05, 1e6]; class 4 ours null.
    assert _rows(result, "precision_at_recall_0.5") == [1.0, 1.0, 0.25, 0.25, None]
    assert _rows(result, "precision_at_recall_0.5_threshold") == [0.75, 0.75, 0.05, 0.05, None]
    # multiclass_specificity_at_sensitivity(min_sensitivity=0.5): [1, 1, 0, 0, 0], thresholds
    # [0.75, 0.75, 0.05, 0.05, 1e6]; class 4 ours null.
    assert _rows(result, "specificity_at_sensitivity_0.5") == [1.0, 1.0, 0.0, 0.0, None]
    assert _rows(result, "specificity_at_sensitivity_0.5_threshold") == [
        0.75, 0.75, 0.05, 0.05, None,
    ]  # fmt: skip
    # multiclass_eer: [0, 0, 0.6667, 0.6667, 1.0]; class 4 ours null. torchmetrics' macro
    # (0.4667) averages curves, not per-class values: ours is the mean of the four defined.
    eer = _rows(result, "equal_error_rate")
    assert eer[:2] == [0.0, 0.0] and eer[4] is None
    assert eer[2] == pytest.approx(2 / 3) and eer[3] == pytest.approx(2 / 3)
    assert rows[4].undefined["equal_error_rate"] == ONE_CLASS
    assert result.metrics["equal_error_rate_macro"] == pytest.approx(1 / 3)


def test_torchmetrics_eer_of_three_classes() -> None:
    """eer(task='multiclass') on torchmetrics' documented rows: [0, 0.4167, 0.4167]."""
    preds = [
        [0.90, 0.05, 0.05],
        [0.05, 0.90, 0.05],
        [0.05, 0.05, 0.90],
        [0.85, 0.05, 0.10],
        [0.10, 0.10, 0.80],
    ]
    result = core.evaluate("multiclass", [0, 1, 1, 2, 2], preds)
    eer = _rows(result, "equal_error_rate")
    assert eer == pytest.approx([0.0, 0.4167, 0.4167], abs=5e-5)
    assert eer[1] == pytest.approx(5 / 12)


# --- the macro averages ----------------------------------------------------------------------


def test_macro_averages_of_the_values() -> None:
    """Each value's macro average is the mean over the classes present in labels whose value is
    defined; thresholds and the share actually flagged have none."""
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 3, 80)  # class 3 absent
    scores = rng.random((80, 4))
    scores[np.arange(80), labels] += 0.3
    options = {**TARGETS, "recall_at_precision": [0.5, 1.0], "flagged_share": [0.1, 0.001]}
    result = core.evaluate("multiclass", labels, scores, options=options)
    macros = {
        "recall_at_precision_0.5_macro", "recall_at_precision_1_macro",
        "precision_at_recall_0.25_macro", "precision_at_recall_0.75_macro",
        "tpr_at_fpr_0_macro", "tpr_at_fpr_0.1_macro",
        "specificity_at_sensitivity_0.5_macro", "specificity_at_sensitivity_1_macro",
        "precision_at_flagged_share_0.1_macro", "recall_at_flagged_share_0.1_macro",
        "precision_at_flagged_share_0.001_macro", "recall_at_flagged_share_0.001_macro",
        "equal_error_rate_macro",
    }  # fmt: skip
    emitted = {name for name in result.metrics if name.endswith("_macro")}
    assert macros <= emitted
    assert not {name for name in emitted if "threshold" in name or "actual" in name}
    for macro in macros:
        name = macro.removesuffix("_macro")
        values = [row.metrics[name] for row in result.per_class[:3]]
        defined = [value for value in values if value is not None]
        assert result.per_class[3].metrics[name] is None or "flagged" in name
        if defined:
            assert result.metrics[macro] == pytest.approx(float(np.mean(defined)), rel=1e-15)
        else:
            assert result.metrics[macro] is None
            assert result.undefined[macro].startswith("undefined for every class present")
    # 0.001 of 80 rows is less than a row: every class's budget is undefined.
    assert result.metrics["precision_at_flagged_share_0.001_macro"] is None
    # A present class left out is named.
    left_out = [row.class_name for row in result.per_class[:3]
                if row.metrics["recall_at_precision_1"] is None]  # fmt: skip
    if left_out:
        assert any(w.startswith("recall_at_precision_1: class") for w in result.warnings)
    assert math.isfinite(result.metrics["equal_error_rate_macro"] or math.nan)
