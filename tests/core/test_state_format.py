"""The bytes of an ``Accumulator`` (core/_state_format.py): round trips, a file written by this
format version that must stay readable, and refusals of everything else: other versions,
damaged, truncated and hostile bytes give ``InvalidInputError`` (field ``state``), never a
crash."""

from __future__ import annotations

import contextlib
import json
import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalserve import Accumulator, InvalidInputError, evaluate
from evalserve.core._state_format import FORMAT_VERSION, MAGIC, StateDocument, decode, encode

GOLDEN = Path(__file__).parents[1] / "fixtures" / "state" / "binary-v1.bin"


def _golden_rows() -> dict[str, Any]:
    """The rows of the fixture file: ties, predictions and integer weights."""
    rng = np.random.default_rng(20261123)
    labels = rng.random(500) < 0.3
    return {
        "y_true": labels.astype(float),
        "y_score": np.round(rng.random(500) * 0.6 + labels * 0.3, 2),
        "y_pred": (rng.random(500) < 0.4).astype(float),
        "sample_weight": rng.integers(0, 4, 500).astype(float),
    }


def _golden_accumulator() -> Accumulator:
    rows = _golden_rows()
    accumulator = Accumulator("binary", {"head_k": [10.0], "max_fpr": 0.2})
    for part in np.array_split(np.arange(500), 3):
        accumulator.update(**{name: column[part] for name, column in rows.items()})
    return accumulator


def _bytes_with(head: dict[str, Any], payload: bytes = b"", version: int = FORMAT_VERSION) -> bytes:
    """Bytes with a valid checksum around any head: the checks behind the checksum."""
    text = json.dumps(head).encode()
    body = struct.pack("<16sII", MAGIC, version, len(text)) + text
    body += bytes(-len(body) % 8) + payload
    return body + struct.pack("<I", zlib.crc32(body))


def test_a_file_of_format_version_1_stays_readable() -> None:
    """Written once by ``_golden_accumulator().to_bytes()``; every later evalserve must read
    it (a format change bumps FORMAT_VERSION and keeps a reader for this one)."""
    restored = Accumulator.from_bytes(GOLDEN.read_bytes())
    rows = _golden_rows()
    expected = evaluate("binary", **rows, options={"head_k": [10.0], "max_fpr": 0.2})
    assert restored.result().to_dict() == expected.to_dict()
    assert restored.options.max_fpr == 0.2 and restored.n_rows == 500


def test_the_same_accumulator_gives_the_same_bytes() -> None:
    first, second = _golden_accumulator().to_bytes(), _golden_accumulator().to_bytes()
    assert first == second
    assert Accumulator.from_bytes(first).to_bytes() == first


def test_round_trip_of_every_array_kind() -> None:
    arrays = {
        "floats": np.array([0.5, -1.0, np.pi]),
        "integers": np.arange(6, dtype=np.int32).reshape(2, 3),
        "flags": np.array([True, False]),
        "count": np.array(7, dtype=np.int64),
        "empty": np.empty((0, 4)),
        "big_endian": np.array([1.25, 2.5], dtype=">f8"),
    }
    data = encode(StateDocument("binary", {"beta": 2.0}, ("a", "é"), arrays))
    # Of immutable bytes: read-only views in native order (no copy of a large state); of a
    # bytearray or a memoryview, which the caller may change later: writeable copies.
    for raw, shared in ((data, True), (bytearray(data), False), (memoryview(data), False)):
        document = decode(raw)
        assert (document.task, document.options, document.classes) == (
            "binary",
            {"beta": 2.0},
            ("a", "é"),
        )
        for name, array in arrays.items():
            got = document.arrays[name]
            assert got.shape == array.shape and np.array_equal(got, array), name
            assert got.dtype.isnative
            assert got.flags.writeable is not shared, name
            assert (got.base is not None and not got.flags.owndata) or not shared, name


def test_a_state_decoded_from_bytes_does_not_copy_its_arrays() -> None:
    rng = np.random.default_rng(1)
    accumulator = Accumulator("binary")
    accumulator.update(rng.random(200_000) < 0.3, rng.random(200_000))
    data = accumulator.to_bytes()
    document = decode(data)
    views = [array for array in document.arrays.values() if array.size > 1000]
    assert views and all(not array.flags.owndata for array in views)
    assert sum(array.nbytes for array in views) > 0.9 * len(data)
    restored = Accumulator.from_bytes(data)
    assert restored.to_bytes() == data
    assert restored.result().metrics == accumulator.result().metrics


def test_an_empty_accumulator_round_trips() -> None:
    restored = Accumulator.from_bytes(Accumulator("binary", {"beta": 2.0}).to_bytes())
    assert restored.n_rows == 0 and restored.options.beta == 2.0
    with pytest.raises(InvalidInputError, match="no rows"):
        restored.result()


def test_arrays_of_other_types_are_not_written() -> None:
    with pytest.raises(TypeError, match="cannot be written"):
        encode(StateDocument("binary", {}, None, {"names": np.array(["a"])}))


def _refused(data: bytes, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match) as raised:
        Accumulator.from_bytes(data)
    assert raised.value.field == "state"


