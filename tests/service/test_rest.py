"""The REST door on a real server: uvicorn on 127.0.0.1 (a free port) in a background thread,
called over HTTP with httpx, as users call it."""

from __future__ import annotations

import base64
import json
import re
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import numpy as np
import orjson
import prometheus_client
import pytest
import uvicorn
from fastapi import FastAPI
from google.protobuf.descriptor import Descriptor
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from evalserve.service import records, rest_models
from evalserve.service.config import Settings
from evalserve.service.evaluator import Evaluator
from evalserve.service.rest import Readiness, create_app
from evalserve.v1 import evaluation_pb2 as pb
from tests.core.test_worked_examples import FAWCETT_LABELS, FAWCETT_SCORES

PROTOBUF = "application/x-protobuf"
NDJSON = "application/x-ndjson"


@contextmanager
def serving(app: FastAPI) -> Iterator[str]:
    """Run ``app`` under uvicorn in a daemon thread; yields its base URL."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, name="uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@dataclass
class Served:
    client: httpx.Client
    readiness: Readiness
    registry: prometheus_client.CollectorRegistry


@contextmanager
def served_app(settings: Settings, evaluator_type: type[Evaluator] = Evaluator) -> Iterator[Served]:
    evaluator = evaluator_type(settings.workers)
    registry = prometheus_client.CollectorRegistry()
    readiness = Readiness()
    app = create_app(settings, evaluator, registry, readiness)
    try:
        with serving(app) as url, httpx.Client(base_url=url, timeout=60) as client:
            yield Served(client, readiness, registry)
    finally:
        evaluator.close()


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    with served_app(Settings()) as running:
        yield running


@pytest.fixture(scope="module")
def client(served: Served) -> httpx.Client:
    return served.client


@pytest.fixture(scope="module")
def limited() -> Iterator[httpx.Client]:
    """A server with small limits: 4 KiB bodies, 50 rows a request, 3 classes."""
    small = Settings(max_request_bytes=4096, max_rows=50, max_classes=3)
    with served_app(small) as running:
        yield running.client


def f64(values: Sequence[float] | np.ndarray[Any, Any]) -> str:
    return base64.b64encode(np.asarray(values, dtype="<f8").tobytes()).decode()


def fawcett(**fields: Any) -> dict[str, Any]:
    return {"task": "binary", "labels": FAWCETT_LABELS, "scores": FAWCETT_SCORES, **fields}


def post_json(client: httpx.Client, body: Any, path: str = "/v1/evaluate") -> httpx.Response:
    return client.post(
        path, content=orjson.dumps(body), headers={"content-type": "application/json"}
    )


def ndjson(*lines: Any) -> bytes:
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


def post_stream(client: httpx.Client, content: bytes | Iterator[bytes]) -> httpx.Response:
    return client.post("/v1/evaluate/stream", content=content, headers={"content-type": NDJSON})


def chunks(data: bytes, size: int) -> Iterator[bytes]:
    """A body sent with chunked transfer encoding, ``size`` bytes at a time."""
    for start in range(0, len(data), size):
        yield data[start : start + size]


def assert_error(response: httpx.Response, status: int, code: str, field: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert (error["code"], error["field"]) == (code, field), error
    assert error["message"]
    assert set(response.json()) == {"error"}


def assert_same_metrics(got: dict[str, Any], expected: dict[str, Any]) -> None:
    assert got["n_samples"] == expected["n_samples"]
    assert got["undefined"] == expected["undefined"]
    assert set(got["metrics"]) == set(expected["metrics"])
    for name, value in expected["metrics"].items():
        if value is None:
            assert got["metrics"][name] is None, name
        else:
            assert got["metrics"][name] == pytest.approx(value, rel=1e-12, abs=1e-12), name


# --- what works ---------------------------------------------------------------------------------


def test_json_evaluate_of_the_fawcett_table_gives_roc_auc_0_68(client: httpx.Client) -> None:
    response = post_json(client, fawcett())
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert (body["task"], body["n_samples"]) == ("binary", 20)
    assert body["metrics"]["roc_auc"] == pytest.approx(0.68, abs=1e-12)
    assert body["curves"]["roc"]["thresholds"][0] is None  # +inf has no JSON form
    assert len(body["curves"]["roc"]["fpr"]) == 21
    rest_models.EvaluateResponse.model_validate(body)  # the documented shape is the real one


def test_protobuf_evaluate_gives_the_same_numbers_as_json(client: httpx.Client) -> None:
    request = pb.EvaluateRequest(
        task=pb.TASK_BINARY,
        labels=FAWCETT_LABELS,
        scores=FAWCETT_SCORES,
        options=pb.Options(threshold=0.54),
    )
    response = client.post(
        "/v1/evaluate", content=request.SerializeToString(), headers={"content-type": PROTOBUF}
    )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == PROTOBUF
    message = pb.EvaluateResponse.FromString(response.content)
    assert message.n_samples == 20
    assert message.metrics["roc_auc"] == pytest.approx(0.68, abs=1e-12)
    assert message.metrics["accuracy"] == pytest.approx(0.7)
    as_json = post_json(client, fawcett(options={"threshold": 0.54})).json()
    defined = {k: v for k, v in as_json["metrics"].items() if v is not None}
    assert dict(message.metrics) == pytest.approx(defined, rel=1e-12, abs=1e-12)
    assert dict(message.undefined) == as_json["undefined"]


@pytest.mark.parametrize(
    ("content_type", "accept", "answer"),
    [
        pytest.param("application/json", PROTOBUF, PROTOBUF, id="json-in-protobuf-out"),
        pytest.param(PROTOBUF, "application/json", "application/json", id="protobuf-in-json-out"),
        pytest.param(PROTOBUF, "*/*", PROTOBUF, id="protobuf-in-any-out"),
        pytest.param(
            "application/json; charset=utf-8",
            f"application/json;q=0.5, {PROTOBUF}",
            PROTOBUF,
            id="quality",
        ),
    ],
)
def test_the_answer_format_follows_accept(
    client: httpx.Client, content_type: str, accept: str, answer: str
) -> None:
    if content_type.startswith(PROTOBUF):
        request = pb.EvaluateRequest(
            task=pb.TASK_BINARY, labels=FAWCETT_LABELS, scores=FAWCETT_SCORES
        )
        content = request.SerializeToString()
    else:
        content = orjson.dumps(fawcett())
    response = client.post(
        "/v1/evaluate", content=content, headers={"content-type": content_type, "accept": accept}
    )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == answer
    if answer == PROTOBUF:
        roc_auc = pb.EvaluateResponse.FromString(response.content).metrics["roc_auc"]
    else:
        roc_auc = response.json()["metrics"]["roc_auc"]
    assert roc_auc == pytest.approx(0.68, abs=1e-12)


def test_raw_f64_columns_give_the_same_result_as_arrays(client: httpx.Client) -> None:
    weights = [1.0 + (i % 3) for i in range(20)]
    options = {"threshold": 0.54, "head_k": [5]}
    arrays = post_json(client, fawcett(weights=weights, options=options)).json()
    raw = post_json(
        client,
        {
            "task": "binary",
            "labels_f64": f64(FAWCETT_LABELS),
            "scores_f64": f64(FAWCETT_SCORES),
            "weights_f64": f64(weights),
            "options": options,
        },
    ).json()
    assert raw == arrays
    assert arrays["metrics"]["accuracy"] != 0.7  # the weights and options did arrive


def test_a_missing_content_type_is_read_as_json(client: httpx.Client) -> None:
    response = client.post("/v1/evaluate", content=orjson.dumps(fawcett()))
    assert response.status_code == 200, response.text
    assert response.json()["metrics"]["roc_auc"] == pytest.approx(0.68, abs=1e-12)


def _stream_data() -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    rng = np.random.default_rng(7)
    labels = (rng.random(3000) < 0.25).astype(np.float64)
    scores = np.round(np.clip(rng.normal(0.3 + 0.3 * labels, 0.2), 0, 1), 2)  # many ties
    weights = rng.integers(1, 4, size=3000).astype(np.float64)
    return labels, scores, weights


def test_an_ndjson_stream_equals_one_evaluate_of_the_concatenation(client: httpx.Client) -> None:
    labels, scores, weights = _stream_data()
    options = {"threshold": 0.4, "beta": 2.0, "max_curve_points": 50}
    whole = post_json(
        client,
        {
            "task": "binary",
            "labels": labels.tolist(),
            "scores": scores.tolist(),
            "weights": weights.tolist(),
            "options": options,
        },
    ).json()
    lines: list[Any] = [{"task": "binary", "options": options}]
    for i, part in enumerate(np.array_split(np.arange(labels.size), 5)):
        if i % 2:  # raw bytes and arrays mixed in one stream
            lines.append(
                {
                    "labels_f64": f64(labels[part]),
                    "scores_f64": f64(scores[part]),
                    "weights_f64": f64(weights[part]),
                }
            )
        else:
            lines.append(
                {
                    "labels": labels[part].tolist(),
                    "scores": scores[part].tolist(),
                    "weights": weights[part].tolist(),
                }
            )
    body = ndjson(*lines)
    # 997-byte chunks: lines split across chunk boundaries, several lines in one chunk.
    streamed = post_stream(client, chunks(body, 997))
    assert streamed.status_code == 200, streamed.text
    result = streamed.json()
    assert_same_metrics(result, whole)
    assert result["curves"]["roc"]["fpr"] == pytest.approx(whole["curves"]["roc"]["fpr"])
    rest_models.EvaluateResponse.model_validate(result)


def test_a_stream_may_carry_rows_on_the_header_blank_lines_and_crlf(client: httpx.Client) -> None:
    header = {"task": "binary", "labels": FAWCETT_LABELS[:5], "scores": FAWCETT_SCORES[:5]}
    body = (
        b"\n"
        + orjson.dumps(header)
        + b"\r\n\r\n"
        + orjson.dumps({"labels": FAWCETT_LABELS[5:], "scores": FAWCETT_SCORES[5:]})
    )  # no newline at the end
    response = post_stream(client, chunks(body, 3))
    assert response.status_code == 200, response.text
    assert response.json()["metrics"]["roc_auc"] == pytest.approx(0.68, abs=1e-12)


def test_a_stream_answers_protobuf_when_asked(client: httpx.Client) -> None:
    body = ndjson({"task": "binary"}, {"labels": FAWCETT_LABELS, "scores": FAWCETT_SCORES})
    response = client.post(
        "/v1/evaluate/stream", content=body, headers={"content-type": NDJSON, "accept": PROTOBUF}
    )
    assert response.status_code == 200, response.text
    message = pb.EvaluateResponse.FromString(response.content)
    assert message.metrics["roc_auc"] == pytest.approx(0.68, abs=1e-12)


def test_the_metric_catalog(client: httpx.Client) -> None:
    response = client.get("/v1/metrics")
    assert response.status_code == 200
    catalog = rest_models.MetricCatalog.model_validate(response.json())
    by_key = {(entry.task, entry.name): entry for entry in catalog.metrics}
    assert len(by_key) == len(catalog.metrics)  # (task, name) is unique
    roc_auc = by_key["binary", "roc_auc"]
    assert roc_auc.higher_is_better is True
    assert roc_auc.tasks == ["binary"]  # kept for v0.1 clients: the one task
    assert (roc_auc.range.lower, roc_auc.range.upper) == (0.0, 1.0)
    assert roc_auc.convention.startswith("ties: ")
    assert "sklearn.metrics.roc_auc_score" in roc_auc.reference
    assert roc_auc.test == "tests/core/test_binary_sklearn.py::test_roc_auc_matches_sklearn"
    assert by_key["binary", "log_loss"].higher_is_better is False
    assert by_key["binary", "log_loss"].range.upper is None  # [0, inf)
    assert by_key["binary", "tp"].higher_is_better is None
    assert "sensitivity" in by_key["binary", "recall"].aliases
    # one name, two tasks, two definitions
    assert by_key["multiclass", "brier_score"].range.upper == 2.0
    assert (
        by_key["multiclass", "brier_score"].definition != by_key["binary", "brier_score"].definition
    )


@pytest.mark.parametrize("task", ["binary", "multilabel", "regression"])
def test_the_metric_catalog_of_one_task(client: httpx.Client, task: str) -> None:
    everything = client.get("/v1/metrics").json()["metrics"]
    response = client.get("/v1/metrics", params={"task": task})
    assert response.status_code == 200
    assert response.json()["metrics"] == [entry for entry in everything if entry["task"] == task]


@pytest.mark.parametrize(
    ("query", "status", "field"),
    [
        pytest.param("task=regresion", 422, "task", id="unknown-task"),
        pytest.param("task=", 422, "task", id="empty-task"),
        pytest.param("task=binary&task=regression", 422, "task", id="two-tasks"),
        pytest.param("tsk=binary", 400, "tsk", id="unknown-parameter"),
    ],
)
def test_the_metric_catalog_refuses_a_bad_query_naming_the_field(
    client: httpx.Client, query: str, status: int, field: str
) -> None:
    response = client.get(f"/v1/metrics?{query}")
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["field"] == field
    assert error["code"] == ("invalid_argument" if status == 422 else "malformed")
    assert error["message"]


def test_health_and_readiness(served: Served) -> None:
    assert served.client.get("/healthz").json() == {"status": "ok"}
    assert served.client.get("/readyz").status_code == 200
    served.readiness.ready = False
    try:
        assert served.client.get("/readyz").status_code == 503
        assert served.client.get("/healthz").status_code == 200  # alive while draining
    finally:
        served.readiness.ready = True
    assert served.client.get("/readyz").json() == {"status": "ready"}


def test_prometheus_metrics_come_from_the_injected_registry(served: Served) -> None:
    counter = prometheus_client.Counter(
        "evalserve_rest_test_total", "A counter of this test.", registry=served.registry
    )
    counter.inc(3)
    response = served.client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    assert "evalserve_rest_test_total 3.0" in response.text


def test_openapi_documents_every_route_and_the_request_models(client: httpx.Client) -> None:
    spec = client.get("/openapi.json").json()
    assert set(spec["paths"]) == {
        "/v1/evaluate",
        "/v1/evaluate/stream",
        "/v1/metrics",
        "/healthz",
        "/readyz",
        "/metrics",
    }
    schemas = spec["components"]["schemas"]
    for name in ("EvaluateRequest", "Options", "Model", "Baseline", "Challenger"):
        assert name in schemas
    assert set(schemas["EvaluateRequest"]["properties"]) == set(
        rest_models.EvaluateRequest.model_fields
    )
    # Every reference resolves, and FastAPI's own validation error is nowhere.
    text = json.dumps(spec)
    for ref in set(_refs(spec)):
        assert ref.removeprefix("#/components/schemas/") in schemas, ref
    assert "HTTPValidationError" not in text
    docs = client.get("/docs")
    assert docs.status_code == 200
    assert "swagger" in docs.text.lower()


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


# --- the documentation models mirror the proto -------------------------------------------------


def _proto_fields(descriptor: Descriptor) -> set[str]:
    return {field.name for field in descriptor.fields}


# Each message of the API and the REST model that mirrors it.
MIRRORS: dict[str, type[BaseModel]] = {
    "EvaluateRequest": rest_models.EvaluateRequest,
    "Options": rest_models.Options,
    "Model": rest_models.Model,
    "Baseline": rest_models.Baseline,
    "Challenger": rest_models.Challenger,
    "EvaluateResponse": rest_models.EvaluateResponse,
    "DetectionImage": rest_models.DetectionImage,
    "RocCurve": rest_models.RocCurve,
    "PrCurve": rest_models.PrCurve,
    "Interval": rest_models.Interval,
    "DriftTest": rest_models.DriftTest,
    "Comparison": rest_models.Comparison,
    "MonitorVerdict": rest_models.MonitorVerdict,
    "Coverage": rest_models.Coverage,
    "CoverageReport": rest_models.CoverageReport,
    "ListMetricsResponse": rest_models.MetricCatalog,
    "MetricInfo": rest_models.MetricEntry,
    "MetricRange": rest_models.MetricRange,
}
# NDJSON lines flatten the stream messages: the header line is StreamHeader plus a batch.
BATCH_FIELDS = _proto_fields(pb.EvaluateStreamRequest.DESCRIPTOR) - {"header"}
LINES: dict[str, tuple[type[BaseModel], set[str]]] = {
    "EvaluateStreamRequest": (rest_models.StreamBatchLine, BATCH_FIELDS),
    "StreamHeader": (
        rest_models.StreamHeaderLine,
        _proto_fields(pb.StreamHeader.DESCRIPTOR) | BATCH_FIELDS,
    ),
}
# per_class rows are flat in JSON ({"class": name, metric: value}), as docs/api/response.md
# shows; curves other than roc and pr sit under their own names in JSON (Curves.other in
# protobuf).
NOT_MIRRORED = {"ClassMetrics", "Curves", "NamedArrays", "Values"}


def test_json_curves_mirror_the_proto_with_other_curves_flattened() -> None:
    fields = _proto_fields(pb.Curves.DESCRIPTOR)
    assert fields - {"other"} == set(rest_models.Curves.model_fields)
    assert rest_models.Curves.model_config.get("extra") == "allow"


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        *(
            pytest.param(model, _proto_fields(pb.DESCRIPTOR.message_types_by_name[name]), id=name)
            for name, model in MIRRORS.items()
        ),
        *(pytest.param(model, fields, id=name) for name, (model, fields) in LINES.items()),
    ],
)
def test_rest_models_mirror_the_proto_field_by_field(
    model: type[BaseModel], expected: set[str]
) -> None:
    assert set(model.model_fields) == expected


def _messages(descriptor: Descriptor, seen: set[str] | None = None) -> Iterator[Descriptor]:
    """``descriptor`` and every message inside it (map values included), each once (a
    response holds its segments' responses)."""
    seen = set() if seen is None else seen
    if descriptor.full_name in seen:
        return
    seen.add(descriptor.full_name)
    yield descriptor
    for field in descriptor.fields:
        inner = field.message_type
        if inner is not None and inner.GetOptions().map_entry:
            inner = inner.fields_by_name["value"].message_type
        if inner is not None:
            yield from _messages(inner, seen)


def test_every_message_of_the_rest_api_has_a_mirror() -> None:
    roots = (
        pb.EvaluateRequest, pb.EvaluateStreamRequest, pb.EvaluateResponse, pb.ListMetricsResponse,
    )  # fmt: skip
    used = {m.name for root in roots for m in _messages(root.DESCRIPTOR)}
    assert used == set(MIRRORS) | set(LINES) | NOT_MIRRORED


def test_the_json_decoder_reads_exactly_the_documented_fields() -> None:
    assert set(records.REQUEST_FIELDS) == set(rest_models.EvaluateRequest.model_fields)
    assert set(records.BATCH_FIELDS) == set(rest_models.StreamBatchLine.model_fields)
    header_only = set(rest_models.StreamHeaderLine.model_fields) - set(records.BATCH_FIELDS)
    assert header_only == set(records.HEADER_FIELDS)
    assert set(records.OPTION_FIELDS) == set(rest_models.Options.model_fields)
    assert set(records.MODEL_FIELDS) == set(rest_models.Model.model_fields)
    assert set(records.COVERAGE_FIELDS) == set(rest_models.Coverage.model_fields)


# --- bad input: one clear error each ------------------------------------------------------------

NAN = f64([float("nan"), *FAWCETT_SCORES[1:]])


def _body(**fields: Any) -> dict[str, Any]:
    """The Fawcett request with some fields replaced (None removes one)."""
    body = fawcett(**fields)
    return {k: v for k, v in body.items() if v is not None}


JSON_ERRORS = [
    # The body itself.
    pytest.param(b'{"task": "binary",', 400, "malformed", "body", id="malformed-json"),
    pytest.param(b"", 400, "malformed", "body", id="empty-body"),
    pytest.param(b"[1, 2]", 400, "malformed", "body", id="not-an-object"),
    pytest.param(
        b'{"task": "binary", "scores": [NaN]}', 400, "malformed", "scores", id="nan-literal"
    ),
    pytest.param(b'{"task": "binary", "scores": [1e400]}', 400, "malformed", "body", id="huge-num"),
    pytest.param(b'\xff{"task": 1}', 400, "malformed", "body", id="not-utf8"),
    # Wrong types and unknown names.
    pytest.param(_body(labels="abc"), 400, "malformed", "labels", id="labels-string"),
    pytest.param(_body(scores=[0.1, {"a": 1}]), 400, "malformed", "scores", id="scores-object"),
    pytest.param(_body(weights=7), 400, "malformed", "weights", id="weights-number"),
    pytest.param(_body(options=[1]), 400, "malformed", "options", id="options-array"),
    pytest.param(_body(model={"name": 3}), 400, "malformed", "model.name", id="model-name-type"),
    pytest.param(
        _body(model={"version": "1"}), 400, "malformed", "model.name", id="model-nameless"
    ),
    pytest.param(_body(lables=[1]), 400, "malformed", "lables", id="unknown-field"),
    pytest.param(_body(options={"treshold": 0.5}), 400, "malformed", "options.treshold", id="opt"),
    pytest.param(_body(task="ranking"), 400, "malformed", "task", id="unknown-task"),
    pytest.param(_body(task=None), 400, "malformed", "task", id="missing-task"),
    pytest.param(_body(task=1), 400, "malformed", "task", id="task-number"),
    pytest.param(_body(scores_f64="not base64!"), 400, "malformed", "scores_f64", id="bad-base64"),
    pytest.param(
        _body(scores=None, scores_f64=base64.b64encode(b"1234567").decode()),
        400,
        "malformed",
        "scores_f64",
        id="f64-not-8-bytes",
    ),
    pytest.param(_body(scores_f64=f64(FAWCETT_SCORES)), 400, "malformed", "scores", id="both"),
    # Values that cannot be evaluated.
    pytest.param(
        _body(task="multiclass"), 422, "invalid_argument", "scores", id="one-score-per-row"
    ),
    pytest.param(_body(scores=FAWCETT_SCORES[:-1]), 422, "invalid_argument", "scores", id="length"),
    pytest.param(_body(labels=[], scores=[]), 422, "invalid_argument", "labels", id="empty"),
    pytest.param(_body(scores=None), 422, "invalid_argument", "scores", id="no-scores"),
    pytest.param(_body(scores=None, scores_f64=NAN), 422, "invalid_argument", "scores", id="nan"),
    pytest.param(
        _body(scores=None, scores_f64=f64([float("inf"), *FAWCETT_SCORES[1:]])),
        422,
        "invalid_argument",
        "scores",
        id="inf",
    ),
    pytest.param(
        _body(labels=[2, *FAWCETT_LABELS[1:]]), 422, "invalid_argument", "labels", id="l2"
    ),
    pytest.param(_body(labels=[[0, 1]] * 20), 422, "invalid_argument", "labels", id="labels-2d"),
    pytest.param(
        _body(scores=[[0.1, 0.9]] * 20), 422, "invalid_argument", "scores", id="scores-2d"
    ),
    pytest.param(_body(weights=[-1.0] + [1.0] * 19), 422, "invalid_argument", "weights", id="neg"),
    pytest.param(_body(weights=[0.0] * 20), 422, "invalid_argument", "weights", id="zero-weights"),
    pytest.param(_body(weights=[1.0] * 19), 422, "invalid_argument", "weights", id="weights-len"),
    pytest.param(_body(predictions=[3.0] * 20), 422, "invalid_argument", "predictions", id="pred"),
    pytest.param(_body(options={"beta": 0}), 422, "invalid_argument", "options.beta", id="beta-0"),
    pytest.param(_body(options={"beta": -1}), 422, "invalid_argument", "options.beta", id="beta<0"),
    pytest.param(
        _body(options={"threshold": "high"}), 422, "invalid_argument", "options.threshold", id="th"
    ),
    pytest.param(
        _body(options={"max_fpr": 1.5}), 422, "invalid_argument", "options.max_fpr", id="max-fpr"
    ),
    pytest.param(
        _body(options={"confidence_level": 1}),
        422,
        "invalid_argument",
        "options.confidence_level",
        id="level",
    ),
    pytest.param(_body(options={"top_k": [0]}), 422, "invalid_argument", "options.top_k", id="k"),
    pytest.param(
        _body(options={"head_k": [-5]}), 422, "invalid_argument", "options.head_k", id="head-k"
    ),
    pytest.param(
        _body(options={"max_curve_points": 1}),
        422,
        "invalid_argument",
        "options.max_curve_points",
        id="curve-points",
    ),
    pytest.param(_body(baseline={"roc_auc": 0.9}), 422, "invalid_argument", "baseline", id="drift"),
    pytest.param(
        _body(classes=[f"c{i}" for i in range(1001)]), 413, "too_large", "classes", id="classes"
    ),
]


@pytest.mark.parametrize(("body", "status", "code", "field"), JSON_ERRORS)
def test_bad_json_gets_one_clear_error(
    client: httpx.Client, body: bytes | dict[str, Any], status: int, code: str, field: str
) -> None:
    content = body if isinstance(body, bytes) else orjson.dumps(body)
    response = client.post(
        "/v1/evaluate", content=content, headers={"content-type": "application/json"}
    )
    assert_error(response, status, code, field)


PROTOBUF_ERRORS = [
    pytest.param(b"\xff\xff\xff", 400, "malformed", "body", id="corrupt"),
    pytest.param(b":\x02\xff\xfe", 400, "malformed", "body", id="bad-utf8"),
    pytest.param(
        pb.EvaluateRequest(labels=[1], scores=[0.5]), 400, "malformed", "task", id="no-task"
    ),
    pytest.param(
        pb.EvaluateRequest(task=99, labels=[1], scores=[0.5]),  # type: ignore[arg-type]
        400,
        "malformed",
        "task",
        id="unknown-task",
    ),
    pytest.param(
        pb.EvaluateRequest(task=pb.TASK_BINARY, labels=[1, 0], scores=[0.5, float("nan")]),
        422,
        "invalid_argument",
        "scores",
        id="nan",
    ),
    pytest.param(
        pb.EvaluateRequest(task=pb.TASK_BINARY, labels=[1, 0], scores=[0.5]),
        422,
        "invalid_argument",
        "scores",
        id="length",
    ),
    pytest.param(
        pb.EvaluateRequest(
            task=pb.TASK_BINARY, labels=[1, 0], scores=[0.5, 0.1], options=pb.Options(beta=0)
        ),
        422,
        "invalid_argument",
        "options.beta",
        id="beta",
    ),
    pytest.param(
        pb.EvaluateRequest(
            task=pb.TASK_BINARY, labels=[1, 0], scores=[0.5, 0.1], scores_f64=b"\0" * 16
        ),
        400,
        "malformed",
        "scores",
        id="both",
    ),
]


@pytest.mark.parametrize(("message", "status", "code", "field"), PROTOBUF_ERRORS)
def test_bad_protobuf_gets_one_clear_error(
    client: httpx.Client, message: bytes | pb.EvaluateRequest, status: int, code: str, field: str
) -> None:
    content = message if isinstance(message, bytes) else message.SerializeToString()
    response = client.post("/v1/evaluate", content=content, headers={"content-type": PROTOBUF})
    assert_error(response, status, code, field)


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        pytest.param("/v1/evaluate", "text/plain", id="evaluate-text"),
        pytest.param("/v1/evaluate", "application/x-www-form-urlencoded", id="evaluate-form"),
        pytest.param("/v1/evaluate/stream", "application/json", id="stream-json"),
    ],
)
def test_an_unsupported_content_type_is_415(
    client: httpx.Client, path: str, content_type: str
) -> None:
    response = client.post(
        path, content=orjson.dumps(fawcett()), headers={"content-type": content_type}
    )
    assert_error(response, 415, "unsupported_media_type", "content-type")


