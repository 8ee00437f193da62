"""Server refusals as typed exceptions, carrying the server's field and message."""

from __future__ import annotations

__all__ = ["DeadlineExceeded", "EvalserveError", "InvalidArgument", "TooLarge", "Unavailable"]


class EvalserveError(Exception):
    """A call the server (or the transport) refused. ``field`` names the offending request field
    when the server named one; ``code`` is the server's error code (``invalid_argument``,
    ``too_large``, ...) or the transport's status name; ``retry_after`` (s) is the server's
    retry hint (HTTP ``Retry-After``, gRPC ``google.rpc.RetryInfo``) when it sent one."""

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        code: str = "",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.code = code
        self.message = message
        self.retry_after = retry_after


class InvalidArgument(EvalserveError):  # noqa: N818 - named after the status, as gRPC's
    """The request is malformed or invalid (HTTP 400/415/422, gRPC INVALID_ARGUMENT)."""


class TooLarge(EvalserveError):  # noqa: N818
    """Over a configured limit of bytes, rows or classes (HTTP 413, gRPC RESOURCE_EXHAUSTED)."""


class Unavailable(EvalserveError):  # noqa: N818
    """The server could not be reached, is not serving or is busy (HTTP 502/503/504, gRPC
    UNAVAILABLE, or RESOURCE_EXHAUSTED with a retry hint), after every retry."""


class DeadlineExceeded(EvalserveError):  # noqa: N818
    """The call did not finish within its timeout."""
