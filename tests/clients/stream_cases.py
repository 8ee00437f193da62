"""Inputs of every task that the clients stream (small ``stream_threshold`` and ``chunk_rows``),
what their streams must carry, and the guard of the end-to-end tests.

A stream's size counts values of the widest column: a row counts 1 (binary, regression) or its
class count (multiclass and multilabel matrices), an image its boxes, ground truth and predicted
(at least 1). A batch holds whole rows, ``chunk_rows // k`` of them, or whole images up to
``chunk_rows`` boxes (an image larger than that alone).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np

from evalserve.core import evaluate
from tests.clients.recording import Unit
from tests.contract.test_same_answer import assert_same


@dataclass(frozen=True)
class Case:
    """One ``evaluate`` call, its keywords in the Python client's names."""

    task: str
    y_true: Any
    y_score: Any
    keywords: dict[str, Any] = field(default_factory=dict)
    threshold: int = 1000
    chunk: int = 700

    @property
    def python_settings(self) -> dict[str, Any]:
        return {"stream_threshold": self.threshold, "chunk_rows": self.chunk}

    @property
    def ts_settings(self) -> dict[str, Any]:
        return {"streamThreshold": self.threshold, "chunkRows": self.chunk}

    def args(self) -> tuple[Any, ...]:
        return (self.task, self.y_true, self.y_score)

    def one_shot(self) -> dict[str, Any]:
        """The core's answer to the whole input."""
        keywords = {k: v for k, v in self.keywords.items() if k != "model"}
        scores = self.y_score
        if self.task == "multiclass" and np.ndim(scores) == 1:  # as the server reads flat ones
            scores = np.reshape(scores, (len(self.y_true), -1))
        return evaluate(self.task, self.y_true, scores, **keywords).to_dict()


def _probabilities(rng: np.random.Generator, truth: np.ndarray[Any, Any], k: int) -> Any:
    logits = rng.normal(0.0, 1.0, size=(len(truth), k)) + 1.5 * np.eye(k)[truth]
    exp = np.exp(logits)
    return np.round(exp / exp.sum(axis=1, keepdims=True), 2)  # ties, as real scores have


def _binary() -> Case:
    rng = np.random.default_rng(31)
    labels = (rng.random(2500) < 0.3).astype(np.float64)
    scores = np.round(1 / (1 + np.exp(-rng.normal(1.2 * labels - 0.6, 1.0))), 3)
    base = (rng.random(400) < 0.3).astype(np.float64)
    base_scores = np.round(1 / (1 + np.exp(-rng.normal(1.2 * base - 0.6, 1.0))), 3)
    return Case(
        "binary", labels, scores,
        {
            "sample_weight": rng.integers(1, 4, size=2500).astype(np.float64),
            "options": {"drift_min_samples": 5, "threshold": 0.4},
            "baseline": {"labels": base, "scores": base_scores},
            "coverage": {"n_predictions": 10_000, "label_delay_seconds": 7200},
            "model": {"name": "fraud", "version": "3", "segment": "eu"},
            # a monitored call: its window in the stream's header, its state a first window's
            "window": "2026-11-27T10:00Z",
        },
    )  # fmt: skip


def _multiclass() -> Case:
    rng = np.random.default_rng(32)
    truth = rng.integers(0, 3, size=1000)
    scores = _probabilities(rng, truth, 3)
    return Case(
        "multiclass", truth.astype(np.float64), scores,
        {
            "y_pred": scores.argmax(axis=1).astype(np.float64),
            "sample_weight": rng.integers(1, 3, size=1000).astype(np.float64),
            "classes": ["cat", "dog", "owl"],
            "options": {"top_k": [1, 2]},
            "model": {"name": "species"},
        },
    )  # fmt: skip


def _multiclass_names() -> Case:
    rng = np.random.default_rng(33)
    classes = ["cat", "dog", "owl", "bat"]
    truth = rng.integers(0, 3, size=800)  # "bat" never occurs
    return Case(
        "multiclass", [classes[i] for i in truth], _probabilities(rng, truth, 4),
        {"classes": classes, "coverage": {"n_predictions": 2000}},
    )  # fmt: skip


def _multiclass_flat() -> Case:
    """Scores sent flat, without class names: the width is the ratio of scores to labels."""
    rng = np.random.default_rng(34)
    truth = rng.integers(0, 3, size=600)
    return Case("multiclass", truth.astype(np.float64), _probabilities(rng, truth, 3).reshape(-1))


