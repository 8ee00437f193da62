"""The gRPC transport: ``EvaluationService`` on ``grpc.aio``, with health checking and reflection.

A thin adapter over ``service.usecase``: its one-shot pipeline (``evaluate_payload``) and its
stream protocol (``service.streams``), given the protobuf codec (``service.proto_codec``,
``service.encode``), run off the event loop (``Evaluator.run``). Errors leave through one place,
``abort_with_error``, which reads the service's one error table (``service.errors.describe``):
a request error becomes INVALID_ARGUMENT, RESOURCE_EXHAUSTED, UNAVAILABLE, ... with a message
naming the field and a ``google.rpc.BadRequest`` detail (read it with
``grpc_status.rpc_status.from_call``); a refusal that a later retry may pass also carries a
``google.rpc.RetryInfo`` detail and the ``grpc-retry-pushback-ms`` trailer (gRFC A6), and a
final RESOURCE_EXHAUSTED a pushback of -1, so that no retry policy sends it again;
anything else is logged and becomes INTERNAL with a generic message. The same place counts and
times every call by its status code (``service.metrics``); the use case records the model
series.

``create_grpc_server`` returns the server bound but not started, so the caller starts it in its
own event loop next to the REST server, and owns shutdown (set NOT_SERVING on the returned health
servicer, then stop it as ``service.grpc_drain`` says).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any, Final, NoReturn, Protocol, TypeVar

import grpc
import prometheus_client
from google.protobuf import any_pb2, duration_pb2
from google.protobuf.message import DecodeError, Message
from google.rpc import error_details_pb2, status_pb2
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_health.v1.health import aio as health_aio
from grpc_reflection.v1alpha import reflection
from grpc_status import rpc_status

from evalserve.core import TASKS, EvaluationResult, InvalidInputError
from evalserve.service import encode, proto_codec, proto_parse
from evalserve.service.budget import grpc_message_limit, receive_share
from evalserve.service.config import Settings
from evalserve.service.errors import (
    ErrorInfo,
    MalformedRequestError,
    RequestTimeoutError,
    ServiceError,
    ShuttingDownError,
    StreamProtocolError,
    describe,
)
from evalserve.service.evaluator import Evaluator
from evalserve.service.grpc_drain import GrpcDrain
from evalserve.service.identity import ClientIdentity
from evalserve.service.listen import listen_error
from evalserve.service.metrics import ServiceMetrics
from evalserve.service.proto_parse import ProtoColumns
from evalserve.service.records import Batch, Header, Request
from evalserve.service.streams import StreamMessage, StreamSession
from evalserve.service.usecase import PayloadCodec, evaluate_payload
from evalserve.v1 import evaluation_pb2 as pb

__all__ = [
    "CONNECTION_OPTIONS",
    "SERVICE_NAME",
    "EvaluationServicer",
    "HealthServicer",
    "abort_with_error",
    "create_grpc_server",
]

logger = logging.getLogger(__name__)

SERVICE_NAME: Final = pb.DESCRIPTOR.services_by_name["EvaluationService"].full_name


class HealthServicer(Protocol):
    """What a caller uses of grpc_health's asyncio ``HealthServicer``: ``set`` a service's
    status, or turn everything NOT_SERVING for good."""

    async def set(self, service: str, status: int) -> None: ...

    async def enter_graceful_shutdown(self) -> None: ...


# Connection management. Clients may ping every 10 s (the default floor is 5 min, and a client
# that pings more often gets GOAWAY after 2 strikes); the server pings idle connections each
# minute to drop dead peers. Connections are closed after ~5 min (gRPC adds ±10 % jitter) so
# clients re-resolve and rebalance across replicas; in-flight calls, long streams included, get
# 10 min to finish on the old connection.
CONNECTION_OPTIONS: Final[tuple[tuple[str, int], ...]] = (
    ("grpc.keepalive_time_ms", 60_000),
    ("grpc.keepalive_timeout_ms", 20_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.min_recv_ping_interval_without_data_ms", 10_000),
    ("grpc.http2.max_ping_strikes", 2),
    ("grpc.max_connection_idle_ms", 15 * 60_000),
    ("grpc.max_connection_age_ms", 5 * 60_000),
    ("grpc.max_connection_age_grace_ms", 10 * 60_000),
    # A port held by another process is an error, not a silently shared port.
    ("grpc.so_reuseport", 0),
)

Context = grpc.aio.ServicerContext[Any, Any]
_Servicer = TypeVar("_Servicer", bound="EvaluationServicer")
_Request = TypeVar("_Request")
_Response = TypeVar("_Response")

_INTERNAL_MESSAGE = "internal error; the server logged it"
# gRFC A6's server pushback: milliseconds a client's retry policy waits before its next
# attempt; a negative value tells it not to retry.
PUSHBACK: Final = "grpc-retry-pushback-ms"


def status_of(error: Exception) -> grpc.StatusCode:
    """The status ``abort_with_error`` ends a call with for ``error``."""
    return _status(describe(error, protobuf=True))


def _status(info: ErrorInfo | None) -> grpc.StatusCode:
    return grpc.StatusCode.INTERNAL if info is None else info.grpc_status


async def abort_with_error(context: Context, error: Exception) -> NoReturn:
    """End the call with the status ``error`` maps to in ``service.errors``; never returns."""
    await _abort(context, error, describe(error, protobuf=True))


async def _abort(context: Context, error: Exception, info: ErrorInfo | None) -> NoReturn:
    """``abort_with_error`` with ``error`` described already. A refusal that a retry may pass
    (busy, shutting down: a fixed message and retry hint per kind) ends with a status built
    once, not per call: it is answered while the server is saturated."""
    if info is None:
        logger.exception("unexpected error in a gRPC call", exc_info=error)
        await context.abort(grpc.StatusCode.INTERNAL, _INTERNAL_MESSAGE)
    if info.retry_after is not None:
        await context.abort(*_refusal_status(info))
    await context.abort(*_error_status(info))


Trailers = tuple[tuple[str, str | bytes], ...]


def _error_status(info: ErrorInfo) -> tuple[grpc.StatusCode, str, Trailers]:
    """What ``context.abort`` takes to end a call with ``info``: the code, the message, and
    the trailers that carry the ``google.rpc.Status`` and the pushback."""
    violation = error_details_pb2.BadRequest.FieldViolation(
        field=info.field, description=info.message
    )
    details = [_packed(error_details_pb2.BadRequest(field_violations=[violation]))]
    trailers: list[tuple[str, str]] = []
    if info.retry_after is not None:
        delay = duration_pb2.Duration()
        delay.FromMilliseconds(round(1000 * info.retry_after))
        details.append(_packed(error_details_pb2.RetryInfo(retry_delay=delay)))
        trailers.append((PUSHBACK, str(round(1000 * info.retry_after))))
    elif info.grpc_status is grpc.StatusCode.RESOURCE_EXHAUSTED:
        trailers.append((PUSHBACK, "-1"))  # final: a retry policy must not send it again
    status = status_pb2.Status(
        code=info.grpc_status.value[0],
        message=f"{info.field}: {info.message}",
        details=details,
    )
    grpc_status = rpc_status.to_status(status)
    return grpc_status.code, grpc_status.details, (*grpc_status.trailing_metadata, *trailers)


# A few kinds of refusal, each with its fixed message (the limits do not change while the
# server runs); the memory-busy message tells sizes, which vary: the oldest drop out.
_refusal_status = functools.lru_cache(maxsize=16)(_error_status)


def _packed(message: Message) -> any_pb2.Any:
    detail = any_pb2.Any()
    detail.Pack(message)
    return detail


def _reported(
    name: str,
) -> Callable[
    [Callable[[_Servicer, _Request, Context], Awaitable[_Response]]],
    Callable[[_Servicer, _Request, Context], Coroutine[Any, Any, _Response]],
]:
    """Route every exception of a servicer method through ``abort_with_error``, and count the
    call with its status code (``name``: the ``method`` label); the server's drain hears of
    the call's start and end and may hold a refusal (``service.grpc_drain``)."""

    def decorate(
        method: Callable[[_Servicer, _Request, Context], Awaitable[_Response]],
    ) -> Callable[[_Servicer, _Request, Context], Coroutine[Any, Any, _Response]]:
        @functools.wraps(method)
        async def reported(self: _Servicer, request: _Request, context: Context) -> _Response:
            start = time.perf_counter()
            self.drain.touch()
            code: grpc.StatusCode | None = grpc.StatusCode.OK
            try:
                return await method(self, request, context)
            except grpc.aio.AbortError:
                code = context.code() or grpc.StatusCode.UNKNOWN
                raise
            except asyncio.CancelledError:  # the client cancelled, or its deadline passed
                code = grpc.StatusCode.CANCELLED
                raise
            except Exception as error:
                if isinstance(error, ShuttingDownError):
                    await self.drain.refusal()
                info = describe(error, protobuf=True)
                # Counted before the abort: the status leaves with it, and a client that has its
                # answer must find it counted (afterwards, a scrape could race the count).
                self.metrics.answered("grpc", name, _status(info).name, _since(start))
                code = None
                if info is not None:
                    # A request's own error is answered, never logged: its traceback would
                    # only keep the call's frames, and their message and arrays, alive for
                    # as long as gRPC keeps the error.
                    error.__traceback__ = None
                await _abort(context, error, info)
            finally:
                self.drain.touch()
                if code is not None:
                    self.metrics.answered("grpc", name, code.name, _since(start))

        return reported

    return decorate


