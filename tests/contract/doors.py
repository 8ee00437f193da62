"""One request, every door: a transport-neutral request turned into what each door reads, and
each door's answer (or refusal) turned into one shape the tests compare.

A request is described once, as the JSON body it would be, with two liberties: numeric columns
may be numpy arrays, and the raw ``*_f64`` columns are ``bytes`` (little-endian float64), which
the JSON door sends as base64 and the protobuf doors send as they are. A stream is a list of
such dicts, one per NDJSON line / gRPC message; the one with ``task`` is a header.

A request a door cannot carry raises ``NotExpressibleError``: non-finite numbers in JSON (orjson
would silently write ``null``), and in protobuf anything the message has no field or type for.
"""

from __future__ import annotations

import base64
import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
import httpx
import numpy as np
import orjson
import pytest
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status

from evalserve.core import evaluate
from evalserve.service.encode import proto_to_json
from evalserve.service.grpc_server import SERVICE_NAME
from evalserve.v1 import evaluation_pb2 as pb
from tests.contract.servers import Service

JSON = "application/json"
PROTOBUF = "application/x-protobuf"
NDJSON = "application/x-ndjson"

COLUMNS = ("labels", "scores", "predictions", "weights")
HEADER_FIELDS = (
    "task",
    "classes",
    "options",
    "model",
    "baseline",
    "coverage",
    "n_classes",
    "monitor_state",
    "window",
    "segment_monitor_states",
)


class NotExpressibleError(Exception):
    """The request has no form in this door's encoding."""


# --- the request, per door -------------------------------------------------------------------


def f64(values: Sequence[float] | np.ndarray[Any, Any]) -> bytes:
    """A raw ``*_f64`` column."""
    return np.asarray(values, dtype="<f8").tobytes()


def _jsonable(value: Any, where: str) -> Any:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist(), where)
    if isinstance(value, float) and not math.isfinite(value):
        raise NotExpressibleError(f"{where}: JSON has no {value}")
    if isinstance(value, Mapping):
        return {key: _jsonable(item, f"{where}.{key}") for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(item, where) for item in value]
    return value


def json_body(request: Mapping[str, Any]) -> bytes:
    return orjson.dumps(_jsonable(request, "body"))


def ndjson_body(lines: Sequence[Mapping[str, Any]]) -> bytes:
    return b"".join(json_body(line) + b"\n" for line in lines)


def _task(value: Any) -> int:
    if value is None:
        return pb.TASK_UNSPECIFIED
    if isinstance(value, int) and not isinstance(value, bool):
        return value  # an enum value this server may not know: protobuf enums are open
    if isinstance(value, str) and f"TASK_{value.upper()}" in pb.Task.DESCRIPTOR.values_by_name:
        return pb.Task.Value(f"TASK_{value.upper()}")
    raise NotExpressibleError(f"task: protobuf has no task {value!r}")


