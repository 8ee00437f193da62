"""The bytes of a monitor's state: small, versioned, checked; never pickle.

Layout (every integer little-endian)::

    magic      16 bytes  b"EVALSERVE-MONIT\\n"
    version    uint32    FORMAT_VERSION
    head size  uint32    bytes of the UTF-8 JSON head that follows
    head       JSON      the state's fields (``MonitorState``)
    checksum   uint32    CRC-32 of every byte before it

The head holds numbers, short strings and lists of them (Python's JSON writes each float in
its shortest round-trip form, so the state reads back bit for bit). ``decode`` checks the magic,
the version, the checksum and every field's type and range, and raises ``InvalidInputError``
(field ``monitor_state``) for anything else: damaged, foreign or hostile bytes never crash it.
"""

from __future__ import annotations

import json
import math
import struct
import zlib
from dataclasses import asdict, dataclass
from typing import Any

from evalserve.core._errors import InvalidInputError

__all__ = ["FORMAT_VERSION", "MAGIC", "MAX_STATE_BYTES", "MonitorState", "decode", "encode"]

MAGIC = b"EVALSERVE-MONIT\n"
FORMAT_VERSION = 1
FIELD = "monitor_state"
_PREFIX = struct.Struct("<16sII")
_CHECKSUM = struct.Struct("<I")
# A state is a few hundred bytes (32 window ids of up to 128 characters at most ~5 KiB).
MAX_STATE_BYTES = 16 << 10
MAX_RECENT = 32
MAX_WINDOW_CHARS = 128


@dataclass(frozen=True, slots=True)
class MonitorState:
    """What a monitor remembers between windows.

    ``tolerance``, ``arl``, ``threshold`` and ``bound`` say which question it answers (the
    null's AUC boundary ``bound`` = the baseline's lower confidence bound minus the tolerance)
    and are checked against each request's; ``log_detectors`` are the logs of the
    Shiryaev-Roberts statistics, one per effect size of the mixture; ``windows`` counts the
    windows that added evidence; ``recent`` holds the ids of the last ``MAX_RECENT`` windows
    (a window sent again is not counted again); ``last_*`` describe the last window (None when
    it added no evidence).
    """

    tolerance: float
    arl: float
    threshold: float
    bound: float
    log_detectors: tuple[float, ...]
    windows: int = 0
    recent: tuple[str, ...] = ()
    last_evalue: float | None = None
    last_z: float | None = None


def encode(state: MonitorState) -> bytes:
    fields = asdict(state)
    head = json.dumps(fields, allow_nan=False, separators=(",", ":")).encode()
    body = _PREFIX.pack(MAGIC, FORMAT_VERSION, len(head)) + head
    return body + _CHECKSUM.pack(zlib.crc32(body))


def decode(data: bytes) -> MonitorState:
    """The state in ``data``, or ``InvalidInputError`` naming ``monitor_state``."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise InvalidInputError(FIELD, f"expected bytes, but got {type(data).__name__}")
    data = bytes(data)
    if len(data) > MAX_STATE_BYTES:
        raise InvalidInputError(
            FIELD, f"{len(data)} bytes is over the {MAX_STATE_BYTES} bytes a monitor state takes"
        )
    if len(data) < _PREFIX.size + _CHECKSUM.size or data[: len(MAGIC)] != MAGIC:
        raise InvalidInputError(FIELD, "is not an evalserve monitor state (wrong magic bytes)")
    _, version, head_size = _PREFIX.unpack_from(data)
    if version != FORMAT_VERSION:
        raise InvalidInputError(
            FIELD, f"has format version {version}; this server reads version {FORMAT_VERSION}"
        )
    if _PREFIX.size + head_size + _CHECKSUM.size != len(data):
        raise InvalidInputError(FIELD, "is damaged (its length does not match its head)")
    (checksum,) = _CHECKSUM.unpack_from(data, len(data) - _CHECKSUM.size)
    if zlib.crc32(data[: -_CHECKSUM.size]) != checksum:
        raise InvalidInputError(FIELD, "is damaged (checksum mismatch)")
    try:
        fields = json.loads(data[_PREFIX.size : _PREFIX.size + head_size])
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise InvalidInputError(FIELD, "is damaged (its head is not JSON)") from None
    return _checked(fields)


def _checked(fields: Any) -> MonitorState:
    names = set(MonitorState.__dataclass_fields__)
    if not isinstance(fields, dict) or set(fields) != names:
        raise InvalidInputError(FIELD, "is damaged (its fields are not a monitor's)")
    numbers = ("tolerance", "arl", "threshold", "bound")
    if not all(_finite(fields[name]) for name in numbers):
        raise InvalidInputError(FIELD, "is damaged (a parameter is not a finite number)")
    detectors = fields["log_detectors"]
    if not isinstance(detectors, list) or not detectors or not all(map(_finite, detectors)):
        raise InvalidInputError(FIELD, "is damaged (its detectors are not finite numbers)")
    windows, recent = fields["windows"], fields["recent"]
    if isinstance(windows, bool) or not isinstance(windows, int) or windows < 0:
        raise InvalidInputError(FIELD, "is damaged (its window count is not a count)")
    if (
        not isinstance(recent, list)
        or len(recent) > MAX_RECENT
        or not all(isinstance(w, str) and len(w) <= MAX_WINDOW_CHARS for w in recent)
    ):
        raise InvalidInputError(FIELD, "is damaged (its recent windows are not window ids)")
    for name in ("last_evalue", "last_z"):
        if fields[name] is not None and not _finite(fields[name]):
            raise InvalidInputError(FIELD, f"is damaged ({name} is not a finite number)")
    return MonitorState(
        tolerance=float(fields["tolerance"]),
        arl=float(fields["arl"]),
        threshold=float(fields["threshold"]),
        bound=float(fields["bound"]),
        log_detectors=tuple(float(x) for x in detectors),
        windows=windows,
        recent=tuple(recent),
        last_evalue=fields["last_evalue"],
        last_z=fields["last_z"],
    )


def _finite(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