def _client_of(context: Context, identity: ClientIdentity | None) -> str | None:
    """Who the call's client is for ``max_inflight_per_client`` (None: ``client_identity`` is
    off): the metadata key ``identity`` names when the call carries it (the last one, if
    repeated: its rightmost entry), else the peer's address."""
    if identity is None:
        return None
    forwarded = None
    if identity.header is not None:
        for key, value in context.invocation_metadata() or ():
            if key == identity.header and isinstance(value, str):
                forwarded = value
    return identity.of(forwarded, _peer_address(context))


def _peer_address(context: Context) -> str | None:
    """The peer's address as the REST transport sees it (``ipv4:10.0.0.7:52144`` -> ``10.0.0.7``,
    ``ipv6:[::1]:52144`` -> ``::1``)."""
    peer = urllib.parse.unquote(context.peer() or "")
    kind, _, address = peer.partition(":")
    if kind not in ("ipv4", "ipv6"):
        return peer or None  # unix sockets and the like: the whole peer
    return address.rsplit(":", 1)[0].strip("[]")


def _since(start: float) -> float:
    return time.perf_counter() - start


_M = TypeVar("_M", bound=Message)


def _parsed(message_type: type[_M], data: bytes | bytearray, where: str) -> tuple[_M, ProtoColumns]:
    """``data`` as a ``message_type`` (its large columns decoded apart from it, a slice at a
    time: ``service.proto_parse``); a malformed ``body`` error (gRPC itself would answer
    UNKNOWN) when it is not one."""
    try:
        return proto_parse.parse(message_type, data)
    except DecodeError as error:
        raise MalformedRequestError(
            "body", f"{where} is not a valid evalserve.v1 protobuf message ({error})"
        ) from None


