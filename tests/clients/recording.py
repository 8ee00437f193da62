"""Small recording servers on loopback for the client tests: a gRPC EvaluationService and an
HTTP server for the REST paths, each recording what arrived (method or path, and headers) and
answering with the core's real result for the rows sent; optionally over TLS."""

from __future__ import annotations

import base64
import json
import ssl
import threading
from collections.abc import Iterable, Iterator
from concurrent import futures
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import grpc
import numpy as np

from evalserve import core
from evalserve.service import encode
from evalserve.v1 import evaluation_pb2 as pb
from evalserve.v1 import evaluation_pb2_grpc as pb_grpc

Seen = list[tuple[str, dict[str, str]]]


def _column(values: Iterable[float], raw: bytes) -> list[float]:
    return np.frombuffer(raw, dtype="<f8").tolist() if raw else list(values)


def answer(labels: list[float], scores: list[float]) -> core.EvaluationResult:
    return core.evaluate("binary", labels, scores)


class Recording(pb_grpc.EvaluationServiceServicer):
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
        return encode.result_to_proto(answer(labels, _column(request.scores, request.scores_f64)))

    def EvaluateStream(  # noqa: N802
        self, request_iterator: Iterator[pb.EvaluateStreamRequest], context: grpc.ServicerContext
    ) -> pb.EvaluateResponse:
        self._record("EvaluateStream", context)
        labels: list[float] = []
        scores: list[float] = []
        for message in request_iterator:
            labels += _column(message.labels, message.labels_f64)
            scores += _column(message.scores, message.scores_f64)
        return encode.result_to_proto(answer(labels, scores))

    def ListMetrics(  # noqa: N802
        self, request: pb.ListMetricsRequest, context: grpc.ServicerContext
    ) -> pb.ListMetricsResponse:
        self._record("ListMetrics", context)
        return encode.catalog_to_proto()


@contextmanager
def grpc_recording(
    credentials: grpc.ServerCredentials | None = None,
) -> Iterator[tuple[str, Recording]]:
    """A recording gRPC server on 127.0.0.1: (host:port, its recording)."""
    recording = Recording()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    pb_grpc.add_EvaluationServiceServicer_to_server(recording, server)
    if credentials is None:
        port = server.add_insecure_port("127.0.0.1:0")
    else:
        port = server.add_secure_port("127.0.0.1:0", credentials)
    server.start()
    try:
        yield f"127.0.0.1:{port}", recording
    finally:
        server.stop(grace=None).wait()


def _json_column(body: dict[str, Any], name: str) -> list[float]:
    raw = body.get(f"{name}_f64")
    return _column(body.get(name, []), base64.b64decode(raw) if raw else b"")


class _HttpRecording(BaseHTTPRequestHandler):
    seen: Seen

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
        self._send(encode.proto_to_json(encode.result_to_proto(answer(labels, scores))))


@contextmanager
def http_recording(tls: ssl.SSLContext | None = None) -> Iterator[tuple[str, Seen]]:
    """A recording HTTP(S) server on 127.0.0.1: (base URL, what arrived)."""
    seen: Seen = []
    handler = type("Handler", (_HttpRecording,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    scheme = "http" if tls is None else "https"
    try:
        yield f"{scheme}://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
