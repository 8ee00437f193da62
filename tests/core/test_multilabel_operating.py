"""Multilabel operating points: each label's, on its column, and their macro averages.

The definition is task binary's on the label's column: each per_class row must hold what binary
``evaluate`` gives there (value, threshold and reason), the equal error rate alike whether it
comes out of the labels' shared sums (no target asked for) or binary's own search (targets
asked for). torchmetrics' documented multilabel cases (``thresholds=None``) are fixtures.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from evalserve import core
from evalserve.core.binary._operating import KINDS, operating_names
from tests.core.test_binary_operating import TM_MULTILABEL, TM_MULTILABEL_TARGET

Floats = NDArray[np.float64]
Ints = NDArray[np.int64]

TARGETS: dict[str, Any] = {
    "recall_at_precision": [0.5, 0.9],
    "precision_at_recall": [0.25, 0.75],
    "tpr_at_fpr": [0.0, 0.1],
    "specificity_at_sensitivity": [0.5, 1.0],
    "flagged_share": [0.1, 0.5],
}
properties = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def names(options: dict[str, Any]) -> list[str]:
    found = [
        name for kind in KINDS for k in options.get(kind, []) for name in operating_names(kind, k)
    ]
    return [*found, "equal_error_rate", "equal_error_rate_threshold"]


@st.composite
def problems(draw: st.DrawFn) -> tuple[Ints, Floats, Floats | None]:
    n = draw(st.integers(1, 24))
    k = draw(st.integers(1, 5))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    truth = (rng.random((n, k)) < draw(st.sampled_from((0.0, 0.2, 0.5, 1.0)))).astype(int)
    if draw(st.booleans()):
        scores = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], size=(n, k))
    else:
        scores = rng.random((n, k))
    weights = None
    if draw(st.booleans()):
        weights = rng.integers(0, 4, n).astype(np.float64)
        if not weights.any():
            weights[0] = 1.0
    return truth, scores, weights


@properties
@given(problems())
def test_each_label_is_binary_on_its_column(problem: tuple[Ints, Floats, Floats | None]) -> None:
    truth, scores, weights = problem
    with_targets = core.evaluate(
        "multilabel", truth, scores, sample_weight=weights, options=TARGETS
    )
    plain = core.evaluate("multilabel", truth, scores, sample_weight=weights)
    for j, (row, bare) in enumerate(zip(with_targets.per_class, plain.per_class, strict=True)):
        binary = core.evaluate(
            "binary", truth[:, j], scores[:, j], sample_weight=weights,
            options={**TARGETS, "max_curve_points": 0},
        )  # fmt: skip
        for name in names(TARGETS):
            assert row.metrics[name] == binary.metrics[name], (j, name)
            assert row.undefined.get(name) == binary.undefined.get(name), (j, name)
        for name in ("equal_error_rate", "equal_error_rate_threshold"):
            assert bare.metrics[name] == binary.metrics[name], (j, name)
            assert bare.undefined.get(name) == binary.undefined.get(name), (j, name)


@properties
@given(problems(), st.integers(0, 24))
def test_merged_states_give_the_operating_points_of_the_whole(
    problem: tuple[Ints, Floats, Floats | None], cut: int
) -> None:
    truth, scores, weights = problem
    cut = min(cut, truth.shape[0])
    whole = core.evaluate("multilabel", truth, scores, sample_weight=weights, options=TARGETS)
    left = core.Accumulator("multilabel", TARGETS)
    right = core.Accumulator("multilabel", TARGETS)
    for accumulator, part in ((left, slice(0, cut)), (right, slice(cut, None))):
        if truth[part].size:
            accumulator.update(
                truth[part], scores[part], sample_weight=None if weights is None else weights[part]
            )
    if not (left.n_rows and right.n_rows):
        return
    merged = core.Accumulator.from_bytes(left.merge(right).to_bytes()).result()
    assert merged.metrics == whole.metrics
    assert merged.undefined == whole.undefined
    assert [row.to_dict() for row in merged.per_class] == [row.to_dict() for row in whole.per_class]


def test_torchmetrics_multilabel_cases() -> None:
    result = core.evaluate(
        "multilabel", TM_MULTILABEL_TARGET, TM_MULTILABEL, options={"precision_at_recall": [0.5]}
    )
    rows = result.per_class
    # multilabel_precision_at_fixed_recall(min_recall=0.5): [1.0, 0.6667, 1.0], thresholds
    # [0.75, 0.55, 0.35].
    precision = [row.metrics["precision_at_recall_0.5"] for row in rows]
    assert precision == pytest.approx([1.0, 2 / 3, 1.0])
    assert [row.metrics["precision_at_recall_0.5_threshold"] for row in rows] == [
        0.75, 0.55, 0.35,
    ]  # fmt: skip
    # multilabel_eer: [0.5, 0.5, 0.1667].
    eer = [row.metrics["equal_error_rate"] for row in rows]
    assert eer == pytest.approx([0.5, 0.5, 1 / 6])


def test_macro_averages_of_the_values() -> None:
    """Each value's macro average is the mean over the labels with positives whose value is
    defined; thresholds and the share actually flagged have none."""
    rng = np.random.default_rng(4)
    truth = (rng.random((60, 4)) < 0.4).astype(int)
    truth[:, 3] = 0  # a label with no positives
    scores = np.clip(truth * 0.3 + rng.random((60, 4)) * 0.7, 0, 1)
    options = {**TARGETS, "recall_at_precision": [0.5, 1.0], "flagged_share": [0.1, 0.001]}
    result = core.evaluate("multilabel", truth, scores, options=options)
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
        if defined:
            assert result.metrics[macro] == pytest.approx(float(np.mean(defined)), rel=1e-15)
        else:
            assert result.metrics[macro] is None
            assert result.undefined[macro].startswith("undefined for every label with positives")
    assert result.per_class[3].metrics["equal_error_rate"] is None
    assert result.metrics["recall_at_flagged_share_0.001_macro"] is None
