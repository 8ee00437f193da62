"""The REST transport: a thin FastAPI adapter over ``service.decode`` and ``service.usecase``.

Bodies are read as raw bytes (``service.body``) and decoded by ``service.decode`` (orjson or
protobuf straight to numpy; large protobuf columns a slice at a time, ``service.decode_proto``);
FastAPI parses nothing, so its own validation errors never appear. Decoding, evaluating
and encoding run in one ``Evaluator.run`` call, off the event loop, so a large body never
stalls health checks. Every error answers with the one error table of ``service.errors``:
``{"error": {"code", "field", "message"}}``. ``AdmissionMiddleware`` admits each evaluation
request before anything reads it, or refuses it with an answer built once per kind of refusal.
``RequestMetricsMiddleware`` counts every answer of the API routes by its status
(``service.metrics``); the use case records the model series.

The pydantic models of ``service.rest_models`` only document the API (``/docs``).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import ExitStack, suppress
from dataclasses import dataclass
from importlib import metadata
from importlib.util import find_spec
from typing import Any, Literal, TypeVar

import orjson
import prometheus_client
from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from google.protobuf.message import DecodeError
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from evalserve.core import TASKS, EvaluationResult, InvalidInputError
from evalserve.service import decode_proto, encode, rest_models
from evalserve.service.body import read_body
from evalserve.service.budget import Reservation
from evalserve.service.config import Settings
from evalserve.service.connection import PEER_CLOSED
from evalserve.service.decode import Header as RequestHeader
from evalserve.service.decode import Request as EvaluationRequest
from evalserve.service.decode import (
    catalog_task_from_query,
    json_kind,
    parse_json,
    request_from_json,
    request_from_proto,
    stream_line_from_json,
)
from evalserve.service.errors import (
    BusyError,
    ErrorInfo,
    MalformedRequestError,
    PayloadTooLargeError,
    RequestTimeoutError,
    ServiceError,
    ShuttingDownError,
    StreamProtocolError,
    UnsupportedMediaTypeError,
    describe,
)
from evalserve.service.identity import ClientIdentity
from evalserve.service.metrics import ServiceMetrics
from evalserve.service.rest_drain import DrainMiddleware, closing
from evalserve.service.usecase import (
    EvaluationObserver,
    Evaluator,
    StreamAccumulator,
    current_reservation,
    evaluate_request,
    reserve_decode,
    reserve_read,
)
from evalserve.v1 import evaluation_pb2 as pb

__all__ = [
    "AdmissionMiddleware",
    "BodyLimitMiddleware",
    "InternalErrorMiddleware",
    "Readiness",
    "RequestMetricsMiddleware",
    "create_app",
]

logger = logging.getLogger(__name__)

JSON = "application/json"
HTML = "text/html"
PROTOBUF = "application/x-protobuf"
NDJSON = "application/x-ndjson"
PROTOBUF_TYPES = frozenset({PROTOBUF, "application/protobuf", "application/vnd.google.protobuf"})
NDJSON_TYPES = frozenset(
    {NDJSON, "application/ndjson", "application/jsonl", "application/jsonlines"}
)

T = TypeVar("T")

Decoder = Callable[[bytes, Settings], EvaluationRequest]


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


def _json_response(content: Any, status_code: int = 200) -> Response:
    return Response(orjson.dumps(content), status_code=status_code, media_type=JSON)


def _error_response(status_code: int, code: str, field: str, message: str) -> Response:
    body = {"error": {"code": code, "field": field, "message": message}}
    return _json_response(body, status_code)


def _encode(
    result: EvaluationResult, answer: Answer, settings: Settings, header: RequestHeader
) -> bytes:
    if answer == "protobuf":
        content = encode.result_to_proto(result).SerializeToString()
    elif answer == "html":
        content = _report(result, header).encode("utf-8")
    else:
        content = orjson.dumps(result.to_dict(), option=orjson.OPT_SERIALIZE_NUMPY)
    encode.check_response_size(len(content), settings)
    return content


def _report(result: EvaluationResult, header: RequestHeader) -> str:
    from evalserve.report import render_report  # Altair: imported by the first page asked for

    model = header.model
    title = None
    if model is not None:
        named = " ".join(part for part in (model.name, model.version, model.segment) if part)
        title = f"Evaluation report: {named}"
    return render_report(result, options=header.options, title=title)


def _decode_json(body: bytes, settings: Settings) -> EvaluationRequest:
    return request_from_json(parse_json(body), settings)


def _decode_protobuf(body: bytes, settings: Settings) -> EvaluationRequest:
    try:
        message, columns = decode_proto.parse(pb.EvaluateRequest, body)  # large columns sliced
    except DecodeError as error:
        raise MalformedRequestError(
            "body", f"is not a valid evalserve.v1.EvaluateRequest protobuf message: {error}"
        ) from None
    return request_from_proto(message, settings, columns)


def _evaluate_body(
    decode: Decoder,
    body: bytes,
    settings: Settings,
    answer: Answer,
    observer: EvaluationObserver,
    reservation: Reservation,
) -> bytes:
    """Decode, evaluate, encode: the CPU-bound part of one request, run off the event loop."""
    reserve_decode(reservation, "protobuf" if decode is _decode_protobuf else "json", body)
    request = decode(body, settings)
    result = evaluate_request(request, observer, reservation, held_bytes=len(body))
    return _encode(result, answer, settings, request.header)


# --- NDJSON streams ----------------------------------------------------------------------------


async def _lines(
    chunks: AsyncIterator[bytes], buffered: Callable[[int, int], None]
) -> AsyncIterator[tuple[int, bytearray]]:
    """Numbered lines of a body as it arrives, but for blank ones (white space only, which a
    stream skips); a line may span any number of chunks. ``buffered(line, size)`` is told the
    size of the unfinished line ``line`` as it grows (before the bytes are kept). Runs of blank
    lines are skipped by C scans, not line by line: 200,000 of them held the event loop for
    a quarter of a second."""
    buffer = bytearray()
    number = 0
    async for chunk in chunks:
        search_from = len(buffer)  # the part before the new chunk holds no newline
        buffered(number + 1, len(buffer) + len(chunk))
        buffer += chunk
        start = 0
        while True:
            content = _CONTENT.search(buffer, start)
            # the complete lines before the one that holds ``content`` are blank
            last_blank = buffer.rfind(
                b"\n", start, len(buffer) if content is None else content.start()
            )
            if last_blank >= 0:
                number += buffer.count(b"\n", start, last_blank + 1)
                start = last_blank + 1
                search_from = max(search_from, start)
            if content is None or (end := buffer.find(b"\n", search_from)) < 0:
                break
            number += 1
            yield number, buffer[start:end]
            start = search_from = end + 1
        if start:
            del buffer[:start]
    if buffer:
        yield number + 1, buffer


# How often a stream whose body is still arriving checks whether its client has closed.
PEER_POLL_SECONDS = 0.1

# The first byte of a line that is not blank (bytes.isspace's white space is these six).
_CONTENT = re.compile(rb"[^ \t\n\r\x0b\x0c]")


def _blank(line: bytearray) -> bool:
    """A line of white space only, which a stream skips (``isspace`` stops at the first other
    byte: a batch line costs nothing here)."""
    return not line or line.isspace()


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


def _idle_error(idle: float, stream: _NdjsonStream) -> RequestTimeoutError:
    batches = stream.accumulator.n_batches if stream.accumulator is not None else 0
    return RequestTimeoutError(
        "body",
        f"the stream sent no batch for {idle:g} s (stream_idle_timeout_seconds) after "
        f"{batches} batches; it was not evaluated",
    )


async def _disconnected(request: Request, body_read: asyncio.Event | None = None) -> None:
    """Returns when the client has gone. Listens to the connection once the body has been read
    whole (at once, or when ``body_read`` is set); before that, polls the socket's state where
    the server tells it (``service.connection``): the client's close waits behind the unread
    bytes of its body, which may take long to read."""
    if body_read is not None:
        peer_closed = request.scope.get("extensions", {}).get(PEER_CLOSED)
        while not body_read.is_set():
            if peer_closed is not None and peer_closed():
                return
            with suppress(TimeoutError):
                async with asyncio.timeout(PEER_POLL_SECONDS):
                    await body_read.wait()
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def _unless_gone(
    request: Request, work: Awaitable[T], body_read: asyncio.Event | None = None
) -> T:
    """``work``'s result, or ``ClientDisconnect`` as soon as the client goes: the call is then
    cancelled (dropped if no worker has started it yet). ``body_read``: ``work`` reads the
    body itself, and sets it once the body has arrived whole."""
    task = asyncio.ensure_future(work)
    gone = asyncio.ensure_future(_disconnected(request, body_read))
    try:
        await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not task.done():
            task.cancel()
        gone.cancel()
    if task.done() and not task.cancelled():
        return task.result()
    raise ClientDisconnect()


async def _body(request: Request, read: asyncio.Event) -> AsyncIterator[bytes]:
    """The body's chunks as they arrive; ``read`` is set once the last has arrived."""
    async for chunk in request.stream():
        yield chunk
    read.set()


