"""The same request gives the same answer through every door.

Each valid request of ``REQUESTS`` goes through REST with a JSON body, REST with a protobuf
body, gRPC ``Evaluate`` and the in-process ``core.evaluate``; every answer, turned into the JSON
shape (``service.encode.proto_to_json`` for protobuf answers), must equal the core's: the same
metrics (nulls included), reasons, curves (null for the +inf start), conventions, warnings and
``n_samples``. Floats are compared exactly: each door carries float64 unchanged (orjson writes
the shortest repr that reads back to the same double, protobuf sends the 8 bytes), so anything
short of equality is a bug.

A stream of the same rows in batches (NDJSON over REST, ``EvaluateStream`` over gRPC) gives the
one-shot answer too, for every task: batches of rows (score matrices as n x k arrays on JSON,
flat on protobuf), class names, batches of one row, empty batches, detection's images. For task
binary exactly: the stream merges the same sufficient statistic the one-shot path builds (per
distinct score, in the same order), fractional weights included. The other tasks' states may add
per-batch sums in another order, so there the stream is within 1e-12 of the one-shot answer; the
two stream doors give exactly the same answer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from functools import cache
from typing import Any

import numpy as np
import pytest

from tests.contract.doors import (
    PROTOBUF,
    assert_close,
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


def _multiclass_random(
    n_rows: int, seed: int, *, names: tuple[str, ...] | None = None
) -> dict[str, Any]:
    """Four classes, scores rounded to 2 decimals (ties), class-index labels, weights and hard
    predictions (the top score); with ``names``, labels as class names and ``classes``."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 4, n_rows)
    logits = rng.normal(size=(n_rows, 4)) + 1.5 * np.eye(4)[labels]
    scores = np.round(np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True), 2)
    request: dict[str, Any] = {
        "task": "multiclass",
        "labels": labels.astype(np.float64),
        "scores": scores.tolist(),
        "predictions": scores.argmax(axis=1).astype(np.float64),
        "weights": rng.integers(1, 4, n_rows).astype(np.float64),
        "options": {"top_k": [1, 2]},
    }
    if names is not None:
        request |= {"classes": list(names), "labels": [names[i] for i in labels]}
        del request["weights"]
    return request


def _multilabel_random(n_rows: int, seed: int) -> dict[str, Any]:
    """Three labels, scores rounded to 2 decimals, predictions at 0.5, fractional weights."""
    rng = np.random.default_rng(seed)
    labels = (rng.random((n_rows, 3)) < [0.2, 0.5, 0.7]).astype(np.float64)
    scores = np.round(1 / (1 + np.exp(-rng.normal(2 * labels - 1, 1.0))), 2)
    return {
        "task": "multilabel",
        "labels": labels.tolist(),
        "scores": scores.tolist(),
        "predictions": (scores >= 0.5).astype(np.float64).tolist(),
        "weights": rng.uniform(0.5, 2.0, n_rows),
        "classes": ["cat", "dog", "bird"],
    }


