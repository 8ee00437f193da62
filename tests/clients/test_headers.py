"""Both clients send the caller's headers with every call: HTTP headers over REST, call metadata
over gRPC (an API gateway's authorization, a request id). The servers here are small recording
servers on loopback that answer with the core's real result, so what arrived can be read back;
bad header names and values are refused when the client is made."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from collections.abc import Iterable, Iterator
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest
from evalserve.v1 import evaluation_pb2 as pb
from evalserve.v1 import evaluation_pb2_grpc as pb_grpc
from evalserve_client import AsyncClient, Client

import core
from service import encode
from tests.clients.test_typescript import finish_cases, ok, start_cases, ts_case
from tests.contract.test_same_answer import assert_same

HEADERS = {"Authorization": "Bearer token-123", "x-request-id": "req-42"}
SENT = {"authorization": "Bearer token-123", "x-request-id": "req-42"}
LABELS = [0.0, 0.0, 1.0, 1.0]
SCORES = [0.1, 0.4, 0.35, 0.8]


def _column(values: Iterable[float], raw: bytes) -> list[float]:
    return np.frombuffer(raw, dtype="<f8").tolist() if raw else list(values)


def _answer(labels: list[float], scores: list[float]) -> core.EvaluationResult:
    return core.evaluate("binary", labels, scores)


class _Recording(pb_grpc.EvaluationServiceServicer):
    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, str]]] = []

    def _record(self, method: str, context: grpc.ServicerContext) -> None:
        pairs = context.invocation_metadata() or ()
        self.seen.append((method, {str(k): str(v) for k, v in pairs}))

    def Evaluate(  # noqa: N802 - the RPC's name
        self, request: pb.EvaluateRequest, context: grpc.ServicerContext
    ) -> pb.EvaluateResponse:
        self._record("Evaluate", context)
        labels = _column(request.labels, request.labels_f64)
        return encode.result_to_proto(_answer(labels, _column(request.scores, request.scores_f64)))

    def EvaluateStream(  # noqa: N802
        self, request_iterator: Iterator[pb.EvaluateStreamRequest], context: grpc.ServicerContext
    ) -> pb.EvaluateResponse:
        self._record("EvaluateStream", context)
        labels: list[float] = []
        scores: list[float] = []
        for message in request_iterator:
            labels += _column(message.labels, message.labels_f64)
            scores += _column(message.scores, message.scores_f64)
        return encode.result_to_proto(_answer(labels, scores))

    def ListMetrics(  # noqa: N802
        self, request: pb.ListMetricsRequest, context: grpc.ServicerContext
    ) -> pb.ListMetricsResponse:
        self._record("ListMetrics", context)
        return encode.catalog_to_proto()


@pytest.fixture
def grpc_recorder() -> Iterator[tuple[str, _Recording]]:
    recording = _Recording()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    pb_grpc.add_EvaluationServiceServicer_to_server(recording, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}", recording
    finally:
        server.stop(grace=None).wait()


def _json_column(body: dict[str, Any], name: str) -> list[float]:
    raw = body.get(f"{name}_f64")
    return _column(body.get(name, []), base64.b64decode(raw) if raw else b"")


class _HttpRecording(BaseHTTPRequestHandler):
    seen: list[tuple[str, dict[str, str]]]

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet

    def _body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() != "chunked":
            return self.rfile.read(int(self.headers.get("content-length", 0)))
        body = b""
        while size := int(self.rfile.readline().strip(), 16):
            body += self.rfile.read(size)
            self.rfile.readline()
        self.rfile.readline()
        return body

    def _send(self, answer: dict[str, Any]) -> None:
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _record(self) -> None:
        self.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}))

    def do_GET(self) -> None:
        self._record()
        self._send(encode.catalog_to_json())

    def do_POST(self) -> None:
        self._record()
        lines = [json.loads(line) for line in self._body().splitlines() if line.strip()]
        batches = lines[1:] if self.path.endswith("/stream") else lines
        labels = [v for batch in batches for v in _json_column(batch, "labels")]
        scores = [v for batch in batches for v in _json_column(batch, "scores")]
        self._send(encode.proto_to_json(encode.result_to_proto(_answer(labels, scores))))


@pytest.fixture
def http_recorder() -> Iterator[tuple[str, list[tuple[str, dict[str, str]]]]]:
    seen: list[tuple[str, dict[str, str]]] = []
    handler = type("Handler", (_HttpRecording,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def _sent(headers: dict[str, str]) -> dict[str, str]:
    return {key: headers[key] for key in SENT if key in headers}


def test_the_python_client_sends_its_headers_on_every_grpc_call(
    grpc_recorder: tuple[str, _Recording],
) -> None:
    target, recording = grpc_recorder
    with Client(target, headers=HEADERS, stream_threshold=2, chunk_rows=1) as client:
        streamed = client.evaluate("binary", LABELS, SCORES)
        client.list_metrics()
    with Client(target, headers=HEADERS) as client:
        unary = client.evaluate("binary", LABELS, SCORES)

    async def awaited() -> None:
        async with AsyncClient(target, headers=HEADERS) as client:
            await client.evaluate("binary", LABELS, SCORES)

    asyncio.run(awaited())
    methods = [method for method, _ in recording.seen]
    assert methods == ["EvaluateStream", "ListMetrics", "Evaluate", "Evaluate"]
    assert all(_sent(headers) == SENT for _, headers in recording.seen)
    expected = _answer(LABELS, SCORES).to_dict()
    assert_same(streamed.to_dict(), expected)
    assert_same(unary.to_dict(), expected)


def test_the_python_client_sends_its_headers_on_every_rest_call(
    http_recorder: tuple[str, list[tuple[str, dict[str, str]]]],
) -> None:
    target, seen = http_recorder
    with Client(target, headers=HEADERS, stream_threshold=2, chunk_rows=1) as client:
        streamed = client.evaluate("binary", LABELS, SCORES)
        client.list_metrics()
        unary = client.evaluate("binary", LABELS[:2] + LABELS[2:], SCORES, timeout=10)
    assert [path for path, _ in seen] == [
        "/v1/evaluate/stream",
        "/v1/metrics",
        "/v1/evaluate/stream",
    ]
    assert all(_sent(headers) == SENT for _, headers in seen)
    expected = _answer(LABELS, SCORES).to_dict()
    assert_same(streamed.to_dict(), expected)
    assert_same(unary.to_dict(), expected)


@pytest.mark.parametrize(
    "headers",
    [{"bad name": "x"}, {"x-trace-bin": "x"}, {"grpc-timeout": "1S"}, {"x-id": "caf\u00e9"},
     {"content-type": "text/plain"}, {"x-id": "a\nb"}],
)  # fmt: skip
def test_bad_headers_are_refused_when_the_client_is_made(headers: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="header"):
        Client("127.0.0.1:1", headers=headers)


def test_the_typescript_client_sends_its_headers_on_every_call(
    grpc_recorder: tuple[str, _Recording],
    http_recorder: tuple[str, list[tuple[str, dict[str, str]]]],
    tmp_path: Path,
) -> None:
    grpc_target, recording = grpc_recorder
    rest_target, seen = http_recorder
    settings = {"headers": HEADERS, "streamThreshold": 2, "chunkRows": 1}
    cases = []
    for name, target in (("grpc", grpc_target), ("rest", rest_target)):
        cases += [
            ts_case(f"stream:{name}", target, "binary", LABELS, SCORES, settings=settings),
            ts_case(f"unary:{name}", target, "binary", LABELS[:2], SCORES[:2],
                    settings={"headers": HEADERS}),
            {"id": f"catalog:{name}", "target": target, "settings": settings,
             "call": "listMetrics"},
        ]  # fmt: skip
    answers = finish_cases(start_cases(cases, tmp_path), cases)
    assert [method for method, _ in recording.seen] == ["EvaluateStream", "Evaluate", "ListMetrics"]
    assert [path for path, _ in seen] == ["/v1/evaluate/stream", "/v1/evaluate", "/v1/metrics"]
    assert all(_sent(h) == SENT for _, h in recording.seen + seen)
    for name in ("grpc", "rest"):
        assert ok(answers, f"stream:{name}")["metrics"] == _answer(LABELS, SCORES).metrics