def _at_line(error: ServiceError | InvalidInputError, line: int, batch: str) -> Exception:
    """The same error with its field located on the stream's line (the use case counts
    batches, which are the non-empty lines)."""
    if error.field == batch or error.field.startswith(f"{batch}."):
        field = f"line {line}{error.field[len(batch) :]}"
    else:
        field = f"line {line}.{error.field}"
    return type(error)(field, error.message)


class _NdjsonStream:
    """One ``POST /v1/evaluate/stream``: the header line, then batches, merged as they come.
    Its methods are CPU-bound and run through ``Evaluator.run``, one at a time."""

    def __init__(
        self, settings: Settings, observer: EvaluationObserver, reservation: Reservation
    ) -> None:
        self.settings = settings
        self.observer = observer
        self.reservation = reservation
        self.accumulator: StreamAccumulator | None = None
        self.header_line = 0
        self.line_reserved = 0

    def buffered(self, number: int, size: int) -> None:
        """A line of ``size`` bytes so far is being received: reserve it (on the loop: a
        resize takes a lock, nothing more)."""
        if size > self.line_reserved:
            reserve_read(self.reservation, size, self.accumulator, f"line {number}")
            self.line_reserved = size

    def feed(self, number: int, line: bytearray) -> None:
        self.line_reserved = 0  # the next line reserves anew
        if _blank(line):
            return
        reserve_decode(self.reservation, "json", line, self.accumulator, f"line {number}")
        try:
            document = parse_json(line)  # a long line's columns are read in slices
        except MalformedRequestError as error:
            raise MalformedRequestError(f"line {number}", error.message) from None
        if not isinstance(document, dict):
            raise MalformedRequestError(
                f"line {number}", f"expected a JSON object, but got {json_kind(document)}"
            )
        is_header = "task" in document
        if self.accumulator is None and not is_header:
            raise StreamProtocolError(
                f"line {number}", "expected the header first: a JSON object with task"
            )
        if self.accumulator is not None and is_header:
            raise StreamProtocolError(
                f"line {number}", f"a second header; the header was line {self.header_line}"
            )
        batch_label = f"batch {self.accumulator.n_batches + 1 if self.accumulator else 1}"
        try:
            header, batch = stream_line_from_json(document, self.settings)
            if header is not None:
                self.accumulator = StreamAccumulator(
                    header, self.settings, self.observer, self.reservation
                )
                self.header_line = number
            assert self.accumulator is not None
            self.accumulator.add(batch, held_bytes=len(line))
        except (ServiceError, InvalidInputError) as error:
            raise _at_line(error, number, batch_label) from None

    def finish(self, answer: Answer) -> bytes:
        if self.accumulator is None:
            raise StreamProtocolError(
                "line 1", "the stream is empty; expected a header line with task"
            )
        result = self.accumulator.finish()
        return _encode(result, answer, self.settings, self.accumulator.header)


