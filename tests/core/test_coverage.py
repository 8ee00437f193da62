"""Label coverage (core/_coverage.py): the share of the window's predictions that were labelled,
for every task, with the caller's label delay; refused values name their field; a stream's
statistic reports the same as one payload."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalserve import core
from evalserve.core import (
    BinaryStats,
    CoverageReport,
    InvalidInputError,
    evaluate,
    evaluate_binary_stats,
    parse_options,
)

LABELS = [0, 0, 1, 1]
SCORES = [0.1, 0.4, 0.35, 0.8]


def test_the_report_for_a_binary_window() -> None:
    result = evaluate("binary", LABELS, SCORES, coverage={"n_predictions": 10,
                                                        "label_delay_seconds": 3600})  # fmt: skip
    assert result.coverage == CoverageReport(
        n_labelled=4, n_predictions=10, label_coverage=0.4, label_delay_seconds=3600.0,
    )  # fmt: skip
    assert result.to_dict()["coverage"] == {
        "n_labelled": 4, "n_predictions": 10, "label_coverage": 0.4,
        "label_delay_seconds": 3600.0,
    }  # fmt: skip
    # the metrics are those of the labelled rows, coverage or not
    assert result.metrics == evaluate("binary", LABELS, SCORES).metrics


def test_without_coverage_the_block_is_empty() -> None:
    assert evaluate("binary", LABELS, SCORES).to_dict()["coverage"] == {}


def test_only_what_was_sent_is_reported() -> None:
    delay_only = evaluate("binary", LABELS, SCORES, coverage={"label_delay_seconds": 0})
    assert delay_only.to_dict()["coverage"] == {"n_labelled": 4, "label_delay_seconds": 0.0}
    count_only = evaluate("binary", LABELS, SCORES, coverage={"n_predictions": 4})
    assert count_only.to_dict()["coverage"] == {
        "n_labelled": 4, "n_predictions": 4, "label_coverage": 1.0
    }  # fmt: skip


def test_weights_do_not_change_the_row_count() -> None:
    result = evaluate(
        "binary", LABELS, SCORES, sample_weight=[0, 2, 3.5, 1], coverage={"n_predictions": 8}
    )
    assert result.coverage is not None
    assert result.coverage.n_labelled == 4  # rows, as n_samples (weight-zero rows too)
    assert result.coverage.label_coverage == 0.5


@pytest.mark.parametrize(
    ("task", "args", "kwargs", "n_labelled"),
    [
        ("multiclass", ([0, 1, 2], np.eye(3) * 0.8 + 0.1), {}, 3),
        ("multilabel", ([[0, 1], [1, 0], [1, 1]], [[0.2, 0.9], [0.7, 0.1], [0.6, 0.8]]), {}, 3),
        ("regression", ([1.0, 2.0, 3.0, 4.0, 5.0],), {"y_pred": [1.1, 2.0, 2.9, 4.2, 5.0]}, 5),
        (
            "detection",
            (
                [{"boxes": [[0, 0, 10, 10]], "classes": [0]}, {"boxes": [], "classes": []}],
                [{"boxes": [[0, 0, 10, 9]], "classes": [0], "scores": [0.9]},
                 {"boxes": [], "classes": [], "scores": []}],
            ),
            {},
            2,  # images
        ),
    ],
)  # fmt: skip
def test_every_task_reports_coverage(
    task: str, args: tuple[Any, ...], kwargs: dict[str, Any], n_labelled: int
) -> None:
    result = evaluate(task, *args, **kwargs, coverage={"n_predictions": 20})
    assert result.n_samples == n_labelled
    assert result.to_dict()["coverage"] == {
        "n_labelled": n_labelled, "n_predictions": 20, "label_coverage": n_labelled / 20
    }  # fmt: skip


@pytest.mark.parametrize(
    ("coverage", "field", "says"),
    [
        ({"n_predictions": 3}, "coverage.n_predictions", "at least the 4 labelled rows"),
        ({"n_predictions": 0}, "coverage.n_predictions", "at least 1"),
        ({"n_predictions": 4.5}, "coverage.n_predictions", "whole number"),
        ({"n_predictions": True}, "coverage.n_predictions", "whole number"),
        ({"n_predictions": float("inf")}, "coverage.n_predictions", "whole number"),
        ({"label_delay_seconds": -1}, "coverage.label_delay_seconds", ">= 0"),
        ({"label_delay_seconds": float("nan")}, "coverage.label_delay_seconds", "finite"),
        ({"label_delay_seconds": "1h"}, "coverage.label_delay_seconds", "a number"),
        ({}, "coverage", "at least one of"),
        ({"n_predictions": None}, "coverage", "at least one of"),
        ({"n_labels": 5}, "coverage.n_labels", "unknown field"),
    ],
)
def test_bad_coverage_is_refused_naming_the_field(
    coverage: dict[str, Any], field: str, says: str
) -> None:
    with pytest.raises(InvalidInputError) as refused:
        evaluate("binary", LABELS, SCORES, coverage=coverage)
    assert refused.value.field == field
    assert says in refused.value.message


def test_coverage_must_be_an_object() -> None:
    with pytest.raises(InvalidInputError, match="expected an object"):
        core.check_coverage([10])  # type: ignore[arg-type]


def test_a_stream_reports_what_one_payload_does() -> None:
    rng = np.random.default_rng(5)
    labels = rng.random(1000) < 0.3
    scores = np.round(rng.random(1000), 2)
    coverage = {"n_predictions": 4000, "label_delay_seconds": 86400}
    stats = BinaryStats.empty()
    for part in np.array_split(np.arange(1000), 7):
        stats = stats.update(labels[part], scores[part])
    streamed = evaluate_binary_stats(stats, parse_options(None), coverage=coverage)
    one_shot = evaluate("binary", labels.astype(float), scores, coverage=coverage)
    assert streamed.coverage == one_shot.coverage
    assert streamed.coverage is not None
    assert streamed.coverage.label_coverage == 0.25


@given(n_rows=st.integers(1, 200), extra=st.integers(0, 10**9))
def test_label_coverage_is_rows_over_predictions_in_0_1(n_rows: int, extra: int) -> None:
    labels = [i % 2 for i in range(n_rows)]
    scores = [((i * 37) % 101) / 101 for i in range(n_rows)]
    predictions = n_rows + extra
    report = evaluate("binary", labels, scores, coverage={"n_predictions": predictions}).coverage
    assert report is not None and report.label_coverage is not None
    assert report.label_coverage == n_rows / predictions
    assert 0 < report.label_coverage <= 1
