"""Small recording servers on loopback for the client tests: a gRPC EvaluationService and an
HTTP server for the REST paths, each recording what arrived (method or path, headers, and every
message or NDJSON line in one neutral form), optionally over TLS.

They answer with the service's one-shot answer to what arrived: a stream is put back together
into the one request it stands for (the header's fields, the batches' columns end to end) and
evaluated as ``POST /v1/evaluate`` would, whatever its task. A client's stream therefore gets
the one-shot answer exactly when its batches carried the whole input, in order.

The neutral form of a message or line (``Unit``) is the same for both transports, so what the
two doors received can be compared directly: ``header`` (task name, ``classes``,
``n_classes``, ``options``, ``model``, ``baseline`` with its columns as float lists,
``coverage``, the AUC monitor's ``monitor_state`` as base64 and ``window``), the row columns
as flat float lists (matrices row-major, raw ``*_f64`` bytes decoded), ``label_names``
(class-name labels: JSON ``labels`` of strings), ``images`` (boxes flat) and ``challenger``.

Both can refuse the first calls (``refusals``, taken in order): the gRPC server ends each with a
given ``grpc.Status`` (its code, message and trailing metadata, ``google.rpc`` details among
them), the HTTP server answers each with a given status code and headers (a header's value may
be a function, called as the refusal is sent: an HTTP date relative to that moment).
"""

from __future__ import annotations

import base64
import json
import ssl
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent import futures
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import grpc
import numpy as np
from google.protobuf.message import Message

from evalserve import core
from evalserve.service import encode, json_codec
from evalserve.service.config import Settings
from evalserve.service.usecase import evaluate_request
from evalserve.v1 import evaluation_pb2 as pb
from evalserve.v1 import evaluation_pb2_grpc as pb_grpc

Unit = dict[str, Any]
COLUMNS = ("labels", "scores", "predictions", "weights")
HEADER_FIELDS = (
    "task", "classes", "n_classes", "options", "model", "baseline", "coverage", "monitor_state",
    "window",
)  # fmt: skip
IMAGE_FIELDS = ("gt_boxes", "gt_classes", "pred_boxes", "pred_classes", "pred_scores")
SETTINGS = Settings()
Header = str | Callable[[], str]


class Seen(list[tuple[str, dict[str, str]]]):
    """What arrived over HTTP: (path, headers) per request; ``received`` the units of each;
    ``refusals`` the (status, headers) of the next calls to refuse, in order."""

    def __init__(self, refusals: Sequence[tuple[int, Mapping[str, Header]]] = ()) -> None:
        super().__init__()
        self.received: list[list[Unit]] = []
        self.refusals = list(refusals)
        self.lock = threading.Lock()

    def refusal(self) -> tuple[int, Mapping[str, Header]] | None:
        with self.lock:
            return self.refusals.pop(0) if self.refusals else None


def answer(labels: list[float], scores: list[float]) -> core.EvaluationResult:
    return core.evaluate("binary", labels, scores)


# --- the neutral form -------------------------------------------------------------------------


def _floats(values: Any) -> list[float]:
    return [float(v) for v in np.asarray(values, dtype=np.float64).reshape(-1)]


def _raw(data: bytes) -> list[float]:
    return [float(v) for v in np.frombuffer(data, dtype="<f8")]


def _fields(message: Message) -> dict[str, Any]:
    return {d.name: list(v) if d.is_repeated else v for d, v in message.ListFields()}


def _proto_columns(message: Any, names: Iterable[str]) -> dict[str, list[float]]:
    columns = {}
    for name in names:
        raw, packed = getattr(message, f"{name}_f64"), getattr(message, name)
        if len(raw) or len(packed):
            columns[name] = _raw(raw) + _floats(list(packed))
    return columns


