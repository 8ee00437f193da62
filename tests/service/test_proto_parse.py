"""``proto_parse.parse``: large protobuf messages decoded with their columns apart, a slice at
a time, give exactly what protobuf's own parse gives: the same requests (arrays bit for bit),
the same service errors, and for malformed bytes the same ``DecodeError``. Checked on messages
Hypothesis makes, merges, pads with unknown fields, encodes unusually and corrupts."""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import fields, is_dataclass
from typing import Any

import numpy as np
import pytest
from google.protobuf.message import DecodeError, Message
from hypothesis import given, settings
from hypothesis import strategies as st

from evalserve.core import InvalidInputError
from evalserve.service import proto_codec, proto_parse, records
from evalserve.service.config import Settings
from evalserve.service.errors import ServiceError
from evalserve.v1 import evaluation_pb2 as pb

SETTINGS = Settings(max_rows=1000)


@contextmanager
def sliced_from(size: int, slice_bytes: int = proto_parse.DOUBLE_SLICE_BYTES) -> Iterator[None]:
    """Every message of ``size`` bytes or more takes the sliced path, in slices of
    ``slice_bytes``."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(proto_parse, "SLICED_PROTO_BYTES", size)
        patch.setattr(proto_parse, "DOUBLE_SLICE_BYTES", slice_bytes)
        yield


def same(got: Any, expected: Any, where: str = "") -> None:
    """Equal values, with arrays equal bit for bit (NaN payloads too), of the same dtype,
    shape and writability."""
    if isinstance(expected, np.ndarray):
        assert isinstance(got, np.ndarray), where
        assert (got.dtype, got.shape) == (expected.dtype, expected.shape), where
        assert got.flags.writeable == expected.flags.writeable, where
        assert got.tobytes() == expected.tobytes(), where
    elif is_dataclass(expected) and not isinstance(expected, type):
        assert type(got) is type(expected), where
        for item in fields(expected):
            name = item.name
            same(getattr(got, name), getattr(expected, name), f"{where}.{name}")
    elif isinstance(expected, dict):
        assert isinstance(got, dict) and got.keys() == expected.keys(), where
        for key, value in expected.items():
            same(got[key], value, f"{where}[{key!r}]")
    elif isinstance(expected, (tuple, list)):
        assert type(got) is type(expected) and len(got) == len(expected), where
        for index, (one, other) in enumerate(zip(got, expected, strict=True)):
            same(one, other, f"{where}[{index}]")
    elif isinstance(expected, float):
        assert isinstance(got, float), where
        assert struct.pack("<d", got) == struct.pack("<d", expected), where
    else:
        assert got == expected, where


def outcome(decode_it: Callable[[], Any]) -> tuple[str, Any]:
    """What decoding gives: ("ok", value), or the error's type, field and message."""
    try:
        return "ok", decode_it()
    except DecodeError as error:
        return "DecodeError", str(error)
    except (ServiceError, InvalidInputError) as error:
        return type(error).__name__, (error.field, error.message)


Outcomes = tuple[tuple[str, Any], tuple[str, Any]]


def request_outcomes(data: bytes, limits: Settings = SETTINGS) -> Outcomes:
    """(sliced, whole) outcomes of decoding ``data`` as an ``EvaluateRequest``."""

    def sliced() -> records.Request:
        message, columns = proto_parse.parse(pb.EvaluateRequest, data)
        return proto_codec.request_from_proto(message, limits, columns)

    def whole() -> records.Request:
        return proto_codec.request_from_proto(pb.EvaluateRequest.FromString(data), limits)

    return outcome(sliced), outcome(whole)


def stream_outcomes(data: bytes, limits: Settings = SETTINGS) -> Outcomes:
    """(sliced, whole) outcomes of decoding ``data`` as an ``EvaluateStreamRequest``."""

    def decoded(message: pb.EvaluateStreamRequest, columns: proto_parse.ProtoColumns) -> Any:
        header = proto_codec.header_from_proto(message.header, limits, columns.part("header"))
        return header, proto_codec.batch_from_proto(message, limits, columns)

    def sliced() -> Any:
        return decoded(*proto_parse.parse(pb.EvaluateStreamRequest, data))

    def whole() -> Any:
        return decoded(pb.EvaluateStreamRequest.FromString(data), proto_parse.NO_COLUMNS)

    return outcome(sliced), outcome(whole)


