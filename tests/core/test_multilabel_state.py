"""Task multilabel's ``Accumulator`` state (core/multilabel/_state.py): rows split into batches
and shards, merged in any order and carried through bytes, give ``evaluate``'s answer in every
field (bit for bit with counts or integer weights, to 1e-12 with float weights); mismatched
batches and arrays no state could have written are refused, naming the field."""

from __future__ import annotations

import contextlib
import itertools
import struct
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from evalserve import Accumulator, InvalidInputError, evaluate
from evalserve.core import task_spec
from evalserve.core._options import Options
from evalserve.core._state_format import StateDocument, encode
from evalserve.core.multilabel._state import MultilabelState

Arrays = dict[str, np.ndarray[Any, Any]]

# Ties inside rows and columns, some at the thresholds; "raw" draws add distinct values.
TIED = (-0.0, 0.0, 0.1, 0.25, 0.5, 0.7, 1.0)


@st.composite
def multilabel_rows(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(1, 24))
    k = draw(st.integers(1, 5))
    y = draw(arrays(np.int64, (n, k), elements=st.integers(0, 1)))
    for j in range(k):  # labels never positive and always positive
        column = draw(st.sampled_from(["drawn", "drawn", "absent", "always"]))
        if column != "drawn":
            y[:, j] = int(column == "always")
    send = draw(st.sampled_from(["scores", "predictions", "both"]))
    score = st.sampled_from(TIED) | st.floats(-3, 3, allow_subnormal=False)
    scores = draw(arrays(np.float64, (n, k), elements=score))
    predictions = draw(arrays(np.int64, (n, k), elements=st.integers(0, 1)))
    weighted = draw(st.sampled_from(["none", "integer", "float"]))
    weights = None
    if weighted == "integer":
        weights = draw(arrays(np.float64, n, elements=st.integers(0, 4).map(float)))
    elif weighted == "float":
        weights = draw(arrays(np.float64, n, elements=st.just(0.0) | st.floats(0.01, 5)))
    named = draw(st.booleans())
    return {
        "y_true": y,
        "y_score": None if send == "predictions" else scores,
        "y_pred": None if send == "scores" else predictions,
        "sample_weight": weights,
        "weighted": weighted,
        "classes": [f"label {j}" for j in range(k)] if named else None,
        "options": {"threshold": draw(st.sampled_from([0.5, 0.25]))},
    }


def _split(data: st.DataObject, n: int, most: int) -> list[slice]:
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=most)))
    return [slice(a, b) for a, b in itertools.pairwise([0, *cuts, n])]


def _columns(rows: dict[str, Any], part: slice) -> dict[str, Any]:
    names = ("y_true", "y_score", "y_pred", "sample_weight")
    return {name: None if rows[name] is None else rows[name][part] for name in names}


def _accumulator(rows: dict[str, Any]) -> Accumulator:
    return Accumulator("multilabel", rows["options"], rows["classes"])


def _close(got: Any, expected: Any, rel: float, where: str = "") -> None:
    if isinstance(expected, dict):
        assert got.keys() == expected.keys(), where
        for key in expected:
            _close(got[key], expected[key], rel, f"{where}.{key}")
    elif isinstance(expected, list):
        assert len(got) == len(expected), where
        for index, (a, b) in enumerate(zip(got, expected, strict=True)):
            _close(a, b, rel, f"{where}[{index}]")
    elif isinstance(expected, float) and rel:
        assert got == pytest.approx(expected, rel=rel, abs=1e-12), where
    else:
        assert got == expected, where


