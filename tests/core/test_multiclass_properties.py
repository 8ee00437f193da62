"""Invariants of the whole multiclass result, checked by Hypothesis on small, tie-heavy inputs
(sklearn ``metrics/tests/test_common.py`` style): row order does not matter, weight 2 is the
row twice, and renaming the classes permutes the per-class rows and nothing else.

Scores come from a handful of values, so ties are everywhere: within rows (top-k, argmax) and
across rows (ROC ties). Half the examples are probability rows, so the probability metrics
take part too. Weights are small integers: their sums are exact, so only the order of float
additions differs between the two sides (1e-9).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from evalserve.core import ClassRow, Options
from evalserve.core._result import TaskOutput
from evalserve.core.multiclass import compute_multiclass

Floats = NDArray[np.float64]
Ints = NDArray[np.int64]

OPTIONS = Options(top_k=(1, 2, 3), beta=2.0, max_curve_points=0, calibration_bins=4)
LEVELS = (0.0, 0.1, 0.25, 0.5, 0.75, 1.0, 2.0)
properties = settings(max_examples=150, deadline=None)


@st.composite
def problems(draw: st.DrawFn) -> tuple[Ints, Floats, Floats]:
    """(labels, scores, integer weights not all zero)."""
    n = draw(st.integers(1, 24))
    k = draw(st.integers(2, 5))
    labels = np.array(draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n)))
    cells = draw(st.lists(st.sampled_from(LEVELS), min_size=n * k, max_size=n * k))
    scores = np.array(cells, dtype=np.float64).reshape(n, k)
    if draw(st.booleans()):  # probability rows
        scores[scores.sum(axis=1) == 0, 0] = 1.0
        scores /= scores.sum(axis=1, keepdims=True)
    weights = np.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), np.float64)
    if not weights.any():
        weights[0] = 1.0
    return labels.astype(np.int64), scores, weights


def _run(labels: Any, scores: Any, weights: Any = None, predictions: Any = None) -> TaskOutput:
    return compute_multiclass(
        labels, scores, y_pred=predictions, sample_weight=weights, options=OPTIONS
    )


def _same_value(first: Any, second: Any) -> bool:
    if first is None or second is None:
        return first is second
    if isinstance(first, str):
        return bool(first == second)
    return math.isclose(first, second, rel_tol=1e-9, abs_tol=1e-9)


def _assert_same_metrics(first: TaskOutput, second: TaskOutput, skip: tuple[str, ...] = ()) -> None:
    names = set(first.sink.metrics) - set(skip)
    assert names == set(second.sink.metrics) - set(skip)
    for name in names:
        assert _same_value(first.sink.metrics[name], second.sink.metrics[name]), name
    # Reasons that name a row number differ when the rows move.
    reasons = [
        {name: "row" if "row " in reason else reason for name, reason in result.items()}
        for result in (first.sink.undefined, second.sink.undefined)
    ]
    assert {n: r for n, r in reasons[0].items() if n not in skip} == {
        n: r for n, r in reasons[1].items() if n not in skip
    }


def _assert_same_row(first_row: ClassRow, second_row: ClassRow) -> None:
    first, second = first_row.to_dict(), second_row.to_dict()
    for key, value in first.items():
        if key == "class":
            continue
        if key == "intervals":
            assert value.keys() == second[key].keys()
            for name, interval in value.items():
                for field, number in interval.items():
                    assert _same_value(number, second[key][name][field]), (name, field)
        elif key == "undefined":
            assert value == second[key]
        else:
            assert _same_value(value, second[key]), key


@properties
@given(problems(), st.randoms(use_true_random=False))
def test_row_order_does_not_matter(problem: tuple[Ints, Floats, Floats], random: Any) -> None:
    labels, scores, weights = problem
    order = np.arange(labels.size)
    random.shuffle(order)
    first = _run(labels, scores, weights)
    second = _run(labels[order], scores[order], weights[order])
    _assert_same_metrics(first, second)
    for row, other in zip(first.per_class, second.per_class, strict=True):
        _assert_same_row(row, other)


@properties
@given(problems())
def test_weight_two_is_the_row_twice(problem: tuple[Ints, Floats, Floats]) -> None:
    labels, scores, weights = problem
    repeats = weights.astype(np.int64)
    weighted = _run(labels, scores, weights)
    repeated = _run(np.repeat(labels, repeats), np.repeat(scores, repeats, axis=0))
    # n_samples counts rows received, weight-zero rows included.
    _assert_same_metrics(weighted, repeated, skip=("n_samples",))
    for row, other in zip(weighted.per_class, repeated.per_class, strict=True):
        _assert_same_row(row, other)
    assert weighted.sink.warnings == repeated.sink.warnings


@properties
@given(problems(), st.randoms(use_true_random=False))
def test_renaming_classes_permutes_the_per_class_rows(
    problem: tuple[Ints, Floats, Floats], random: Any
) -> None:
    labels, scores, weights = problem
    k = scores.shape[1]
    rename = list(range(k))
    random.shuffle(rename)
    new = np.array(rename)  # class c is called new[c]
    renamed_scores = np.empty_like(scores)
    renamed_scores[:, new] = scores
    # The argmax breaks ties by index, which renaming changes: send the predictions instead.
    # expected_calibration_error always uses the argmax, so it is left out; so are the weighted
    # kappas, which read the classes' order as ordinal (a renaming changes the distances).
    predictions = scores.argmax(axis=1)
    first = _run(labels, scores, weights, predictions)
    second = _run(new[labels], renamed_scores, weights, new[predictions])
    ordered = ("expected_calibration_error", "cohen_kappa_linear", "cohen_kappa_quadratic")
    _assert_same_metrics(first, second, skip=ordered)
    for c in range(k):
        _assert_same_row(first.per_class[c], second.per_class[int(new[c])])


@pytest.mark.parametrize("weights", [None, [1.0, 0.0, 2.5, 1.0, 0.5, 3.0]])
def test_a_constant_model_is_chance(weights: list[float] | None) -> None:
    labels = [0, 1, 2, 0, 1, 2]
    scores = np.full((6, 3), 1 / 3)
    metrics = _run(labels, scores, weights).sink.metrics
    for name in ("roc_auc_ovr_macro", "roc_auc_ovr_micro", "roc_auc_ovo_macro"):
        assert metrics[name] == pytest.approx(0.5)
    # top-k counts ties pro rata: k / 3, not 1
    assert metrics["top_1_accuracy"] == pytest.approx(1 / 3)
    assert metrics["top_2_accuracy"] == pytest.approx(2 / 3)