HEADER = {"task": "binary"}
ROWS = {"labels": [0, 1, 1], "scores": [0.2, 0.7, 0.4]}

STREAM_ERRORS = [
    pytest.param(ndjson(ROWS, HEADER), 400, "stream_protocol", "line 1", id="no-header"),
    pytest.param(b"\n\n" + ndjson(ROWS), 400, "stream_protocol", "line 3", id="no-header-blanks"),
    pytest.param(b"", 400, "stream_protocol", "line 1", id="empty-stream"),
    pytest.param(ndjson(HEADER, ROWS, HEADER), 400, "stream_protocol", "line 3", id="two-headers"),
    pytest.param(ndjson(HEADER), 400, "stream_protocol", "rows", id="header-only"),
    pytest.param(ndjson(HEADER) + b"{oops\n", 400, "malformed", "line 2", id="bad-json-line"),
    pytest.param(ndjson(HEADER, ROWS) + b"[1]\n", 400, "malformed", "line 3", id="array-line"),
    pytest.param(
        ndjson(HEADER, {**ROWS, "extra": 1}), 400, "malformed", "line 2.extra", id="unknown-field"
    ),
    pytest.param(
        ndjson(HEADER, {**ROWS, "options": {}}),
        400,
        "malformed",
        "line 2.options",
        id="late-option",
    ),
    pytest.param(ndjson({"task": "ranking"}), 400, "malformed", "line 1.task", id="unknown-task"),
    pytest.param(
        ndjson({"task": "regression", "classes": ["a", "b"]}),
        422,
        "invalid_argument",
        "line 1.classes",
        id="classes-of-regression",
    ),
    pytest.param(
        ndjson({"task": "binary", "options": {"beta": 0}}),
        422,
        "invalid_argument",
        "line 1.options.beta",
        id="header-option",
    ),
    pytest.param(
        ndjson(HEADER, ROWS, {"labels": [0, 2], "scores": [0.1, 0.2]}),
        422,
        "invalid_argument",
        "line 3.labels",
        id="bad-labels",
    ),
    pytest.param(
        ndjson(HEADER, {"labels": [0, 1], "scores": [0.1]}),
        422,
        "invalid_argument",
        "line 2.scores",
        id="batch-length",
    ),
    pytest.param(
        ndjson(HEADER, ROWS, {"labels": [0, 1], "scores": [0.1, 0.2], "predictions": [0, 1]}),
        400,
        "stream_protocol",
        "line 3.predictions",
        id="predictions-in-some",
    ),
    pytest.param(
        ndjson(HEADER, {"labels": [0, 1], "scores_f64": NAN[:24]}),
        400,
        "malformed",
        "line 2.scores_f64",
        id="bad-f64",
    ),
]