@settings(max_examples=200, deadline=None)
@given(rows=multilabel_rows(), data=st.data())
def test_any_split_and_merge_order_gives_the_one_shot_answer(
    rows: dict[str, Any], data: st.DataObject
) -> None:
    n = rows["y_true"].shape[0]
    one_row_batches = data.draw(st.booleans())
    shards = []
    for shard in _split(data, n, 3):
        accumulator = _accumulator(rows)
        if one_row_batches:
            batches = [slice(i, i + 1) for i in range(shard.start, shard.stop)]
        else:
            inner = _split(data, shard.stop - shard.start, 3)
            batches = [slice(shard.start + b.start, shard.start + b.stop) for b in inner]
        for batch in batches:
            accumulator.update(**_columns(rows, batch))
        shards.append(accumulator)
    merged = _accumulator(rows)
    for index in data.draw(st.permutations(range(len(shards)))):
        piece = shards[index]
        if data.draw(st.booleans()):
            piece = Accumulator.from_bytes(piece.to_bytes())
        merged = merged.merge(piece)
    merged = Accumulator.from_bytes(merged.to_bytes())
    assert merged.n_rows == n
    try:
        expected = evaluate(
            "multilabel", **_columns(rows, slice(None)), classes=rows["classes"],
            options=rows["options"],
        ).to_dict()  # fmt: skip
    except InvalidInputError as error:  # every weight zero
        with pytest.raises(InvalidInputError) as raised:
            merged.result()
        assert raised.value.field == error.field == "weights"
        return
    _close(merged.result().to_dict(), expected, 1e-12 if rows["weighted"] == "float" else 0.0)


def test_a_large_stream_matches_bit_for_bit() -> None:
    """Thousands of rows of continuous and tied scores, integer weights, blocks of any size."""
    rng = np.random.default_rng(7)
    y = (rng.random((3_000, 6)) < [0.0, 0.02, 0.3, 0.5, 0.9, 1.0]).astype(np.int64)
    scores = rng.random((3_000, 6))
    scores[:, 3:] = np.round(scores[:, 3:], 1)
    weights = rng.integers(0, 5, 3_000).astype(np.float64)
    accumulator = Accumulator("multilabel")
    for part in np.array_split(np.arange(3_000), 37):
        accumulator.update(y[part], scores[part], sample_weight=weights[part])
    expected = evaluate("multilabel", y, scores, sample_weight=weights)
    assert accumulator.result().to_dict() == expected.to_dict()
    assert expected.warnings  # the absent and always-present labels were named


def test_many_labels_row_by_row_match_bit_for_bit() -> None:
    """k = 12: the per-row sums (LRAP) of one row alone and of a block of rows agree."""
    rng = np.random.default_rng(11)
    y = (rng.random((300, 12)) < 0.3).astype(np.int64)
    scores = np.where(rng.random((300, 12)) < 0.5, np.round(rng.random((300, 12)), 1), 0.3)
    scores += rng.random((300, 12)) * (rng.random((300, 12)) < 0.3)
    weights = rng.integers(0, 3, 300).astype(np.float64)
    accumulator = Accumulator("multilabel")
    for row in range(300):
        one = slice(row, row + 1)
        accumulator.update(y[one], scores[one], sample_weight=weights[one])
    expected = evaluate("multilabel", y, scores, sample_weight=weights)
    assert accumulator.result().to_dict() == expected.to_dict()


def test_the_state_holds_one_entry_per_distinct_score_of_each_label() -> None:
    rng = np.random.default_rng(3)
    y = (rng.random((200, 4)) < 0.4).astype(np.int64)
    continuous = Accumulator("multilabel").update(y, rng.random((200, 4)))
    rounded = Accumulator("multilabel")
    for _ in range(5):
        rounded.update(y, np.round(rng.random((200, 4)), 1))
    state = continuous._state()
    assert isinstance(state, MultilabelState) and state.size >= 800
    # Batches wait as they came (their matrices copied: 9 bytes a cell here, less than the 24
    # of a merged entry) until their columns are merged.
    waiting = sum(part.nbytes for part in state.raw.parts)
    assert waiting == 9 * 800 and continuous.nbytes > waiting
    compacted = state.compact()
    assert compacted.nbytes == sum(array.nbytes for array in state.to_arrays().values())
    assert state.to_arrays()["columns.scores"].size == 800  # every cell a distinct score
    rounded_state = rounded._state()
    assert rounded_state is not None
    assert rounded_state.to_arrays()["columns.scores"].size <= 4 * 11
    assert rounded_state.compact().nbytes < compacted.nbytes / 4
    assert "bytes" in task_spec("multilabel").state.size_doc


# --------------------------------------------------------------------------------------------
# Batches that cannot be combined, and the accumulator's own errors