def _regression_random(n_rows: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    labels = rng.normal(10.0, 3.0, n_rows)
    return {
        "task": "regression",
        "labels": labels,
        "predictions": labels + rng.normal(0.0, 1.0, n_rows),
        "weights": rng.integers(1, 5, n_rows).astype(np.float64),
        "options": {"n_params": 3},
    }


def _detection_random(n_images: int, seed: int) -> dict[str, Any]:
    """Images with 0-4 ground-truth boxes of 3 classes and noisy predictions of them (some
    missed, some false), scores rounded to 2 decimals (ties across images)."""
    rng = np.random.default_rng(seed)
    images = []
    for index in range(n_images):
        n_true = int(rng.integers(0, 5))
        corner = rng.uniform(0, 80, (n_true, 2))
        truth = np.hstack([corner, corner + rng.uniform(5, 20, (n_true, 2))])
        kept = rng.random(n_true) < 0.8
        found = truth[kept] + rng.normal(0, 2, (int(kept.sum()), 4))
        false = rng.uniform(0, 50, (int(rng.integers(0, 3)), 2))
        false_boxes = np.hstack([false, false + 10])
        predicted = np.vstack([found, false_boxes])
        true_classes = rng.integers(0, 3, n_true)
        predicted_classes = np.concatenate(
            [true_classes[kept], rng.integers(0, 3, len(false_boxes))]
        )
        images.append(
            {
                "image_id": f"image-{index}",
                "gt_boxes": np.round(truth, 1).tolist(),
                "gt_classes": true_classes.tolist(),
                "pred_boxes": np.round(predicted, 1).tolist(),
                "pred_classes": predicted_classes.tolist(),
                "pred_scores": np.round(rng.uniform(0.05, 1.0, len(predicted)), 2).tolist(),
            }
        )
    return {"task": "detection", "classes": ["person", "car", "bike"], "images": images}


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
    # --- options.positive_label: names (label_names on protobuf), numbers other than 0/1
    "positive-label-names": lambda: _fawcett(
        labels=["yes" if label else "no" for label in FAWCETT_LABELS],
        weights=INTEGER_WEIGHTS,
        options={"positive_label": "yes"},
    ),
    "positive-label-1-2": lambda: _fawcett(
        labels=[2.0 if label else 1.0 for label in FAWCETT_LABELS],
        options={"positive_label": "2", "head_k": [3]},
    ),
    "positive-label-minus-1-1-raw": lambda: {
        "task": "binary",
        "labels_f64": f64([1.0 if label else -1.0 for label in FAWCETT_LABELS]),
        "scores_f64": f64(FAWCETT_SCORES),
        "options": {"positive_label": "1"},
    },
    # --- the other tasks
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
    "task-multiclass-random-ties-weighted": lambda: _multiclass_random(600, seed=21),
    "task-multiclass-names-predictions": lambda: {
        **_multiclass_random(300, seed=22, names=("cat", "dog", "bird", "fish")),
        "options": {"top_k": [1, 3], "max_curve_points": 20},
    },
    "task-multilabel-random-predictions-weighted": lambda: _multilabel_random(400, seed=23),
    "task-regression-random": lambda: _regression_random(1000, seed=24),
    "task-detection-random": lambda: _detection_random(40, seed=25),
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
    # positive_label reads the labels as 1/0 labels would be
    assert answers["positive-label-names"] == answers["fawcett-integer-weights"]
    assert answers["positive-label-minus-1-1-raw"] == fawcett
    assert (
        answers["positive-label-1-2"]["metrics"]
        == core_answer(_fawcett(options={"head_k": [3]}))["metrics"]
    )


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

STREAM_HEADER = ("task", "options", "model", "baseline", "coverage", "classes", "n_classes")


def _rows_of(request: Mapping[str, Any]) -> dict[str, Any]:
    """The request's row columns (numeric ones as arrays, class names as a list), or its images
    under ``images``."""
    if request["task"] == "detection":
        return {"images": list(request["images"])}
    rows: dict[str, Any] = {}
    for name in ("labels", "scores", "predictions", "weights"):
        values = request.get(name)
        if isinstance(values, list) and values and isinstance(values[0], str):
            rows[name] = list(values)
        elif values is not None or request.get(f"{name}_f64"):
            rows[name] = column(request, name)
    return rows


def _flat_width_known(request: Mapping[str, Any]) -> bool:
    """Whether the server can read this request's matrices flat (raw bytes): the header gives
    the width, or, multiclass, the ratio of scores to labels does."""
    return bool(request.get("classes") or request.get("n_classes")) or (
        request["task"] == "multiclass"
    )


def _part(name: str, values: Any, part: slice, raw: bool) -> dict[str, Any]:
    chunk = values[part]
    if isinstance(chunk, list):  # class names or images: no raw form
        return {name: chunk}
    if raw:
        return {f"{name}_f64": f64(chunk.reshape(-1))}
    return {name: chunk.tolist() if chunk.ndim == 2 else chunk}


def stream_lines(
    request: Mapping[str, Any],
    n_batches: int = 4,
    *,
    empty_every: int = 0,
    one_by_one: bool = False,
) -> list[dict[str, Any]]:
    """The request as a stream: a header line (task, options, classes, ...), then batches of
    rows (or images), odd batches as raw f64 bytes where the server can read them flat and
    even ones as arrays (matrices as n x k). ``empty_every`` adds an empty batch after every
    that many; ``one_by_one`` sends one row (one image) a batch."""
    header = {k: request[k] for k in STREAM_HEADER if k in request}
    rows = _rows_of(request)
    n_rows = len(next(iter(rows.values())))
    raw_allowed = request["task"] not in ("multiclass", "multilabel") or _flat_width_known(request)
    empty: dict[str, list[Any]] = {name: [] for name in rows if name != "weights"}
    lines: list[dict[str, Any]] = [header]
    parts = [slice(i, i + 1) for i in range(n_rows)] if one_by_one else batches(n_rows, n_batches)
    for index, part in enumerate(parts):
        line: dict[str, Any] = {}
        for name, values in rows.items():
            line |= _part(name, values, part, raw=bool(index % 2) and raw_allowed)
        lines.append(line)
        if empty_every and (index + 1) % empty_every == 0:
            lines.append(dict(empty))
    return lines


def assert_streamed(got: Mapping[str, Any], expected: Mapping[str, Any]) -> None:
    """A stream's answer is the one-shot answer: exactly for binary, within 1e-12 otherwise."""
    if expected["task"] == "binary":
        assert_same(got, expected)
    else:
        assert_close(got, expected)


STREAMS: dict[str, Callable[[Service, list[dict[str, Any]]], dict[str, Any]]] = {
    "rest-ndjson": rest_stream,
    "grpc": grpc_stream,
}
STREAMED = [case for case in REQUESTS if not case.startswith("challenger")]
TASK_OF_CASE = {case: REQUESTS[case]()["task"] for case in STREAMED if "200k" not in case}
ONE_OF_EACH_TASK = {
    "binary": "fawcett-integer-weights",
    "multiclass": "task-multiclass-names-predictions",
    "multilabel": "task-multilabel-random-predictions-weighted",
    "regression": "task-regression",
    "detection": "task-detection-random",
}


def _streamed(case: str) -> Any:
    return pytest.param(case, id=case)


def _each_task() -> list[Any]:
    return list(ONE_OF_EACH_TASK)


def test_the_stream_table_covers_every_task() -> None:
    assert set(TASK_OF_CASE.values()) == set(ONE_OF_EACH_TASK)
    for task, case in ONE_OF_EACH_TASK.items():
        assert TASK_OF_CASE[case] == task
    names = request_of("task-multiclass-names-predictions")
    assert isinstance(names["labels"][0], str) and names["classes"]
    assert request_of("task-detection-random")["images"]


@pytest.mark.parametrize("door", list(STREAMS))
@pytest.mark.parametrize("case", [_streamed(case) for case in STREAMED])
def test_a_stream_gives_the_one_shot_answer(service: Service, case: str, door: str) -> None:
    lines = stream_lines(request_of(case))
    assert len(lines) > 2 or case == "single-row"
    assert_streamed(STREAMS[door](service, lines), expected_of(case))


@pytest.mark.parametrize("task", _each_task())
def test_both_stream_doors_give_the_same_answer(service: Service, task: str) -> None:
    lines = stream_lines(request_of(ONE_OF_EACH_TASK[task]), n_batches=5)
    assert_same(rest_stream(service, lines), grpc_stream(service, lines))


def test_rows_on_the_header_line_and_one_row_batches(service: Service) -> None:
    request = _fawcett(weights=INTEGER_WEIGHTS, options={"threshold": 0.54})
    header, first, *rest = stream_lines(request, n_batches=20)
    lines = [{**header, **first}, *rest]  # the first batch rides on the header line
    assert len(rest) >= 10
    expected = core_answer(request)
    for door in STREAMS.values():
        assert_same(door(service, lines), expected)


def _small(task: str) -> dict[str, Any]:
    """A request of ``task`` small enough to send one row (one image) a batch."""
    request = dict(request_of(ONE_OF_EACH_TASK[task]))
    if task == "detection":
        request["images"] = request["images"][:12]
    elif task != "binary":
        rows = _rows_of(request)
        request |= {name: values[:25] for name, values in rows.items()}
    return request


@pytest.mark.parametrize("door", list(STREAMS))
@pytest.mark.parametrize("task", _each_task())
def test_batches_of_one_row_and_rows_on_the_header_line(
    service: Service, task: str, door: str
) -> None:
    request = _small(task)
    header, first, *rest = stream_lines(request, one_by_one=True)
    n_rows = len(next(iter(_rows_of(request).values())))
    assert len(rest) + 1 == n_rows  # one row (one image) a batch
    lines = [{**header, **first}, *rest]
    assert_streamed(STREAMS[door](service, lines), core_answer(request))


@pytest.mark.parametrize("door", list(STREAMS))
@pytest.mark.parametrize("task", _each_task())
def test_an_empty_batch_changes_nothing(service: Service, task: str, door: str) -> None:
    request = dict(request_of(ONE_OF_EACH_TASK[task]))
    lines = stream_lines(request, n_batches=3, empty_every=1)
    assert sum(1 for line in lines[1:] if not any(len(v) for v in line.values())) == 3
    # an empty batch before any rows, too (a message without rows)
    lines.insert(1, {})
    assert_streamed(STREAMS[door](service, lines), expected_of(ONE_OF_EACH_TASK[task]))


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
