"""The same request gives the same answer through every door.

Each valid request of ``REQUESTS`` goes through REST with a JSON body, REST with a protobuf
body, gRPC ``Evaluate`` and the in-process ``core.evaluate``; every answer, turned into the JSON
shape (``service.encode.proto_to_json`` for protobuf answers), must equal the core's: the same
metrics (nulls included), reasons, curves (null for the +inf start), conventions, warnings and
``n_samples``. Floats are compared exactly: each door carries float64 unchanged (orjson writes
the shortest repr that reads back to the same double, protobuf sends the 8 bytes), so anything
short of equality is a bug.

A stream of the same rows in batches (NDJSON over REST, ``EvaluateStream`` over gRPC) gives the
one-shot answer too, also exactly: the stream merges the same sufficient statistic the one-shot
path builds (per distinct score, in the same order), fractional weights included.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from functools import cache
from typing import Any

import numpy as np
import pytest

from tests.contract.doors import (
    PROTOBUF,
    batches,
    column,
    core_answer,
    f64,
    grpc_evaluate,
    grpc_stream,
    rest_json,
    rest_protobuf,
    rest_stream,
)
from tests.contract.servers import Service
from tests.core.test_worked_examples import FAWCETT_LABELS, FAWCETT_SCORES


def _fawcett(**fields: Any) -> dict[str, Any]:
    return {"task": "binary", "labels": FAWCETT_LABELS, "scores": FAWCETT_SCORES, **fields}


def _random(
    n_rows: int, seed: int, *, decimals: int | None = None
) -> dict[str, np.ndarray[Any, Any]]:
    """Labels with 30 % positives and scores that separate them imperfectly; ``decimals``
    rounds the scores (many ties)."""
    rng = np.random.default_rng(seed)
    labels = (rng.random(n_rows) < 0.3).astype(np.float64)
    scores = 1 / (1 + np.exp(-rng.normal(1.2 * labels - 0.6, 1.0)))
    if decimals is not None:
        scores = np.round(scores, decimals)
    return {"labels": labels, "scores": scores}


def _random_200k() -> dict[str, Any]:
    rows = _random(200_000, seed=11)
    weights = np.random.default_rng(12).uniform(0.25, 4.0, size=200_000)
    return {"task": "binary", **rows, "weights": weights, "options": {"head_k": [100, 1000]}}


def _random_200k_raw_ties() -> dict[str, Any]:
    rows = _random(200_000, seed=13, decimals=2)
    return {
        "task": "binary",
        "labels_f64": f64(rows["labels"]),
        "scores_f64": f64(rows["scores"]),
        "options": {"max_curve_points": 50, "threshold": 0.3},
    }


FRACTIONAL_WEIGHTS = [0.0, 0.5, 2.25, 1.0, 0.125, 3.0, 0.0, 1.5, 0.75, 1.0] * 2
INTEGER_WEIGHTS = [1.0 + (i % 3) for i in range(20)]
TIES = _random(500, seed=5, decimals=1)
BASELINE = {"labels": TIES["labels"].tolist(), "scores": TIES["scores"].tolist()}
CHALLENGER = [round(s * s + 0.1 * (i % 3), 3) for i, s in enumerate(FAWCETT_SCORES)]

# id -> a valid request. Each is a function, so a big payload is built only when it runs.
REQUESTS: dict[str, Callable[[], dict[str, Any]]] = {
    "fawcett": lambda: _fawcett(),
    "fawcett-integer-weights": lambda: _fawcett(weights=INTEGER_WEIGHTS),
    "fawcett-fractional-and-zero-weights": lambda: _fawcett(weights=FRACTIONAL_WEIGHTS),
    "threshold-and-beta": lambda: _fawcett(options={"threshold": 0.54, "beta": 2.0}),
    "head-k-and-max-fpr": lambda: _fawcett(options={"head_k": [3, 7.5, 100], "max_fpr": 0.25}),
    "max-curve-points-5": lambda: _fawcett(options={"max_curve_points": 5}),
    "no-curves-level-bins": lambda: _fawcett(
        options={"max_curve_points": 0, "confidence_level": 0.9, "calibration_bins": 4}
    ),
    # JSON null is "the default"; protobuf leaves the field unset.
    "null-options": lambda: _fawcett(
        options={"threshold": None, "beta": None, "max_fpr": None, "head_k": None}
    ),
    "hard-predictions-only": lambda: {
        "task": "binary",
        "labels": FAWCETT_LABELS,
        "predictions": [float(s >= 0.5) for s in FAWCETT_SCORES],
    },
    "scores-and-predictions": lambda: _fawcett(
        predictions=[float(s >= 0.38) for s in FAWCETT_SCORES], options={"threshold": 0.6}
    ),
    "single-class-negatives": lambda: {
        "task": "binary",
        "labels": [0.0] * 6,
        "scores": [0.1, 0.4, 0.4, 0.8, 0.2, 0.9],
    },
    "single-class-positives-weighted": lambda: {
        "task": "binary",
        "labels": [1.0] * 5,
        "scores": [0.9, 0.3, 0.6, 0.6, 0.1],
        "weights": [1.0, 2.0, 0.5, 0.0, 4.0],
        "options": {"head_k": [2]},
    },
    "single-row": lambda: {"task": "binary", "labels": [1.0], "scores": [0.7]},
    "ties": lambda: {"task": "binary", **TIES, "options": {"head_k": [50, 123.5]}},
    "all-scores-equal": lambda: {"task": "binary", "labels": [0, 1, 1, 0, 1], "scores": [0.5] * 5},
    "raw-f64-columns": lambda: {
        "task": "binary",
        "labels_f64": f64(FAWCETT_LABELS),
        "scores_f64": f64(FAWCETT_SCORES),
        "weights_f64": f64(INTEGER_WEIGHTS),
        "predictions_f64": f64([float(s >= 0.5) for s in FAWCETT_SCORES]),
    },
    "raw-and-packed-mixed": lambda: {
        "task": "binary",
        "labels": FAWCETT_LABELS,
        "scores_f64": f64(FAWCETT_SCORES),
        "weights": INTEGER_WEIGHTS,
    },
    "logits-outside-0-1": lambda: {
        "task": "binary",
        "labels": FAWCETT_LABELS,
        "scores": [8 * (s - 0.5) for s in FAWCETT_SCORES],
        "options": {"threshold": 0.0},
    },
    "extreme-magnitudes": lambda: {
        "task": "binary",
        "labels": [0, 1, 0, 1, 1, 0],
        "scores": [-1e300, 1e300, 1e-300, 5e-324, 1.7976931348623157e308, -5e-324],
        "options": {"threshold": 0.0},
    },
    "threshold-above-every-score": lambda: _fawcett(options={"threshold": 2.0}),
    "with-model": lambda: _fawcett(model={"name": "fraud", "version": "7", "segment": "eu"}),
    "random-200k-weighted": _random_200k,
    "random-200k-raw-ties": _random_200k_raw_ties,
    # --- intervals, drift, challenger
    "intervals-logit-bootstrap-level-90": lambda: _fawcett(
        options={
            "auc_interval": "logit",
            "bootstrap_replicates": 50,
            "bootstrap_seed": 7,
            "confidence_level": 0.9,
        }
    ),
    "drift-payload-too-few-for-a-verdict": lambda: _fawcett(baseline=BASELINE),
    "drift-payload": lambda: _fawcett(baseline=BASELINE, options={"drift_min_samples": 5}),
    "drift-weighted-payload": lambda: _fawcett(
        weights=INTEGER_WEIGHTS,
        baseline={**BASELINE, "weights": [0.5 + (i % 4) for i in range(500)]},
        options={"drift_min_samples": 5, "alpha": 0.2},
    ),
    "drift-summary-variance": lambda: _fawcett(
        baseline={"roc_auc": 0.8, "roc_auc_variance": 0.0004}, options={"drift_min_samples": 5}
    ),
    "drift-summary-counts": lambda: _fawcett(
        baseline={"roc_auc": 0.8, "n_positive": 300, "n_negative": 700},
        options={"drift_min_samples": 5},
    ),
    "challenger": lambda: _fawcett(
        challenger={"scores": CHALLENGER}, options={"drift_min_samples": 5, "alpha": 0.1}
    ),
    # --- the other tasks (one-shot only: streams take task binary)
    "task-regression": lambda: {
        "task": "regression",
        "labels": [3.0, -0.5, 2.0, 7.0, 4.25, 4.25, 0.0],
        "predictions": [2.5, 0.0, 2.0, 8.0, 4.0, 4.5, 0.25],
        "weights": [1.0, 2.0, 0.5, 1.0, 1.0, 3.0, 1.0],
        "options": {"n_params": 2, "full_model_variance": 0.4},
    },
    "task-regression-undefined": lambda: {
        "task": "regression",
        "labels": [2.0, 2.0, 2.0],
        "predictions": [1.0, 2.0, 0.0],
    },
    "task-multiclass": lambda: {
        "task": "multiclass",
        "labels": [0, 2, 1, 1, 0, 2, 2, 1],
        "scores": [
            [0.7, 0.2, 0.1],
            [0.1, 0.3, 0.6],
            [0.2, 0.5, 0.3],
            [0.3, 0.3, 0.4],
            [0.5, 0.4, 0.1],
            [0.2, 0.2, 0.6],
            [0.4, 0.1, 0.5],
            [0.1, 0.8, 0.1],
        ],
        "weights": [1.0, 2.0, 1.0, 0.5, 1.0, 1.0, 3.0, 1.0],
        "options": {"top_k": [1, 2], "beta": 2.0},
    },
    "task-multiclass-names-absent-class": lambda: {
        "task": "multiclass",
        "classes": ["cat", "dog", "bird", "fish"],
        "labels": ["cat", "bird", "dog", "dog", "cat"],
        "scores": [
            [0.6, 0.2, 0.1, 0.1],
            [0.1, 0.2, 0.6, 0.1],
            [0.2, 0.5, 0.2, 0.1],
            [0.3, 0.3, 0.3, 0.1],
            [0.4, 0.4, 0.1, 0.1],
        ],
    },
    "task-multilabel": lambda: {
        "task": "multilabel",
        "labels": [[1, 0, 1], [0, 1, 0], [1, 1, 0], [0, 0, 0], [1, 0, 1]],
        "scores": [
            [0.9, 0.2, 0.7],
            [0.1, 0.8, 0.4],
            [0.6, 0.6, 0.3],
            [0.2, 0.1, 0.5],
            [0.7, 0.3, 0.3],
        ],
        "classes": ["cat", "dog", "bird"],
    },
    "task-detection": lambda: {
        "task": "detection",
        "classes": ["person", "car"],
        "images": [
            {
                "image_id": "a",
                "gt_boxes": [[0, 0, 10, 10], [20, 20, 30, 30]],
                "gt_classes": [0, 1],
                "pred_boxes": [[1, 1, 10, 10], [21, 19, 30, 31], [50, 50, 60, 60]],
                "pred_classes": [0, 1, 1],
                "pred_scores": [0.9, 0.8, 0.3],
            },
            {
                "image_id": "b",
                "gt_boxes": [[5, 5, 15, 15]],
                "gt_classes": [0],
                "pred_boxes": [[5, 6, 15, 15], [0, 0, 4, 4]],
                "pred_classes": [0, 0],
                "pred_scores": [0.6, 0.7],
            },
        ],
    },
    "coverage-binary": lambda: _fawcett(
        coverage={"n_predictions": 80, "label_delay_seconds": 5400.5}, model={"name": "cov"}
    ),
    "coverage-delay-only": lambda: _fawcett(
        weights=INTEGER_WEIGHTS, coverage={"label_delay_seconds": 0}
    ),
    "task-regression-coverage": lambda: {
        "task": "regression",
        "labels": [3.0, -0.5, 2.0, 7.0],
        "predictions": [2.5, 0.0, 2.0, 8.0],
        "coverage": {"n_predictions": 4},
    },
    "task-multiclass-coverage": lambda: {
        "task": "multiclass",
        "labels": [0, 1, 2, 1, 0],
        "scores": [
            [0.7, 0.2, 0.1],
            [0.2, 0.5, 0.3],
            [0.1, 0.3, 0.6],
            [0.3, 0.3, 0.4],
            [0.5, 0.4, 0.1],
        ],
        "coverage": {"n_predictions": 1000, "label_delay_seconds": 86400},
    },
    "challenger-weighted-with-drift": lambda: _fawcett(
        weights=INTEGER_WEIGHTS,
        challenger={"scores": CHALLENGER},
        baseline={"roc_auc": 0.75, "roc_auc_variance": 0.001},
        options={"drift_min_samples": 5},
    ),
}


@cache
def request_of(case: str) -> dict[str, Any]:
    return REQUESTS[case]()


@cache
def expected_of(case: str) -> dict[str, Any]:
    return core_answer(request_of(case))


def differences(got: Any, expected: Any, path: str = "") -> Iterator[str]:
    """Where two JSON shapes differ: keys, lengths, values (floats exactly, bool is no number)."""
    if isinstance(expected, dict) and isinstance(got, dict):
        for key in sorted(set(got) | set(expected)):
            if key not in got or key not in expected:
                yield f"{path}.{key}: only in {'got' if key in got else 'expected'}"
            else:
                yield from differences(got[key], expected[key], f"{path}.{key}")
    elif isinstance(expected, list) and isinstance(got, list):
        if len(got) != len(expected):
            yield f"{path}: {len(got)} items, expected {len(expected)}"
        else:
            for index, (a, b) in enumerate(zip(got, expected, strict=True)):
                yield from differences(a, b, f"{path}[{index}]")
    elif got != expected or (type(got) is bool) != (type(expected) is bool):
        yield f"{path}: {got!r} != {expected!r}"


def assert_same(got: Mapping[str, Any], expected: Mapping[str, Any]) -> None:
    found = list(differences(got, expected))
    assert not found, f"{len(found)} differences, the first: {found[:10]}"


def test_the_table_covers_what_it_should() -> None:
    assert len(REQUESTS) >= 12
    answers = {case: expected_of(case) for case in REQUESTS if "200k" not in case}
    assert any(a["undefined"] for a in answers.values()), "no case with undefined metrics"
    assert any(None in a["metrics"].values() for a in answers.values())
    assert all(a["conventions"] for a in answers.values())
    fawcett = answers["fawcett"]
    assert fawcett["metrics"]["roc_auc"] == pytest.approx(0.68, abs=1e-12)
    assert fawcett["curves"]["roc"]["thresholds"][0] is None  # the +inf start
    assert answers["single-class-negatives"]["metrics"]["roc_auc"] is None
    assert "roc" not in answers["no-curves-level-bins"]["curves"]
    assert answers["null-options"] == fawcett
    assert fawcett["intervals"]["roc_auc"]["method"] == "delong-logit"  # the default
    bootstrap = answers["intervals-logit-bootstrap-level-90"]["intervals"]
    assert bootstrap["roc_auc"]["method"] == "delong-logit"
    assert bootstrap["average_precision"]["replicates"] == 50
    assert answers["drift-payload-too-few-for-a-verdict"]["drift"]["roc_auc"]["status"] == (
        "insufficient_data"
    )
    for case in ("drift-payload", "drift-summary-variance", "drift-summary-counts"):
        assert answers[case]["drift"]["roc_auc"]["status"] == "ok", case
    assert answers["challenger"]["comparison"]["roc_auc"]["status"] == "ok"


DOORS: dict[str, Callable[[Service, Mapping[str, Any]], dict[str, Any]]] = {
    "rest-json": rest_json,
    "rest-json-answer-protobuf": lambda s, r: rest_json(s, r, accept=PROTOBUF),
    "rest-protobuf": rest_protobuf,
    "rest-protobuf-answer-json": lambda s, r: rest_protobuf(s, r, accept="application/json"),
    "grpc": grpc_evaluate,
}


@pytest.mark.parametrize("door", list(DOORS))
@pytest.mark.parametrize("case", list(REQUESTS))
def test_every_door_gives_the_core_answer(service: Service, case: str, door: str) -> None:
    assert_same(DOORS[door](service, request_of(case)), expected_of(case))


# --- streams ----------------------------------------------------------------------------------


def stream_lines(request: Mapping[str, Any], n_batches: int = 4) -> list[dict[str, Any]]:
    """The request as a stream: a header line (task, options, model), then batches of rows,
    odd batches as packed arrays and even ones as raw f64 bytes."""
    header = {
        k: request[k] for k in ("task", "options", "model", "baseline", "coverage") if k in request
    }
    columns = {
        name: column(request, name) for name in ("labels", "scores", "predictions", "weights")
    }
    present = {name: values for name, values in columns.items() if values is not None}
    n_rows = len(present["labels"])
    lines: list[dict[str, Any]] = [header]
    for index, part in enumerate(batches(n_rows, n_batches)):
        if index % 2:
            lines.append({f"{name}_f64": f64(values[part]) for name, values in present.items()})
        else:
            lines.append({name: values[part] for name, values in present.items()})
    return lines


STREAMS: dict[str, Callable[[Service, list[dict[str, Any]]], dict[str, Any]]] = {
    "rest-ndjson": rest_stream,
    "grpc": grpc_stream,
}


@pytest.mark.parametrize("door", list(STREAMS))
@pytest.mark.parametrize(
    "case", [case for case in REQUESTS if not case.startswith(("challenger", "task-"))]
)
def test_a_stream_gives_the_one_shot_answer(service: Service, case: str, door: str) -> None:
    lines = stream_lines(request_of(case))
    assert len(lines) > 2 or case == "single-row"
    assert_same(STREAMS[door](service, lines), expected_of(case))


def test_rows_on_the_header_line_and_one_row_batches(service: Service) -> None:
    request = _fawcett(weights=INTEGER_WEIGHTS, options={"threshold": 0.54})
    header, first, *rest = stream_lines(request, n_batches=20)
    lines = [{**header, **first}, *rest]  # the first batch rides on the header line
    assert len(rest) >= 10
    expected = core_answer(request)
    for door in STREAMS.values():
        assert_same(door(service, lines), expected)


@pytest.mark.parametrize(
    "door",
    [
        "rest-ndjson",
        "grpc",
    ],
)
def test_an_empty_batch_changes_nothing(service: Service, door: str) -> None:
    request = _fawcett(weights=INTEGER_WEIGHTS)
    header, *lines = stream_lines(request, n_batches=2)
    empty: dict[str, list[float]] = {"labels": [], "scores": [], "weights": []}
    lines = [header, lines[0], empty, *lines[1:]]
    assert_same(STREAMS[door](service, lines), core_answer(request))


@pytest.mark.parametrize("name", ["weights", "predictions"])
@pytest.mark.parametrize(
    "door",
    [
        "rest-json-array",
        "rest-json-raw",
        "rest-protobuf",
        "grpc",
    ],
)
def test_an_empty_optional_column_is_absent_on_every_door(
    service: Service, door: str, name: str
) -> None:
    expected = expected_of("fawcett")
    if door == "rest-json-array":
        got = rest_json(service, _fawcett(**{name: []}))
    elif door == "rest-json-raw":
        got = rest_json(service, _fawcett(**{f"{name}_f64": b""}))
    else:
        got = DOORS[door](service, _fawcett(**{name: []}))
    assert_same(got, expected)
