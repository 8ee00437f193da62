"""The REST app's middleware, outermost first: request metrics (every answer's status), drain
(``service.rest_drain``), admission (a place and a memory reservation before anything reads the
request), the internal-error fallback, and the body size limit."""

from __future__ import annotations

import time
from contextlib import ExitStack

from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from evalserve.service.errors import (
    BusyError,
    PayloadTooLargeError,
    ServiceError,
    ShuttingDownError,
    describe,
)
from evalserve.service.evaluator import Evaluator
from evalserve.service.identity import ClientIdentity
from evalserve.service.metrics import ServiceMetrics
from evalserve.service.rest_drain import closing
from evalserve.service.rest_errors import error_response, internal_response, log_internal, refusal

__all__ = [
    "ADMITTED_PATHS",
    "DRAIN_BYTES",
    "AdmissionMiddleware",
    "BodyLimitMiddleware",
    "BodyTooLargeError",
    "InternalErrorMiddleware",
    "RequestMetricsMiddleware",
]

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
        except (BusyError, ShuttingDownError) as refused:  # admission's: the app answers its own
            await _send_refusal(send, refused)


async def _send_refusal(send: Send, refused: ServiceError) -> None:
    info = describe(refused)
    assert info is not None
    status, headers, body = refusal(info)
    await send({"type": "http.response.start", "status": status, "headers": list(headers)})
    await send({"type": "http.response.body", "body": body})


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
    return error_response(413, "too_large", error.field, error.message)


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
            log_internal(scope["method"], scope["path"], exc)
            await internal_response()(scope, receive, send)


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