@pytest.mark.parametrize(("body", "status", "code", "field"), STREAM_ERRORS)
def test_a_bad_stream_gets_one_clear_error_naming_the_line(
    client: httpx.Client, body: bytes, status: int, code: str, field: str
) -> None:
    assert_error(post_stream(client, chunks(body, 5) if body else body), status, code, field)


def test_unknown_paths_and_methods_answer_in_the_error_shape(client: httpx.Client) -> None:
    assert_error(client.get("/v1/nothing"), 404, "not_found", "path")
    response = client.get("/v1/evaluate")
    assert_error(response, 405, "method_not_allowed", "method")
    assert response.headers["allow"] == "POST"


# --- limits ------------------------------------------------------------------------------------


def test_a_body_under_the_limit_is_evaluated(limited: httpx.Client) -> None:
    response = post_json(limited, fawcett())
    assert response.status_code == 200, response.text
    chunked = limited.post(
        "/v1/evaluate",
        content=chunks(orjson.dumps(fawcett()), 100),
        headers={"content-type": "application/json"},
    )
    assert chunked.status_code == 200, chunked.text


def test_a_body_over_the_limit_with_content_length_is_413(limited: httpx.Client) -> None:
    body = orjson.dumps(fawcett(weights=[1.123456789] * 20, classes=["x" * 4000]))
    assert len(body) > 4096
    assert_error(post_json(limited, orjson.loads(body)), 413, "too_large", "body")