@pytest.mark.parametrize(
    ("first", "second", "field", "match"),
    [
        (
            {"y_true": [[0, 1]], "y_score": [[0.2, 0.8]]},
            {"y_true": [[0, 1, 1]], "y_score": [[0.2, 0.8, 0.4]]},
            "labels",
            "same label columns",
        ),
        (
            {"y_true": [[0, 1]], "y_score": [[0.2, 0.8]]},
            {"y_true": [[0, 1]], "y_score": [[0.2, 0.8]], "y_pred": [[0, 1]]},
            "predictions",
            "every batch or with none",
        ),
        (
            {"y_true": [[0, 1]], "y_pred": [[0, 1]]},
            {"y_true": [[0, 1]], "y_score": [[0.2, 0.8]], "y_pred": [[0, 1]]},
            "scores",
            "every batch or with none",
        ),
    ],
)
def test_batches_that_differ_are_refused(
    first: dict[str, Any], second: dict[str, Any], field: str, match: str
) -> None:
    streamed = Accumulator("multilabel").update(**first)
    with pytest.raises(InvalidInputError, match=match) as raised:
        streamed.update(**second).result()
    assert raised.value.field == field
    other = Accumulator("multilabel").update(**second)
    with pytest.raises(InvalidInputError, match=match) as raised:
        Accumulator("multilabel").update(**first).merge(other).result()
    assert raised.value.field == field


def test_a_batch_is_checked_as_evaluate_checks_it() -> None:
    named = Accumulator("multilabel", classes=["a", "b"])
    for bad, field in (
        ({"y_true": [[0, 2]], "y_score": [[0.1, 0.2]]}, "labels"),
        ({"y_true": [[0, 1]], "y_score": [[0.1, np.nan]]}, "scores"),
        ({"y_true": [[0, 1]]}, "scores"),
        ({"y_true": [[0, 1, 1]], "y_score": [[0.1, 0.2, 0.3]]}, "classes"),
        ({"y_true": [[0, 1]], "y_score": [[0.1, 0.2]], "sample_weight": [-1]}, "weights"),
    ):
        with pytest.raises(InvalidInputError) as caught:
            evaluate("multilabel", **bad, classes=["a", "b"])
        with pytest.raises(InvalidInputError) as raised:
            named.update(**bad)
        assert raised.value.field == caught.value.field == field
        assert raised.value.message == caught.value.message
    assert named.n_rows == 0


def test_an_empty_accumulator_has_no_result() -> None:
    empty = Accumulator("multilabel").update(np.zeros((0, 3)), np.zeros((0, 3)))
    with pytest.raises(InvalidInputError, match="no rows were added") as raised:
        empty.result()
    assert raised.value.field == "labels"
    assert Accumulator.from_bytes(empty.to_bytes()).n_rows == 0


def test_weightless_batches_count_rows_and_nothing_else() -> None:
    y, scores = [[0, 1], [1, 1]], [[0.2, 0.3], [0.5, 0.5]]
    weightless = Accumulator("multilabel").update(y, scores, sample_weight=[0, 0])
    with pytest.raises(InvalidInputError, match="all weights are zero") as raised:
        Accumulator.from_bytes(weightless.to_bytes()).result()
    assert raised.value.field == "weights"
    weightless.update(y, scores, sample_weight=[2, 1])
    expected = evaluate("multilabel", y + y, scores + scores, sample_weight=[0, 0, 2, 1])
    assert weightless.result().to_dict() == expected.to_dict()


def test_the_threshold_applies_when_a_batch_arrives() -> None:
    y, scores = [[1, 0], [0, 1]], [[0.3, 0.2], [0.4, 0.35]]
    low = Accumulator("multilabel", {"threshold": 0.3}).update(y, scores)
    expected = evaluate("multilabel", y, scores, options={"threshold": 0.3})
    assert low.result().to_dict() == expected.to_dict()
    assert (
        low.result().metrics["precision_micro"]
        != evaluate("multilabel", y, scores).metrics["precision_micro"]
    )


# --------------------------------------------------------------------------------------------
# Arrays no state could have written


def _good_arrays(weighted: bool = False) -> Arrays:
    accumulator = Accumulator("multilabel").update(
        [[0, 1, 1], [1, 0, 1], [0, 0, 1], [1, 1, 1]],
        [[0.1, 0.9, 0.5], [0.8, 0.2, 0.5], [0.3, 0.3, 0.7], [0.8, 0.6, 0.1]],
        sample_weight=[1.0, 2.5, 1.0, 0.5] if weighted else None,
    )
    state = accumulator._state()
    assert state is not None
    return {name: np.array(array) for name, array in state.to_arrays().items()}


