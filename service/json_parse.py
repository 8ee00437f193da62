"""JSON request bodies parsed fast: large flat numeric columns straight to float64 arrays.

``parse_json`` gives the document the JSON codec (``service.json_codec``) decodes; a body of big
flat columns is read by simdjson into float64 buffers, a slice at a time, so neither the
Python objects of a million floats nor one long C call that holds the GIL (and with it the
event loop's health checks) are needed. Anything else goes through orjson.
"""

from __future__ import annotations

import re
import threading
from typing import Any

import numpy as np
import orjson
import simdjson

from evalserve.service.errors import MalformedRequestError
from evalserve.service.records import COLUMNS, Column

__all__ = ["FAST_JSON_BYTES", "parse_json"]


# Above this size a JSON body's flat numeric columns are read by simdjson straight into float64
# buffers: about 4x faster than building a list of Python floats and converting it.
FAST_JSON_BYTES = 1 << 20
# A simdjson parser keeps its buffers (a few times the largest document it has read) for the
# next document, which halves the parse time of a 20 MB body (no fresh pages to fault in). Each
# worker thread keeps one for bodies up to this size; larger ones get a parser of their own,
# freed with the request, so an occasional huge body does not pin its memory.
REUSED_PARSER_BYTES = 64 << 20
_parsers = threading.local()


def _parser(size: int) -> simdjson.Parser:
    if size > REUSED_PARSER_BYTES:
        return simdjson.Parser()
    parser: simdjson.Parser | None = getattr(_parsers, "parser", None)
    if parser is None:
        parser = _parsers.parser = simdjson.Parser()
    return parser


def parse_json(body: bytes | bytearray) -> Any:
    """The JSON document of a request body; large flat numeric columns come as float64 arrays.

    Anything the fast paths do not take (strings, booleans, nested arrays, invalid JSON) goes
    through orjson, whose result the checks above report on exactly as before.
    """
    if len(body) >= FAST_JSON_BYTES:
        document = _parse_columns_sliced(body)
        if document is None:
            document = _parse_columns_fast(body)
        if document is not None:
            return document
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise _not_json(body, error) from None


# Python's json.dumps writes these for float("nan") and float("inf"); JSON has none of them.
_NOT_JSON_NUMBERS = ("NaN", "-Infinity", "Infinity")
# A string (with a colon after it: a key), or a bracket or comma: enough of JSON to tell where
# in the document a value sits.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"\s*:?|[\[\]{},]')
# The path of a non-JSON number is looked for in bodies up to this size before it (beyond, the
# message says what came and where, without the field).
PATH_SEARCH_CHARS = 1 << 20


def _not_json(body: bytes | bytearray, error: orjson.JSONDecodeError) -> MalformedRequestError:
    """The error of a body that is not JSON; a NaN or Infinity literal (what Python's
    json.dumps writes) is named as such, with the field and row it sits in."""
    position = error.pos
    text = bytes(body[: 4 * position + 16]).decode("utf-8", errors="replace")
    if text.startswith("-Infinity", position - 1):  # orjson stops after the sign
        position -= 1
    literal = next((word for word in _NOT_JSON_NUMBERS if text.startswith(word, position)), None)
    if literal is None:
        return MalformedRequestError("body", f"is not valid JSON: {error}")
    advice = (
        f"is {literal}, which JSON does not have (Python's json.dumps writes it; orjson and "
        "JSON.stringify write null): send finite numbers"
    )
    before = text[:position]
    path = _json_path(before) if position <= PATH_SEARCH_CHARS else _flat_column_path(before)
    if path is None:
        return MalformedRequestError("body", f"is not valid JSON: char {position} {advice}")
    field, rows = path
    if rows:
        words = zip(("row", "column"), rows, strict=False)
        where = ", ".join(f"{word} {index}" for word, index in words)
        return MalformedRequestError(
            field, f"{where} {advice}, and leave out the rows that have none"
        )
    return MalformedRequestError(field, advice)


_KEY_BEFORE = re.compile(r'"((?:[^"\\]|\\.)*)"\s*:\s*$')


def _flat_column_path(before: str) -> tuple[str, list[int]] | None:
    """``_json_path`` of a value in a flat array of the top-level object, found by a few
    searches (no walk of a large body); None when the value sits elsewhere."""
    start = before.rfind("[")
    if start < 0 or before.find("]", start) >= 0 or before.find("{", start) >= 0:
        return None
    if before.count("{", 0, start) - before.count("}", 0, start) != 1:
        return None  # not the top-level object's (braces in strings aside)
    key = _KEY_BEFORE.search(before, max(0, start - 256), start)
    if key is None:
        return None
    return str(orjson.loads(f'"{key.group(1)}"')), [before.count(",", start)]