def _multilabel() -> Case:
    rng = np.random.default_rng(35)
    labels = (rng.random((650, 4)) < 0.35).astype(np.float64)
    scores = np.round(np.clip(0.5 * labels + rng.random((650, 4)) * 0.6, 0, 1), 2)
    return Case(
        "multilabel", labels, scores,
        {"classes": ["red", "green", "blue", "grey"], "options": {"threshold": 0.45}},
    )  # fmt: skip


def _regression() -> Case:
    rng = np.random.default_rng(36)
    labels = np.round(rng.normal(10.0, 3.0, size=2500), 2)
    return Case(
        "regression", labels, None,
        {
            "y_pred": np.round(labels + rng.normal(0.0, 1.0, size=2500), 2),
            "sample_weight": rng.integers(1, 4, size=2500).astype(np.float64),
            "options": {"n_params": 3},
            "coverage": {"n_predictions": 3000, "label_delay_seconds": 60},
        },
    )  # fmt: skip


def _box(rng: np.random.Generator) -> list[float]:
    x, y = (float(v) for v in rng.integers(0, 90, size=2))
    w, h = (float(v) for v in rng.integers(5, 30, size=2))
    return [x, y, x + w, y + h]


def _detection() -> Case:
    """60 images of 0 to 12 boxes (some without any): batches of whole images."""
    rng = np.random.default_rng(37)
    targets, predictions = [], []
    for index in range(60):
        truth = [_box(rng) for _ in range(int(rng.integers(0, 5)))]
        jittered = [[v + float(rng.integers(-2, 3)) for v in box] for box in truth]
        extra = [_box(rng) for _ in range(int(rng.integers(0, 4)))]
        boxes = jittered + extra
        targets.append(
            {"image_id": f"img-{index}", "boxes": truth,
             "classes": [int(c) for c in rng.integers(0, 2, size=len(truth))]}
        )  # fmt: skip
        predictions.append(
            {"boxes": boxes, "classes": [int(c) for c in rng.integers(0, 2, size=len(boxes))],
             "scores": [round(float(s), 2) for s in rng.random(len(boxes))]}
        )  # fmt: skip
    targets[7] = {"image_id": "img-7", "boxes": [], "classes": []}
    predictions[7] = {"boxes": [], "classes": [], "scores": []}
    return Case(
        "detection", targets, predictions, {"classes": ["person", "car"]},
        threshold=100, chunk=40,
    )  # fmt: skip


@cache
def cases() -> dict[str, Case]:
    return {
        "binary": _binary(),
        "multiclass": _multiclass(),
        "multiclass-names": _multiclass_names(),
        "multiclass-flat": _multiclass_flat(),
        "multilabel": _multilabel(),
        "regression": _regression(),
        "detection": _detection(),
    }


CASES = list(cases())


# --- what a stream must carry ---------------------------------------------------------------

MATRICES = {"multiclass": ("scores",), "multilabel": ("labels", "scores", "predictions")}
WIDTHS = {"multiclass": 3, "multiclass-names": 4, "multiclass-flat": 3, "multilabel": 4}


def _floats(values: Any) -> list[float]:
    return [float(v) for v in np.asarray(values, dtype=np.float64).reshape(-1)]


def expected_header(name: str) -> Unit:
    """The header of a case's stream, as the recording servers put it."""
    case = cases()[name]
    header: Unit = {"task": case.task}
    for key in ("classes", "options", "model", "coverage", "window"):
        if key in case.keywords:
            header[key] = case.keywords[key]
    if name in WIDTHS:
        header["n_classes"] = WIDTHS[name]
    if "baseline" in case.keywords:
        header["baseline"] = {k: _floats(v) for k, v in case.keywords["baseline"].items()}
    return header


def expected_columns(name: str) -> Unit:
    """The rows of a case in the neutral form: flat columns, class names or images."""
    case = cases()[name]
    if case.task == "detection":
        return {
            "images": [
                {
                    "image_id": target.get("image_id", str(index)),
                    "gt_boxes": _floats(target["boxes"]),
                    "gt_classes": _floats(target["classes"]),
                    "pred_boxes": _floats(predicted["boxes"]),
                    "pred_classes": _floats(predicted["classes"]),
                    "pred_scores": _floats(predicted["scores"]),
                }
                for index, (target, predicted) in enumerate(
                    zip(case.y_true, case.y_score, strict=True)
                )
            ]
        }
    columns: Unit = {}
    if isinstance(case.y_true, list) and isinstance(case.y_true[0], str):
        columns["label_names"] = list(case.y_true)
    else:
        columns["labels"] = _floats(case.y_true)
    for key, value in (("scores", case.y_score), ("predictions", case.keywords.get("y_pred")),
                       ("weights", case.keywords.get("sample_weight"))):  # fmt: skip
        if value is not None:
            columns[key] = _floats(value)
    return columns


