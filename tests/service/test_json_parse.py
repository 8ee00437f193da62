"""``json_parse.parse_json``: large JSON bodies read their numeric columns straight to float64,
and every body the fast path does not take gets exactly the errors of the plain path."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import orjson
import pytest

from evalserve.core import InvalidInputError
from evalserve.service import json_codec, json_parse, limits
from evalserve.service.config import Settings
from evalserve.service.errors import MalformedRequestError
from evalserve.service.json_codec import request_from_json
from evalserve.service.json_parse import FAST_JSON_BYTES, parse_json

ROWS = 120_000  # about 3 MB of JSON: over the fast-path size


def _body(**overrides: object) -> dict[str, object]:
    rng = np.random.default_rng(3)
    body: dict[str, object] = {
        "task": "binary",
        "labels": (rng.random(ROWS) < 0.2).astype(int).tolist(),
        "scores": rng.random(ROWS).tolist(),
        "weights": rng.uniform(0.5, 2.0, ROWS).tolist(),
        "options": {"threshold": 0.3, "head_k": [10]},
        "model": {"name": "fraud"},
    }
    body.update(overrides)
    return body


def test_large_bodies_read_columns_as_float64_arrays() -> None:
    body = _body()
    raw = orjson.dumps(body)
    assert len(raw) >= FAST_JSON_BYTES
    document = parse_json(raw)
    for name in ("labels", "scores", "weights"):
        column = document[name]
        assert isinstance(column, np.ndarray) and column.dtype == np.float64
        np.testing.assert_array_equal(column, np.asarray(body[name], dtype=np.float64))
    assert document["options"] == body["options"]
    assert document["model"] == body["model"]
    fast = request_from_json(document, Settings())
    plain = request_from_json(orjson.loads(raw), Settings())
    assert fast.header == plain.header
    np.testing.assert_array_equal(fast.batch.scores, plain.batch.scores)


@pytest.mark.parametrize(
    ("row_value", "field"),
    [("0.5", "scores"), (None, "scores"), ([0.1], "scores")],
    ids=["string", "null", "nested"],
)
def test_large_bodies_the_fast_path_refuses_get_the_plain_errors(
    row_value: object, field: str
) -> None:
    body = _body()
    scores = list(body["scores"])  # type: ignore[call-overload]
    scores[ROWS // 2] = row_value
    raw = orjson.dumps({**body, "scores": scores})
    with pytest.raises(MalformedRequestError) as fast:
        request_from_json(parse_json(raw), Settings())
    with pytest.raises(MalformedRequestError) as plain:
        request_from_json(orjson.loads(raw), Settings())
    assert fast.value.field == plain.value.field == field
    assert str(fast.value) == str(plain.value)


def test_large_invalid_json_names_the_body() -> None:
    raw = orjson.dumps(_body())[:-10]
    with pytest.raises(MalformedRequestError) as error:
        parse_json(raw)
    assert error.value.field == "body"


def test_the_reused_parser_reads_each_new_body_and_recovers_after_a_bad_one() -> None:
    """Each worker thread keeps its simdjson parser between bodies: every body must still take
    the fast path, whatever came before it, in this thread or in another."""
    bodies = [_body(scores=np.linspace(0.0, 1.0, ROWS).tolist()), _body()]
    broken = orjson.dumps(bodies[0])[:-10]

    def read_all() -> list[np.ndarray]:
        columns = []
        for body in bodies:
            with pytest.raises(MalformedRequestError):
                parse_json(broken)
            column = parse_json(orjson.dumps(body))["scores"]
            assert isinstance(column, np.ndarray)  # the fast path, not the fallback
            columns.append(column)
        return columns

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = [read_all(), *pool.map(lambda _: read_all(), range(2))]
    for columns in results:
        for column, body in zip(columns, bodies, strict=True):
            np.testing.assert_array_equal(column, np.asarray(body["scores"]))


def test_bodies_over_the_reuse_size_get_a_parser_of_their_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # below the slice size: the slices (and the whole-body path) get a parser of their own
    monkeypatch.setattr(json_parse, "REUSED_PARSER_BYTES", json_parse.JSON_SLICE_BYTES // 2)
    body = _body()

    def read() -> tuple[object, object]:  # in a fresh thread: no parser kept before
        column = parse_json(orjson.dumps(body))["scores"]
        return column, getattr(json_parse._parsers, "parser", None)

    with ThreadPoolExecutor(max_workers=1) as pool:
        column, kept = pool.submit(read).result()
    assert kept is None
    assert isinstance(column, np.ndarray)
    np.testing.assert_array_equal(column, np.asarray(body["scores"]))


@pytest.fixture
def small_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    """Slices of 4 KiB: a column of a 3 MB body is read in hundreds of them; other values a
    few bytes at a time (every comma is a cut to try); the body searched 256 bytes at a time."""
    monkeypatch.setattr(json_parse, "JSON_SLICE_BYTES", 4096)
    monkeypatch.setattr(json_parse, "VALUE_SLICE_BYTES", 4)
    monkeypatch.setattr(json_parse, "SEARCH_BYTES", 256)


def _same(raw: bytes) -> None:
    """``parse_json`` reads ``raw`` as orjson does, arrays as float64."""
    expected = orjson.loads(raw)
    document = parse_json(raw)
    assert set(document) == set(expected)
    for key, value in expected.items():
        if isinstance(document[key], np.ndarray):
            np.testing.assert_array_equal(document[key], np.asarray(value, dtype=np.float64))
        else:
            assert document[key] == value, key


def test_columns_are_read_in_slices_with_the_same_values(small_slices: None) -> None:
    body = _body(predictions=list(range(ROWS)), challenger={"scores": [0.5, 0.25]})
    raw = orjson.dumps(body)
    spans = [m.group(1) for m in json_parse._COLUMN_START.finditer(raw)]
    assert b"labels" in spans and b"scores" in spans
    document = json_parse._parse_columns_sliced(raw)
    assert document is not None  # the sliced path took it ...
    _same(raw)  # ... and read every value, and the nested challenger, as orjson does
    assert document["challenger"] == {"scores": [0.5, 0.25]}
    # white space and exponents around the cuts
    spaced = raw.replace(b",", b" ,\n ").replace(b"0.5", b"5e-1")
    _same(spaced)


@pytest.mark.parametrize(
    "raw",
    [
        # a string holding commas and brackets inside a column: not this path's shape
        b'{"task": "binary", "scores": [0.1, "a,[b]", 0.3], "labels": [0, 1, 1]}',
        # the same key twice: orjson keeps the last
        b'{"task": "binary", "scores": [0.1, 0.2], "scores": [0.3, 0.4]}',
        # a key that names a column inside another object
        b'{"task": "binary", "baseline": {"scores": [0.1, 0.2]}, "labels": [0, 1]}',
        # an escaped quote before a column's name, inside a string
        b'{"task": "x\\"labels\\": [1, 2]", "labels": [0, 1]}',
        # empty columns
        b'{"task": "binary", "labels": [], "scores": [ ]}',
        # class names with commas and escaped quotes; a matrix left to orjson
        b'{"task": "multiclass", "labels": ["a,b", ",", "x\\",\\"y", "c"],'
        b' "scores": [[0.5, 0.5], [0.5, 0.5], [0.5, 0.5], [0.5, 0.5]]}',
        # classes, and labels that mix strings, nulls and booleans
        b'{"task": "multiclass", "classes": ["a", "b, c"], "labels": ["a", "b, c", null, true],'
        b' "scores": [0.1, 0.2, 0.3, 0.4]}',
        # a string that never ends: invalid JSON
        b'{"task": "binary", "labels": ["a", "b], "scores": [0.1, 0.2]}',
    ],
    ids=[
        "string-in-column",
        "duplicate-key",
        "nested",
        "escaped",
        "empty",
        "names",
        "mixed",
        "unterminated",
    ],
)
def test_odd_bodies_read_as_orjson_reads_them(raw: bytes, small_slices: None) -> None:
    padded = raw[:-1] + b', "pad": "' + b" " * FAST_JSON_BYTES + b'"}'
    try:
        expected = orjson.loads(padded)
    except orjson.JSONDecodeError:
        with pytest.raises(MalformedRequestError):
            parse_json(padded)
        return
    _same(padded)
    assert parse_json(padded).keys() == expected.keys()


@pytest.mark.parametrize("scores", ["flat", "matrix"])
def test_a_column_of_strings_is_read_in_slices(small_slices: None, scores: str) -> None:
    classes = [",", "a, b", 'say "x", "y"', "\\", "é"]
    labels: list[object] = [classes[i % len(classes)] for i in range(2_000)]
    labels[5] = None  # refused later, by the checks; read as orjson reads it
    body = {
        "task": "multiclass",
        "classes": classes,
        "labels": labels,
        "scores": [0.5] * 2_000 if scores == "flat" else [[0.5] * 6 for _ in range(20)],
    }
    raw = orjson.dumps(body)
    document = json_parse._parse_columns_sliced(raw)
    assert document is not None  # the sliced path took the strings too
    assert document["labels"] == labels
    assert document["classes"] == classes
    if scores == "matrix":  # left to orjson
        assert document["scores"] == body["scores"]
    _same(raw)


def test_names_full_of_commas_are_cut_between_strings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(json_parse, "VALUE_SLICE_BYTES", 64)
    names = [",".join("abcdefghijkl") + f" {i}" for i in range(500)]  # 11 commas each
    raw = orjson.dumps({"task": "multiclass", "labels": names, "scores": [0.5] * 500})
    document = json_parse._parse_columns_sliced(raw)
    assert document is not None
    assert document["labels"] == names


def test_long_name_checks_scan_in_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "SCAN_ITEMS", 3)  # the class-name check
    monkeypatch.setattr(json_codec, "SCAN_ITEMS", 3)  # the string check of number columns
    names = ["a"] * 7 + ["b" * 200] + ["c"] * 5
    body = {"task": "multiclass", "labels": names, "scores": [0.5] * len(names)}
    with pytest.raises(InvalidInputError, match=r"row 7 has 200"):
        request_from_json(body, Settings())
    body = {"task": "binary", "labels": [0, 1] * 5 + ["1"], "scores": [0.5] * 11}
    with pytest.raises(MalformedRequestError, match=r'row 10 is a string \("1"\)'):
        request_from_json(body, Settings())