# --- admission --------------------------------------------------------------------------------

# The routes whose requests take an admission place (POST only).
ADMITTED_PATHS = frozenset({"/v1/evaluate", "/v1/evaluate/stream"})


def _client_of(scope: Scope, identity: ClientIdentity | None) -> str | None:
    """Who the request's client is for ``max_inflight_per_client`` (None: ``client_identity``
    is off): the header ``identity`` names when the request carries it (the last one, if
    repeated: its rightmost entry), else the peer's address."""
    if identity is None:
        return None
    forwarded = None
    if identity.header_bytes is not None:
        for name, value in scope["headers"]:
            if name == identity.header_bytes:
                forwarded = value
    peer = scope.get("client")
    return identity.of(
        None if forwarded is None else forwarded.decode("latin-1"),
        None if peer is None else str(peer[0]),
    )


class AdmissionMiddleware:
    """Admits each evaluation request (``Evaluator.admitted``) before any other layer of the
    app runs: past ``max_inflight_requests`` (or its client's ``max_inflight_per_client``), or
    while the server drains, it is refused here, at once, nothing of it read or parsed, with an
    answer built once per kind of refusal (503 with Retry-After): a refusal costs what any
    answer costs uvicorn, a small part of an evaluation. The route finds the request's memory
    reservation with ``usecase.current_reservation``; the place and the reservation are freed
    once the answer is settled, as it starts to leave. A request cut off at the end of the
    shutdown grace (before its answer) is answered here too: 503."""

    def __init__(self, app: ASGIApp, evaluator: Evaluator, identity: ClientIdentity | None) -> None:
        self.app = app
        self.evaluator = evaluator
        self.identity = identity

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] != "POST"
            or scope["path"] not in ADMITTED_PATHS
        ):
            await self.app(scope, receive, send)
            return
        place = ExitStack()

        async def releasing_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                # The answer is settled: its place is free before it leaves. (Every answer of
                # the admitted routes is sent from the request's own task, where the place was
                # taken: a response streamed from a task of its own would need another way.)
                place.close()
            await send(message)

        try:
            with place:
                place.enter_context(self.evaluator.admitted(_client_of(scope, self.identity)))
                await self.app(scope, receive, releasing_send)
        except (BusyError, ShuttingDownError) as refusal:  # admission's: the app answers its own
            await _send_refusal(send, refusal)