def _proto_header(message: pb.StreamHeader | pb.EvaluateRequest) -> Unit:
    header: Unit = {"task": pb.Task.Name(message.task).removeprefix("TASK_").lower()}
    if message.classes:
        header["classes"] = list(message.classes)
    if message.HasField("n_classes"):
        header["n_classes"] = message.n_classes
    for name in ("options", "model", "coverage"):
        if message.HasField(name):
            header[name] = _fields(getattr(message, name))
    if message.monitor_state:
        header["monitor_state"] = base64.b64encode(message.monitor_state).decode()
    if message.window:
        header["window"] = message.window
    if message.HasField("baseline"):
        summary = {
            key: value
            for key, value in _fields(message.baseline).items()
            if not isinstance(value, bytes | list)
        }
        header["baseline"] = {
            **summary,
            **_proto_columns(message.baseline, ("labels", "scores", "weights")),
        }
    return header


def _proto_image(image: pb.DetectionImage) -> Unit:
    return {
        "image_id": image.image_id,
        **{name: _floats(getattr(image, name)) for name in IMAGE_FIELDS},
    }


def _proto_rows(message: pb.EvaluateRequest | pb.EvaluateStreamRequest) -> Unit:
    unit: Unit = _proto_columns(message, COLUMNS)
    if message.label_names:
        unit["label_names"] = list(message.label_names)
    if message.images:
        unit["images"] = [_proto_image(image) for image in message.images]
    return unit


def proto_unit(message: pb.EvaluateRequest | pb.EvaluateStreamRequest) -> Unit:
    """A gRPC request or stream message in the neutral form."""
    unit = _proto_rows(message)
    if isinstance(message, pb.EvaluateRequest):
        unit["header"] = _proto_header(message)
        if message.HasField("challenger"):
            unit["challenger"] = _proto_columns(message.challenger, ("scores",))
    elif message.HasField("header"):
        unit["header"] = _proto_header(message.header)
    return unit


def _json_columns(body: Mapping[str, Any], names: Iterable[str]) -> dict[str, list[float]]:
    columns = {}
    for name in names:
        raw, plain = body.get(f"{name}_f64"), body.get(name)
        if raw is not None or plain is not None:
            columns[name] = _raw(base64.b64decode(raw or "")) + _floats(plain or [])
    return columns


def _json_header(line: Mapping[str, Any]) -> Unit:
    header = {key: line[key] for key in HEADER_FIELDS if key in line and key != "baseline"}
    if "baseline" in line:
        baseline = line["baseline"]
        summary = {
            key: value
            for key, value in baseline.items()
            if not isinstance(value, str | list) and not key.endswith("_f64")
        }
        columns = _json_columns(baseline, ("labels", "scores", "weights"))
        header["baseline"] = {**summary, **columns}
    return header


def json_unit(line: Mapping[str, Any]) -> Unit:
    """A JSON body or NDJSON line in the neutral form."""
    names = [str(v) for v in line.get("labels") or [] if isinstance(v, str)]
    numeric = [name for name in COLUMNS if not (name == "labels" and names)]
    unit: Unit = _json_columns(line, numeric)
    if names:
        unit["label_names"] = names
    if "label_names" in line:
        unit["label_names"] = list(line["label_names"])
    if "images" in line:
        unit["images"] = [
            {"image_id": image["image_id"], **{k: _floats(image[k]) for k in IMAGE_FIELDS}}
            for image in line["images"]
        ]
    if "challenger" in line:
        unit["challenger"] = _json_columns(line["challenger"], ("scores",))
    if "task" in line:
        unit["header"] = _json_header(line)
    return unit


# --- the one request a stream stands for -------------------------------------------------------


def _b64(values: Sequence[float]) -> str:
    return base64.b64encode(np.asarray(values, dtype="<f8").tobytes()).decode()


def one_request(units: Sequence[Unit]) -> dict[str, Any]:
    """The ``POST /v1/evaluate`` body of a request or of a whole stream (header first)."""
    body: dict[str, Any] = dict(units[0]["header"])
    if "baseline" in body:
        baseline = body["baseline"]
        summary = {key: value for key, value in baseline.items() if not isinstance(value, list)}
        columns = {f"{k}_f64": _b64(v) for k, v in baseline.items() if isinstance(v, list)}
        body["baseline"] = {**summary, **columns}
    for name in COLUMNS:
        parts = [unit[name] for unit in units if name in unit]
        if parts:
            body[f"{name}_f64"] = _b64([v for part in parts for v in part])
    names = [v for unit in units for v in unit.get("label_names", [])]
    if names:
        body["labels"] = names
    images = [image for unit in units for image in unit.get("images", [])]
    if images:
        body["images"] = images
    challenger = units[0].get("challenger")
    if challenger is not None:
        body["challenger"] = {"scores_f64": _b64(challenger["scores"])}
    return body