def expected_batches(name: str) -> list[int]:
    """The rows (images) of each batch."""
    case = cases()[name]
    if case.task == "detection":
        sizes = [
            max(1, len(target["boxes"]) + len(predicted["boxes"]))
            for target, predicted in zip(case.y_true, case.y_score, strict=True)
        ]
        batches, filled = [0], 0
        for size in sizes:
            if batches[-1] and filled + size > case.chunk:
                batches.append(0)
                filled = 0
            batches[-1] += 1
            filled += size
        return batches
    n_rows = len(case.y_true)
    step = case.chunk // WIDTHS.get(name, 1)
    return [min(step, n_rows - start) for start in range(0, n_rows, step)]


def _rows_of(unit: Unit, name: str) -> int:
    if "images" in unit:
        return len(unit["images"])
    if "label_names" in unit:
        return len(unit["label_names"])
    width = WIDTHS.get(name, 1) if "labels" in MATRICES.get(cases()[name].task, ()) else 1
    return len(unit["labels"]) // width


def check_stream(name: str, units: list[Unit]) -> None:
    """What a stream of the case must carry: the header alone first, then batches of whole rows
    (matrices cut on row boundaries) or whole images, of the expected sizes, that put end to end
    are the input."""
    case = cases()[name]
    header, *batches = units
    assert header == {"header": expected_header(name)}
    assert all("header" not in batch for batch in batches)
    rows = [_rows_of(batch, name) for batch in batches]
    assert rows == expected_batches(name)
    assert len(rows) > 2  # the case does stream in several batches
    matrices = MATRICES.get(case.task, ())
    for batch, n_rows in zip(batches, rows, strict=True):
        for key, values in batch.items():
            if key in ("labels", "scores", "predictions", "weights"):
                width = WIDTHS[name] if key in matrices else 1
                assert len(values) == n_rows * width, (key, len(values), n_rows)
    if case.task == "detection":
        for batch in batches:
            boxes = sum(len(i["gt_boxes"]) + len(i["pred_boxes"]) for i in batch["images"]) // 4
            assert boxes <= case.chunk or len(batch["images"]) == 1
    expected = expected_columns(name)
    for key, values in expected.items():
        assert [v for batch in batches for v in batch[key]] == values, key
    assert {key for batch in batches for key in batch} == set(expected)


def check_one_shot(name: str, units: list[Unit]) -> None:
    """The whole case in one request: its header fields and every row."""
    (unit,) = units
    header = {k: v for k, v in expected_header(name).items() if k != "n_classes"}
    assert {k: v for k, v in unit["header"].items() if k != "n_classes"} == header
    assert {k: v for k, v in unit.items() if k != "header"} == expected_columns(name)


# --- comparing answers ------------------------------------------------------------------------


def assert_close(got: Any, expected: Any, where: str = "") -> None:
    """The same answer up to float rounding (1e-9 relative): a stream merges sums (moments of
    residuals, probability sums) in another order than one pass over all the rows does. Keys,
    lengths, strings, booleans, None and integers must be equal."""
    if isinstance(expected, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(expected), where
        for key in expected:
            assert_close(got[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert isinstance(got, list) and len(got) == len(expected), where
        for index, (one, other) in enumerate(zip(got, expected, strict=True)):
            assert_close(one, other, f"{where}[{index}]")
    elif _number(got) and _number(expected):
        assert math.isclose(got, expected, rel_tol=1e-9, abs_tol=1e-12), (where, got, expected)
    else:
        assert got == expected and type(got) is type(expected), (where, got, expected)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def assert_same_answer(task: str, got: dict[str, Any], expected: dict[str, Any]) -> None:
    """Binary streams give the one-shot answer exactly; the other tasks up to rounding."""
    if task == "binary":
        assert_same(got, expected)
    else:
        assert_close(got, expected)


def server_part(answer: dict[str, Any], case: Case) -> dict[str, Any]:
    """The TypeScript result without the client's own fields of a monitored call (its window,
    whether it restarted the monitor), which are checked here."""
    if "window" in case.keywords:
        assert answer.pop("window") == case.keywords["window"]
        assert answer.pop("monitor_restarted") is None
    return answer
