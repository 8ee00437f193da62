"""A merged binary state written as bytes (core/_state_format.py ``Later``, core/binary's
``CanonicalMerge``): classes whose canonical parts merge stretch by stretch are merged straight
into their place in the bytes. The bytes are those of the merged arrays, to the bit, and the
merge holds no copy of the merged classes beside them (a Dask tree's last merge)."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator, Sequence
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from evalserve import Accumulator
from evalserve.core import _state_format as format_module
from evalserve.core._state_format import Later, StateDocument, decode, encode
from evalserve.core.binary import _classes as classes_module
from evalserve.core.binary._state import BinaryState

properties = settings(max_examples=150, deadline=None)


@pytest.fixture
def stretches() -> Iterator[None]:
    """Every merge of two parts or more goes stretch by stretch, in stretches of 7 entries."""
    with (
        mock.patch.object(classes_module, "CHUNKED_MERGE_MIN", 0),
        mock.patch.object(classes_module, "MERGE_STRETCH", 7),
    ):
        yield


def _batch(rng: np.random.Generator, ties: bool, weights: str | None) -> dict[str, Any]:
    n = int(rng.integers(1, 80))
    labels = rng.random(n) < 0.4
    scores = rng.integers(0, 9, n) / 8 if ties else rng.random(n)
    batch: dict[str, Any] = {"y_true": labels, "y_score": scores}
    if weights == "whole":
        batch["sample_weight"] = rng.integers(0, 4, n).astype(np.float64)
    elif weights == "fractions":
        batch["sample_weight"] = rng.uniform(0.1, 3.0, n)
    return batch


def _merged_arrays_bytes(accumulator: Accumulator) -> bytes:
    """The bytes as written before the merge went into them: the merged arrays, encoded."""
    state = accumulator._state()
    assert isinstance(state, BinaryState)
    arrays = state.compact().to_arrays()
    options = Accumulator.from_bytes(accumulator.to_bytes()).to_bytes()  # same head
    document = decode(options)
    return encode(StateDocument(document.task, document.options, None, arrays))


@properties
@given(
    seed=st.integers(0, 2**32 - 1),
    states=st.integers(2, 5),
    ties=st.booleans(),
    weights=st.sampled_from([None, "whole", "fractions"]),
    predictions=st.booleans(),
)
def test_a_merge_written_into_its_bytes_gives_the_merged_arrays_bytes(
    seed: int, states: int, ties: bool, weights: str | None, predictions: bool
) -> None:
    """States from bytes (canonical parts), merged as a Dask tree merges them: the bytes
    equal those of the merged classes encoded, and read back to one evaluation's answer."""
    rng = np.random.default_rng(seed)
    batches = [_batch(rng, ties, weights) for _ in range(states)]
    if predictions:
        for batch in batches:
            batch["y_pred"] = (rng.random(batch["y_true"].size) < 0.5).astype(np.float64)
    with (
        mock.patch.object(classes_module, "CHUNKED_MERGE_MIN", 0),
        mock.patch.object(classes_module, "MERGE_STRETCH", int(rng.integers(1, 20))),
    ):
        merged = Accumulator.from_bytes(Accumulator("binary").update(**batches[0]).to_bytes())
        for batch in batches[1:]:
            part = Accumulator.from_bytes(Accumulator("binary").update(**batch).to_bytes())
            merged = merged.merge(part)
        written = merged.to_bytes()
        expected = _merged_arrays_bytes(merged)
    assert written == expected
    whole = Accumulator("binary")
    for batch in batches:
        whole.update(**batch)
    restored = Accumulator.from_bytes(written)
    assert restored.n_rows == whole.n_rows
    if weights != "fractions":  # integer masses: to the bit
        assert restored.result().to_dict() == whole.result().to_dict()


def test_segments_merge_into_their_bytes_too(stretches: None) -> None:
    rng = np.random.default_rng(3)
    states = []
    for _ in range(3):
        batch = _batch(rng, ties=True, weights=None)
        codes = rng.integers(0, 2, batch["y_true"].size)
        accumulator = Accumulator("binary").update(
            **batch, segments=codes, segment_names=["a", "b"]
        )
        states.append(Accumulator.from_bytes(accumulator.to_bytes()))
    merged = states[0].merge(states[1]).merge(states[2])
    written = merged.to_bytes()
    restored = Accumulator.from_bytes(written)
    assert restored.to_bytes() == written  # canonical once read: written as they are
    assert restored.result().to_dict() == merged.result().to_dict()


class _Twice:
    """Writes two arrays: a range and its square."""

    def write(self, out: Sequence[NDArray[np.float64]]) -> None:
        first, second = out
        first[:] = np.arange(first.size)
        second[:] = np.arange(second.size) ** 2


@pytest.mark.parametrize("in_place", [True, False])
def test_arrays_written_later_are_bytes_as_any_array(in_place: bool) -> None:
    """A ``Later`` array is encoded as the same array given whole would be, between the
    others in the document's order; without the C API the bytes are the same."""
    writer = _Twice()
    document = StateDocument(
        "binary", {}, None,
        {"a": np.array([True]), "b": np.empty(0), "c": np.array(3), "d": np.empty(0)},
    )  # fmt: skip
    later = {"b": Later(5, writer, 0), "d": Later(5, writer, 1)}
    whole = StateDocument(
        "binary", {}, None,
        {"a": np.array([True]), "b": np.arange(5.0), "c": np.array(3), "d": np.arange(5.0) ** 2},
    )  # fmt: skip
    with mock.patch.object(format_module, "_IN_PLACE", in_place):
        assert encode(document, later) == encode(whole)
        assert type(encode(document, later)) is bytes
    np.testing.assert_array_equal(decode(encode(document, later)).arrays["d"], [0, 1, 4, 9, 16])


def _states(rows: int) -> list[bytes]:
    """Two states of distinct scores, as a tree's last merge receives them."""
    rng = np.random.default_rng(11)
    states = []
    for size in (rows * 3 // 4, rows // 4):
        labels = rng.random(size) < 0.3
        states.append(Accumulator("binary").update(labels, rng.random(size)).to_bytes())
    return states


def test_a_tree_merge_holds_no_copy_of_the_merged_state() -> None:
    """The merge's own memory (beyond its inputs) is its output bytes and a stretch: the
    merged classes are not built beside the bytes (before: the output's size twice)."""
    from evalserve.dask import _merged

    inputs = _states(600_000)
    with (
        mock.patch.object(classes_module, "CHUNKED_MERGE_MIN", 1 << 16),
        mock.patch.object(classes_module, "MERGE_STRETCH", 1 << 14),
    ):
        _merged(None, None, *inputs)  # warm up: imports, thread pools
        tracemalloc.start()
        try:
            output = _merged(None, None, *inputs)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert len(output) > 9_000_000
    assert peak < 1.25 * len(output), (peak, len(output))
    whole = Accumulator.from_bytes(inputs[0]).merge(Accumulator.from_bytes(inputs[1]))
    assert Accumulator.from_bytes(output).result().metrics == whole.result().metrics