# protobuf's two texts for a body with two defects: which one it names depends on where its
# parse meets them first, and the sliced parse meets the corrupt wire format first when a bad
# UTF-8 string (segments, class names) lies in the part it hands to protobuf after its scan.
TWO_DEFECTS = {"String field had bad UTF-8", "Wire format was corrupt"}


def assert_same_outcome(got: tuple[str, Any], expected: tuple[str, Any]) -> None:
    assert got[0] == expected[0], (got, expected)
    if got[0] == "DecodeError" and got[1] != expected[1]:
        # Both refuse the body; only the defect named may differ, between these two.
        reasons = {text.rsplit(": ", 1)[-1] for text in (got[1], expected[1])}
        assert reasons == TWO_DEFECTS, (got, expected)
        return
    same(got[1], expected[1])


# --- messages ---------------------------------------------------------------------------------

doubles = st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=12)
# Raw columns: mostly whole doubles (every NaN payload among them), sometimes a byte short.
raw_bytes = st.one_of(
    st.lists(st.integers(0, 2**64 - 1), max_size=12).map(
        lambda words: struct.pack(f"<{len(words)}Q", *words)
    ),
    st.binary(max_size=20),
)
names = st.lists(st.text(max_size=5), max_size=4)


def tasks(*values: int) -> st.SearchStrategy[pb.Task.ValueType]:
    return st.sampled_from(values).map(pb.Task.ValueType)


@st.composite
def columns(draw: st.DrawFn, names: tuple[str, ...]) -> dict[str, Any]:
    """Each column packed, raw, both (refused by the decoder) or absent."""
    chosen: dict[str, Any] = {}
    for name in names:
        form = draw(st.sampled_from(["packed", "raw", "both", "none", "none"]))
        if form in ("packed", "both"):
            chosen[name] = draw(doubles)
        if form in ("raw", "both"):
            chosen[f"{name}_f64"] = draw(raw_bytes)
    return chosen


def baselines() -> st.SearchStrategy[pb.Baseline]:
    summary = st.fixed_dictionaries(
        {},
        optional={"roc_auc": st.floats(0, 1), "n_positive": st.floats(0, 100)},
    )
    return st.builds(
        lambda values, more: pb.Baseline(**values, **more),
        columns(("labels", "scores", "weights")),
        summary,
    )


@st.composite
def requests(draw: st.DrawFn) -> pb.EvaluateRequest:
    message = pb.EvaluateRequest(
        task=draw(tasks(0, 1, 2, 3, 4, 5, 99)),  # 99: a task this server does not know
        **draw(columns(records.COLUMNS)),
        classes=draw(names),
        label_names=draw(names),
    )
    if draw(st.booleans()):
        message.options.threshold = draw(st.floats(0, 1))
        message.options.head_k.extend(draw(doubles))  # a repeated double the decoder keeps
    if draw(st.booleans()):
        message.model.name = draw(st.text(alphabet="abc.", max_size=4))
    if draw(st.booleans()):
        message.baseline.CopyFrom(draw(baselines()))
    if draw(st.booleans()):
        message.challenger.CopyFrom(pb.Challenger(**draw(columns(("scores",)))))
    if draw(st.booleans()):
        message.n_classes = draw(st.integers(-2, 4))
    if draw(st.booleans()):
        message.images.add(gt_boxes=draw(doubles), pred_scores=draw(doubles))
    return message


@st.composite
def stream_messages(draw: st.DrawFn) -> pb.EvaluateStreamRequest:
    message = pb.EvaluateStreamRequest(**draw(columns(records.COLUMNS)))
    if draw(st.booleans()):
        message.header.task = draw(tasks(1, 2, 4))
        message.header.classes.extend(draw(names))
        if draw(st.booleans()):
            message.header.baseline.CopyFrom(draw(baselines()))
    return message


# --- wire-level changes ---------------------------------------------------------------------


def varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes(out + bytes([value]))


def field_parts(message: Message) -> list[bytes]:
    """The message's encoding, one part per field (their concatenation is the message)."""
    parts = []
    for descriptor, value in message.ListFields():
        one = type(message)()
        if descriptor.message_type is not None and not descriptor.is_repeated:
            getattr(one, descriptor.name).CopyFrom(value)
        elif descriptor.is_repeated:
            getattr(one, descriptor.name).extend(value)
        else:
            setattr(one, descriptor.name, value)
        parts.append(one.SerializeToString())
    return parts


unknown_fields = st.one_of(
    st.tuples(st.integers(19, 2**29 - 1), st.integers(0, 2**64 - 1)).map(
        lambda f: varint(f[0] << 3) + varint(f[1])
    ),
    st.tuples(st.integers(19, 2**29 - 1), st.binary(max_size=10)).map(
        lambda f: varint(f[0] << 3 | 2) + varint(len(f[1])) + f[1]
    ),
    st.integers(19, 1000).map(lambda n: varint(n << 3 | 1) + bytes(8)),
    st.integers(19, 1000).map(lambda n: varint(n << 3 | 5) + bytes(4)),
    st.integers(19, 1000).map(lambda n: varint(n << 3 | 3) + varint(n << 3 | 4)),  # a group
)
# Columns sent as protobuf also reads them, but the scan leaves them to it.
unusual_fields = st.one_of(
    st.floats(allow_nan=False).map(lambda v: varint(2 << 3 | 1) + struct.pack("<d", v)),
    st.just(varint(12 << 3) + varint(5)),  # labels_f64 as a varint: an unknown field
    st.just(varint(3 << 3 | 5) + bytes(4)),  # scores as fixed32: an unknown field
)


@st.composite
def wire(draw: st.DrawFn, messages: st.SearchStrategy[Message]) -> bytes:
    """A message's bytes: its fields in any order, maybe merged with a second message's, with
    unknown or unusual fields among them, then maybe corrupted."""
    parts = field_parts(draw(messages))
    if draw(st.booleans()):
        parts += field_parts(draw(messages))  # merged as protobuf merges a field sent twice
    parts = draw(st.permutations(parts))
    for extra in draw(st.lists(st.one_of(unknown_fields, unusual_fields), max_size=3)):
        parts.insert(draw(st.integers(0, len(parts))), extra)
    data = b"".join(parts)
    change = draw(st.sampled_from(["none", "none", "truncate", "byte", "insert"]))
    if change == "none" or not data:
        return data
    at = draw(st.integers(0, len(data) - 1))
    if change == "truncate":
        return data[:at]
    if change == "byte":
        return data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1 :]
    return data[:at] + draw(st.binary(min_size=1, max_size=6)) + data[at:]


@settings(max_examples=600)
@given(wire(requests()))
def test_a_request_decodes_as_protobuf_parses_it(data: bytes) -> None:
    with sliced_from(0, slice_bytes=16):
        assert_same_outcome(*request_outcomes(data))


@settings(max_examples=300)
@given(wire(stream_messages()))
def test_a_stream_message_decodes_as_protobuf_parses_it(data: bytes) -> None:
    with sliced_from(0, slice_bytes=16):
        assert_same_outcome(*stream_outcomes(data))


# --- large messages ---------------------------------------------------------------------------

ROWS = 200_000  # 3.2 MB of packed labels and scores: over SLICED_PROTO_BYTES


def large_request(**more: Any) -> pb.EvaluateRequest:
    rng = np.random.default_rng(11)
    labels = rng.integers(0, 2, ROWS).astype(float)
    return pb.EvaluateRequest(
        task=pb.TASK_BINARY,
        labels=labels,
        scores=rng.random(ROWS),
        weights_f64=rng.uniform(0.5, 2, ROWS).tobytes(),
        challenger=pb.Challenger(scores_f64=rng.random(ROWS).tobytes()),
        model=pb.Model(name="fraud"),
        **more,
    )