def _bytes(arrays: Arrays, classes: tuple[str, ...] | None = None) -> bytes:
    return encode(StateDocument("multilabel", {}, classes, arrays))


def _changed(name: str, value: Any, weighted: bool = False) -> Arrays:
    arrays = _good_arrays(weighted)
    if value is None:
        del arrays[name]
    else:
        arrays[name] = np.asarray(value, dtype=arrays.get(name, np.zeros(0)).dtype)
    return arrays


def _edited(name: str, edit: Callable[[Any], None], weighted: bool = False) -> Arrays:
    arrays = _good_arrays(weighted)
    edit(arrays[name])
    return arrays


def _set(index: Any, value: Any) -> Callable[[Any], None]:
    def edit(array: Any) -> None:
        array[index] = value

    return edit


def _without_the_last_label() -> Arrays:
    arrays = _good_arrays()
    offsets = arrays["columns.offsets"]
    offsets[-1] = offsets[-2]
    for name in ("columns.scores", "columns.positive", "columns.negative"):
        arrays[name] = arrays[name][: offsets[-1]]
    return arrays


REFUSED = [
    (_changed("columns.scores", None), "is missing"),
    ({**_good_arrays(), "extra": np.zeros(2)}, "no multilabel state has: 'extra'"),
    (_changed("n_rows", 0), "at least one row"),
    ({**_good_arrays(), "sent.scores": np.array(False)}, "neither scores nor predictions"),
    ({**_good_arrays(), "labels.tp": np.zeros((3, 1))}, "has 2 dimensions"),
    ({**_good_arrays(), "columns.offsets": np.zeros(4)}, "has dtype float64"),
    (_changed("columns.offsets", [0]), "holds no label"),
    (_edited("columns.offsets", _set(0, 1)), "does not run from 0"),
    (_edited("columns.offsets", _set(1, 99)), "outside"),
    (_edited("columns.offsets", _set(slice(1, 3), [5, 2])), "not ascending"),
    (_without_the_last_label(), "leaves a label without entries"),
    (_edited("columns.scores", _set(1, -5.0)), "not strictly ascending within a label"),
    (_edited("columns.scores", _set(0, np.inf)), "not finite"),
    (_edited("columns.positive", _set(0, -1.0)), "negative or not finite"),
    (_edited("columns.positive", _set(0, 0.5)), "holds a fraction"),
    (_edited("columns.positive", _set(0, 1e9)), "above what its rows could weigh"),
    (_edited("columns.positive", _set(0, 1e-200), weighted=True), "below the smallest weight"),
    (_edited("samples.weight", _set(0, 0.0)), "holds a zero mass"),
    (_changed("columns.negative", [1.0]), "has 1 entries"),
    (_changed("samples.cells", [[0, 1]]), "expected (m, 3)"),
    (_edited("samples.cells", _set((0, 0), 4)), "counts that 3 labels cannot have"),
    (_edited("samples.cells", _set((0, 0), -1)), "counts that 3 labels cannot have"),
    (_edited("samples.cells", lambda a: a.__setitem__(slice(None), a[::-1].copy())), "ascending"),
    (_edited("samples.rows", _set(0, 0)), "between 1 and 'n_rows'"),
    (_edited("samples.rows", _set(0, 2**62)), "between 1 and 'n_rows'"),
    (_edited("samples.lrap", _set(0, 1.5)), "outside (0, 1]"),
    (_edited("samples.lrap", _set(-1, 0.0)), "outside (0, 1]"),
    (_edited("labels.tp", _set(0, 0.0)), "disagree on which labels have positives"),
    (_edited("labels.fp", _set(0, 3.0)), "its counts disagree"),
    (_edited("samples.coverage", _set(0, 4.0)), "its counts disagree"),
    (_edited("columns.negative", _set(0, 2.0)), "its counts disagree"),
    (_edited("samples.coverage", lambda a: a.fill(0.0)), "disagree on the rows with a true"),
    ({**_good_arrays(), "weighted": np.array(1)}, "has dtype int64"),
]


@pytest.mark.parametrize(("arrays", "match"), REFUSED)
def test_arrays_no_state_could_have_written_are_refused(arrays: Arrays, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match.replace("(", r"\(").replace(")", r"\)")) as e:
        Accumulator.from_bytes(_bytes(arrays))
    assert e.value.field == "state"