def test_a_chunked_body_over_the_limit_is_413(limited: httpx.Client) -> None:
    body = orjson.dumps(fawcett(classes=["x" * 5000]))
    response = limited.post(
        "/v1/evaluate", content=chunks(body, 512), headers={"content-type": "application/json"}
    )
    assert "content-length" not in response.request.headers
    assert_error(response, 413, "too_large", "body")


def test_a_chunked_stream_over_the_limit_is_413(limited: httpx.Client) -> None:
    lines = [HEADER, *([{"labels": [0, 1] * 10, "scores": [0.25, 0.75] * 10}] * 40)]
    body = ndjson(*lines)
    assert len(body) > 4096
    assert_error(post_stream(limited, chunks(body, 256)), 413, "too_large", "body")


def _received(sock: socket.socket) -> bytes:
    data = sock.recv(65536)
    assert data, "the server closed the connection without an answer"
    return data


def raw_exchange(client: httpx.Client, head: bytes, *parts: bytes) -> tuple[int, Any]:
    """Send a request by hand (a head and the first parts of a body that never ends) and read
    the one response: the server must answer without waiting for the rest."""
    with socket.create_connection((client.base_url.host, client.base_url.port), timeout=10) as sock:
        sock.sendall(head.replace(b"\n", b"\r\n") + b"\r\n")
        for part in parts:
            sock.sendall(part)
        response = b""
        while b"\r\n\r\n" not in response:
            response += _received(sock)
        start, _, body = response.partition(b"\r\n\r\n")
        length = re.search(rb"(?i)content-length: *(\d+)", start)
        assert length is not None, start
        while len(body) < int(length.group(1)):
            body += _received(sock)
    return int(start.split()[1]), orjson.loads(body)


