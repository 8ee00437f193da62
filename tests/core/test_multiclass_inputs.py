"""Bad multiclass input raises InvalidInputError naming the field (labels, scores, predictions,
weights, classes), what was expected and, where it helps, the row."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from evalserve.core import InvalidInputError, Options
from evalserve.core.multiclass import compute_multiclass

LABELS = [0, 2, 1, 2]
SCORES = [[0.7, 0.2, 0.1], [0.1, 0.3, 0.6], [0.2, 0.5, 0.3], [0.3, 0.3, 0.4]]
NAMES = ["cat", "dog", "eel"]


def _call(**overrides: Any) -> None:
    arguments: dict[str, Any] = {"y_true": LABELS, "y_score": SCORES}
    arguments.update(overrides)
    compute_multiclass(
        arguments.pop("y_true"), arguments.pop("y_score"), options=Options(), **arguments
    )


@pytest.mark.parametrize(
    ("overrides", "field", "fragments"),
    [
        pytest.param({"y_score": None}, "scores", ["required"], id="no-scores"),
        pytest.param({"y_score": [0.1, 0.2, 0.3, 0.4]}, "scores", ["n x k"], id="scores-1d"),
        pytest.param(
            {"y_score": [[0.1], [0.2], [0.3], [0.4]]}, "scores", ["at least 2 columns"],
            id="one-column",
        ),
        pytest.param({"y_score": [["a", "b"]] * 4}, "scores", ["numbers"], id="scores-str"),
        pytest.param(
            {"y_score": [[0.1, 0.8, 0.1]] * 3 + [[0.5, np.nan, 0.5]]}, "scores",
            ["row 3 column 1", "nan"], id="nan",
        ),
        pytest.param(
            {"y_score": [[0.1, 0.9, 0.0], [np.inf, 0.0, 0.0]] * 2}, "scores", ["row 1 column 0"],
            id="inf",
        ),
        pytest.param({"y_score": SCORES[:3]}, "scores", ["expected 4 rows"], id="rows"),
        pytest.param({"y_true": [], "y_score": np.empty((0, 3))}, "labels", ["empty"], id="empty"),
        pytest.param({"y_true": None}, "labels", ["required"], id="no-labels"),
        pytest.param({"y_true": [0, 1, 3, 2]}, "labels", ["0..2", "row 2 is 3"], id="too-big"),
        pytest.param({"y_true": [0, -1, 1, 2]}, "labels", ["row 1 is -1"], id="negative"),
        pytest.param({"y_true": [0, 1.5, 1, 2]}, "labels", ["row 1 is 1.5"], id="fraction"),
        pytest.param({"y_true": [0, 1, np.nan, 2]}, "labels", ["row 2"], id="label-nan"),
        pytest.param({"y_true": [[0, 1], [1, 0]]}, "labels", ["1-d"], id="labels-2d"),
        pytest.param(
            {"y_true": ["cat", "dog", "eel", "cat"]}, "classes", ["required", "'cat'"],
            id="names-without-classes",
        ),
        pytest.param(
            {"y_true": ["cat", "cow", "eel", "cat"], "classes": NAMES}, "labels",
            ["row 1", "'cow'", "not one of classes"], id="unknown-name",
        ),
        pytest.param(
            {"y_true": ["cat", 1, "eel", "cat"], "classes": NAMES}, "labels", ["row 1", "'1'"],
            id="mixed",
        ),
        pytest.param(
            {"classes": ["cat", "dog"]}, "scores", ["expected 2 columns", "got 3"], id="width"
        ),
        pytest.param({"classes": ["cat", "dog", "cat"]}, "classes", ["distinct"], id="dup"),
        pytest.param({"classes": ["cat", 2, "eel"]}, "classes", ["strings"], id="not-str"),
        pytest.param({"classes": "cat"}, "classes", ["list"], id="classes-str"),
        pytest.param({"y_pred": [0, 1, 5, 2]}, "predictions", ["row 2 is 5"], id="pred-range"),
        pytest.param({"y_pred": [0, 1]}, "predictions", ["expected 4 values"], id="pred-length"),
        pytest.param(
            {"y_pred": ["cat", "dog", "gnu", "eel"], "classes": NAMES}, "predictions",
            ["row 2", "'gnu'"], id="pred-name",
        ),
        pytest.param({"sample_weight": [1, -1, 1, 1]}, "weights", ["non-negative"], id="w-neg"),
        pytest.param({"sample_weight": [0, 0, 0, 0]}, "weights", ["all weights are zero"], id="w0"),
        pytest.param({"sample_weight": [1, 1]}, "weights", ["expected 4"], id="w-length"),
        pytest.param({"sample_weight": [1, np.nan, 1, 1]}, "weights", ["finite"], id="w-nan"),
    ],
)  # fmt: skip
def test_bad_input_names_the_field(
    overrides: dict[str, Any], field: str, fragments: list[str]
) -> None:
    with pytest.raises(InvalidInputError) as raised:
        _call(**overrides)
    assert raised.value.field == field
    for fragment in fragments:
        assert fragment in raised.value.message, raised.value.message


def test_good_input_in_every_accepted_form() -> None:
    expected = compute_multiclass(LABELS, SCORES, options=Options()).sink.metrics
    forms: list[dict[str, Any]] = [
        {"y_true": np.array(LABELS, dtype=np.float64)},  # integral floats
        {"y_true": np.array(LABELS, dtype=np.uint8)},
        {"y_true": [NAMES[i] for i in LABELS], "classes": NAMES},
        {"y_true": np.array([NAMES[i] for i in LABELS], dtype=object), "classes": tuple(NAMES)},
        {"y_true": np.array([NAMES[i].encode() for i in LABELS]), "classes": NAMES},
        {"y_score": np.asfortranarray(SCORES)},
        {"y_pred": np.array(SCORES).argmax(axis=1)},
    ]
    for form in forms:
        arguments: dict[str, Any] = {"y_true": LABELS, "y_score": SCORES, **form}
        got = compute_multiclass(
            arguments.pop("y_true"), arguments.pop("y_score"), options=Options(), **arguments
        )
        assert got.sink.metrics == expected, form


def test_integer_scores_and_a_two_class_problem() -> None:
    output = compute_multiclass([0, 1, 1, 0], [[3, 1], [0, 2], [1, 1], [5, 5]], options=Options())
    assert output.sink.metrics["roc_auc_ovr_macro"] is not None
    assert output.sink.metrics["log_loss"] is None