def evaluated(units: Sequence[Unit]) -> pb.EvaluateResponse:
    """The service's one-shot answer to what arrived."""
    request = json_codec.request_from_json(one_request(units), SETTINGS)
    return encode.result_to_proto(evaluate_request(request))


# --- the servers ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Refusal(grpc.Status):
    """A status to end a call with: code, message, trailing metadata (``grpc.Status``)."""

    code: grpc.StatusCode
    details: str
    trailing_metadata: tuple[tuple[str, str | bytes], ...] = ()


class Recording(pb_grpc.EvaluationServiceServicer):
    def __init__(self, refusals: Sequence[grpc.Status] = ()) -> None:
        self.seen: list[tuple[str, dict[str, str]]] = []
        self.received: list[list[Unit]] = []
        self.refusals = list(refusals)
        self.lock = threading.Lock()

    def _record(self, method: str, context: grpc.ServicerContext, units: list[Unit]) -> None:
        pairs = context.invocation_metadata() or ()
        with self.lock:
            self.seen.append((method, {str(k): str(v) for k, v in pairs}))
            self.received.append(units)
            refusal = self.refusals.pop(0) if self.refusals else None
        if refusal is not None:
            context.abort_with_status(refusal)

    def Evaluate(  # noqa: N802 - the RPC's name
        self, request: pb.EvaluateRequest, context: grpc.ServicerContext
    ) -> pb.EvaluateResponse:
        units = [proto_unit(request)]
        self._record("Evaluate", context, units)
        return evaluated(units)

    def EvaluateStream(  # noqa: N802
        self, request_iterator: Iterator[pb.EvaluateStreamRequest], context: grpc.ServicerContext
    ) -> pb.EvaluateResponse:
        units = [proto_unit(message) for message in request_iterator]
        self._record("EvaluateStream", context, units)
        return evaluated(units)

    def ListMetrics(  # noqa: N802
        self, request: pb.ListMetricsRequest, context: grpc.ServicerContext
    ) -> pb.ListMetricsResponse:
        self._record("ListMetrics", context, [])
        return encode.catalog_to_proto()


@contextmanager
def grpc_recording(
    credentials: grpc.ServerCredentials | None = None, refusals: Sequence[grpc.Status] = ()
) -> Iterator[tuple[str, Recording]]:
    """A recording gRPC server on 127.0.0.1: (host:port, its recording)."""
    recording = Recording(refusals)
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

    def _send(self, answer: dict[str, Any], status: int = 200) -> None:
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _record(self, units: list[Unit]) -> None:
        self.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
        self.seen.received.append(units)

    def _refused(self) -> bool:
        refusal = self.seen.refusal()
        if refusal is None:
            return False
        status, headers = refusal
        data = json.dumps({"error": {"code": "unavailable", "message": "refused"}}).encode()
        self.send_response(status)
        for name, value in {"content-type": "application/json", **headers}.items():
            self.send_header(name, value() if callable(value) else value)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        return True

    def do_GET(self) -> None:
        self._record([])
        if not self._refused():
            self._send(encode.catalog_to_json())

    def do_POST(self) -> None:
        lines = [json.loads(line) for line in self._body().splitlines() if line.strip()]
        units = [json_unit(line) for line in lines]
        self._record(units)
        if self._refused():
            return
        try:
            answer = encode.proto_to_json(evaluated(units))
        except Exception as error:  # the test's failure, told to the client
            self._send({"error": {"code": "recording", "message": repr(error)}}, status=500)
            return
        self._send(answer)


@contextmanager
def http_recording(
    tls: ssl.SSLContext | None = None, refusals: Sequence[tuple[int, Mapping[str, Header]]] = ()
) -> Iterator[tuple[str, Seen]]:
    """A recording HTTP(S) server on 127.0.0.1: (base URL, what arrived)."""
    seen = Seen(refusals)
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