def test_a_declared_length_over_the_limit_is_refused_before_the_body_arrives(
    limited: httpx.Client,
) -> None:
    head = (
        b"POST /v1/evaluate HTTP/1.1\nHost: test\nContent-Type: application/json\n"
        b"Content-Length: 1000000000\n"
    )
    status, body = raw_exchange(limited, head, b'{"task": "binary", ')
    assert (status, body["error"]["code"], body["error"]["field"]) == (413, "too_large", "body")


def test_a_chunked_body_is_refused_as_soon_as_it_passes_the_limit(limited: httpx.Client) -> None:
    head = b"POST /v1/evaluate HTTP/1.1\nHost: test\nTransfer-Encoding: chunked\n"
    chunk = b"400\r\n" + b" " * 0x400 + b"\r\n"  # 1 KiB of JSON whitespace
    status, body = raw_exchange(limited, head, *[chunk] * 5)
    assert (status, body["error"]["code"], body["error"]["field"]) == (413, "too_large", "body")


def test_a_stream_error_is_answered_before_the_stream_ends(client: httpx.Client) -> None:
    head = (
        b"POST /v1/evaluate/stream HTTP/1.1\nHost: test\nContent-Type: application/x-ndjson\n"
        b"Transfer-Encoding: chunked\n"
    )
    lines = ndjson(HEADER, ROWS) + b"{oops\n"
    status, body = raw_exchange(client, head, b"%x\r\n%s\r\n" % (len(lines), lines))
    assert (status, body["error"]["code"], body["error"]["field"]) == (400, "malformed", "line 3")