def _decode_request(data: bytes | bytearray, settings: Settings) -> Request:
    message, columns = _parsed(pb.EvaluateRequest, data, "the request")
    return proto_codec.request_from_proto(message, settings, columns)  # arrays are copies


def _encode_response(settings: Settings) -> Callable[[EvaluationResult, Header], bytes]:
    def encoded(result: EvaluationResult, header: Header) -> bytes:
        return encode.checked_response(result, settings).SerializeToString()

    return encoded


class _MessagePlaces:
    """How the errors of a gRPC stream name its places: message k (batch k: every message is
    one), the header by its field."""

    def place(self, position: int) -> str:
        return f"message {position}"

    def no_header(self, position: int) -> StreamProtocolError:
        return StreamProtocolError(
            "header", "expected the header in message 1, but message 1 has none"
        )

    def second_header(self, position: int, header_position: int) -> StreamProtocolError:
        return StreamProtocolError(
            "header", f"header twice: message {position} carries a header; only message 1 may"
        )

    def empty(self) -> StreamProtocolError:
        return StreamProtocolError(
            "header", "the stream is empty; expected the header in message 1"
        )

    def located(
        self, error: ServiceError | InvalidInputError, position: int, batch: str
    ) -> Exception:
        return error  # named where they arise: the header's fields, its batch's ``batch k``


