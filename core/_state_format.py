"""The bytes of an ``Accumulator``: a versioned, self-describing, portable format.

Layout (every integer little-endian)::

    magic      16 bytes  b"EVALSERVE-STATE\\n"
    version    uint32    FORMAT_VERSION
    head size  uint32    bytes of the UTF-8 JSON head that follows
    head       JSON      {"task", "options", "classes", "arrays": [[name, dtype, shape], ...]}
    padding    0-7 zero bytes, so that the first array starts at a multiple of 8
    arrays     each array's bytes (C order), in the head's order, each padded to 8
    checksum   uint32    CRC-32 of every byte before it

``options`` holds every option's value (the accumulator's parsed options), ``classes`` the
class names or null. Array dtypes are ``<f8``, ``<i8`` or ``|b1`` only, so the bytes mean the
same on every machine and Python version; no object is ever unpickled. ``decode`` checks the
magic, the version, the checksum, the head and every size before it reads an array, and raises
``InvalidInputError`` (field ``state``) for anything else: it never crashes on hostile bytes.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalserve.core._errors import InvalidInputError

__all__ = ["FORMAT_VERSION", "MAGIC", "StateDocument", "decode", "encode"]

MAGIC = b"EVALSERVE-STATE\n"
# Version 2 added the regression sample (arrays sample.*); version 1 reads as before, its
# regression states without a sample. Version 3 added the regression state's distinct (label,
# prediction) pairs and cross moment and the detection state's per-image ranks and areas; a
# version 1 or 2 state reads with the metrics they feed null and a reason, and an evalserve that
# reads version 2 at most refuses a version 3 state by its version, not by a missing array.
# Version 4 added an accumulator's segments: the head's "segments" (their names) and each
# segment's arrays under "segments.<i>." (the i-th name); a state without segments reads as
# before.
FORMAT_VERSION = 4
READABLE_VERSIONS = (1, 2, 3, 4)
SEGMENT_PREFIX = "segments."
_PREFIX = struct.Struct("<16sII")
_CHECKSUM = struct.Struct("<I")
_DTYPES = {"<f8": np.dtype("<f8"), "<i8": np.dtype("<i8"), "|b1": np.dtype("|b1")}
_MAX_DIMENSIONS = 4


@dataclass(frozen=True, slots=True)
class StateDocument:
    """What the bytes hold: the task, its options (JSON values), class names and arrays."""

    task: str
    options: dict[str, Any]
    classes: tuple[str, ...] | None
    arrays: dict[str, NDArray[Any]]
    segments: tuple[str, ...] | None = None


def _pad(size: int) -> int:
    return -size % 8


def encode(document: StateDocument) -> bytes:
    """The bytes of ``document`` (arrays converted to their little-endian form), joined once:
    a state is as large as its distinct scores, so its bytes are allocated once and no array
    is copied but into them (on a little-endian machine, the arrays' own memory is read)."""
    kinds = [_code(array) for array in document.arrays.values()]
    table = [
        [name, kind, list(array.shape)]
        for (name, array), kind in zip(document.arrays.items(), kinds, strict=True)
    ]
    fields: dict[str, Any] = {
        "task": document.task,
        "options": document.options,
        "classes": None if document.classes is None else list(document.classes),
        "arrays": table,
    }
    if document.segments is not None:
        fields["segments"] = list(document.segments)
    head = json.dumps(
        fields,
        ensure_ascii=False,
        allow_nan=False,
        separators=(",", ":"),
    ).encode()
    start = _PREFIX.size + len(head)
    parts: list[bytes | memoryview] = [
        _PREFIX.pack(MAGIC, FORMAT_VERSION, len(head)),
        head,
        bytes(_pad(start)),
    ]
    for array, kind in zip(document.arrays.values(), kinds, strict=True):
        data = np.ascontiguousarray(array, dtype=_DTYPES[kind]).reshape(-1).view(np.uint8)
        parts += [data.data, bytes(_pad(data.nbytes))]
    checksum = 0
    for part in parts:
        checksum = zlib.crc32(part, checksum)
    parts.append(_CHECKSUM.pack(checksum))
    return b"".join(parts)


def _code(array: NDArray[Any]) -> str:
    kind = array.dtype.kind
    if kind == "f":
        return "<f8"
    if kind in "iu":
        return "<i8"
    if kind == "b":
        return "|b1"
    raise TypeError(f"a state array of dtype {array.dtype} cannot be written")


def _refuse(message: str) -> InvalidInputError:
    return InvalidInputError("state", message)


def decode(data: bytes | bytearray | memoryview) -> StateDocument:
    """The document in ``data``; ``InvalidInputError`` (field ``state``) for anything that is
    not a whole, intact state of a format version this evalserve reads."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise _refuse(f"expected bytes, but got {type(data).__name__}")
    # A view, not a copy: a state is as large as its distinct scores. Of ``bytes`` (immutable)
    # the arrays are read-only views too, in native byte order; of anything the caller may
    # change later, copies.
    raw = memoryview(data).cast("B")
    share = isinstance(data, bytes)
    if len(raw) < _PREFIX.size + _CHECKSUM.size:
        raise _refuse(f"is {len(raw)} bytes, too short to be an evalserve state")
    magic, version, head_size = _PREFIX.unpack_from(raw)
    if magic != MAGIC:
        raise _refuse("does not start with the evalserve state marker (not a state, or damaged)")
    if version not in READABLE_VERSIONS:
        raise _refuse(
            f"is in format version {version}; this evalserve reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))}"
        )
    body, (checksum,) = raw[: -_CHECKSUM.size], _CHECKSUM.unpack(raw[-_CHECKSUM.size :])
    if zlib.crc32(body) != checksum:
        raise _refuse("failed its checksum: the bytes are damaged or truncated")
    end = _PREFIX.size + head_size
    if end > len(body):
        raise _refuse("has a head longer than the data")
    head = _head(bytes(body[_PREFIX.size : end]))
    offset = end + _pad(end)
    arrays: dict[str, NDArray[Any]] = {}
    for name, kind, shape in head["arrays"]:
        size = int(np.prod(shape, dtype=object)) * _DTYPES[kind].itemsize
        if offset + size > len(body):
            raise _refuse(f"array {name!r} runs past the end of the data")
        array = np.frombuffer(body, dtype=_DTYPES[kind], count=size // _DTYPES[kind].itemsize,
                              offset=offset)  # fmt: skip
        array = array.reshape(shape)
        if share and array.dtype.isnative:
            arrays[name] = array  # read-only, a view of immutable bytes
        else:
            arrays[name] = array.astype(_DTYPES[kind].newbyteorder("="), copy=True)
        offset += size + _pad(size)
    if offset != len(body):
        raise _refuse(f"has {len(body) - offset} bytes after its last array")
    return StateDocument(
        head["task"], head["options"], head["classes"], arrays, head.get("segments")
    )


def _head(text: bytes) -> dict[str, Any]:
    """The parsed head, every field checked for type."""
    try:
        head = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _refuse(f"has a head that is not UTF-8 JSON ({type(exc).__name__})") from None
    keys = {"task", "options", "classes", "arrays"}
    if not isinstance(head, dict) or set(head) - {"segments"} != keys:
        raise _refuse("has a head without exactly task, options, classes and arrays")
    if "segments" in head:
        segments = head["segments"]
        if not isinstance(segments, list) or not all(isinstance(s, str) for s in segments):
            raise _refuse("has a head whose segments are not a list of strings")
        if len(set(segments)) != len(segments):
            raise _refuse("names a segment twice")
        head["segments"] = tuple(segments)
    if not isinstance(head["task"], str) or not isinstance(head["options"], Mapping):
        raise _refuse("has a head whose task is not a string or options not an object")
    classes = head["classes"]
    if classes is not None:
        if not isinstance(classes, list) or not all(isinstance(c, str) for c in classes):
            raise _refuse("has a head whose classes are not a list of strings")
        head["classes"] = tuple(classes)
    table = head["arrays"]
    if not isinstance(table, list):
        raise _refuse("has a head whose arrays are not a list")
    names = set()
    for entry in table:
        if not (
            isinstance(entry, list)
            and len(entry) == 3
            and isinstance(entry[0], str)
            and entry[1] in _DTYPES
            and isinstance(entry[2], list)
            and len(entry[2]) <= _MAX_DIMENSIONS
            and all(type(n) is int and n >= 0 for n in entry[2])
        ):
            raise _refuse(f"has a malformed array entry in its head: {str(entry)[:80]}")
        if entry[0] in names:
            raise _refuse(f"names array {entry[0]!r} twice")
        names.add(entry[0])
    return head