def test_too_many_rows_or_classes_is_413(limited: httpx.Client) -> None:
    many = {"task": "binary", "labels": [0, 1] * 26, "scores": [0.5] * 52}
    assert_error(post_json(limited, many), 413, "too_large", "labels")
    assert_error(
        post_json(limited, fawcett(classes=["a", "b", "c", "d"])), 413, "too_large", "classes"
    )


def test_the_limited_server_still_serves(limited: httpx.Client) -> None:
    assert limited.get("/healthz").status_code == 200
    assert post_json(limited, fawcett()).json()["metrics"]["roc_auc"] == pytest.approx(0.68)


# --- nothing reaches the internal error ---------------------------------------------------------


class BrokenEvaluator(Evaluator):
    """An evaluator with a bug: every call fails with an unexpected error."""

    async def run(self, function: Any, *args: object) -> Any:
        raise RuntimeError("secret internals: /srv/evalserve/state")


def test_an_unexpected_error_is_a_generic_500(caplog: pytest.LogCaptureFixture) -> None:
    with served_app(Settings(), BrokenEvaluator) as broken:
        response = post_json(broken.client, fawcett())
        assert_error(response, 500, "internal", "")
        assert "secret" not in response.text
        assert broken.client.get("/healthz").status_code == 200
    assert any("unexpected error on POST /v1/evaluate" in r.getMessage() for r in caplog.records)


