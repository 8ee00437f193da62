"""Bad input raises InvalidInputError naming the field and saying what was expected."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import numpy as np
import pytest

from evalserve.core import InvalidInputError, _threads, _validation, evaluate
from evalserve.core._threads import using_threads

GOOD_LABELS = [0, 1, 0, 1]
GOOD_SCORES = [0.1, 0.9, 0.4, 0.6]


@pytest.mark.parametrize(
    ("kwargs", "field", "fragment"),
    [
        pytest.param({"y_score": [0.1, 0.2]}, "scores", "expected 4 values", id="length"),
        pytest.param({"y_true": [], "y_score": []}, "labels", "empty", id="empty"),
        pytest.param({"y_score": [0.1, np.nan, 0.3, 0.4]}, "scores", "row 1", id="nan"),
        pytest.param({"y_score": [0.1, 0.2, np.inf, 0.4]}, "scores", "row 2", id="inf"),
        pytest.param({"y_true": [0, 1, 2, 1]}, "labels", "row 2 is", id="label-2"),
        pytest.param({"y_true": [0, 1, 0.5, 1]}, "labels", "0 or 1", id="label-half"),
        pytest.param({"y_true": ["a", "b", "a", "b"]}, "labels", "0 or 1", id="label-str"),
        pytest.param({"y_score": ["x", "y", "z", "w"]}, "scores", "numbers", id="score-str"),
        pytest.param({"y_score": [[0.1], [0.2], [0.3], [0.4]]}, "scores", "1-d", id="score-2d"),
        pytest.param({"sample_weight": [1, -1, 1, 1]}, "weights", "non-negative", id="neg-w"),
        pytest.param({"sample_weight": [0, 0, 0, 0]}, "weights", "all weights are zero", id="w0"),
        pytest.param({"sample_weight": [1, 1]}, "weights", "expected 4", id="w-length"),
        pytest.param({"sample_weight": [1, np.nan, 1, 1]}, "weights", "finite", id="w-nan"),
        pytest.param({"y_score": None}, "scores", "required", id="no-scores"),
        pytest.param({"task": "ranking"}, "task", "expected one of", id="unknown-task"),
        pytest.param({"options": {"colour": 1}}, "options.colour", "unknown", id="unknown-opt"),
        pytest.param({"options": {"beta": 0}}, "options.beta", "(0, 10000]", id="beta-0"),
        pytest.param({"options": {"beta": 1e155}}, "options.beta", "(0, 10000]", id="beta-big"),
        pytest.param({"sample_weight": [1, 1e300, 1, 1]}, "weights", "row 1", id="w-huge"),
        pytest.param({"sample_weight": [1e-300] * 4}, "weights", "[1e-100", id="w-tiny"),
        pytest.param({"options": {"beta": "2"}}, "options.beta", "number", id="beta-str"),
        pytest.param({"options": {"threshold": np.nan}}, "options.threshold", "finite", id="t"),
        pytest.param({"options": {"max_fpr": 0}}, "options.max_fpr", "(0, 1]", id="fpr-0"),
        pytest.param({"options": {"max_fpr": 1.5}}, "options.max_fpr", "(0, 1]", id="fpr-big"),
        pytest.param(
            {"options": {"confidence_level": 1}}, "options.confidence_level", "(0, 1)", id="cl"
        ),
        pytest.param({"options": {"head_k": [0]}}, "options.head_k", "k > 0", id="head-0"),
        pytest.param({"options": {"top_k": [1.5]}}, "options.top_k", "integer", id="top-k"),
        pytest.param(
            {"options": {"max_curve_points": 1}}, "options.max_curve_points", "at least 2", id="mcp"
        ),
        pytest.param(
            {"options": {"calibration_bins": 0}}, "options.calibration_bins", "[1,", id="bins"
        ),
        pytest.param({"options": [1, 2]}, "options", "object", id="options-list"),
        pytest.param({"y_pred": [0, 1, 3, 1]}, "predictions", "0 or 1", id="pred-label"),
    ],
)
def test_bad_input_names_the_field(kwargs: dict[str, Any], field: str, fragment: str) -> None:
    call: dict[str, Any] = {"task": "binary", "y_true": GOOD_LABELS, "y_score": GOOD_SCORES}
    call.update(kwargs)
    task, y_true, y_score = call.pop("task"), call.pop("y_true"), call.pop("y_score")
    with pytest.raises(InvalidInputError) as info:
        evaluate(task, y_true, y_score, **call)
    assert info.value.field == field
    assert fragment in info.value.message
    assert str(info.value).startswith(f"{field}: ")


def test_boolean_and_float_labels_are_accepted() -> None:
    as_bool = evaluate("binary", [False, True, False, True], GOOD_SCORES).metrics
    as_float = evaluate("binary", [0.0, 1.0, 0.0, 1.0], GOOD_SCORES).metrics
    assert as_bool == as_float
    assert as_bool["roc_auc"] == 1.0


def test_predictions_set_the_confusion_counts() -> None:
    # Hard predictions replace the threshold rule; the ranking metrics still use the scores.
    result = evaluate("binary", GOOD_LABELS, GOOD_SCORES, y_pred=[1, 1, 1, 1])
    assert (result.metrics["tp"], result.metrics["fp"]) == (2.0, 2.0)
    assert result.metrics["roc_auc"] == 1.0


def test_predictions_alone_give_the_single_point_roc() -> None:
    # Fawcett: a discrete classifier is one ROC point; its AUC is (1 + TPR - FPR) / 2.
    metrics = evaluate("binary", [0, 0, 1, 1], y_pred=[0, 1, 1, 1]).metrics
    assert (metrics["recall"], metrics["fpr"]) == (1.0, 0.5)
    assert metrics["roc_auc"] == pytest.approx((1 + 1.0 - 0.5) / 2)


def test_baseline_and_challenger_are_binary_only() -> None:
    with pytest.raises(InvalidInputError, match="'binary'") as error:
        evaluate("regression", [1.0, 2.0], [1.0, 2.0], baseline={"roc_auc": 0.9})
    assert error.value.field == "baseline"
    with pytest.raises(InvalidInputError, match="roc_auc_variance"):
        evaluate("binary", GOOD_LABELS, GOOD_SCORES, baseline={"roc_auc": 0.9})


def test_regression_takes_scores_or_predictions_but_not_both() -> None:
    by_scores = evaluate("regression", [1.0, 2.0, 4.0], [1.5, 2.0, 3.0])
    by_predictions = evaluate("regression", [1.0, 2.0, 4.0], y_pred=[1.5, 2.0, 3.0])
    assert by_scores.metrics == by_predictions.metrics
    with pytest.raises(InvalidInputError) as error:
        evaluate("regression", [1.0, 2.0], [1.0, 2.0], y_pred=[1.0, 2.0])
    assert error.value.field == "scores"


@contextmanager
def threads_of(threads: int) -> Iterator[None]:
    """``threads`` threads for inputs of any size (production: half a million rows each)."""
    with mock.patch.object(_threads, "MIN_ROWS_PER_THREAD", 1), using_threads(threads):
        yield


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("bad", [None, 2, -1])
@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.uint32])
def test_integer_labels_are_checked_block_by_block(
    bad: int | None, dtype: type, threads: int
) -> None:
    """Integer labels are checked and converted block by block, in shares on threads: a bad
    label in a later block (the last share's) is found and named by its row; good ones
    convert as a whole."""
    n = 3 * _validation.FLAG_BLOCK + 5
    labels = (np.arange(n) % 3 == 0).astype(dtype)
    row = 2 * _validation.FLAG_BLOCK + 3
    if bad is not None:
        if bad < 0 and np.dtype(dtype).kind == "u":
            return
        labels[row] = bad
        with threads_of(threads), pytest.raises(InvalidInputError, match=f"row {row} is {bad}"):
            _validation.binary_labels("labels", labels)
        return
    with threads_of(threads):
        converted = _validation.binary_labels("labels", labels)
    np.testing.assert_array_equal(converted, labels == 1)


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("row", [0, 500, 999])
def test_scores_are_checked_in_shares(threads: int, bad: float, row: int) -> None:
    """A NaN or an infinity in any share is found and named by its row; finite scores whose
    sum overflows (in one share or across shares) are finite and pass."""
    scores = np.full(1000, 0.5)
    scores[row] = bad
    with threads_of(threads), pytest.raises(InvalidInputError, match=f"row {row} is"):
        _validation.finite_floats("scores", scores)
    huge = np.full(1000, 1e308)
    with threads_of(threads), warnings.catch_warnings():
        warnings.simplefilter("error")  # the overflow of the sum is expected, not warned
        np.testing.assert_array_equal(_validation.finite_floats("scores", huge), huge)
