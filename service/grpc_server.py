"""The gRPC door: ``EvaluationService`` on ``grpc.aio``, with health checking and reflection.

A thin adapter over ``service.usecase``: decode (``service.decode``), evaluate off the event loop
(``Evaluator.run``), encode (``service.encode``). Errors leave through one place,
``abort_with_error``, which reads the service's one error table (``service.errors.describe``):
a request error becomes INVALID_ARGUMENT or RESOURCE_EXHAUSTED with a message naming the field
and a ``google.rpc.BadRequest`` detail (read it with ``grpc_status.rpc_status.from_call``);
anything else is logged and becomes INTERNAL with a generic message. The same place counts and
times every call by its status code (``service.metrics``); the use case records the model
series.

``create_grpc_server`` returns the server bound but not started, so the caller starts it in its
own event loop next to the REST server, and owns shutdown (set NOT_SERVING on the returned health
servicer, then ``await server.stop(grace)``).
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
from google.protobuf import any_pb2
from google.protobuf.message import DecodeError, Message
from google.rpc import error_details_pb2, status_pb2
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_health.v1.health import aio as health_aio
from grpc_reflection.v1alpha import reflection
from grpc_status import rpc_status

from evalserve.core import TASKS, InvalidInputError
from evalserve.service import decode, encode
from evalserve.service.config import Settings
from evalserve.service.errors import (
    MalformedRequestError,
    RequestTimeoutError,
    ServiceError,
    StreamProtocolError,
    describe,
)
from evalserve.service.metrics import ServiceMetrics
from evalserve.service.usecase import Evaluator, StreamAccumulator, evaluate_request
from evalserve.v1 import evaluation_pb2 as pb
from evalserve.v1 import evaluation_pb2_grpc as pb_grpc

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


def status_of(error: Exception) -> grpc.StatusCode:
    """The status ``abort_with_error`` ends a call with for ``error``."""
    info = describe(error)
    return grpc.StatusCode.INTERNAL if info is None else info.grpc_status


async def abort_with_error(context: Context, error: Exception) -> NoReturn:
    """End the call with the status ``error`` maps to in ``service.errors``; never returns."""
    info = describe(error)
    if info is None:
        logger.exception("unexpected error in a gRPC call", exc_info=error)
        await context.abort(grpc.StatusCode.INTERNAL, _INTERNAL_MESSAGE)
    detail = any_pb2.Any()
    detail.Pack(
        error_details_pb2.BadRequest(
            field_violations=[
                error_details_pb2.BadRequest.FieldViolation(
                    field=info.field, description=info.message
                )
            ]
        )
    )
    status = status_pb2.Status(
        code=info.grpc_status.value[0],
        message=f"{info.field}: {info.message}",
        details=[detail],
    )
    await context.abort_with_status(rpc_status.to_status(status))


def _reported(
    name: str,
) -> Callable[
    [Callable[[_Servicer, _Request, Context], Awaitable[_Response]]],
    Callable[[_Servicer, _Request, Context], Coroutine[Any, Any, _Response]],
]:
    """Route every exception of a servicer method through ``abort_with_error``, and count the
    call with its status code (``name``: the ``method`` label)."""

    def decorate(
        method: Callable[[_Servicer, _Request, Context], Awaitable[_Response]],
    ) -> Callable[[_Servicer, _Request, Context], Coroutine[Any, Any, _Response]]:
        @functools.wraps(method)
        async def reported(self: _Servicer, request: _Request, context: Context) -> _Response:
            start = time.perf_counter()
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
                # Counted before the abort: the status leaves with it, and a client that has its
                # answer must find it counted (afterwards, a scrape could race the count).
                self.metrics.answered("grpc", name, status_of(error).name, _since(start))
                code = None
                await abort_with_error(context, error)
            finally:
                if code is not None:
                    self.metrics.answered("grpc", name, code.name, _since(start))

        return reported

    return decorate


def _client_of(context: Context) -> str | None:
    """The peer's address as the REST door sees it (``ipv4:10.0.0.7:52144`` -> ``10.0.0.7``,
    ``ipv6:[::1]:52144`` -> ``::1``), which ``max_inflight_per_client`` counts by over both
    doors."""
    peer = urllib.parse.unquote(context.peer() or "")
    kind, _, address = peer.partition(":")
    if kind not in ("ipv4", "ipv6"):
        return peer or None  # unix sockets and the like: the whole peer
    return address.rsplit(":", 1)[0].strip("[]")


def _since(start: float) -> float:
    return time.perf_counter() - start


def _stream_batch(
    message: pb.EvaluateStreamRequest, index: int, settings: Settings
) -> decode.Batch:
    """Decode the rows of message ``index`` (1-based); errors name the batch, as the
    accumulator's do."""
    try:
        return decode.batch_from_proto(message, settings)
    except (ServiceError, InvalidInputError) as error:
        raise type(error)(f"batch {index}.{error.field}", error.message) from None