_numbers = st.one_of(
    st.integers(-3, 3),
    # Bounded: weights near the float64 maximum overflow inside the core (see the xfail below).
    st.floats(-1e6, 1e6, allow_nan=False),
    st.sampled_from([0, 1, 0.5, -0.0]),
)
_json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), _numbers, st.text(max_size=4)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=6), st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=12,
)
_fields = sorted(rest_models.EvaluateRequest.model_fields)
_mostly = st.sampled_from([True] * 9 + [False])
_rarely = st.sampled_from([False] * 4 + [True])


@st.composite
def _requests(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(0, 6))
    body: dict[str, Any] = {}
    if draw(_mostly):
        body["task"] = draw(st.sampled_from(["binary"] * 6 + ["regression", "x"]))
    if draw(_mostly):
        body["labels"] = draw(
            st.lists(st.sampled_from([0, 1, 0.0, 1.0, 2, True]), min_size=n, max_size=n)
        )
    if draw(_mostly):
        body["scores"] = draw(st.lists(_numbers, min_size=n, max_size=n))
    for name in draw(st.lists(st.sampled_from(_fields), max_size=2)):
        body[name] = draw(_json_values)
    if draw(st.booleans()):
        names = sorted(rest_models.Options.model_fields)
        body["options"] = draw(st.dictionaries(st.sampled_from(names), _json_values, max_size=2))
    if draw(_rarely):
        body["weights"] = draw(st.lists(_numbers, min_size=n, max_size=n))
    return body


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(body=_requests())
def test_no_json_request_reaches_the_internal_error(
    client: httpx.Client, body: dict[str, Any]
) -> None:
    response = post_json(client, body)
    assert response.status_code in (200, 400, 413, 422), response.text
    if response.status_code != 200:
        assert set(response.json()["error"]) == {"code", "field", "message"}


