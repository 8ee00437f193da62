"""``Accumulator``: batches and shards in any split and merge order give ``evaluate``'s answer
(task binary here; each task's own state has its tests beside its task's), the accumulator's
own rules (empty batches, mismatches, the state cap), and what ``result`` adds (baseline,
coverage)."""

from __future__ import annotations

import itertools
import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalserve import Accumulator, InvalidInputError, StateTooLargeError, evaluate
from evalserve.core.binary._state import BinaryState
from evalserve.core.multiclass._state import MulticlassState


@st.composite
def binary_rows(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(1, 40))
    labels = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    scores = draw(
        st.lists(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.7, 1.0]), min_size=n, max_size=n)
    )
    weighted = draw(st.sampled_from(["none", "integer", "float"]))
    weights: list[int] | list[float] | None = None
    if weighted == "integer":
        weights = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    elif weighted == "float":
        weights = draw(st.lists(st.just(0.0) | st.floats(0.01, 5), min_size=n, max_size=n))
    predictions = draw(st.none() | st.lists(st.integers(0, 1), min_size=n, max_size=n))
    return {
        "labels": np.array(labels, dtype=float),
        "scores": np.array(scores),
        "weights": None if weights is None else np.array(weights, dtype=float),
        "predictions": None if predictions is None else np.array(predictions, dtype=float),
        "weighted": weighted,
    }


def _split(data: st.DataObject, n: int, most: int) -> list[slice]:
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=most)))
    bounds = [0, *cuts, n]
    return [slice(a, b) for a, b in itertools.pairwise(bounds)]


def _accumulate(rows: dict[str, Any], parts: list[slice]) -> Accumulator:
    accumulator = Accumulator("binary")
    for part in parts:
        accumulator.update(
            rows["labels"][part],
            rows["scores"][part],
            y_pred=None if rows["predictions"] is None else rows["predictions"][part],
            sample_weight=None if rows["weights"] is None else rows["weights"][part],
        )
    return accumulator


def _close(got: Any, expected: Any, rel: float, path: str = "") -> None:
    """``got`` equals ``expected`` (floats within ``rel`` relative when it is not zero)."""
    if isinstance(expected, dict):
        assert got.keys() == expected.keys(), path
        for key in expected:
            _close(got[key], expected[key], rel, f"{path}.{key}")
    elif isinstance(expected, list):
        assert len(got) == len(expected), path
        for index, (a, b) in enumerate(zip(got, expected, strict=True)):
            _close(a, b, rel, f"{path}[{index}]")
    elif isinstance(expected, float) and rel:
        # Counts at a threshold are differences of sums of weights, exact to ~1e-16 of the
        # total; a proportion's standard error near 0 or 1 (a square root) turns that into
        # ~1e-8: the documented exception to the 1e-12 bound.
        floor = 1e-7 if path.endswith("std_error") else 1e-12
        assert got == pytest.approx(expected, rel=rel, abs=floor), path
    else:
        assert got == expected, path


@settings(max_examples=150)
@given(rows=binary_rows(), data=st.data())
def test_any_split_and_merge_order_gives_the_one_shot_answer(
    rows: dict[str, Any], data: st.DataObject
) -> None:
    n = rows["labels"].size
    shards = _split(data, n, 3)
    accumulators = []
    for shard in shards:
        inner = range(shard.start, shard.stop)
        parts = (
            [slice(inner[0] + p.start, inner[0] + p.stop) for p in _split(data, len(inner), 3)]
            if len(inner)
            else []
        )
        accumulators.append(_accumulate(rows, parts))
    order = data.draw(st.permutations(range(len(accumulators))))
    merged = Accumulator("binary")
    for index in order:
        piece = accumulators[index]
        if data.draw(st.booleans()):
            piece = Accumulator.from_bytes(piece.to_bytes())
        merged = merged.merge(piece)
    try:
        expected = evaluate(
            "binary", rows["labels"], rows["scores"], y_pred=rows["predictions"],
            sample_weight=rows["weights"],
        ).to_dict()  # fmt: skip
    except InvalidInputError as error:
        with pytest.raises(InvalidInputError) as raised:
            merged.result()
        assert raised.value.field == error.field
        return
    assert merged.n_rows == n
    _close(merged.result().to_dict(), expected, 1e-12 if rows["weighted"] == "float" else 0.0)


def test_update_returns_the_accumulator_and_skips_empty_batches() -> None:
    accumulator = Accumulator("binary")
    assert accumulator.update([], []) is accumulator
    assert accumulator.n_rows == 0
    accumulator.update([0, 1, 1], [0.2, 0.9, 0.4]).update([], [], sample_weight=[])
    assert accumulator.n_rows == 3
    assert accumulator.result().metrics["roc_auc"] == 1.0


def test_merge_leaves_both_operands_as_they_were() -> None:
    first = Accumulator("binary").update([0, 1], [0.3, 0.6])
    second = Accumulator("binary").update([1, 0], [0.2, 0.8])
    merged = first.merge(second)
    assert (first.n_rows, second.n_rows, merged.n_rows) == (2, 2, 4)
    assert first.result().metrics["roc_auc"] == 1.0
    assert merged.result().metrics["roc_auc"] == 0.25