_M = TypeVar("_M", bound=Message)


class _Undecodable:
    """What a request that is not a valid protobuf message becomes: the handler reports it as
    a malformed ``body`` through the error table (gRPC itself would answer UNKNOWN)."""

    def __init__(self, error: DecodeError) -> None:
        self.error = error


def _lenient(message_type: type[_M]) -> Callable[[bytes], _M | _Undecodable]:
    def parse(data: bytes) -> _M | _Undecodable:
        try:
            return message_type.FromString(data)
        except DecodeError as error:
            return _Undecodable(error)

    return parse


def _decoded(message: _M | _Undecodable, where: str) -> _M:
    if isinstance(message, _Undecodable):
        raise MalformedRequestError(
            "body", f"{where} is not a valid evalserve.v1 protobuf message ({message.error})"
        )
    return message


def _add_servicer(servicer: EvaluationServicer, server: grpc.aio.Server) -> None:
    """Register the service with lenient request decoding (see ``_Undecodable``)."""
    handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {
        "Evaluate": grpc.unary_unary_rpc_method_handler(
            servicer.Evaluate,
            request_deserializer=_lenient(pb.EvaluateRequest),
            response_serializer=pb.EvaluateResponse.SerializeToString,
        ),
        "EvaluateStream": grpc.stream_unary_rpc_method_handler(
            servicer.EvaluateStream,
            request_deserializer=_lenient(pb.EvaluateStreamRequest),
            response_serializer=pb.EvaluateResponse.SerializeToString,
        ),
        "ListMetrics": grpc.unary_unary_rpc_method_handler(
            servicer.ListMetrics,
            request_deserializer=_lenient(pb.ListMetricsRequest),
            response_serializer=pb.ListMetricsResponse.SerializeToString,
        ),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME, handlers),))