def _json_path(before: str) -> tuple[str, list[int]] | None:
    """The field (``options.threshold``, ``images[2].pred_scores``) of the value that starts
    after ``before`` and its row (and column) in the arrays under that field; None when it is
    at the top, outside any object."""
    levels: list[list[Any]] = []  # per open container: "{" and its key, or "[" and its index
    for match in _TOKEN.finditer(before):
        token = match.group()
        if token[0] == '"':
            if token.endswith(":") and levels and levels[-1][0] == "{":
                levels[-1][1] = orjson.loads(token[:-1])
        elif token in "[{":
            levels.append([token, 0 if token == "[" else None])
        elif token in "]}":
            if levels:
                levels.pop()
        elif levels and levels[-1][0] == "[":  # a comma in an array: the next row
            levels[-1][1] += 1
    field = ""
    rows: list[int] = []  # the indices since the last key
    for kind, where in levels:
        if kind == "[":
            rows.append(where)
            continue
        if where is None:
            return None
        field += "".join(f"[{row}]" for row in rows)
        field = f"{field}.{where}" if field else str(where)
        rows = []
    return (field, rows) if field else None


# The sliced path parses a column this many bytes at a time: a C call that holds the GIL for
# a few milliseconds each, so the event loop thread (health checks) gets its turn in between;
# one parse of a 100 MB body would hold it for 0.3 s.
JSON_SLICE_BYTES = 512 << 10
_COLUMN_START = re.compile(rb'"(labels|scores|predictions|weights|classes)"[ \t\r\n]*:[ \t\r\n]*\[')
# Searches of the body (a byte, a column's start) run this many bytes at a time.
SEARCH_BYTES = 4 << 20
_MARKER = "\u0000evalserve-column"


def _parse_columns_sliced(body: bytes | bytearray) -> dict[str, Any] | None:
    """Top-level flat columns read in slices: numbers by simdjson into float64
    (``JSON_SLICE_BYTES`` at a time), anything else (class names) by orjson
    (``VALUE_SLICE_BYTES``); the rest of the document (small) by orjson. None when the body is
    not of that shape (then the whole-body path decides): its columns are small, or one does
    not parse in slices. An array of arrays (a score matrix) is left to orjson with the rest."""
    spans: list[tuple[str, int, int]] = []
    position = 0
    while (match := _search_column(body, position)) is not None:
        start, end = match.end(), _find(body, b"]", match.end(), len(body))
        if end < 0:
            return None
        if _find(body, b"[", start, end) >= 0:
            position = start  # an array of arrays: left to orjson with the rest
            continue
        spans.append((match.group(1).decode(), start, end))
        position = end  # not searched for column names: a column's values
    if not spans or sum(end - start for _, start, end in spans) < len(body) // 2:
        return None  # not a body of big columns: the whole-body path is as good
    document = _without(body, spans)
    if document is None:
        return None
    # A column name inside a nested object (a challenger's scores) is not a top-level column:
    # keep those spans in the document (orjson reads them) and parse it again.
    top = [span for index, span in enumerate(spans) if document.get(span[0]) == [_marker(index)]]
    if len(top) != len(spans):
        document = _without(body, top)
        if document is None or any(
            document.get(name) != [_marker(index)] for index, (name, _, _) in enumerate(top)
        ):
            return None  # the same key twice, say: not this path's shape
    for name, start, end in top:
        column = _numbers(body, start, end)
        if column is None:  # strings (class names as labels), nulls, a mix: as orjson reads them
            column = _values(body, start, end)
        if column is None:
            return None
        document[name] = column
    return document


def _search_column(body: bytes | bytearray, position: int) -> re.Match[bytes] | None:
    """The next column's start from ``position``, searched a window at a time (windows
    overlap by a column name's length; spaces longer than that around its colon are not
    found: the whole-body path reads such a body)."""
    overlap = 64
    while position < len(body):
        window = min(len(body), position + SEARCH_BYTES)
        match = _COLUMN_START.search(body, position, window)
        if match is not None or window == len(body):
            return match
        position = window - overlap
    return None


def _find(body: bytes | bytearray, byte: bytes, start: int, end: int) -> int:
    """``body.find(byte, start, end)``, a window at a time."""
    while start < end:
        window = min(end, start + SEARCH_BYTES)
        found = body.find(byte, start, window)
        if found >= 0:
            return found
        start = window
    return -1


def _slice_numbers(parser: simdjson.Parser, piece: bytes) -> Column | None:
    """A slice's numbers; the parsed document is gone when this returns (a simdjson parser
    reads its next document only then)."""
    try:
        array = parser.parse(piece)
        if not isinstance(array, simdjson.Array) or not _flat_numbers(array):
            return None
        values = np.frombuffer(array.as_buffer(of_type="d"), dtype=np.float64)
        return values if len(values) == len(array) else None
    except (ValueError, TypeError, RuntimeError):
        return None


def _marker(index: int) -> str:
    return f"{_MARKER}{index}"


def _without(body: bytes | bytearray, spans: list[tuple[str, int, int]]) -> dict[str, Any] | None:
    """The document with each span's array holding a marker string instead (orjson)."""
    rest = bytearray()
    position = 0
    for index, (_, start, end) in enumerate(spans):
        rest += body[position:start]
        rest += orjson.dumps(_marker(index))
        position = end
    rest += body[position:]
    try:
        document = orjson.loads(rest)
    except orjson.JSONDecodeError:
        return None
    return document if isinstance(document, dict) else None