def test_other_versions_and_other_data_are_refused() -> None:
    good = _golden_accumulator().to_bytes()
    readable = "this evalserve reads versions 1, 2, 3, 4"
    _refused(_bytes_with({}, version=5), f"format version 5; {readable}")
    _refused(_bytes_with({}, version=0), f"format version 0; {readable}")
    _refused(b"PK\x03\x04" + good[4:], "does not start with the evalserve state marker")
    _refused(good[:10], "too short")
    _refused("not bytes", "expected bytes")  # type: ignore[arg-type]
    damaged = bytearray(good)
    damaged[len(good) // 2] ^= 0x01
    _refused(bytes(damaged), "checksum")
    _refused(good + b"\x00", "checksum")


def test_every_truncation_is_refused() -> None:
    good = Accumulator("binary").update([0, 1, 1], [0.1, 0.4, 0.9]).to_bytes()
    for end in range(len(good)):
        with pytest.raises(InvalidInputError):
            Accumulator.from_bytes(good[:end])


HEAD: dict[str, Any] = {"task": "binary", "options": {}, "classes": None, "arrays": []}


@pytest.mark.parametrize(
    ("head", "payload", "match"),
    [
        ({"task": "binary"}, b"", "without exactly task, options, classes and arrays"),
        ({**HEAD, "task": 3}, b"", "task is not a string"),
        ({**HEAD, "task": "ranking"}, b"", "holds a bad task"),
        ({**HEAD, "options": {"beta": -1}}, b"", "holds a bad options.beta"),
        ({**HEAD, "options": {"nope": 1}}, b"", "holds a bad options.nope"),
        ({**HEAD, "classes": ["a", 1]}, b"", "classes are not a list of strings"),
        ({**HEAD, "classes": ["a", "b"]}, b"", "holds a bad classes"),
        ({**HEAD, "arrays": {}}, b"", "arrays are not a list"),
        ({**HEAD, "arrays": [["x", "<f4", [1]]]}, b"\x00" * 8, "malformed array entry"),
        ({**HEAD, "arrays": [["x", "<f8", [-1]]]}, b"", "malformed array entry"),
        ({**HEAD, "arrays": [["x", "<f8", [1, 1, 1, 1, 1]]]}, b"", "malformed array entry"),
        ({**HEAD, "arrays": [["x", "<f8", [True]]]}, b"", "malformed array entry"),
        ({**HEAD, "arrays": [["x", "<f8", [1]], ["x", "<f8", [1]]]}, b"", "names array 'x' twice"),
        ({**HEAD, "arrays": [["x", "<f8", [2**40]]]}, b"", "runs past the end"),
        ({**HEAD, "arrays": [["x", "<f8", [1]]]}, b"\x00" * 16, "bytes after its last array"),
        ({**HEAD, "arrays": [["x", "<f8", [1]]]}, b"\x00" * 8, "'n_rows' is missing"),
    ],
)
def test_malformed_heads_are_refused(head: dict[str, Any], payload: bytes, match: str) -> None:
    _refused(_bytes_with(head, payload), match)


def _binary(positives: Any, negatives: Any, n_rows: int, weighted: bool = False) -> bytes:
    """A binary state's bytes from (scores, masses) of each class."""
    arrays = {"n_rows": np.array(n_rows, dtype=np.int64), "weighted": np.array(weighted)}
    for name, (scores, mass) in (("positives", positives), ("negatives", negatives)):
        arrays[f"scores.{name}.scores"] = np.asarray(scores, dtype=float)
        arrays[f"scores.{name}.mass"] = np.asarray(mass, dtype=float)
    return encode(StateDocument("binary", {}, None, arrays))


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (_binary(([0.2, 0.1], [1, 1]), ([], []), 2), "not strictly ascending"),
        (_binary(([0.1, np.inf], [1, 1]), ([], []), 2), "not finite"),
        (_binary(([0.1], [1]), ([0.2, 0.3], [2, -1]), 2), "negative or not finite"),
        (_binary(([0.1], [1]), ([0.2, 0.3], [1, 0]), 2), "holds a zero mass"),
        (_binary(([0.1], [1]), ([0.2], [1, 1]), 2), "has 2 entries, expected 1"),
        (_binary(([0.1], [1]), ([0.2], [1]), 5), "add up to 2, not to its 5 rows"),
        (_binary(([0.1], [1]), ([0.2], [1]), 0, True), "holds scores but no rows"),
        (_binary(([0.1], [1]), ([0.2], [1]), -1), "expected a count >= 0"),
        (_binary(([[0.1]], [1]), ([0.2], [1]), 2), "has 2 dimensions"),
    ],
)
def test_arrays_no_accumulator_could_write_are_refused(data: bytes, match: str) -> None:
    _refused(data, match)


@settings(max_examples=300)
@given(st.binary(max_size=400))
def test_random_bytes_are_refused_cleanly(data: bytes) -> None:
    with pytest.raises(InvalidInputError):
        Accumulator.from_bytes(data)


@settings(max_examples=300)
@given(st.data())
def test_mutated_states_with_a_valid_checksum_never_crash(data: st.DataObject) -> None:
    """Flip bytes behind a recomputed checksum, so the reader's own checks meet them."""
    good = bytearray(Accumulator("binary").update([0, 1, 1, 0], [0.1, 0.4, 0.9, 0.4]).to_bytes())
    body = good[:-4]
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(body) - 1))
        body[at] = data.draw(st.integers(0, 255))
    mutated = bytes(body) + struct.pack("<I", zlib.crc32(bytes(body)))
    try:
        restored = Accumulator.from_bytes(mutated)
    except InvalidInputError:
        return
    with contextlib.suppress(InvalidInputError):
        restored.result()
