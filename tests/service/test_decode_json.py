"""``decode.parse_json``: large JSON bodies read their numeric columns straight to float64,
and every body the fast path does not take gets exactly the errors of the plain path."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import orjson
import pytest

from evalserve.service import decode
from evalserve.service.config import Settings
from evalserve.service.decode import FAST_JSON_BYTES, parse_json, request_from_json
from evalserve.service.errors import MalformedRequestError

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
    monkeypatch.setattr(decode, "REUSED_PARSER_BYTES", FAST_JSON_BYTES)
    body = _body()

    def read() -> tuple[object, object]:  # in a fresh thread: no parser kept before
        column = parse_json(orjson.dumps(body))["scores"]
        return column, getattr(decode._parsers, "parser", None)

    with ThreadPoolExecutor(max_workers=1) as pool:
        column, kept = pool.submit(read).result()
    assert kept is None
    assert isinstance(column, np.ndarray)
    np.testing.assert_array_equal(column, np.asarray(body["scores"]))
