"""The details of a gRPC refusal, decoded with googleapis-common-protos' ``google.rpc`` messages.

The service sends a refusal's ``google.rpc.Status`` in the ``grpc-status-details-bin`` trailer;
its details hold a ``google.rpc.BadRequest`` (the field and what was wrong with it) and may hold
a ``google.rpc.RetryInfo`` (how long to wait before a retry). gRFC A6's
``grpc-retry-pushback-ms`` trailer is read as a retry hint when there is no RetryInfo.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from google.protobuf.message import DecodeError
from google.rpc import error_details_pb2, status_pb2

__all__ = ["Details", "details"]

TRAILER = "grpc-status-details-bin"
PUSHBACK = "grpc-retry-pushback-ms"


@dataclass(frozen=True)
class Details:
    """``violations``: (field, description) of every BadRequest field violation; ``retry_after``
    (s): the server's retry hint, if any."""

    violations: tuple[tuple[str, str], ...] = ()
    retry_after: float | None = None


def _pushback(value: str | bytes) -> float | None:
    text = value.decode("ascii", "replace") if isinstance(value, bytes) else value
    return int(text) / 1000 if text.strip().isdigit() else None


def details(trailers: Iterable[tuple[str, str | bytes]]) -> Details:
    """The details of a call's trailing metadata; empty when there are none or they are not
    readable."""
    violations: list[tuple[str, str]] = []
    retry_after: float | None = None  # RetryInfo's; else the pushback trailer's
    pushback: float | None = None
    for key, value in trailers:
        if key == PUSHBACK:
            pushback = _pushback(value)
        if key != TRAILER or not isinstance(value, bytes):
            continue
        try:
            status = status_pb2.Status.FromString(value)
        except DecodeError:
            continue
        for detail in status.details:
            if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                bad = error_details_pb2.BadRequest()
                detail.Unpack(bad)
                violations += [(v.field, v.description) for v in bad.field_violations]
            elif detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
                info = error_details_pb2.RetryInfo()
                detail.Unpack(info)
                delay = info.retry_delay
                retry_after = max(0.0, delay.seconds + delay.nanos / 1e9)
    return Details(tuple(violations), pushback if retry_after is None else retry_after)