class EvaluationServicer(pb_grpc.EvaluationServiceServicer):
    """``evalserve.v1.EvaluationService``: decode, evaluate off the loop, encode."""

    def __init__(self, settings: Settings, evaluator: Evaluator, metrics: ServiceMetrics) -> None:
        self._settings = settings
        self._evaluator = evaluator
        self.metrics = metrics
        self._evaluate_observer = metrics.observer("grpc", "evaluate")
        self._stream_observer = metrics.observer("grpc", "evaluate_stream")
        # The catalog never changes: each answer is built once (None: every task).
        self._catalogs = {task: encode.catalog_to_proto(task) for task in (None, *TASKS)}

    @_reported("evaluate")
    async def Evaluate(  # noqa: N802 (the proto's name)
        self, request: pb.EvaluateRequest, context: Context
    ) -> pb.EvaluateResponse:
        with self._evaluator.admitted(_client_of(context)):
            message = _decoded(request, "the request")
            evaluate_input = decode.request_from_proto(message, self._settings)
            result = await self._evaluator.run(
                evaluate_request, evaluate_input, self._evaluate_observer
            )
            return encode.checked_response(result, self._settings)

    @_reported("evaluate_stream")
    async def EvaluateStream(  # noqa: N802 (the proto's name)
        self, request_iterator: AsyncIterator[pb.EvaluateStreamRequest], context: Context
    ) -> pb.EvaluateResponse:
        with self._evaluator.admitted(_client_of(context)):  # before the first message is read
            return await self._evaluate_stream(request_iterator)

    async def _evaluate_stream(
        self, request_iterator: AsyncIterator[pb.EvaluateStreamRequest]
    ) -> pb.EvaluateResponse:
        accumulator: StreamAccumulator | None = None
        index = 0
        idle = self._settings.stream_idle_timeout_seconds
        messages = aiter(request_iterator)
        while True:
            try:
                async with asyncio.timeout(idle):
                    received = await anext(messages)
            except StopAsyncIteration:
                break
            except TimeoutError:
                raise RequestTimeoutError(
                    "body",
                    f"the stream sent no message for {idle:g} s (stream_idle_timeout_seconds) "
                    f"after {index} messages; it was not evaluated",
                ) from None
            index += 1
            message = _decoded(received, f"message {index}")
            has_header = message.HasField("header")
            if accumulator is None:
                if not has_header:
                    raise StreamProtocolError(
                        "header", "expected the header in message 1, but message 1 has none"
                    )
                header = decode.header_from_proto(message.header, self._settings)
                accumulator = StreamAccumulator(header, self._settings, self._stream_observer)
            elif has_header:
                raise StreamProtocolError(
                    "header",
                    f"header twice: message {index} carries a header; only message 1 may",
                )
            batch = _stream_batch(message, index, self._settings)
            await self._evaluator.run(accumulator.add, batch)
        if accumulator is None:
            raise StreamProtocolError(
                "header", "the stream is empty; expected the header in message 1"
            )
        result = await self._evaluator.run(accumulator.finish)
        return encode.checked_response(result, self._settings)

    @_reported("list_metrics")
    async def ListMetrics(  # noqa: N802 (the proto's name)
        self, request: pb.ListMetricsRequest, context: Context
    ) -> pb.ListMetricsResponse:
        task = decode.catalog_task_from_proto(_decoded(request, "the request"))
        return self._catalogs[task]


async def create_grpc_server(
    settings: Settings,
    evaluator: Evaluator,
    *,
    port: int | None = None,
    metrics: ServiceMetrics | None = None,
) -> tuple[grpc.aio.Server, int, HealthServicer]:
    """Build the gRPC server, bound to ``settings.host`` but not started.

    ``port`` overrides ``settings.grpc_port``; 0 picks a free port. ``metrics`` records calls
    and model series (the server shares one with the REST app); without it they go to a
    registry of their own that nobody scrapes. Returns the server, the port
    it is bound to, and its health servicer (SERVING for the server and the service; set
    NOT_SERVING on it when shutting down). Call it inside the event loop that will run the
    server, then ``await server.start()``.
    """
    options: list[tuple[str, Any]] = [
        # Oversize requests are refused by gRPC itself, before the handler runs.
        ("grpc.max_receive_message_length", settings.max_request_bytes),
        # Responses are not capped by the request limit but by max_response_bytes (checked
        # as they are encoded): a 1 KiB request limit must not break a 2 KiB response.
        ("grpc.max_send_message_length", -1),
        *CONNECTION_OPTIONS,
    ]
    server = grpc.aio.server(options=options)
    metrics = metrics or ServiceMetrics(settings, prometheus_client.CollectorRegistry())
    _add_servicer(EvaluationServicer(settings, evaluator, metrics), server)

    health_servicer = health_aio.HealthServicer()
    for name in (health.OVERALL_HEALTH, SERVICE_NAME):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)

    reflection.enable_server_reflection(
        (SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), server
    )

    host = f"[{settings.host}]" if ":" in settings.host else settings.host  # IPv6 literal
    address = f"{host}:{settings.grpc_port if port is None else port}"
    try:
        if settings.tls_cert_file is not None and settings.tls_key_file is not None:
            key, chain = settings.tls_key_file.read_bytes(), settings.tls_cert_file.read_bytes()
            credentials = grpc.ssl_server_credentials([(key, chain)])
            bound_port = server.add_secure_port(address, credentials)
        else:
            bound_port = server.add_insecure_port(address)
    except RuntimeError as error:  # grpc raises RuntimeError("Failed to bind to address ...")
        raise OSError(f"gRPC server cannot listen on {address}: {error}") from error
    if bound_port == 0:  # older grpc versions report a failed bind as port 0
        raise OSError(f"gRPC server cannot listen on {address}")
    return server, bound_port, health_servicer