def test_good_arrays_are_read_back() -> None:
    for weighted in (False, True):
        restored = Accumulator.from_bytes(_bytes(_good_arrays(weighted)))
        assert restored.n_rows == 4 and restored.result().metrics["n_samples"] == 4


def test_a_state_for_other_class_names_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="holds 3 label columns") as raised:
        Accumulator.from_bytes(_bytes(_good_arrays(), ("a", "b")))
    assert raised.value.field == "state"
    named = Accumulator.from_bytes(_bytes(_good_arrays(), ("a", "b", "c")))
    assert [row.class_name for row in named.result().per_class] == ["a", "b", "c"]


def test_a_weightless_state_holds_nothing_but_rows() -> None:
    weightless = Accumulator("multilabel").update([[0, 1]], [[0.2, 0.3]], sample_weight=[0])
    state = weightless._state()
    assert state is not None
    arrays = state.to_arrays()
    assert Accumulator.from_bytes(_bytes(arrays)).n_rows == 1
    for name, value in (("labels.tp", [1.0, 0.0]), ("weighted", False)):
        changed = {**arrays, name: np.array(value)}
        with pytest.raises(InvalidInputError, match="no row of weight > 0"):
            Accumulator.from_bytes(_bytes(changed))


ARRAY_VALUES = st.sampled_from([0, 1, 2, 3, 5, -1, 2**62]).map(float) | st.sampled_from(
    [0.5, 1e-300, 1e300, np.inf, np.nan, -0.0]
)


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_any_arrays_are_refused_or_evaluated_never_a_crash(data: st.DataObject) -> None:
    """Replace arrays by others of any dtype, shape and values: the reader refuses them with
    field ``state`` or the result comes out (or says which input it lacks)."""
    arrays = _good_arrays(data.draw(st.booleans()))
    for name in data.draw(st.lists(st.sampled_from(sorted(arrays)), min_size=1, max_size=3)):
        dtype = data.draw(st.sampled_from([np.float64, np.int64, np.bool_]))
        shape = data.draw(st.sampled_from([(), (0,), (1,), (3,), (4,), (5,), (2, 3), (4, 3)]))
        values = data.draw(arrays_of(shape))
        with np.errstate(invalid="ignore", over="ignore"):
            arrays[name] = np.asarray(values).astype(dtype)
    try:
        restored = Accumulator.from_bytes(_bytes(arrays))
    except InvalidInputError as error:
        assert error.field == "state"
        return
    with contextlib.suppress(InvalidInputError):
        restored.result()


def arrays_of(shape: tuple[int, ...]) -> st.SearchStrategy[np.ndarray[Any, Any]]:
    return arrays(np.float64, shape, elements=ARRAY_VALUES)


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_mutated_bytes_with_a_valid_checksum_never_crash(data: st.DataObject) -> None:
    good = bytearray(_bytes(_good_arrays(data.draw(st.booleans()))))
    body = good[:-4]
    for _ in range(data.draw(st.integers(1, 4))):
        body[data.draw(st.integers(0, len(body) - 1))] = data.draw(st.integers(0, 255))
    mutated = bytes(body) + struct.pack("<I", zlib.crc32(bytes(body)))
    try:
        restored = Accumulator.from_bytes(mutated)
    except InvalidInputError:
        return
    with contextlib.suppress(InvalidInputError):
        restored.result()


def test_output_of_the_state_is_compute_multilabel_of_the_rows() -> None:
    """The kind's own entry points, as the accumulator calls them."""
    kind = task_spec("multilabel").state
    options = Options(threshold=0.4)
    y = [[1, 0, 1], [0, 1, 1]]
    scores = [[0.9, 0.3, 0.4], [0.2, 0.5, 0.45]]
    first = kind.of_batch(y[:1], scores[:1], None, None, options, None)
    second = kind.of_batch(y[1:], scores[1:], None, None, options, None)
    state = kind.from_arrays(second.merge(first).to_arrays(), options, None)
    expected = evaluate("multilabel", y, scores, options=options)
    got = state.output(options, None)
    assert got.sink.metrics == expected.metrics
    assert got.sink.warnings == expected.warnings
    assert got.per_class == expected.per_class