async def _send_refusal(send: Send, refusal: ServiceError) -> None:
    info = describe(refusal)
    assert info is not None
    status, headers, body = _refusal(info)
    await send({"type": "http.response.start", "status": status, "headers": list(headers)})
    await send({"type": "http.response.body", "body": body})


# --- the body size limit -----------------------------------------------------------------------


class BodyTooLargeError(PayloadTooLargeError):
    def __init__(self, limit: int) -> None:
        super().__init__("body", f"the request body is over the limit of {limit} bytes")


# Past this many bytes of a declared body left unread, an answer given before the body was read
# whole (a refusal) closes the connection: the server would otherwise read the rest, and drop
# it, on the event loop, every chunk through its HTTP parser (hundreds of MB for a large body
# refused with 413, or with 503 while the server is full). A smaller rest is read and the
# connection kept alive; so is a chunked body, whose rest is unknown (its client sees the answer
# while it sends, and stops).
DRAIN_BYTES = 1 << 20


class BodyLimitMiddleware:
    """Refuses a body over ``max_bytes`` with 413 before it is read whole: a Content-Length over
    the limit before the app runs (and before any byte of the body is read), a chunked body as
    soon as the bytes received pass it. An answer that starts while more than ``DRAIN_BYTES``
    of a declared body are still unread closes the connection (``Connection: close``) rather
    than let the server read them; an HTTP client reads that answer after its write fails
    (httpx does, as the evalserve clients)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body = _Unread(Headers(scope=scope))
        closing_send = body.closing(send)
        if body.declared is not None and body.declared > self.max_bytes:
            await _too_large(BodyTooLargeError(self.max_bytes))(scope, receive, closing_send)
            return
        response_started = False

        async def counting_receive() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                body.add(message)
                if body.received > self.max_bytes:
                    raise BodyTooLargeError(self.max_bytes)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal response_started
            response_started = response_started or message["type"] == "http.response.start"
            await closing_send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except BodyTooLargeError as error:
            # Normally the app's error handler has answered already; this is the fallback.
            if response_started:
                raise
            await _too_large(error)(scope, receive, closing_send)


class _Unread:
    """What is left to read of a request's body: its declared length (None without one), the
    bytes received, and whether its last part came."""

    def __init__(self, headers: Headers) -> None:
        declared = headers.get("content-length", "")
        self.declared = int(declared) if declared.isdigit() else None
        self.received = 0
        self.complete = False

    def add(self, message: Message) -> None:
        self.received += len(message.get("body", b""))
        self.complete = self.complete or not message.get("more_body", False)

    @property
    def left(self) -> int:
        """Declared bytes still to come (0 for a chunked body: unknown)."""
        if self.complete or self.declared is None:
            return 0
        return max(0, self.declared - self.received)

    def closing(self, send: Send) -> Send:
        """``send``, asking to close the connection after an answer that starts with more
        than ``DRAIN_BYTES`` of the body unread."""

        async def closing_send(message: Message) -> None:
            if message["type"] == "http.response.start" and self.left > DRAIN_BYTES:
                message = closing(message)
            await send(message)

        return closing_send


def _too_large(error: BodyTooLargeError) -> Response:
    return _error_response(413, "too_large", error.field, error.message)


class InternalErrorMiddleware:
    """Anything unexpected: logged once, a generic 500 in the error shape, and the connection
    kept open. (Starlette's own handler for ``Exception`` re-raises to the server, which then
    logs a second time and drops the keep-alive connection.)"""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        response_started = False

        async def tracking_send(message: Message) -> None:
            nonlocal response_started
            response_started = response_started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:
            if response_started:
                raise
            _log_internal(scope["method"], scope["path"], exc)
            await _internal_response()(scope, receive, send)


# The API's routes and their ``method`` label (the gRPC method, in snake case).
METRIC_METHODS = {
    "/v1/evaluate": "evaluate",
    "/v1/evaluate/stream": "evaluate_stream",
    "/v1/metrics": "list_metrics",
}


class RequestMetricsMiddleware:
    """Counts each answer of the API routes by its HTTP status, and times it. The outermost
    middleware, so it sees the status every other layer settled on (413 of the body limit, 500
    of the internal-error fallback). Health, readiness, ``/metrics`` and the docs are not
    counted."""

    def __init__(self, app: ASGIApp, metrics: ServiceMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = METRIC_METHODS.get(scope["path"]) if scope["type"] == "http" else None
        if method is None:
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500  # unless a response starts: an error escaped every handler

        async def status_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, status_send)
        finally:
            self.metrics.answered("rest", method, str(status), time.perf_counter() - start)


def _log_internal(method: str, path: str, exc: Exception) -> None:
    logger.error("unexpected error on %s %s", method, path, exc_info=exc)


def _internal_response() -> Response:
    return _error_response(500, "internal", "", "internal error; the request was not evaluated")


# --- error handlers ---------------------------------------------------------------------------


async def _service_error(request: Request, exc: Exception) -> Response:
    info = describe(exc)
    if info is None:
        return await _internal_error(request, exc)
    return _described_response(info)


def _described_response(info: ErrorInfo) -> Response:
    response = _error_response(info.http_status, info.code, info.field, info.message)
    if info.retry_after is not None:
        response.headers["retry-after"] = f"{info.retry_after:g}"
    return response


@functools.lru_cache(maxsize=16)
def _refusal(info: ErrorInfo) -> tuple[int, tuple[tuple[bytes, bytes], ...], bytes]:
    """The status, headers and body of a refusal, built once per kind: busy, client busy,
    shutting down (each a fixed message and Retry-After while the server runs); the
    memory-busy message tells sizes, which vary: the oldest drop out."""
    response = _described_response(info)
    return response.status_code, tuple(response.raw_headers), bytes(response.body)


async def _internal_error(request: Request, exc: Exception) -> Response:
    _log_internal(request.method, request.url.path, exc)
    return _internal_response()


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code, field = {404: ("not_found", "path"), 405: ("method_not_allowed", "method")}.get(
        exc.status_code, ("http_error", "")
    )
    response = _error_response(exc.status_code, code, field, str(exc.detail))
    response.headers.update(exc.headers or {})
    return response


async def _validation_error(request: Request, exc: Exception) -> Response:
    # Unreachable by design (no route declares a parsed parameter); kept so that no FastAPI
    # error shape can leak if one ever does.
    assert isinstance(exc, RequestValidationError)
    first = exc.errors()[0] if exc.errors() else {}
    field = ".".join(str(part) for part in first.get("loc", ()))
    return _error_response(400, "malformed", field, str(first.get("msg", "invalid request")))


async def _client_disconnect(request: Request, exc: Exception) -> Response:
    logger.info("client left during %s %s", request.method, request.url.path)
    return Response(status_code=400)  # nobody is listening


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
        # The catalog never changes: every answer is serialized once (None: every task).
        self.catalogs = {
            task: orjson.dumps(encode.catalog_to_json(task)) for task in (None, *TASKS)
        }

    async def evaluate(self, request: Request) -> Response:
        media_type = _media_type(request.headers, "content-type")
        decode: Decoder
        if media_type in PROTOBUF_TYPES:
            decode = _decode_protobuf
        elif _is_json(media_type):
            decode = _decode_json
        else:
            raise UnsupportedMediaTypeError(
                "content-type", f"expected {JSON} or {PROTOBUF}, but got {media_type!r}"
            )
        answer = _answer_format(
            request.headers, default="protobuf" if decode is _decode_protobuf else "json"
        )
        # Admitted, and its memory reserved, before the body is read (AdmissionMiddleware).
        reservation = current_reservation()
        timeout = self.settings.request_read_timeout_seconds
        body = await _read_body(request, timeout, reservation)
        if await request.is_disconnected():  # nobody waits: the core call never starts
            raise ClientDisconnect()
        content = await _unless_gone(
            request,
            self.evaluator.run(
                _evaluate_body, decode, body, self.settings, answer,
                self.evaluate_observer, reservation,
            ),
        )  # fmt: skip
        return Response(content, media_type=MEDIA_TYPES[answer])

    async def evaluate_stream(self, request: Request) -> Response:
        media_type = _media_type(request.headers, "content-type")
        if media_type not in NDJSON_TYPES and media_type != "":
            raise UnsupportedMediaTypeError(
                "content-type", f"expected {NDJSON}, but got {media_type!r}"
            )
        answer = _answer_format(request.headers, default="json")
        # admitted before the first line is read (AdmissionMiddleware)
        stream = _NdjsonStream(self.settings, self.stream_observer, current_reservation())
        body_read = asyncio.Event()
        # A client that leaves stops the stream at its next batch, also when its whole body
        # has arrived and the batches in it are still being merged.
        content = await _unless_gone(
            request, self._merge_stream(request, stream, answer, body_read), body_read
        )
        return Response(content, media_type=MEDIA_TYPES[answer])

    async def _merge_stream(
        self, request: Request, stream: _NdjsonStream, answer: Answer, body_read: asyncio.Event
    ) -> bytes:
        """Merge the stream's lines as they arrive, then its answer; ``body_read`` is set once
        the body has arrived whole."""
        idle = self.settings.stream_idle_timeout_seconds
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(idle) as waiting:
                async for number, line in _lines(_body(request, body_read), stream.buffered):
                    if _blank(line):  # skipped on the loop: no thread hop, no idle reset
                        continue
                    waiting.reschedule(None)  # a batch's own work is not idle time
                    await self.evaluator.run(stream.feed, number, line)
                    waiting.reschedule(loop.time() + idle)
        except TimeoutError:
            raise _idle_error(idle, stream) from None
        return await self.evaluator.run(stream.finish, answer)

    async def metric_catalog(self, request: Request) -> Response:
        task = catalog_task_from_query(request.query_params.multi_items())
        body = self.catalogs.get(task)
        if body is None:  # not a task: the core refuses it, naming the field
            body = orjson.dumps(encode.catalog_to_json(task))
        return Response(body, media_type=JSON)

    async def healthz(self) -> Response:
        return _json_response({"status": "ok"})

    async def readyz(self) -> Response:
        if self.readiness.ready:
            return _json_response({"status": "ready"})
        return _json_response({"status": "not ready"}, 503)

    async def prometheus(self) -> Response:
        latest = prometheus_client.generate_latest(self.registry)
        return Response(latest, media_type=prometheus_client.CONTENT_TYPE_LATEST)


# --- OpenAPI ----------------------------------------------------------------------------------

_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": rest_models.ErrorBody, "description": description}
    for status, description in (
        (400, "malformed body (bad JSON, protobuf or types, unknown field) or stream protocol"),
        (413, "body, rows, classes or a stream's state over a configured limit"),
        (408, "the body did not arrive in time, or a stream sent no batch for too long"),
        (415, "a Content-Type the endpoint does not read"),
        (422, "values that cannot be evaluated (lengths, NaN, labels, weights, options)"),
        (500, "internal error"),
        (
            503,
            "busy (max_inflight_requests or max_inflight_per_client evaluations in flight) or "
            "shutting down; retry after Retry-After s",
        ),
    )
}
_PROTOBUF_BODY = {"schema": {"type": "string", "format": "binary"}}
_CATALOG_DOC: dict[str, Any] = {
    "response_model": rest_models.MetricCatalog,
    "responses": {
        status: {"model": rest_models.ErrorBody, "description": description}
        for status, description in (
            (400, "a query parameter other than `task`"),
            (422, "a task that is not one of the enum, or `task` given twice"),
        )
    },
    "openapi_extra": {
        "parameters": [
            {
                "name": "task",
                "in": "query",
                "required": False,
                "description": "only the metrics of this task (default: every task's); "
                "another value is refused with 422, field `task`",
                "schema": {"type": "string", "enum": list(TASKS)},
            }
        ]
    },
}


def _ref(model: type[Any]) -> dict[str, str]:
    return {"$ref": rest_models.SCHEMA_REF.format(model=model.__name__)}


def _evaluate_doc(message: str, request_content: dict[str, Any]) -> dict[str, Any]:
    return {
        "response_model": None,
        "responses": {
            200: {
                "model": rest_models.EvaluateResponse,
                "description": "the result; protobuf (evalserve.v1.EvaluateResponse) when the "
                "request was protobuf or Accept prefers application/x-protobuf; the HTML "
                "report of the result (one self-contained page: metrics, intervals, charts) "
                "when Accept prefers text/html",
                "content": {
                    PROTOBUF: _PROTOBUF_BODY,
                    HTML: {"schema": {"type": "string", "description": "an HTML page"}},
                },
            },
            **_ERRORS,
        },
        "openapi_extra": {
            "requestBody": {"required": True, "description": message, "content": request_content}
        },
    }


_EVALUATE_DOC = _evaluate_doc(
    "an evalserve.v1.EvaluateRequest, as JSON or as protobuf",
    {JSON: {"schema": _ref(rest_models.EvaluateRequest)}, PROTOBUF: _PROTOBUF_BODY},
)
_STREAM_DOC = _evaluate_doc(
    "NDJSON: the header line first (StreamHeaderLine, with task), then one batch per line "
    "(StreamBatchLine). Errors name the line; `batch k` of the use case is the k-th non-empty "
    "line.",
    {
        NDJSON: {
            "schema": {
                "oneOf": [
                    _ref(rest_models.StreamHeaderLine),
                    _ref(rest_models.StreamBatchLine),
                ]
            }
        }
    },
)


class _App(FastAPI):
    def openapi(self) -> dict[str, Any]:
        if self.openapi_schema is None:
            schema = super().openapi()  # cached in self.openapi_schema, completed here
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            components.update(rest_models.request_schemas())
        assert self.openapi_schema is not None
        return self.openapi_schema


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
) -> FastAPI:
    """The REST app: evaluate, stream, catalog, health, readiness, Prometheus and OpenAPI.

    ``/metrics`` serves ``registry``. ``metrics`` must be registered on it (the server shares
    one between both transports); without it the app registers its own there.
    """
    metrics = metrics or ServiceMetrics(settings, registry)
    app = _App(
        title="evalserve",
        version=_version(),
        description="Stateless model evaluation: exact metrics, curves and intervals. The same "
        "API is served over gRPC (evalserve.v1.EvaluationService).",
    )
    routes = _Routes(settings, evaluator, registry, readiness or Readiness(), metrics)
    app.add_api_route("/v1/evaluate", routes.evaluate, methods=["POST"], **_EVALUATE_DOC)
    app.add_api_route(
        "/v1/evaluate/stream", routes.evaluate_stream, methods=["POST"], **_STREAM_DOC
    )
    app.add_api_route("/v1/metrics", routes.metric_catalog, methods=["GET"], **_CATALOG_DOC)
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
    for kind in (ServiceError, InvalidInputError):
        app.add_exception_handler(kind, _service_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(ClientDisconnect, _client_disconnect)
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_request_bytes)
    app.add_middleware(InternalErrorMiddleware)  # it sees every error of the app
    # before anything else reads the request: a refusal costs little
    app.add_middleware(AdmissionMiddleware, evaluator=evaluator, identity=settings.identity)
    # While the server drains: Connection: close, and a 503's unread body read first (the
    # refusals of admission and its cut-offs at the end of the grace included).
    app.add_middleware(DrainMiddleware, draining=lambda: evaluator.draining)
    app.add_middleware(RequestMetricsMiddleware, metrics=metrics)  # the outermost: every status
    return app
