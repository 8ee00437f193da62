"""The REST transport: a thin FastAPI adapter over the use case (``service.usecase``).

Bodies are read as raw bytes (``service.body``) and decoded by the JSON codec
(``service.json_parse``, ``service.json_codec``) or the protobuf codec (``service.proto_parse``,
``service.proto_codec``), straight to numpy; FastAPI parses nothing, so its own validation
errors never appear. A one-shot request is the use case's pipeline (``evaluate_payload``: decode,
evaluate, encode) in one ``Evaluator.run`` call, off the event loop, so a large body never stalls
health checks; a stream is its stream protocol (``service.rest_stream``). Every error answers
with the one error table of ``service.errors`` (``service.rest_errors``). The middleware
(``service.rest_middleware``) admits each evaluation request before anything reads it, limits
the body, and counts every answer; the use case records the model series.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from importlib.util import find_spec
from typing import Literal

import orjson
import prometheus_client
from fastapi import FastAPI
from google.protobuf.message import DecodeError
from starlette.datastructures import Headers
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from evalserve.core import TASKS, EvaluationResult
from evalserve.report import report_options
from evalserve.service import encode, proto_parse, rest_models
from evalserve.service.body import read_body
from evalserve.service.budget import Reservation, reserve_read
from evalserve.service.config import Settings
from evalserve.service.connection import unless_gone
from evalserve.service.errors import (
    MalformedRequestError,
    RequestTimeoutError,
    UnsupportedMediaTypeError,
)
from evalserve.service.evaluator import Evaluator, current_reservation
from evalserve.service.hold import Hold
from evalserve.service.json_codec import catalog_task_from_query, request_from_json
from evalserve.service.json_parse import parse_json
from evalserve.service.metrics import ServiceMetrics
from evalserve.service.proto_codec import request_from_proto
from evalserve.service.records import Header
from evalserve.service.records import Request as EvaluationRequest
from evalserve.service.rest_api import (
    CATALOG_DOC,
    EVALUATE_DOC,
    HTML,
    JSON,
    NDJSON,
    NDJSON_TYPES,
    PROTOBUF,
    PROTOBUF_TYPES,
    STREAM_DOC,
    OpenApiApp,
)
from evalserve.service.rest_drain import DrainMiddleware
from evalserve.service.rest_errors import install_error_handlers, json_response
from evalserve.service.rest_middleware import (
    AdmissionMiddleware,
    BodyLimitMiddleware,
    InternalErrorMiddleware,
    RequestMetricsMiddleware,
)
from evalserve.service.rest_stream import NdjsonStream
from evalserve.service.usecase import PayloadCodec, evaluate_payload
from evalserve.v1 import evaluation_pb2 as pb

__all__ = ["Readiness", "create_app", "payload_codec"]


@dataclass
class Readiness:
    """Whether ``/readyz`` answers 200; the server flips it to False when it starts to drain."""

    ready: bool = True


# --- bodies in and out -----------------------------------------------------------------------


def _media_type(headers: Headers, name: str) -> str:
    return headers.get(name, "").split(";", 1)[0].strip().lower()


def _is_json(media_type: str) -> bool:
    # A missing Content-Type is read as JSON, the API's default format.
    return media_type in ("", JSON) or media_type.endswith("+json")


def _quality(parameters: str) -> float:
    for parameter in parameters.split(";"):
        key, _, value = parameter.partition("=")
        if key.strip().lower() == "q":
            try:
                return float(value)
            except ValueError:
                return 0.0
    return 1.0


Encoding = Literal["json", "protobuf"]
Answer = Literal["json", "protobuf", "html"]
MEDIA_TYPES: dict[str, str] = {"json": JSON, "protobuf": PROTOBUF, "html": HTML}
# The answers an Accept header can ask for; the HTML report needs Altair (the report extra,
# part of the service extra): without it, text/html is as if not named.
_ANSWERS: dict[str, Answer] = {
    JSON: "json",
    **dict.fromkeys(PROTOBUF_TYPES, "protobuf"),
    **({HTML: "html"} if find_spec("altair") is not None else {}),
}


def _answer_format(headers: Headers, default: Answer) -> Answer:
    """What the Accept header prefers among JSON, protobuf and the HTML report; ``default``
    when it names none of them (then the answer is in the request's own format)."""
    ranked: list[tuple[float, int, Answer]] = []
    for position, item in enumerate(headers.get("accept", "").split(",")):
        media_type, _, parameters = item.partition(";")
        media_type = media_type.strip().lower()
        answer = _ANSWERS.get(media_type)
        quality = _quality(parameters)
        if quality > 0 and answer is not None:
            ranked.append((-quality, position, answer))
    return min(ranked)[2] if ranked else default


def _encoded(answer: Answer, settings: Settings) -> Callable[[EvaluationResult, Header], bytes]:
    """How a result is answered in ``answer`` (checked against ``max_response_bytes``)."""

    def encoded(result: EvaluationResult, header: Header) -> bytes:
        if answer == "protobuf":
            content = encode.result_to_proto(result).SerializeToString()
        elif answer == "html":
            content = _report(result, header).encode("utf-8")
        else:
            content = orjson.dumps(result.to_dict(), option=orjson.OPT_SERIALIZE_NUMPY)
        encode.check_response_size(len(content), settings)
        return content

    return encoded


def _report(result: EvaluationResult, header: Header) -> str:
    from evalserve.report import render_report  # Altair: imported by the first page asked for

    model = header.model
    title = None
    if model is not None:
        named = " ".join(part for part in (model.name, model.version, model.segment) if part)
        title = f"Evaluation report: {named}"
    baseline = None if header.baseline is None else header.baseline.given()
    return render_report(result, options=header.options, title=title, baseline=baseline)


def _decode_json(body: bytes | bytearray, settings: Settings) -> EvaluationRequest:
    return request_from_json(parse_json(body), settings)


def _decode_protobuf(body: bytes | bytearray, settings: Settings) -> EvaluationRequest:
    try:
        message, columns = proto_parse.parse(pb.EvaluateRequest, body)  # large columns sliced
    except DecodeError as error:
        raise MalformedRequestError(
            "body", f"is not a valid evalserve.v1.EvaluateRequest protobuf message: {error}"
        ) from None
    return request_from_proto(message, settings, columns)


def payload_codec(encoding: Encoding, answer: Answer, settings: Settings) -> PayloadCodec:
    """The codec of a one-shot request sent as ``encoding`` and answered as ``answer`` (a
    report's request evaluated with the report's options)."""
    decode: Decode = _decode_protobuf if encoding == "protobuf" else _decode_json
    if answer == "html":
        decode = _for_report(decode)
    return PayloadCodec(encoding, decode, _encoded(answer, settings))


Decode = Callable[[bytes | bytearray, Settings], EvaluationRequest]


def _for_report(decode: Decode) -> Decode:
    """``decode``, then the report's options under the request's own (each segment's curves,
    drawn on demand)."""

    def decoded(body: bytes | bytearray, settings: Settings) -> EvaluationRequest:
        request = decode(body, settings)
        options = report_options(request.header.options, settings.max_curve_points)
        return dataclasses.replace(
            request, header=dataclasses.replace(request.header, options=options)
        )

    return decoded


async def _read_body(request: Request, timeout: float, reservation: Reservation) -> bytearray:
    """The whole body, or ``RequestTimeoutError`` (408) if it takes longer than ``timeout``.
    What reading and decoding it costs is reserved before it is read when the request declares
    its length, else as it arrives (a refusal stops the read). Read without a long hold of the
    event loop (``service.body``)."""
    declared = request.headers.get("content-length", "")
    length = int(declared) if declared.isdigit() else None
    if length:
        reserve_read(reservation, length)
    try:
        async with asyncio.timeout(timeout):
            return await read_body(
                request.stream(), length, lambda size: reserve_read(reservation, size)
            )
    except TimeoutError:
        raise RequestTimeoutError(
            "body",
            f"the request body did not arrive within {timeout:g} s (request_read_timeout_seconds)",
        ) from None


# --- routes ---------------------------------------------------------------------------------


class _Routes:
    def __init__(
        self,
        settings: Settings,
        evaluator: Evaluator,
        registry: prometheus_client.CollectorRegistry,
        readiness: Readiness,
        metrics: ServiceMetrics,
    ) -> None:
        self.settings = settings
        self.evaluator = evaluator
        self.registry = registry
        self.evaluate_observer = metrics.observer("rest", "evaluate")
        self.stream_observer = metrics.observer("rest", "evaluate_stream")
        self.readiness = readiness
        self.codecs = {
            (encoding, answer): payload_codec(encoding, answer, settings)
            for encoding in ("json", "protobuf")
            for answer in ("json", "protobuf", "html")
        }
        # The catalog never changes: every answer is serialized once (None: every task).
        self.catalogs = {
            task: orjson.dumps(encode.catalog_to_json(task)) for task in (None, *TASKS)
        }

    async def evaluate(self, request: Request) -> Response:
        media_type = _media_type(request.headers, "content-type")
        encoding: Encoding
        if media_type in PROTOBUF_TYPES:
            encoding = "protobuf"
        elif _is_json(media_type):
            encoding = "json"
        else:
            raise UnsupportedMediaTypeError(
                "content-type", f"expected {JSON} or {PROTOBUF}, but got {media_type!r}"
            )
        answer = _answer_format(request.headers, default=encoding)
        codec = self.codecs[encoding, answer]
        # Admitted, and its memory reserved, before the body is read (AdmissionMiddleware).
        reservation = current_reservation()
        timeout = self.settings.request_read_timeout_seconds
        body = await _read_body(request, timeout, reservation)
        if await request.is_disconnected():  # nobody waits: the core call never starts
            raise ClientDisconnect()
        content = await unless_gone(
            request,
            self.evaluator.run(
                evaluate_payload, body, codec, self.settings, self.evaluate_observer, reservation
            ),
        )
        return Response(content, media_type=MEDIA_TYPES[answer])

    async def evaluate_stream(self, request: Request) -> Response:
        media_type = _media_type(request.headers, "content-type")
        if media_type not in NDJSON_TYPES and media_type != "":
            raise UnsupportedMediaTypeError(
                "content-type", f"expected {NDJSON}, but got {media_type!r}"
            )
        answer = _answer_format(request.headers, default="json")
        # admitted before the first line is read (AdmissionMiddleware)
        stream = NdjsonStream(
            self.settings, self.stream_observer, current_reservation(),
            _encoded(answer, self.settings), report=answer == "html",
        )  # fmt: skip
        body_read = asyncio.Event()
        # A client that leaves stops the stream at its next batch, also when its whole body
        # has arrived and the batches in it are still being merged.
        content = await unless_gone(
            request, stream.merged(request, self.evaluator, body_read), body_read
        )
        return Response(content, media_type=MEDIA_TYPES[answer])

    async def metric_catalog(self, request: Request) -> Response:
        task = catalog_task_from_query(request.query_params.multi_items())
        body = self.catalogs.get(task)
        if body is None:  # not a task: the core refuses it, naming the field
            body = orjson.dumps(encode.catalog_to_json(task))
        return Response(body, media_type=JSON)

    async def healthz(self) -> Response:
        return json_response({"status": "ok"})

    async def readyz(self) -> Response:
        if self.readiness.ready:
            return json_response({"status": "ready"})
        return json_response({"status": "not ready"}, 503)

    async def prometheus(self) -> Response:
        latest = prometheus_client.generate_latest(self.registry)
        return Response(latest, media_type=prometheus_client.CONTENT_TYPE_LATEST)


def _version() -> str:
    try:
        return metadata.version("evalserve")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def create_app(
    settings: Settings,
    evaluator: Evaluator,
    registry: prometheus_client.CollectorRegistry,
    readiness: Readiness | None = None,
    metrics: ServiceMetrics | None = None,
    hold: Hold | None = None,
) -> FastAPI:
    """The REST app: evaluate, stream, catalog, health, readiness, Prometheus and OpenAPI.

    ``/metrics`` serves ``registry``. ``metrics`` must be registered on it (the server shares
    one between both transports); without it the app registers its own there. ``hold`` holds
    the answers of a draining server while it closes its listening socket
    (``service.rest_drain``).
    """
    metrics = metrics or ServiceMetrics(settings, registry)
    app = OpenApiApp(
        title="evalserve",
        version=_version(),
        description="Stateless model evaluation: exact metrics, curves and intervals. The same "
        "API is served over gRPC (evalserve.v1.EvaluationService).",
    )
    routes = _Routes(settings, evaluator, registry, readiness or Readiness(), metrics)
    app.add_api_route("/v1/evaluate", routes.evaluate, methods=["POST"], **EVALUATE_DOC)
    app.add_api_route("/v1/evaluate/stream", routes.evaluate_stream, methods=["POST"], **STREAM_DOC)
    app.add_api_route("/v1/metrics", routes.metric_catalog, methods=["GET"], **CATALOG_DOC)
    app.add_api_route(
        "/healthz", routes.healthz, methods=["GET"], response_model=rest_models.Status
    )
    app.add_api_route(
        "/readyz",
        routes.readyz,
        methods=["GET"],
        response_model=rest_models.Status,
        responses={503: {"model": rest_models.Status, "description": "draining"}},
    )
    app.add_api_route(
        "/metrics",
        routes.prometheus,
        methods=["GET"],
        response_class=Response,
        responses={200: {"content": {prometheus_client.CONTENT_TYPE_LATEST: {}}}},
    )
    install_error_handlers(app)
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_request_bytes)
    app.add_middleware(InternalErrorMiddleware)  # it sees every error of the app
    # before anything else reads the request: a refusal costs little
    app.add_middleware(AdmissionMiddleware, evaluator=evaluator, identity=settings.identity)
    # While the server drains: Connection: close, and a 503's unread body read first (the
    # refusals of admission and its cut-offs at the end of the grace included).
    app.add_middleware(DrainMiddleware, draining=lambda: evaluator.draining, hold=hold)
    app.add_middleware(RequestMetricsMiddleware, metrics=metrics)  # the outermost: every status
    return app