_batch_fields = sorted(rest_models.StreamBatchLine.model_fields)


@st.composite
def _streams(draw: st.DrawFn) -> bytes:
    lines: list[bytes] = []
    if draw(_mostly):
        header = {"task": draw(st.sampled_from(["binary"] * 6 + ["multiclass", "x"]))}
        lines.append(orjson.dumps(header))
    for _ in range(draw(st.integers(0, 4))):
        n = draw(st.integers(0, 4))
        line: dict[str, Any] = {
            "labels": draw(st.lists(st.sampled_from([0, 1] * 8 + [2]), min_size=n, max_size=n)),
            "scores": draw(st.lists(_numbers, min_size=n, max_size=n)),
        }
        for name in draw(st.lists(st.sampled_from(_batch_fields), max_size=1)):
            line[name] = draw(_json_values)
        lines.append(orjson.dumps(line))
    if draw(_rarely):
        lines.insert(draw(st.integers(0, len(lines))), draw(st.binary(max_size=8)))
    return b"\n".join(lines)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(body=_streams())
def test_no_stream_reaches_the_internal_error(client: httpx.Client, body: bytes) -> None:
    response = post_stream(client, body)
    assert response.status_code in (200, 400, 413, 422), response.text
    if response.status_code != 200:
        assert set(response.json()["error"]) == {"code", "field", "message"}


def test_huge_weights_are_a_clear_error(client: httpx.Client) -> None:
    body = {"task": "binary", "labels": [0, 1, 0, 1], "scores": [0.1, 0.4, 0.35, 0.8]}
    response = post_json(client, {**body, "weights": [1e308, 1e308, 1, 1]})
    assert response.status_code == 422, response.text
    assert response.json()["error"]["field"] == "weights"


def test_subnormal_weights_are_a_clear_error(client: httpx.Client) -> None:
    body = {"task": "binary", "labels": [0, 1, 0, 1], "scores": [0.1, 0.4, 0.35, 0.8]}
    response = post_json(client, {**body, "weights": [1e-320] * 4})
    assert response.status_code == 422, response.text
    assert response.json()["error"]["field"] == "weights"


def test_a_big_request_does_not_stall_health_checks(client: httpx.Client) -> None:
    rng = np.random.default_rng(5)
    rows = 2_000_000
    body = {
        "task": "binary",
        "labels_f64": f64((rng.random(rows) < 0.3).astype(np.float64)),
        "scores_f64": f64(rng.random(rows)),
        "options": {"max_curve_points": 0},
    }
    result: list[httpx.Response] = []
    worker = threading.Thread(target=lambda: result.append(post_json(client, body)))
    started = time.monotonic()
    worker.start()
    slowest = 0.0
    with httpx.Client(base_url=str(client.base_url), timeout=10) as other:
        while worker.is_alive():
            before = time.monotonic()
            assert other.get("/healthz").status_code == 200
            slowest = max(slowest, time.monotonic() - before)
            time.sleep(0.01)
    worker.join()
    elapsed = time.monotonic() - started
    assert result[0].status_code == 200, result[0].text
    assert result[0].json()["n_samples"] == rows
    assert slowest < max(0.25, elapsed / 3), (slowest, elapsed)


def test_the_server_still_serves_after_all_the_errors(client: httpx.Client) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    response = post_json(client, fawcett())
    assert response.json()["metrics"]["roc_auc"] == pytest.approx(0.68, abs=1e-12)