def _numbers(body: bytes | bytearray, start: int, end: int) -> Column | list[Any] | None:
    """The numbers of ``body[start:end]`` (the inside of a flat array) as float64, parsed a
    slice at a time; None when it holds anything else (an empty array: ``[]``, as orjson
    gives it)."""
    if end - start < 64 and not body[start:end].strip():
        return []
    parts: list[Column] = []
    parser = _parser(JSON_SLICE_BYTES)
    position = start
    while position < end:
        cut = _slice_end(body, position + JSON_SLICE_BYTES, end)
        values = _slice_numbers(parser, b"[" + body[position:cut] + b"]")
        if values is None:
            return None
        parts.append(values)
        position = cut + 1
    return parts[0] if len(parts) == 1 else _joined(parts)


def _slice_end(body: bytes | bytearray, start: int, end: int) -> int:
    """Where a slice ends: the first comma from ``start``, or ``end``."""
    cut = body.find(b",", start, end) if start < end else -1
    return end if cut < 0 else cut


def _joined(parts: list[Column]) -> Column:
    """``np.concatenate(parts)``, a part at a time: one copy of 40 MB, its pages faulted in,
    would hold the GIL for 15 ms."""
    joined = np.empty(sum(len(part) for part in parts), dtype=np.float64)
    at = 0
    for part in parts:
        joined[at : at + len(part)] = part
        at += len(part)
    return joined


# Slices of other values are smaller: a 2 MiB slice of short strings is half a million Python
# objects, 30 ms of orjson holding the GIL; 256 KiB take about 3 ms.
VALUE_SLICE_BYTES = 256 << 10
# A cut at a comma inside a string leaves a slice that is not valid JSON (its last string
# never ends): the next comma is tried, this many times before the whole-body path takes over.
VALUE_CUT_TRIES = 8


def _values(body: bytes | bytearray, start: int, end: int) -> list[Any] | None:
    """The values of ``body[start:end]`` (the inside of an array that nests no array) as
    orjson reads them, a slice at a time: the same list as one parse of the body, without one
    C call that holds the GIL for a tenth of a second (a million strings). None when a slice
    will not parse (invalid JSON, or no cut found: the whole-body path decides)."""
    values: list[Any] = []
    position = start
    while position < end:
        cut = _value_slice_end(body, position + VALUE_SLICE_BYTES, end)
        piece: Any = None
        for _ in range(VALUE_CUT_TRIES):
            try:
                piece = orjson.loads(b"[" + body[position:cut] + b"]")
                break
            except orjson.JSONDecodeError:
                if cut == end:
                    return None
                cut = _value_slice_end(body, cut + 1, end)
        if piece is None:
            return None
        values += piece
        position = cut + 1
    return values


def _value_slice_end(body: bytes | bytearray, start: int, end: int) -> int:
    """The first comma from ``start`` that likely ends a value: one right after a quote (the
    end of a string, unless that quote is escaped), else any comma; ``end`` when none."""
    if start >= end:
        return end
    after_quote = body.find(b'",', start - 1, min(end, start + VALUE_SLICE_BYTES))
    return after_quote + 1 if after_quote >= 0 else _slice_end(body, start, end)


def _parse_columns_fast(body: bytes | bytearray) -> dict[str, Any] | None:
    try:
        # The document lives in the parser until its next parse: everything is copied out
        # (as_buffer, as_dict, as_list) before this function returns.
        root = _parser(len(body)).parse(body)
        if not isinstance(root, simdjson.Object):
            return None
        document: dict[str, Any] = {}
        for key in root.keys():  # noqa: SIM118 (a simdjson Object, not a dict)
            value = root[key]
            if key in COLUMNS and isinstance(value, simdjson.Array) and _flat_numbers(value):
                document[key] = np.frombuffer(value.as_buffer(of_type="d"), dtype=np.float64)
            elif isinstance(value, simdjson.Object):
                document[key] = value.as_dict()
            elif isinstance(value, simdjson.Array):
                document[key] = value.as_list()
            else:
                document[key] = value
    except (ValueError, TypeError, RuntimeError):
        return None  # let orjson parse it and the checks name the problem
    # as_buffer flattens nested arrays: take the document only when every "[" of the body is
    # accounted for by one array (a fast column counts one) or by a character of a string.
    opening = body.count(b"[")  # a C scan: no array of the body's size
    if opening != _brackets(document):
        return None
    return document


def _brackets(value: Any) -> int:
    if isinstance(value, np.ndarray):
        return 1
    if isinstance(value, str):
        return value.count("[")
    if isinstance(value, list):
        return 1 + sum(_brackets(item) for item in value)
    if isinstance(value, dict):
        return sum(_brackets(key) + _brackets(item) for key, item in value.items())
    return 0


def _flat_numbers(array: Any) -> bool:
    if len(array) == 0:
        return False
    first, last = array[0], array[-1]
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (first, last))