def test_an_empty_accumulator_has_no_result() -> None:
    with pytest.raises(InvalidInputError, match="no rows were added") as raised:
        Accumulator("binary").result()
    assert raised.value.field == "labels"


@pytest.mark.parametrize(
    ("other", "field"),
    [
        (lambda: Accumulator("binary", {"threshold": 0.3}), "options"),
        (lambda: Accumulator("regression"), "task"),
    ],
)
def test_merging_different_accumulators_is_refused(
    other: Callable[[], Accumulator], field: str
) -> None:
    with pytest.raises(InvalidInputError, match="cannot merge") as raised:
        Accumulator("binary").merge(other())
    assert raised.value.field == field


def test_merging_something_else_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="expected an Accumulator"):
        Accumulator("binary").merge("state")  # type: ignore[arg-type]


def test_predictions_in_some_batches_only_are_refused() -> None:
    accumulator = Accumulator("binary").update([0, 1], [0.2, 0.7], y_pred=[0, 1])
    with pytest.raises(InvalidInputError, match="every batch or with none") as raised:
        accumulator.update([0, 1], [0.1, 0.9]).result()
    assert raised.value.field == "predictions"


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"task": "ranking"}, "task"),
        ({"task": "binary", "options": {"beta": 0}}, "options.beta"),
        ({"task": "binary", "classes": "ab"}, "classes"),
        ({"task": "binary", "classes": [1, 2]}, "classes"),
        ({"task": "binary", "max_state_bytes": -1}, "max_state_bytes"),
    ],
)
def test_bad_construction_names_the_argument(arguments: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        Accumulator(**arguments)
    assert raised.value.field == field


def test_a_bad_batch_leaves_the_accumulator_as_it_was() -> None:
    accumulator = Accumulator("binary").update([0, 1], [0.2, 0.7])
    with pytest.raises(InvalidInputError) as raised:
        accumulator.update([0, 2], [0.1, 0.9])
    assert raised.value.field == "labels"
    assert accumulator.n_rows == 2
    assert accumulator.result().metrics["roc_auc"] == 1.0


def test_the_state_cap_refuses_growth_and_keeps_the_state() -> None:
    accumulator = Accumulator("binary", max_state_bytes=16 * 100)
    accumulator.update(np.arange(100) % 2, np.linspace(0, 1, 100))
    assert accumulator.nbytes == 1600
    # Repeated scores add no entry, so they still fit.
    accumulator.update(np.arange(100) % 2, np.linspace(0, 1, 100))
    with pytest.raises(StateTooLargeError, match="over its cap of 1600 bytes") as raised:
        accumulator.update([0, 1], [2.0, 3.0])
    assert raised.value.field == "state"
    assert accumulator.n_rows == 200
    big = Accumulator("binary").update([0, 1, 0], [5.0, 6.0, 7.0])
    capped = Accumulator("binary", max_state_bytes=1600).update([0, 1], [0.0, 1.0])
    with pytest.raises(StateTooLargeError):
        capped.merge(Accumulator("binary").update(np.arange(100) % 2, np.arange(100) + 0.5))
    assert capped.merge(big).n_rows == 5
    with pytest.raises(StateTooLargeError):
        Accumulator.from_bytes(accumulator.to_bytes(), max_state_bytes=100)


def test_result_runs_the_drift_test_and_reports_coverage() -> None:
    rng = np.random.default_rng(3)
    labels = rng.random(2_000) < 0.4
    scores = rng.random(2_000) + labels * 0.5
    baseline = {"roc_auc": 0.5, "roc_auc_variance": 1e-4}
    coverage = {"n_predictions": 4_000, "label_delay_seconds": 60.0}
    accumulator = Accumulator("binary")
    for part in np.array_split(np.arange(2_000), 7):
        accumulator.update(labels[part], scores[part])
    expected = evaluate("binary", labels, scores, baseline=baseline, coverage=coverage)
    got = accumulator.result(baseline=baseline, coverage=coverage)
    assert got.to_dict() == expected.to_dict()
    assert got.coverage is not None and got.coverage.label_coverage == 0.5


WEIGHTED_BATCHES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "binary": (
        {"y_true": [0, 1], "y_score": [0.2, 0.9]},
        {"y_true": [0, 1, 1], "y_score": [0.3, 0.1, 0.8]},
    ),
    "multiclass": (
        {"y_true": [0, 2], "y_score": [[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]]},
        {"y_true": [1, 0, 2], "y_score": [[0.1, 0.6, 0.3], [0.5, 0.4, 0.1], [0.3, 0.3, 0.4]]},
    ),
    "multilabel": (
        {"y_true": [[0, 1], [1, 1]], "y_score": [[0.2, 0.9], [0.4, 0.6]]},
        {"y_true": [[1, 0], [0, 1], [1, 1]], "y_score": [[0.7, 0.1], [0.3, 0.8], [0.9, 0.2]]},
    ),
    "regression": (
        {"y_true": [0.0, 2.0], "y_pred": [1.0, 2.0]},
        {"y_true": [1.0, 2.0, 3.0], "y_pred": [1.5, 2.0, 2.5]},
    ),
}


