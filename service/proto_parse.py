"""Large protobuf messages parsed without long holds of the GIL.

upb parses a message in one C call, and a packed field reaches numpy through its repeated
container, one Python float at a time, in another: for the 160 MB ``EvaluateRequest`` of 10M
rows (labels and scores) the parse held the GIL for 0.1-0.3 s and each column's conversion for
0.2 s, on a worker thread, while the event loop (health checks) waited for the GIL.

``parse`` scans the message's fields instead: its columns (``labels``, ``scores``,
``predictions``, ``weights`` as packed doubles or as ``*_f64`` bytes, at the top level and in
the ``baseline``, the ``challenger`` and a stream's ``header``) are copied into float64 arrays a
slice at a time, each slice a short C call, and protobuf parses the rest, which is small (task,
options, model, class names). The result is protobuf's: the same values bit for bit, merged as
protobuf merges a field sent twice (packed values appended, bytes the last one), and for a
malformed message the same ``DecodeError``, which protobuf itself raises (from the message's
fields up to the corrupt one). Unknown fields, which the service never reads, are skipped. A
shape the scan does not take (groups, a column sent unpacked or with another wire type, over
``MAX_FIELDS`` fields) is parsed whole by protobuf, as every message under
``SLICED_PROTO_BYTES`` is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar, cast

import numpy as np
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from numpy.typing import NDArray

from evalserve.service.records import BASELINE_COLUMNS, COLUMNS, Column
from evalserve.v1 import evaluation_pb2 as pb

__all__ = [
    "DOUBLE_SLICE_BYTES",
    "MAX_FIELDS",
    "NO_COLUMNS",
    "SLICED_PROTO_BYTES",
    "ProtoColumns",
    "encode_varint",
    "parse",
]


@dataclass(frozen=True, slots=True)
class ProtoColumns:
    """The columns of a protobuf message that were decoded apart from it
    (``parse``): packed doubles as float64 arrays and ``*_f64`` bytes as
    read-only views, by field name; those of a submessage (``baseline``, ``challenger``, a
    stream's ``header``) by its field name in ``parts``. A field not here is the message's."""

    values: Mapping[str, Column | memoryview] = field(default_factory=dict)
    parts: Mapping[str, ProtoColumns] = field(default_factory=dict)

    def value(self, message: Message, name: str) -> Any:
        """The field ``name`` of ``message``: as decoded here, else the message's own."""
        return self.values[name] if name in self.values else getattr(message, name)

    def part(self, name: str) -> ProtoColumns:
        return self.parts.get(name, NO_COLUMNS)


NO_COLUMNS = ProtoColumns()

# Smaller messages are parsed whole: upb reads 1 MiB in well under a millisecond.
SLICED_PROTO_BYTES: Final = 1 << 20
# Column values are copied this many bytes at a time (a multiple of 8): a fraction of a
# millisecond each, page faults included.
DOUBLE_SLICE_BYTES: Final = 1 << 20
# Fields scanned in Python before the scan gives up (a microsecond each): enough for a
# thousand class names; a message of many small fields (string labels, detection images) is
# protobuf's to parse whole.
MAX_FIELDS: Final = 4096

_M = TypeVar("_M", bound=Message)

_VARINT, _FIXED64, _LENGTH, _START_GROUP, _END_GROUP, _FIXED32 = range(6)
_TAG_BYTES = 5  # a tag is a 32-bit varint
_LENGTH_BYTES = 5  # so is a length
_VARINT_BYTES = 10


@dataclass(frozen=True)
class _Layout:
    """Where a message type's columns are: field numbers of packed doubles and of ``*_f64``
    bytes (with their names), of submessages that hold columns, and of every known field."""

    packed: Mapping[int, str]
    raw: Mapping[int, str]
    parts: Mapping[int, tuple[str, _Layout]]
    known: frozenset[int]


def _layout(
    descriptor: Descriptor, columns: Iterable[str] = (), parts: Mapping[str, _Layout] = {}
) -> _Layout:
    fields = descriptor.fields_by_name
    packed, raw = {}, {}
    for name in columns:
        values, data = fields[name], fields[f"{name}_f64"]
        assert values.type == FieldDescriptor.TYPE_DOUBLE and values.is_repeated, name
        assert data.type == FieldDescriptor.TYPE_BYTES and not data.is_repeated, name
        packed[values.number], raw[data.number] = values.name, data.name
    return _Layout(
        packed,
        raw,
        {fields[name].number: (name, layout) for name, layout in parts.items()},
        frozenset(f.number for f in descriptor.fields),
    )


_BASELINE = _layout(pb.Baseline.DESCRIPTOR, BASELINE_COLUMNS)
_LAYOUTS: Final = {
    pb.EvaluateRequest.DESCRIPTOR.full_name: _layout(
        pb.EvaluateRequest.DESCRIPTOR,
        COLUMNS,
        {"baseline": _BASELINE, "challenger": _layout(pb.Challenger.DESCRIPTOR, ("scores",))},
    ),
    pb.EvaluateStreamRequest.DESCRIPTOR.full_name: _layout(
        pb.EvaluateStreamRequest.DESCRIPTOR,
        COLUMNS,
        {"header": _layout(pb.StreamHeader.DESCRIPTOR, parts={"baseline": _BASELINE})},
    ),
}


def parse(message_type: type[_M], data: bytes | bytearray) -> tuple[_M, ProtoColumns]:
    """``message_type.FromString(data)``, with its large columns decoded apart from it: the
    message without them and the columns (``ProtoColumns``, which the ``*_from_proto``
    functions of ``service.proto_codec`` take). Raises protobuf's ``DecodeError`` as
    ``FromString`` does."""
    layout = _LAYOUTS.get(message_type.DESCRIPTOR.full_name)
    whole = cast(bytes, data)  # protobuf reads any bytes-like object (a body's bytearray)
    if layout is None or len(data) < SLICED_PROTO_BYTES:
        return message_type.FromString(whole), NO_COLUMNS
    view = memoryview(data).cast("B")
    spans = _Spans()
    try:
        rest = _scan(view, 0, len(view), layout, spans, _Count())
    except _UnsureError:
        return message_type.FromString(whole), NO_COLUMNS
    except _CorruptError as corrupt:
        # protobuf meets the same first error in the fields up to the corrupt one
        message_type.FromString(corrupt.prefix)
        return message_type.FromString(whole), NO_COLUMNS  # not reached: raised above
    message = message_type.FromString(bytes(rest))  # the rest's own errors, if any
    return message, spans.decode(view)


class _UnsureError(Exception):
    """A shape the scan leaves to protobuf: the message is parsed whole."""


class _CorruptError(Exception):
    """Malformed wire format. ``prefix``: the message's fields up to the corrupt one, without
    the columns, and enough of that field for protobuf to refuse it as it refuses the whole."""

    def __init__(self, prefix: bytes) -> None:
        super().__init__()
        self.prefix = prefix


@dataclass
class _Count:
    fields: int = 0


@dataclass
class _Spans:
    """The byte ranges of one message's columns (every occurrence in order), and its parts'."""

    packed: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    raw: dict[str, tuple[int, int]] = field(default_factory=dict)
    parts: dict[str, _Spans] = field(default_factory=dict)

    def decode(self, data: memoryview) -> ProtoColumns:
        values: dict[str, Column | memoryview] = {
            name: _doubles(data, ranges) for name, ranges in self.packed.items()
        }
        for name, (start, end) in self.raw.items():
            values[name] = _raw(data, start, end)
        parts = {name: part.decode(data) for name, part in self.parts.items()}
        return ProtoColumns(values, parts)


def _scan(
    data: memoryview, start: int, end: int, layout: _Layout, spans: _Spans, count: _Count
) -> bytearray:
    """The fields of the message ``data[start:end]`` but its columns and unknown fields, as
    protobuf reads them; the columns' ranges go to ``spans``."""
    rest = bytearray()
    position = start
    while position < end:
        count.fields += 1
        if count.fields > MAX_FIELDS:
            raise _UnsureError()
        field_start = position
        try:
            number, kind, tag_end = _tag(data, position, end)
            value_start, position = _skip(data, kind, tag_end, end)
        except _CorruptError:
            raise _CorruptError(bytes(rest) + _excerpt(data, field_start, end)) from None
        tag = data[field_start:tag_end].tobytes()
        if number in layout.packed or number in layout.raw or number in layout.parts:
            if kind != _LENGTH:
                raise _UnsureError()  # sent unpacked, or as another wire type: protobuf's to read
            try:
                rest += _column(data, number, tag, value_start, position, layout, spans, count)
            except _CorruptError as corrupt:
                raise _CorruptError(bytes(rest) + corrupt.prefix) from None
        elif number in layout.known:
            rest += data[field_start:position]
    return rest


def _column(
    data: memoryview,
    number: int,
    tag: bytes,
    start: int,
    end: int,
    layout: _Layout,
    spans: _Spans,
    count: _Count,
) -> bytes:
    """Note the range of the column field ``number`` (tag ``tag``, contents ``data[start:end]``)
    in ``spans``; what it leaves of itself in the message: nothing, or a submessage without
    its columns."""
    if number in layout.packed:
        if (end - start) % 8:  # a double cut short: kept so, on a few bytes
            odd = 8 + (end - start) % 8 if end - start > 8 else end - start
            raise _CorruptError(tag + encode_varint(odd) + data[start : start + odd].tobytes())
        spans.packed.setdefault(layout.packed[number], []).append((start, end))
        return b""
    if number in layout.raw:
        spans.raw[layout.raw[number]] = (start, end)  # a bytes field sent twice: the last
        return b""
    name, part = layout.parts[number]
    try:
        inner = _scan(data, start, end, part, spans.parts.setdefault(name, _Spans()), count)
    except _CorruptError as corrupt:
        raise _CorruptError(tag + encode_varint(len(corrupt.prefix)) + corrupt.prefix) from None
    return tag + encode_varint(len(inner)) + inner


def _tag(data: memoryview, position: int, end: int) -> tuple[int, int, int]:
    """The field number and wire type of the tag at ``position``, and where its value starts."""
    tag, position = _varint(data, position, end, _TAG_BYTES)
    number, kind = tag >> 3, tag & 7
    if number == 0 or tag >> 32 or kind in (_END_GROUP, 6, 7):
        raise _CorruptError(b"")
    if kind == _START_GROUP:
        raise _UnsureError()
    return number, kind, position


def _skip(data: memoryview, kind: int, position: int, end: int) -> tuple[int, int]:
    """Where the value of wire type ``kind`` at ``position`` starts (its contents, after a
    length) and where it ends."""
    if kind == _VARINT:
        return position, _varint(data, position, end, _VARINT_BYTES)[1]
    if kind == _LENGTH:
        length, position = _varint(data, position, end, _LENGTH_BYTES)
        stop = position + length
    else:
        stop = position + (8 if kind == _FIXED64 else 4)
    if stop > end:
        raise _CorruptError(b"")
    return position, stop


def _varint(data: memoryview, position: int, end: int, most: int) -> tuple[int, int]:
    value = shift = 0
    for at in range(position, min(end, position + most)):
        byte = data[at]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at + 1
        shift += 7
    raise _CorruptError(b"")  # past the end, or longer than ``most`` bytes


def encode_varint(value: int) -> bytes:
    """``value`` as a protobuf varint."""
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


# What protobuf needs of a corrupt field to refuse it as it is: its tag, its length or
# varint, and a few bytes (a length past the message's end stays past it).
_EXCERPT_BYTES = 32


def _excerpt(data: memoryview, start: int, end: int) -> bytes:
    return data[start : min(end, start + _EXCERPT_BYTES)].tobytes()


def _doubles(data: memoryview, ranges: list[tuple[int, int]]) -> NDArray[np.float64]:
    """The little-endian doubles of ``ranges`` of ``data``, one array, copied a slice at a
    time."""
    values = np.empty(sum(end - start for start, end in ranges) // 8, dtype=np.float64)
    at = 0
    for start, end in ranges:
        for piece in range(start, end, DOUBLE_SLICE_BYTES):
            count = (min(end, piece + DOUBLE_SLICE_BYTES) - piece) // 8
            values[at : at + count] = np.frombuffer(data, dtype="<f8", count=count, offset=piece)
            at += count
    return values


def _raw(data: memoryview, start: int, end: int) -> memoryview:
    """A ``*_f64`` field as the bytes ``decode`` reads: a read-only view of its values copied
    into an aligned array (a slice at a time), or of the body when they are not whole doubles
    (``decode`` refuses those by their length)."""
    if (end - start) % 8:
        return data[start:end]
    values = _doubles(data, [(start, end)])
    values.flags.writeable = False
    return values.data.cast("B")
