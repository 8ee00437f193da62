"""The one exception type the core raises for bad input.

The service maps it to HTTP 422 / gRPC INVALID_ARGUMENT through its error table; the core itself
knows nothing of transports.
"""

from __future__ import annotations

__all__ = ["InvalidInputError", "StateTooLargeError"]


class InvalidInputError(ValueError):
    """Input that cannot be evaluated. ``field`` names the offending request field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message

    def __reduce__(self) -> tuple[type[InvalidInputError], tuple[str, str]]:
        # Pickled with its two fields (a Dask worker's error reaches the client this way).
        return (type(self), (self.field, self.message))


class StateTooLargeError(InvalidInputError):
    """An accumulated state grew past its cap (``Accumulator(max_state_bytes=...)``): the
    caller should round the scores, split the work, or raise the cap. The service answers it
    as 413 / RESOURCE_EXHAUSTED."""