def _stream_message(
    settings: Settings, position: int
) -> Callable[[bytes | bytearray], StreamMessage]:
    def read(data: bytes | bytearray) -> StreamMessage:
        message, columns = _parsed(pb.EvaluateStreamRequest, data, f"message {position}")

        def decoded() -> tuple[Header | None, Batch]:
            header = None
            if message.HasField("header"):
                header = proto_codec.stream_header_from_proto(
                    message.header, settings, columns.part("header")
                )
            try:
                batch = proto_codec.stream_batch_from_proto(message, settings, columns)
            except (ServiceError, InvalidInputError) as error:  # as the accumulator names them
                raise type(error)(f"batch {position}.{error.field}", error.message) from None
            return header, batch

        return StreamMessage(message.HasField("header"), decoded)

    return read


def _add_servicer(servicer: EvaluationServicer, server: grpc.aio.Server) -> None:
    """Register the service. ``Evaluate`` is served as a client stream of one message (the
    same on the wire): its handler runs before the message is received, so admission refuses
    a call before its bytes are read, and the message reaches the handler as bytes, parsed on
    a worker thread rather than on the event loop. ``EvaluateStream``'s messages come as
    bytes too."""
    handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {
        "Evaluate": grpc.stream_unary_rpc_method_handler(servicer.Evaluate),
        "EvaluateStream": grpc.stream_unary_rpc_method_handler(servicer.EvaluateStream),
        "ListMetrics": grpc.unary_unary_rpc_method_handler(servicer.ListMetrics),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME, handlers),))


async def _next_message(context: Context, timeout: float, what: str) -> bytes | None:
    """The call's next message, None at its end, or ``RequestTimeoutError`` when none arrives
    within ``timeout`` (``what`` says which wait it was). Read with ``context.read`` rather
    than the request iterator: grpc's iterator keeps the last message it gave alive for as
    long as gRPC keeps the call's state, after the call has ended."""
    try:
        async with asyncio.timeout(timeout):
            message = await context.read()
    except TimeoutError:
        raise RequestTimeoutError("body", what) from None
    return None if message is grpc.aio.EOF else message


class EvaluationServicer:
    """``evalserve.v1.EvaluationService``: admit, then decode, evaluate and encode off the
    loop. Requests arrive as bytes (see ``_add_servicer``)."""

    def __init__(
        self,
        settings: Settings,
        evaluator: Evaluator,
        metrics: ServiceMetrics,
        drain: GrpcDrain | None = None,
    ) -> None:
        self._settings = settings
        self.drain = drain or GrpcDrain()
        self._evaluator = evaluator
        self._identity = settings.identity
        self.metrics = metrics
        self._evaluate_observer = metrics.observer("grpc", "evaluate")
        self._encode = _encode_response(settings)
        self._codec = PayloadCodec("protobuf", _decode_request, self._encode)
        # A call's message arrives whole before its size is known: each call reserves this
        # share of the budget before it is received (gRPC refuses larger messages).
        self._receive_allowance = receive_share(evaluator.budget.total, evaluator.max_inflight)
        self._stream_observer = metrics.observer("grpc", "evaluate_stream")
        # The catalog never changes: each answer is serialized once (None: every task).
        self._catalogs = {
            task: encode.catalog_to_proto(task).SerializeToString() for task in (None, *TASKS)
        }

    @_reported("evaluate")
    async def Evaluate(  # noqa: N802 (the proto's name)
        self,
        messages: AsyncIterator[bytes],
        context: Context,  # read with context.read
    ) -> bytes:
        # Admitted, and memory for a message reserved, before the message is received.
        with self._evaluator.admitted(_client_of(context, self._identity)) as reservation:
            reservation.resize(self._receive_allowance)
            timeout = self._settings.request_read_timeout_seconds
            data = await _next_message(
                context,
                timeout,
                f"the request did not arrive within {timeout:g} s (request_read_timeout_seconds)",
            )
            if data is None:
                raise MalformedRequestError("body", "the call carried no request message")
            return await self._evaluator.run(
                evaluate_payload, data, self._codec, self._settings, self._evaluate_observer,
                reservation,
            )  # fmt: skip

    @_reported("evaluate_stream")
    async def EvaluateStream(  # noqa: N802 (the proto's name)
        self,
        messages: AsyncIterator[bytes],
        context: Context,  # read with context.read
    ) -> bytes:
        # Admitted before the first message is read; each message reserves as it comes.
        with self._evaluator.admitted(_client_of(context, self._identity)) as reservation:
            reservation.resize(self._receive_allowance)
            stream = StreamSession(
                self._settings, self._stream_observer, reservation, _MessagePlaces(),
                keep=self._receive_allowance,
            )  # fmt: skip
            idle = self._settings.stream_idle_timeout_seconds
            return await self._stream(stream, context, idle)

    async def _stream(self, stream: StreamSession, context: Context, idle: float) -> bytes:
        index = 0
        while True:
            data = await _next_message(
                context,
                idle,
                f"the stream sent no message for {idle:g} s (stream_idle_timeout_seconds) "
                f"after {index} messages; it was not evaluated",
            )
            if data is None:
                return await self._evaluator.run(stream.finish, self._encode)
            index += 1
            read = _stream_message(self._settings, index)
            await self._evaluator.run(stream.feed, index, data, "protobuf", read)

    @_reported("list_metrics")
    async def ListMetrics(  # noqa: N802 (the proto's name)
        self, data: bytes, context: Context
    ) -> bytes:
        request, _ = _parsed(pb.ListMetricsRequest, data, "the request")
        return self._catalogs[proto_codec.catalog_task_from_proto(request)]


