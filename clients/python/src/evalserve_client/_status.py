"""The field a gRPC refusal names, read from its ``google.rpc.BadRequest`` detail.

The service sends every refusal's field in the ``grpc-status-details-bin`` trailer (a
``google.rpc.Status`` whose details hold a ``google.rpc.BadRequest``). Those messages are not in
protobuf's runtime, and googleapis-common-protos would be one more dependency with protobuf
floors of its own, so the three messages are read with a small reader of protobuf's wire format:
Status.details (3) -> Any.type_url (1) / Any.value (2) -> BadRequest.field_violations (1) ->
FieldViolation.field (1) / description (2).
"""

from __future__ import annotations

from collections.abc import Iterator

__all__ = ["bad_request"]

TRAILER = "grpc-status-details-bin"
BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"
_LENGTH_DELIMITED = 2
_SKIP = {0: -1, 1: 8, 5: 4}  # varint (read), fixed64, fixed32


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def _fields(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(field number, bytes) of every length-delimited field; other wire types are skipped."""
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == _LENGTH_DELIMITED:
            length, at = _varint(data, at)
            if at + length > len(data):
                raise ValueError("truncated field")
            yield number, data[at : at + length]
            at += length
        elif wire in _SKIP:
            at = _varint(data, at)[1] if wire == 0 else at + _SKIP[wire]
        else:
            raise ValueError(f"unsupported wire type {wire}")


def bad_request(status: bytes) -> tuple[str, str] | None:
    """The first (field, description) of the BadRequest detail of a serialized google.rpc.Status,
    or None when it has none (or is not readable)."""
    try:
        for number, detail in _fields(status):
            if number != 3:
                continue
            parts = dict(_fields(detail))
            if parts.get(1, b"").decode() != BAD_REQUEST:
                continue
            for violation_number, violation in _fields(parts.get(2, b"")):
                if violation_number == 1:
                    fields = dict(_fields(violation))
                    return fields.get(1, b"").decode(), fields.get(2, b"").decode()
    except (ValueError, UnicodeDecodeError):
        return None
    return None