def _joined(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    return {name: [*first[name], *second[name]] for name in first}


@pytest.mark.parametrize("task", sorted(WEIGHTED_BATCHES))
def test_a_batch_of_weight_zero_is_taken_and_only_the_whole_must_weigh(task: str) -> None:
    empty, full = WEIGHTED_BATCHES[task]
    zero, ones = [0.0] * len(empty["y_true"]), [1.0] * len(full["y_true"])
    weightless = Accumulator(task).update(**empty, sample_weight=zero)
    with pytest.raises(InvalidInputError, match="all weights are zero") as raised:
        weightless.result()
    assert raised.value.field == "weights"
    restored = Accumulator.from_bytes(weightless.to_bytes())
    assert restored.n_rows == len(zero)
    whole = evaluate(task, **_joined(empty, full), sample_weight=[*zero, *ones]).to_dict()
    for merged in (
        restored.merge(Accumulator(task).update(**full, sample_weight=ones)),
        Accumulator(task).update(**empty, sample_weight=zero).update(**full, sample_weight=ones),
    ):
        assert merged.result().to_dict() == whole


@pytest.mark.parametrize(
    ("task", "first", "second", "field"),
    [
        (
            "binary",
            {"y_true": [0, 1], "y_score": [0.2, 0.8], "y_pred": [0, 1]},
            {"y_true": [1, 0], "y_score": [0.6, 0.1]},
            "predictions",
        ),
        (
            "multiclass",
            {"y_true": [0, 1], "y_score": [[0.7, 0.3], [0.2, 0.8]]},
            {"y_true": [2], "y_score": [[0.1, 0.2, 0.7]]},
            "scores",
        ),
        (
            "multilabel",
            {"y_true": [[0, 1]], "y_score": [[0.3, 0.9]]},
            {"y_true": [[0, 1, 1]], "y_score": [[0.3, 0.9, 0.5]]},
            "labels",
        ),
    ],
)
def test_a_batch_that_cannot_merge_is_refused_when_it_comes(
    task: str, first: dict[str, Any], second: dict[str, Any], field: str
) -> None:
    """Refused at its ``update`` (not at a later merge, which would break the accumulator),
    and the rows before it still evaluate."""
    accumulator = Accumulator(task).update(**first)
    before = accumulator.result().to_dict()
    with pytest.raises(InvalidInputError) as raised:
        accumulator.update(**second)
    assert raised.value.field == field
    assert accumulator.n_rows == len(first["y_true"])
    assert accumulator.result().to_dict() == before


def test_a_batch_is_neither_changed_nor_needed_writable() -> None:
    """Batches may be read-only views (raw bytes off the wire) and stay as they were."""
    rows = np.frombuffer(np.array([0.2, 0.3, 0.5, -0.0, 0.4, 0.6]).tobytes()).reshape(2, 3)
    accumulator = Accumulator("multiclass").update([2, 1], rows)
    one_row = Accumulator("multiclass").update([2], rows[:1])
    assert not rows.flags.writeable and np.signbit(rows[1, 0])
    assert accumulator.result().to_dict() == evaluate("multiclass", [2, 1], rows).to_dict()
    assert one_row.n_rows == 1


def test_errors_cross_process_boundaries_whole() -> None:
    # A Dask worker's error reaches the client pickled: field and message must survive.
    for error in (InvalidInputError("scores", "row 3 is nan"), StateTooLargeError("state", "big")):
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is type(error)
        assert (copy.field, copy.message, str(copy)) == (error.field, error.message, str(error))


def test_multiclass_rows_that_all_wait_are_read_as_the_one_shot_path_reads_them() -> None:
    """A multiclass stream whose batches all still wait unfolded is answered from its rows as
    they came (the one-shot path: a third of the time and half the memory of folding them
    into blocks first), and stays so for a second result; binary compacts for its result."""
    rng = np.random.default_rng(4)
    labels = rng.integers(0, 4, 2000)
    scores = rng.dirichlet(np.ones(4), 2000)
    accumulator = Accumulator("multiclass")
    for start in range(0, 2000, 200):
        accumulator.update(labels[start : start + 200], scores[start : start + 200])
    want = evaluate("multiclass", labels, scores).to_dict()
    assert accumulator.result().to_dict() == want
    state = accumulator._state()
    assert isinstance(state, MulticlassState)
    assert state.blocks.size == 0 and state.raw.parts  # not folded
    assert accumulator.result().to_dict() == want
    binary = Accumulator("binary")
    for start in range(0, 2000, 200):
        binary.update(labels[start : start + 200] % 2, scores[start : start + 200, 0])
    binary.result()
    folded = binary._state()
    assert isinstance(folded, BinaryState) and not folded.scores.waiting.parts  # folded, kept