def _proto_fields(request: Mapping[str, Any], allowed: Sequence[str]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for name, value in request.items():
        if name not in allowed:
            raise NotExpressibleError(f"{name}: not a field of this message")
        if value is None:
            continue
        if name == "labels" and isinstance(value, list) and value and isinstance(value[0], str):
            fields["label_names"] = value  # as the JSON door reads string labels
        elif name in ("options", "model", "coverage"):
            if not isinstance(value, Mapping):
                raise NotExpressibleError(f"{name}: not a message")
            given = {k: v for k, v in value.items() if v is not None}
            kinds = {"options": pb.Options, "model": pb.Model, "coverage": pb.Coverage}
            fields[name] = _message(kinds[name], given)
        elif name in ("baseline", "challenger"):
            fields[name] = _message(pb.Baseline if name == "baseline" else pb.Challenger, value)
        elif name == "images":
            fields[name] = [_message(pb.DetectionImage, _flat_image(image)) for image in value]
        elif _is_matrix(value):
            # protobuf carries matrices flat, row-major, with their width in n_classes
            fields[name] = [float(x) for row in value for x in row]
            fields["n_classes"] = len(value[0])
        else:
            fields[name] = value
    return fields


def _is_matrix(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and isinstance(value[0], list)


def _flat_image(image: Mapping[str, Any]) -> dict[str, Any]:
    return {
        key: [x for box in boxes for x in box] if _is_matrix(boxes) else boxes
        for key, boxes in image.items()
    }


def _message(message: Any, fields: Mapping[str, Any]) -> Any:
    try:
        return message(**fields)
    except (TypeError, ValueError) as error:
        raise NotExpressibleError(f"{message.DESCRIPTOR.name}: {error}") from None


_REQUEST_FIELDS = tuple(f.name for f in pb.EvaluateRequest.DESCRIPTOR.fields)
_BATCH_FIELDS = tuple(f.name for f in pb.EvaluateStreamRequest.DESCRIPTOR.fields)
_HEADER_FIELDS = tuple(f.name for f in pb.StreamHeader.DESCRIPTOR.fields)


def proto_request(request: Mapping[str, Any]) -> pb.EvaluateRequest:
    fields = _proto_fields(request, _REQUEST_FIELDS)
    fields["task"] = _task(request.get("task"))
    message: pb.EvaluateRequest = _message(pb.EvaluateRequest, fields)
    return message


def proto_stream(lines: Sequence[Mapping[str, Any]]) -> list[pb.EvaluateStreamRequest]:
    """The messages of a stream. Matrices of the batches go flat; their width is the header's
    (``n_classes`` or ``classes``), and when the header gives none, the first matrix's width is
    written into it, except for multiclass, whose width the server reads from the ratio of
    scores to labels (as a client would send it)."""
    batches: list[dict[str, Any]] = []
    widths = []
    for line in lines:
        rows = {k: v for k, v in line.items() if k not in HEADER_FIELDS}
        if "task" not in line and any(name in line for name in HEADER_FIELDS):
            raise NotExpressibleError("a header field outside the header")
        fields = _proto_fields(rows, _BATCH_FIELDS)
        if "n_classes" in fields:
            widths.append(fields.pop("n_classes"))
        batches.append(fields)
    messages = []
    for line, fields in zip(lines, batches, strict=True):
        if "task" in line:
            header = _proto_fields({k: line[k] for k in HEADER_FIELDS if k in line}, _HEADER_FIELDS)
            header["task"] = _task(line["task"])
            given = "n_classes" in header or line.get("classes")
            if widths and not given and line["task"] != "multiclass":
                header["n_classes"] = widths[0]
            fields["header"] = _message(pb.StreamHeader, header)
        messages.append(_message(pb.EvaluateStreamRequest, fields))
    return messages


def column(request: Mapping[str, Any], name: str) -> np.ndarray[Any, Any] | None:
    """A numeric column as an array, from either of its forms."""
    raw = request.get(f"{name}_f64")
    if raw:
        return np.frombuffer(raw, dtype="<f8")
    values = request.get(name)
    return None if values is None else np.asarray(values, dtype=np.float64)


# --- the doors --------------------------------------------------------------------------------


def _segment_arguments(request: Mapping[str, Any], max_segments: int) -> dict[str, Any]:
    """``core.evaluate``'s segment arguments for the request's segment fields (none: {})."""
    codes = request.get("segment_codes")
    segments = request.get("segments") if codes is None else codes
    if segments is None:
        return {}
    return {
        "segments": segments,
        "segment_names": request.get("segment_names"),
        "max_segments": max_segments,
        "fold_segments": bool(request.get("fold_segments")),
        "segment_monitor_states": request.get("segment_monitor_states"),
    }


def core_answer(request: Mapping[str, Any], max_segments: int = 100) -> dict[str, Any]:
    """The in-process ``core.evaluate`` of the request, as its JSON body (``max_segments``:
    the service's setting)."""
    segmented = _segment_arguments(request, max_segments)
    if request["task"] == "detection":
        images = request["images"]
        targets = [
            {"boxes": np.asarray(i["gt_boxes"], float).reshape(-1, 4), "classes": i["gt_classes"]}
            for i in images
        ]
        predictions = [
            {"boxes": np.asarray(i["pred_boxes"], float).reshape(-1, 4),
             "classes": i["pred_classes"], "scores": i["pred_scores"]}
            for i in images
        ]  # fmt: skip
        found = evaluate("detection", targets, predictions, options=request.get("options"),
                         classes=request.get("classes"),
                         coverage=request.get("coverage"), **segmented)  # fmt: skip
        return found.to_dict()
    labels: Any = request.get("labels")
    if not (isinstance(labels, list) and labels and isinstance(labels[0], str)):
        labels = column(request, "labels")
    result = evaluate(
        request["task"],
        labels,
        column(request, "scores"),
        y_pred=column(request, "predictions"),
        sample_weight=column(request, "weights"),
        options=request.get("options"),
        baseline=request.get("baseline"),
        challenger=request.get("challenger"),
        classes=request.get("classes"),
        coverage=request.get("coverage"),
        monitor_state=request.get("monitor_state"),
        window=request.get("window"),
        **segmented,
    )
    return result.to_dict()


def post(service: Service, path: str, content: bytes, content_type: str, accept: str = "") -> Any:
    headers = {"content-type": content_type}
    if accept:
        headers["accept"] = accept
    return service.rest.post(path, content=content, headers=headers)


def answer(response: httpx.Response) -> dict[str, Any]:
    """A successful REST answer as its JSON shape, whatever format it came in."""
    assert response.status_code == 200, response.text
    if response.headers["content-type"] == PROTOBUF:
        return proto_to_json(pb.EvaluateResponse.FromString(response.content))
    assert response.headers["content-type"] == JSON
    body: dict[str, Any] = response.json()
    return body


def rest_json(service: Service, request: Mapping[str, Any], accept: str = "") -> dict[str, Any]:
    return answer(post(service, "/v1/evaluate", json_body(request), JSON, accept))


def rest_protobuf(service: Service, request: Mapping[str, Any], accept: str = "") -> dict[str, Any]:
    content = proto_request(request).SerializeToString()
    return answer(post(service, "/v1/evaluate", content, PROTOBUF, accept))


def grpc_evaluate(service: Service, request: Mapping[str, Any]) -> dict[str, Any]:
    return proto_to_json(service.stub.Evaluate(proto_request(request), timeout=120))


def rest_stream(service: Service, lines: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return answer(post(service, "/v1/evaluate/stream", ndjson_body(lines), NDJSON))


def grpc_stream(service: Service, lines: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    response = service.stub.EvaluateStream(iter(proto_stream(lines)), timeout=120)
    return proto_to_json(response)


# --- refusals ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Refusal:
    """What a door said when it refused a request."""

    status: int | grpc.StatusCode
    field: str | None  # None when the transport itself refused, before the service read it
    message: str


def rest_refusal(response: httpx.Response) -> Refusal:
    """The error body of a refused REST call; checks it is the one documented error shape."""
    assert 400 <= response.status_code < 500, (response.status_code, response.text)
    assert response.headers["content-type"] == JSON, response.headers
    body = response.json()
    assert set(body) == {"error"}, body
    error = body["error"]
    assert set(error) == {"code", "field", "message"}, error
    assert error["message"], error
    return Refusal(response.status_code, error["field"], error["message"])


def grpc_refusal(error: grpc.RpcError) -> Refusal:
    """The status of a refused gRPC call. A service refusal carries a google.rpc.Status whose
    one BadRequest violation names the field, and the message starts with that field; a refusal
    by gRPC itself (a message over the size limit) has no detail and names no field."""
    assert isinstance(error, grpc.Call)
    details = error.details() or ""
    status = rpc_status.from_call(error)  # also checks that code and message agree
    if status is None:
        return Refusal(error.code(), None, details)
    assert len(status.details) == 1, status
    violation = error_details_pb2.BadRequest()
    assert status.details[0].Unpack(violation)
    assert len(violation.field_violations) == 1, violation
    field = violation.field_violations[0].field
    description = violation.field_violations[0].description
    assert description, violation
    assert details == f"{field}: {description}", details
    return Refusal(error.code(), field, description)


def grpc_raw_evaluate(service: Service, content: bytes) -> None:
    """Call Evaluate with bytes that need not be a valid message."""
    call: grpc.UnaryUnaryMultiCallable[bytes, pb.EvaluateResponse] = service.channel.unary_unary(
        "/evalserve.v1.EvaluationService/Evaluate",
        request_serializer=None,
        response_deserializer=pb.EvaluateResponse.FromString,
    )
    call(content, timeout=60)


def batches(n_rows: int, n_batches: int) -> list[slice]:
    """At most ``n_batches`` contiguous, non-empty slices of ``range(n_rows)``, of unequal
    sizes (the first small, the last large)."""
    k = max(1, min(n_batches, n_rows))
    bounds = sorted({round(n_rows * (i / k) ** 1.5) for i in range(k + 1)})
    return [slice(start, stop) for start, stop in itertools.pairwise(bounds) if stop > start]


def assert_still_serving(service: Service) -> None:
    """Health, readiness and a good request on every door: the service did not break."""
    assert service.rest.get("/healthz").json() == {"status": "ok"}
    assert service.rest.get("/readyz").json() == {"status": "ready"}
    health = health_pb2_grpc.HealthStub(service.channel)
    for name in ("", SERVICE_NAME):
        # types-grpcio-health-checking's HealthStub lacks the generated Check method
        reply = health.Check(health_pb2.HealthCheckRequest(service=name), timeout=10)  # type: ignore[attr-defined]
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
    rows: dict[str, Any] = {"labels": [0, 1, 1, 0, 1], "scores": [0.1, 0.8, 0.35, 0.4, 0.9]}
    good = {"task": "binary", **rows, "options": {"max_curve_points": 0}}
    expected = core_answer(good)
    assert expected["metrics"]["roc_auc"] == 5 / 6
    assert rest_json(service, good) == expected
    assert rest_protobuf(service, good) == expected
    assert grpc_evaluate(service, good) == expected
    stream: list[dict[str, Any]] = [{"task": "binary", "options": {"max_curve_points": 0}}, rows]
    assert rest_stream(service, stream) == expected
    assert grpc_stream(service, stream) == expected


# --- answers that may differ in the last digits -------------------------------------------------


def close_differences(got: Any, expected: Any, path: str = "") -> Iterator[str]:
    """Where two JSON shapes differ beyond 1e-12 (relative or absolute) in a float."""
    if isinstance(expected, dict) and isinstance(got, dict):
        for key in sorted(set(got) | set(expected)):
            if key not in got or key not in expected:
                yield f"{path}.{key}: only in {'got' if key in got else 'expected'}"
            else:
                yield from close_differences(got[key], expected[key], f"{path}.{key}")
    elif isinstance(expected, list) and isinstance(got, list):
        if len(got) != len(expected):
            yield f"{path}: {len(got)} items, expected {len(expected)}"
        else:
            for index, (a, b) in enumerate(zip(got, expected, strict=True)):
                yield from close_differences(a, b, f"{path}[{index}]")
    elif (
        isinstance(expected, float)
        and isinstance(got, float | int)
        and not isinstance(got, bool)
        and got == pytest.approx(expected, rel=1e-12, abs=1e-12)
    ):
        return
    elif got != expected or (type(got) is bool) != (type(expected) is bool):
        yield f"{path}: {got!r} != {expected!r}"


def assert_close(got: Any, expected: Any) -> None:
    """The same JSON shape, floats within 1e-12: a state that adds per-batch sums in another
    order than the one-shot path."""
    found = list(close_differences(got, expected))
    assert not found, f"{len(found)} differences, the first: {found[:10]}"