async def create_grpc_server(
    settings: Settings,
    evaluator: Evaluator,
    *,
    port: int | None = None,
    metrics: ServiceMetrics | None = None,
    drain: GrpcDrain | None = None,
) -> tuple[grpc.aio.Server, int, HealthServicer]:
    """Build the gRPC server, bound to ``settings.host`` but not started.

    ``port`` overrides ``settings.grpc_port``; 0 picks a free port. ``metrics`` records calls
    and model series (the server shares one with the REST app); without it they go to a
    registry of their own that nobody scrapes. ``drain`` follows the calls, to stop the server
    without cancelling one (``service.grpc_drain``). Returns the server, the port
    it is bound to, and its health servicer (SERVING for the server and the service; set
    NOT_SERVING on it when shutting down). Call it inside the event loop that will run the
    server, then ``await server.start()``.
    """
    options: list[tuple[str, Any]] = [
        # Oversize requests are refused by gRPC itself, before the handler runs; no message
        # is larger than the share of the memory budget its call reserves first.
        (
            "grpc.max_receive_message_length",
            grpc_message_limit(
                settings.max_request_bytes, evaluator.budget.total, evaluator.max_inflight
            ),
        ),
        # Responses are not capped by the request limit but by max_response_bytes (checked
        # as they are encoded): a 1 KiB request limit must not break a 2 KiB response.
        ("grpc.max_send_message_length", -1),
        *CONNECTION_OPTIONS,
    ]
    server = grpc.aio.server(options=options)
    metrics = metrics or ServiceMetrics(settings, prometheus_client.CollectorRegistry())
    _add_servicer(EvaluationServicer(settings, evaluator, metrics, drain), server)

    health_servicer = health_aio.HealthServicer()
    for name in (health.OVERALL_HEALTH, SERVICE_NAME):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)

    reflection.enable_server_reflection(
        (SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), server
    )

    host = f"[{settings.host}]" if ":" in settings.host else settings.host  # IPv6 literal
    chosen = settings.grpc_port if port is None else port
    address = f"{host}:{chosen}"
    try:
        if settings.tls_cert_file is not None and settings.tls_key_file is not None:
            key, chain = settings.tls_key_file.read_bytes(), settings.tls_cert_file.read_bytes()
            credentials = grpc.ssl_server_credentials([(key, chain)])
            bound_port = server.add_secure_port(address, credentials)
        else:
            bound_port = server.add_insecure_port(address)
    except RuntimeError as error:  # grpc raises RuntimeError("Failed to bind to address ...")
        raise listen_error(settings.host, chosen, "gRPC", None) from error
    if bound_port == 0:  # older grpc versions report a failed bind as port 0
        raise listen_error(settings.host, chosen, "gRPC", None)
    return server, bound_port, health_servicer
