"""Probability rows as real files and float32 carry them: rounded, yet probabilities.

Scores written with 6 decimals, or cast to float32, sum to 1 only within their rounding
(k x 5e-7, about 6e-8 per class). The probability metrics take such rows as they came (never
renormalized) and equal scikit-learn's on the same rows, which warns and computes; rows off 1
by 1e-2 or more are no probabilities and leave the three metrics undefined with the reason.
"""

from __future__ import annotations

import itertools
import warnings
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from sklearn import metrics as skm

from evalserve.core import Accumulator, EvaluationResult, evaluate

Floats = NDArray[np.float64]
PROBABILITY = ("log_loss", "brier_score", "expected_calibration_error")
REL = 1e-9  # the core sums exactly, the references row by row


def _softmax_rows(n: int, k: int, seed: int) -> tuple[NDArray[np.int64], Floats]:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    logits = rng.normal(size=(n, k)) * 2.0
    logits[np.arange(n), labels] += 1.5
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return labels, np.asarray(e / e.sum(axis=1, keepdims=True), dtype=np.float64)


def _ece(labels: NDArray[np.int64], scores: Floats, bins: int = 10) -> float:
    confidence = scores.max(axis=1)
    correct = (scores.argmax(axis=1) == labels).astype(np.float64)
    edges = np.arange(bins + 1) / bins
    gap = 0.0
    for low, high in itertools.pairwise(edges):
        inside = (confidence >= low) & ((confidence < high) | (high == 1.0))
        gap += abs(float((correct[inside] - confidence[inside]).sum()))
    return gap / labels.size


def _assert_as_scikit_learn(result: EvaluationResult, labels: Any, rows: Floats) -> None:
    k = rows.shape[1]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        log_loss = skm.log_loss(labels, rows, labels=list(range(k)))
        brier = skm.brier_score_loss(labels, rows, labels=list(range(k)), scale_by_half=False)
    assert any("do not sum to one" in str(w.message) for w in caught), "rows are off 1"
    assert not set(PROBABILITY) & set(result.undefined), result.undefined
    assert result.metrics["log_loss"] == pytest.approx(log_loss, rel=REL)
    assert result.metrics["brier_score"] == pytest.approx(brier, rel=REL)
    assert result.metrics["expected_calibration_error"] == pytest.approx(
        _ece(labels, rows), rel=REL, abs=1e-12
    )


@pytest.mark.parametrize("k", [3, 10, 200, 1000])
def test_rows_printed_with_6_decimals_are_probabilities(k: int) -> None:
    labels, exact = _softmax_rows(2000, k, seed=k)
    rows = np.round(exact, 6)  # as "%.6f" writes them
    off = np.abs(rows.sum(axis=1) - 1.0)
    assert (off > 1e-7).mean() >= 0.2, "a good share of the rows no longer sums to 1"
    result = evaluate("multiclass", labels, rows)
    _assert_as_scikit_learn(result, labels, rows)  # the rows as sent: not renormalized


@pytest.mark.parametrize("k", [3, 10, 200])
def test_float32_rows_are_probabilities(k: int) -> None:
    labels, exact = _softmax_rows(2000, k, seed=100 + k)
    rows32 = exact.astype(np.float32)
    result = evaluate("multiclass", labels, rows32)
    # scikit-learn on the same values (as float64: its float32 path sums in float32).
    _assert_as_scikit_learn(result, labels, rows32.astype(np.float64))


def test_a_float32_softmax_is_probabilities() -> None:
    labels, _ = _softmax_rows(3000, 50, seed=7)
    logits = np.random.default_rng(8).normal(size=(3000, 50)).astype(np.float32) * 3
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    rows32 = e / e.sum(axis=1, keepdims=True, dtype=np.float32)
    _assert_as_scikit_learn(evaluate("multiclass", labels, rows32), labels, rows32.astype(float))


def test_batches_of_rounded_rows_give_the_whole() -> None:
    labels, exact = _softmax_rows(3000, 7, seed=3)
    rows = np.round(exact, 6)
    accumulator = Accumulator("multiclass")
    for start in range(0, 3000, 700):
        accumulator.update(labels[start : start + 700], rows[start : start + 700])
    whole = evaluate("multiclass", labels, rows)
    streamed = accumulator.result()
    for name in PROBABILITY:
        assert streamed.metrics[name] == pytest.approx(whole.metrics[name], rel=REL)


@pytest.mark.parametrize("k", [3, 10])
@pytest.mark.parametrize("shift", [1e-2, -1e-2, 0.1, -0.1])
def test_rows_off_1_by_a_percent_are_no_probabilities(k: int, shift: float) -> None:
    labels, exact = _softmax_rows(500, k, seed=11)
    rows = np.round(exact, 6)
    row = 37
    column = int(rows[row].argmin() if shift > 0 else rows[row].argmax())
    rows[row, column] += shift
    assert 0 <= rows[row, column] <= 1  # only the sum is off
    result = evaluate("multiclass", labels, rows)
    total = float(rows[row].sum())
    for name in PROBABILITY:
        assert result.metrics[name] is None
        reason = result.undefined[name]
        assert f"row {row} sums to {total:.10g}, not 1 within 0.0001" in reason, reason
    # The tolerance scales with k: one of 1000 classes allows 1e-3, not 1e-2.
    assert max(1e-4, k * 1e-6) < abs(shift)


def test_many_classes_widen_the_tolerance_by_k() -> None:
    labels, exact = _softmax_rows(200, 1000, seed=5)
    rows = exact.copy()
    rows[:, 0] += 5e-4  # within 1000 x 1e-6, outside 1e-4
    assert "log_loss" not in evaluate("multiclass", labels, rows).undefined
    rows[:, 0] += 1e-3
    result = evaluate("multiclass", labels, rows)
    assert "not 1 within 0.001" in result.undefined["log_loss"]
