"""The one error table of the service: each error kind knows its HTTP status and gRPC code.

The FastAPI exception handler and the gRPC servicer both read ``describe``; neither holds its
own mapping (the pattern of d5h-foss/grpc-interceptor's ``exception_to_status``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import grpc

from evalserve.core import TASKS, InvalidInputError, StateTooLargeError

__all__ = [
    "BusyError",
    "ClientBusyError",
    "ErrorInfo",
    "MalformedRequestError",
    "MemoryBusyError",
    "OverBudgetError",
    "PayloadTooLargeError",
    "RequestTimeoutError",
    "ServiceError",
    "ShuttingDownError",
    "StreamProtocolError",
    "UnsupportedMediaTypeError",
    "describe",
    "in_protobuf_words",
]


class ServiceError(Exception):
    """An error of the request, raised by the shell; ``field`` names what was wrong."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class MalformedRequestError(ServiceError):
    """The body is not valid JSON / protobuf, or a field has the wrong type."""


class PayloadTooLargeError(ServiceError):
    """The body, or the number of rows or classes, is over a configured limit."""


class UnsupportedMediaTypeError(ServiceError):
    """A Content-Type the endpoint does not read."""


class StreamProtocolError(ServiceError):
    """A stream without a header, with a header twice, or with batches of the wrong shape."""


class BusyError(ServiceError):
    """More evaluation requests in flight than ``max_inflight_requests``: retry later."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            "",
            f"the server is busy: {limit} evaluation requests are in flight "
            "(max_inflight_requests); retry later",
        )


class MemoryBusyError(ServiceError):
    """The request's memory does not fit in what is free of ``memory_budget_bytes`` now (it
    would when other requests end): retry later. (``field``, ``message``, as every error here:
    the transports re-locate errors by building them again; ``of`` writes the message.)"""

    @classmethod
    def of(cls, field: str, needed: int, free: int, budget: int) -> MemoryBusyError:
        return cls(
            field,
            f"the server's memory is taken: this needs {_mib(needed)} and {_mib(free)} of the "
            f"{_mib(budget)} budget (memory_budget_bytes) is free now; retry later",
        )


class OverBudgetError(PayloadTooLargeError):
    """The request needs more memory than the whole ``memory_budget_bytes``: it can never be
    evaluated here, so retrying does not help."""

    @classmethod
    def of(cls, field: str, needed: int, budget: int) -> OverBudgetError:
        return cls(
            field,
            f"evaluating it would take {_mib(needed)}, more than the server's whole memory "
            f"budget of {_mib(budget)} (memory_budget_bytes): send fewer rows (a stream of "
            "batches), or raise the budget",
        )


def _mib(size: int) -> str:
    return f"{size / (1 << 20):.1f} MiB"


class RequestTimeoutError(ServiceError):
    """A body that did not arrive within ``request_read_timeout_seconds``, or a stream idle for
    longer than ``stream_idle_timeout_seconds``."""


class ShuttingDownError(ServiceError):
    """The server is shutting down: the request was not (or no longer) evaluated; retry, on
    another replica."""

    def __init__(self) -> None:
        super().__init__(
            "", "the server is shutting down; the request was not evaluated, retry later"
        )


class ClientBusyError(BusyError):
    """One client (as ``client_identity`` knows clients) has ``max_inflight_per_client``
    evaluation requests in flight."""

    def __init__(self, limit: int) -> None:
        ServiceError.__init__(
            self,
            "",
            f"too many requests from this client: {limit} evaluation requests are in flight "
            "(max_inflight_per_client); retry later",
        )


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    http_status: int
    grpc_status: grpc.StatusCode
    code: str
    field: str
    message: str
    # Seconds after which a retry may succeed (HTTP Retry-After, gRPC RetryInfo); None: the
    # same request will be refused again.
    retry_after: float | None = None


# Seconds a refused request should wait before it is sent again (a place or memory frees up
# when a request ends: evaluations take milliseconds to seconds).
RETRY_AFTER_SECONDS = 1.0

# Most specific first: the first matching class wins.
_TABLE: tuple[tuple[type[Exception], int, grpc.StatusCode, str], ...] = (
    (BusyError, 503, grpc.StatusCode.UNAVAILABLE, "unavailable"),
    # Memory, not places: RESOURCE_EXHAUSTED as gRPC says, with a retry hint (RetryInfo); a
    # RESOURCE_EXHAUSTED without one (the 413s below) is final.
    (MemoryBusyError, 503, grpc.StatusCode.RESOURCE_EXHAUSTED, "unavailable"),
    (PayloadTooLargeError, 413, grpc.StatusCode.RESOURCE_EXHAUSTED, "too_large"),
    # A stream's state over max_stream_state_bytes: a limit, though the core raises it.
    (StateTooLargeError, 413, grpc.StatusCode.RESOURCE_EXHAUSTED, "too_large"),
    (UnsupportedMediaTypeError, 415, grpc.StatusCode.INVALID_ARGUMENT, "unsupported_media_type"),
    (StreamProtocolError, 400, grpc.StatusCode.INVALID_ARGUMENT, "stream_protocol"),
    (MalformedRequestError, 400, grpc.StatusCode.INVALID_ARGUMENT, "malformed"),
    (InvalidInputError, 422, grpc.StatusCode.INVALID_ARGUMENT, "invalid_argument"),
    (RequestTimeoutError, 408, grpc.StatusCode.DEADLINE_EXCEEDED, "timeout"),
    (ShuttingDownError, 503, grpc.StatusCode.UNAVAILABLE, "unavailable"),
)


def describe(error: Exception, *, protobuf: bool = False) -> ErrorInfo | None:
    """How to report ``error`` to a client, or None for an unexpected (internal) error.
    ``protobuf``: the request came as protobuf (gRPC, or REST with protobuf), whose enums have
    wire names: the message names tasks as the client wrote them (``in_protobuf_words``)."""
    for kind, http_status, grpc_status, code in _TABLE:
        if isinstance(error, kind):
            assert isinstance(error, (ServiceError, InvalidInputError))
            retry_after = RETRY_AFTER_SECONDS if http_status == 503 else None
            info = ErrorInfo(
                http_status, grpc_status, code, error.field, error.message, retry_after
            )
            return replace(info, message=in_protobuf_words(info.message)) if protobuf else info
    return None


# A task named in a message, quoted as the core and JSON spell it ('binary').
_QUOTED_TASK = re.compile("'(" + "|".join(map(re.escape, TASKS)) + ")'")


def in_protobuf_words(message: str) -> str:
    """``message`` with the tasks it names by their protobuf enum names: ``task 'binary'``
    becomes ``task TASK_BINARY``, the value a protobuf client sets. Only in a message that
    speaks of tasks (a class name that happens to be 'binary' elsewhere keeps its words)."""
    if "task" not in message:
        return message
    return _QUOTED_TASK.sub(lambda match: f"TASK_{match.group(1).upper()}", message)