def test_a_large_request_leaves_only_its_small_rest_to_protobuf() -> None:
    data = large_request().SerializeToString()
    assert len(data) >= proto_parse.SLICED_PROTO_BYTES
    message, columns = proto_parse.parse(pb.EvaluateRequest, data)
    assert message.ByteSize() < 100  # task, model and an empty challenger
    assert set(columns.values) == {"labels", "scores", "weights_f64"}
    assert set(columns.part("challenger").values) == {"scores_f64"}
    big = Settings()
    sliced = proto_codec.request_from_proto(message, big, columns)
    same(sliced, proto_codec.request_from_proto(pb.EvaluateRequest.FromString(data), big))
    assert sliced.batch.scores is not None and sliced.batch.scores.flags.writeable
    assert sliced.batch.weights is not None and not sliced.batch.weights.flags.writeable


def test_a_large_request_in_a_bytearray_decodes_alike() -> None:
    data = large_request().SerializeToString()
    message, columns = proto_parse.parse(pb.EvaluateRequest, bytearray(data))
    same(
        proto_codec.request_from_proto(message, Settings(), columns),
        proto_codec.request_from_proto(pb.EvaluateRequest.FromString(data), Settings()),
    )


@pytest.mark.parametrize(
    "tail",
    [
        varint(2 << 3 | 2) + varint(100) + bytes(10),  # labels past the end
        varint(3 << 3 | 2) + varint(12) + bytes(12),  # a double cut short
        varint(6 << 3 | 2) + b"\x01\xff",  # a class name that is not UTF-8
        varint(7),  # wire type 7
        b"\xff" * 11,  # a tag that never ends
    ],
    ids=["truncated", "odd-doubles", "utf-8", "wire-type", "tag"],
)
def test_a_large_malformed_request_gets_protobufs_error(tail: bytes) -> None:
    data = large_request().SerializeToString() + tail
    with pytest.raises(DecodeError) as whole:
        pb.EvaluateRequest.FromString(data)
    with pytest.raises(DecodeError) as sliced:
        proto_parse.parse(pb.EvaluateRequest, data)
    assert str(sliced.value) == str(whole.value)


def test_a_large_request_with_an_unusual_shape_is_parsed_whole() -> None:
    unpacked = b"".join(varint(4 << 3 | 1) + struct.pack("<d", v) for v in (1.0, 2.0))
    data = large_request().SerializeToString() + unpacked
    message, columns = proto_parse.parse(pb.EvaluateRequest, data)
    assert columns is proto_parse.NO_COLUMNS and list(message.predictions) == [1.0, 2.0]


def test_a_large_request_over_the_row_limit_is_refused_as_before() -> None:
    sliced, whole = request_outcomes(large_request().SerializeToString())  # 1000 rows at most
    assert sliced[0] == "PayloadTooLargeError"
    assert_same_outcome(sliced, whole)


def test_a_large_message_of_many_small_fields_is_parsed_whole() -> None:
    names = [f"c{i}" for i in range(proto_parse.MAX_FIELDS)]
    data = large_request(label_names=names).SerializeToString()
    message, columns = proto_parse.parse(pb.EvaluateRequest, data)
    assert columns is proto_parse.NO_COLUMNS and list(message.label_names) == names


def test_a_large_stream_message_decodes_its_header_and_rows_alike() -> None:
    rng = np.random.default_rng(12)
    header = pb.StreamHeader(
        task=pb.TASK_MULTICLASS,
        classes=[f"class {i}" for i in range(40)],  # a header rest of over 127 bytes
        n_classes=40,
        baseline=pb.Baseline(roc_auc=0.8, labels_f64=rng.random(1000).tobytes()),
    )
    message = pb.EvaluateStreamRequest(
        header=header, labels=rng.integers(0, 40, 5000), scores=rng.random(200_000)
    )
    data = message.SerializeToString()
    assert len(data) >= proto_parse.SLICED_PROTO_BYTES
    parsed, columns = proto_parse.parse(pb.EvaluateStreamRequest, data)
    assert parsed.ByteSize() < 600
    assert set(columns.part("header").part("baseline").values) == {"labels_f64"}
    sliced, whole = stream_outcomes(data, Settings())
    assert sliced[0] == "ok"
    assert_same_outcome(sliced, whole)
