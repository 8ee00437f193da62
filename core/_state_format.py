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

import ctypes
import json
import struct
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from evalserve.core._errors import InvalidInputError

__all__ = ["FORMAT_VERSION", "MAGIC", "Later", "StateDocument", "Writer", "decode", "encode"]

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


class Writer(Protocol):
    """Writes arrays not built beforehand straight into their places in the bytes."""

    def write(self, out: Sequence[NDArray[np.float64]]) -> None:
        """Fill ``out``: the places of the arrays it writes (1-d, float64 little-endian:
        native on nearly every machine), in the order of their ``Later.index``."""
        ...


@dataclass(frozen=True, slots=True, eq=False)
class Later:
    """A 1-d float64 array of ``size`` entries that ``writer`` writes into the bytes, with the
    other arrays it writes at once (``index``: this one's place among them): a merged state is
    written where its bytes hold it, not built beside them and then copied."""

    size: int
    writer: Writer
    index: int


def _pad(size: int) -> int:
    return -size % 8


def encode(document: StateDocument, later: Mapping[str, Later] | None = None) -> bytes:
    """The bytes of ``document`` (arrays converted to their little-endian form), allocated
    once: a state is as large as its distinct scores, so no array is copied but into them.
    ``later``: arrays their ``Writer`` writes into the bytes; the document's ``arrays`` hold
    a placeholder under each of their names (any array: the names' order is the order of the
    arrays in the bytes)."""
    later = later or {}
    kinds = ["<f8" if name in later else _code(array) for name, array in document.arrays.items()]
    shapes = [
        [later[name].size] if name in later else list(array.shape)
        for name, array in document.arrays.items()
    ]
    table = [[name, kind, shape] for name, kind, shape in zip(document.arrays, kinds, shapes,
                                                             strict=True)]  # fmt: skip
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
    offset = start + _pad(start)
    places = []
    for kind, shape in zip(kinds, shapes, strict=True):
        size = int(np.prod(shape, dtype=np.int64)) * _DTYPES[kind].itemsize
        places.append((offset, size))
        offset += size + _pad(size)
    buffer, data = _buffer(offset + _CHECKSUM.size)
    _PREFIX.pack_into(buffer.data, 0, MAGIC, FORMAT_VERSION, len(head))
    buffer[_PREFIX.size : start] = np.frombuffer(head, dtype=np.uint8)
    buffer[start : start + _pad(start)] = 0
    writers: dict[int, tuple[Writer, dict[int, NDArray[np.float64]]]] = {}
    for (name, array), kind, (at, size) in zip(document.arrays.items(), kinds, places,
                                               strict=True):  # fmt: skip
        place = buffer[at : at + size]
        buffer[at + size : at + size + _pad(size)] = 0
        if name in later:
            entry = later[name]
            out = place.view("<f8")  # native on little-endian machines
            writers.setdefault(id(entry.writer), (entry.writer, {}))[1][entry.index] = out
        else:
            place[:] = np.ascontiguousarray(array, dtype=_DTYPES[kind]).reshape(-1).view(np.uint8)
    for writer, outs in writers.values():
        writer.write([outs[index] for index in sorted(outs)])
    _CHECKSUM.pack_into(buffer.data, offset, zlib.crc32(buffer[:offset].data))
    return buffer.tobytes() if data is None else data


# ``PyBytes_FromStringAndSize(NULL, size)``: new bytes whose contents the C API lets their
# maker write until the object is shared (``PyBytes_AsString``'s documentation). So the bytes
# are written in place, not built beside and copied (CPython; elsewhere: a copy).
try:
    _new_bytes = ctypes.pythonapi.PyBytes_FromStringAndSize
    _new_bytes.restype = ctypes.py_object
    _new_bytes.argtypes = (ctypes.c_void_p, ctypes.c_ssize_t)
    _bytes_data = ctypes.pythonapi.PyBytes_AsString
    _bytes_data.restype = ctypes.c_void_p
    _bytes_data.argtypes = (ctypes.py_object,)
    _IN_PLACE = True
except AttributeError:  # no CPython C API
    _IN_PLACE = False


def _buffer(size: int) -> tuple[NDArray[np.uint8], bytes | None]:
    """A writable array of ``size`` bytes (more than one) and, where the C API allows, the new
    ``bytes`` whose memory it is (filled through the array before they are let go); else
    None, and the array is copied into bytes once written."""
    if not _IN_PLACE:
        return np.empty(size, dtype=np.uint8), None
    data: bytes = _new_bytes(None, size)
    memory = (ctypes.c_uint8 * size).from_address(_bytes_data(data))
    return np.ctypeslib.as_array(memory), data


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
