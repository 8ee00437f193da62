"""The multiclass ``Accumulator``: rows split into batches and shards, merged in any order and
sent through bytes, give what ``evaluate`` gives on all the rows at once.

Hypothesis draws small, tie-heavy problems (2 to 5 classes, some absent, classes by index or by
name, with and without hard predictions, probability rows and other scores), cuts them into
batches (one-row batches included) and shards, sends some shards and the merged accumulator
through ``to_bytes`` / ``from_bytes``, merges the shards in a random order and compares every
field of the result (metrics, undefined reasons, warnings, per-class rows with their intervals,
curves, conventions) with ``evaluate`` on the rows in that order: equal (==) without weights
and with integer weights (zeros included), within 1e-12 relative with float weights, whose
sums depend on their order. The state's arrays are checked on the way back: every array a state
could not have written is refused with field ``state``, never a crash.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from evalserve.core import Accumulator, InvalidInputError, evaluate
from evalserve.core._options import parse_options
from evalserve.core._state_format import decode, encode
from evalserve.core.multiclass._state import MULTICLASS_STATE, MulticlassState

Floats = NDArray[np.float64]

OPTIONS = {"top_k": [1, 2, 3, 5], "calibration_bins": 4, "beta": 2.0}
LEVELS = (0.0, 0.1, 0.25, 0.5, 0.75, 1.0)
NAMES = ("cat", "dog", "emu", "gnu", "yak")
FLOAT_REL = 1e-12
# Metrics that cancel to 0 (a perfect Brier score, a calibrated bin) keep ~1e-16 of rounding.
FLOAT_ABS = 1e-14
properties = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --- problems ---------------------------------------------------------------------------------


class Problem:
    """Rows and how to cut them: ``cuts`` split the rows into batches, ``shards`` the batches
    into accumulators, ``order`` is the order the shards are merged in, ``via_bytes`` the
    shards that go through bytes before the merge."""

    def __init__(self, draw: st.DrawFn, weights_kind: str) -> None:
        n = draw(st.integers(1, 18))
        k = draw(st.integers(2, 5))
        self.k = k
        present = draw(st.lists(st.integers(0, k - 1), min_size=1, max_size=k, unique=True))
        labels = np.array(draw(st.lists(st.sampled_from(present), min_size=n, max_size=n)))
        kind = draw(st.sampled_from(("levels", "probabilities", "continuous", "logits")))
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        if kind == "continuous":
            scores = rng.random((n, k))
        elif kind == "logits":
            scores = rng.normal(size=(n, k)).round(1)
        else:
            cells = draw(st.lists(st.sampled_from(LEVELS), min_size=n * k, max_size=n * k))
            scores = np.array(cells).reshape(n, k)
        if kind == "probabilities":
            scores[scores.sum(axis=1) == 0, 0] = 1.0
            scores /= scores.sum(axis=1, keepdims=True)
            if draw(st.booleans()):  # one row off 1: named by its place among all rows
                scores[draw(st.integers(0, n - 1))] *= 1.5
        self.scores = scores
        self.weights: Floats | None = None
        if weights_kind == "integers":
            weights = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
            self.weights = np.array(weights, dtype=np.float64)
            if not self.weights.any():
                self.weights[draw(st.integers(0, n - 1))] = 1.0
        elif weights_kind == "floats":
            self.weights = rng.uniform(0.05, 3.0, n) * (rng.random(n) > 0.2)
            if not self.weights.any():
                self.weights[0] = 0.7
        self.named = draw(st.booleans())
        self.classes = NAMES[:k] if self.named else None
        self.labels: Any = np.array(NAMES)[labels] if self.named else labels
        self.predictions: Any = None
        if draw(st.booleans()):
            predicted = np.array(draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n)))
            self.predictions = np.array(NAMES)[predicted] if self.named else predicted
        if draw(st.booleans()):
            self.cuts = list(range(1, n))  # one row per batch
        else:
            self.cuts = sorted(draw(st.sets(st.integers(1, max(1, n - 1)), max_size=n)) - {n})
        batches = len(self.cuts) + 1
        shard_cuts = sorted(draw(st.sets(st.integers(1, max(1, batches - 1)), max_size=4)))
        self.shards = [c for c in shard_cuts if c < batches]
        n_shards = len(self.shards) + 1
        self.order = draw(st.permutations(range(n_shards)))
        self.via_bytes = draw(st.sets(st.integers(0, n_shards - 1)))
        self.options = {
            **OPTIONS,
            "auc_interval": draw(st.sampled_from(("logit", "wald"))),
            "max_curve_points": draw(st.sampled_from((0, 3, 1000))),  # none, thinned, whole
        }

    def rows(self, rows: slice | NDArray[np.intp]) -> dict[str, Any]:
        return {
            "y_true": self.labels[rows],
            "y_score": self.scores[rows],
            "y_pred": None if self.predictions is None else self.predictions[rows],
            "sample_weight": None if self.weights is None else self.weights[rows],
        }


@st.composite
def problems(draw: st.DrawFn, weights_kind: str) -> Problem:
    return Problem(draw, weights_kind)


def accumulate(problem: Problem) -> tuple[Accumulator, NDArray[np.intp]]:
    """The merged accumulator, and the rows in the order it holds them."""
    n = problem.scores.shape[0]
    edges = [0, *problem.cuts, n]
    batches = [slice(a, b) for a, b in itertools.pairwise(edges)]
    bounds = [0, *problem.shards, len(batches)]
    shards = []
    for index, (first, last) in enumerate(itertools.pairwise(bounds)):
        accumulator = Accumulator("multiclass", problem.options, problem.classes)
        for batch in batches[first:last]:
            returned = accumulator.update(**problem.rows(batch))
            assert returned is accumulator
        if index in problem.via_bytes:
            accumulator = Accumulator.from_bytes(accumulator.to_bytes())
        shards.append((accumulator, np.arange(edges[first], edges[last])))
    merged, rows = shards[problem.order[0]]
    for index in problem.order[1:]:
        other, other_rows = shards[index]
        merged = merged.merge(other)
        rows = np.concatenate((rows, other_rows))
    return Accumulator.from_bytes(merged.to_bytes()), rows


# --- comparing results ------------------------------------------------------------------------


def assert_same(ours: Any, theirs: Any, rel: float, where: str = "result") -> None:
    """Equal structure; numbers equal (rel 0) or within ``rel``."""
    if isinstance(ours, Mapping):
        assert isinstance(theirs, Mapping), where
        assert list(ours) == list(theirs), where
        for key in ours:
            assert_same(ours[key], theirs[key], rel, f"{where}.{key}")
    elif isinstance(ours, list | tuple):
        assert isinstance(theirs, list | tuple) and len(ours) == len(theirs), where
        for index, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            assert_same(a, b, rel, f"{where}[{index}]")
    elif isinstance(ours, float) and rel and theirs is not None:
        assert isinstance(theirs, float), where
        assert math.isclose(ours, theirs, rel_tol=rel, abs_tol=FLOAT_ABS), (where, ours, theirs)
    else:
        assert type(ours) is type(theirs) and ours == theirs, (where, ours, theirs)


def check(problem: Problem, rel: float) -> None:
    accumulator, rows = accumulate(problem)
    assert accumulator.n_rows == problem.scores.shape[0]
    expected = evaluate(
        "multiclass", **problem.rows(rows), options=problem.options, classes=problem.classes
    )
    assert_same(accumulator.result().to_dict(), expected.to_dict(), rel)


@properties
@given(problems("none"))
def test_counts_give_evaluate_exactly(problem: Problem) -> None:
    check(problem, 0.0)


@properties
@given(problems("integers"))
def test_integer_weights_give_evaluate_exactly(problem: Problem) -> None:
    check(problem, 0.0)


@properties
@given(problems("floats"))
def test_float_weights_give_evaluate_to_rounding(problem: Problem) -> None:
    check(problem, FLOAT_REL)


def test_continuous_scores_of_many_rows_give_evaluate_exactly() -> None:
    rng = np.random.default_rng(7)
    n, k = 3000, 4
    labels = rng.integers(0, k, n)
    logits = rng.normal(size=(n, k))
    logits[np.arange(n), labels] += 1.0
    scores = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    weights = rng.integers(0, 4, n).astype(np.float64)
    for sample_weight in (None, weights):
        accumulator = Accumulator("multiclass")
        for start in range(0, n, 700):
            part = slice(start, start + 700)
            accumulator.update(
                labels[part], scores[part],
                sample_weight=None if sample_weight is None else sample_weight[part],
            )  # fmt: skip
        expected = evaluate("multiclass", labels, scores, sample_weight=sample_weight)
        result = Accumulator.from_bytes(accumulator.to_bytes()).result()
        assert_same(result.to_dict(), expected.to_dict(), 0.0)
        assert result.curves["roc_macro"]["fpr"].size > 100  # the curve is there, not thinned


# --- errors -----------------------------------------------------------------------------------


def test_an_empty_accumulator_has_no_result() -> None:
    with pytest.raises(InvalidInputError) as error:
        Accumulator("multiclass").result()
    assert error.value.field == "labels"


def test_rows_of_weight_zero_only_give_the_error_of_evaluate() -> None:
    accumulator = Accumulator("multiclass")
    accumulator.update([0, 1], [[0.2, 0.8], [0.6, 0.4]], sample_weight=[0.0, 0.0])
    accumulator.update([1], [[0.5, 0.5]], sample_weight=[0.0])
    with pytest.raises(InvalidInputError) as ours:
        accumulator.result()
    with pytest.raises(InvalidInputError) as theirs:
        evaluate("multiclass", [0, 1, 1], [[0.2, 0.8], [0.6, 0.4], [0.5, 0.5]],
                 sample_weight=[0.0, 0.0, 0.0])  # fmt: skip
    assert (ours.value.field, ours.value.message) == (theirs.value.field, theirs.value.message)
    assert ours.value.message == "all weights are zero; nothing to evaluate"
    # A batch of weight zero counts its rows and leaves no other trace.
    accumulator.update([0], [[0.9, 0.1]], sample_weight=[2.0])
    assert accumulator.result().n_samples == 4


def test_rows_of_weight_zero_take_no_part_whatever_their_scores() -> None:
    # A weightless row whose scores are all negative, or whose squares overflow, is no
    # probability row, but it weighs nothing: the metrics are those of the other rows.
    labels, weights = [0, 1, 1], [0.0, 1.0, 2.0]
    others = evaluate("multiclass", labels[1:], [[0.3, 0.7], [0.6, 0.4]], sample_weight=[1, 2])
    for odd in ([-1.0, -2.0], [1e200, 0.0]):
        scores = [odd, [0.3, 0.7], [0.6, 0.4]]
        expected = evaluate("multiclass", labels, scores, sample_weight=weights)
        for name in ("log_loss", "brier_score", "expected_calibration_error"):
            assert expected.metrics[name] == others.metrics[name]
        accumulator = Accumulator("multiclass")
        for row in range(3):
            accumulator.update(labels[row : row + 1], scores[row : row + 1],
                               sample_weight=weights[row : row + 1])  # fmt: skip
        assert_same(accumulator.result().to_dict(), expected.to_dict(), 0.0)


def test_a_bad_batch_raises_the_error_of_evaluate_and_changes_nothing() -> None:
    accumulator = Accumulator("multiclass").update([0, 1], [[0.3, 0.7], [0.1, 0.9]])
    before = accumulator.to_bytes()
    bad: dict[str, Any] = {"y_true": [0, 2], "y_score": [[0.3, 0.7], [0.1, 0.9]]}
    with pytest.raises(InvalidInputError) as ours:
        accumulator.update(**bad)
    with pytest.raises(InvalidInputError) as theirs:
        evaluate("multiclass", bad["y_true"], bad["y_score"])
    assert (ours.value.field, ours.value.message) == (theirs.value.field, theirs.value.message)
    assert accumulator.to_bytes() == before


def _state(labels: Any, scores: Any, **rows: Any) -> MulticlassState:
    state: MulticlassState = MULTICLASS_STATE.of_batch(
        labels, scores, rows.get("y_pred"), rows.get("sample_weight"), parse_options(None), None
    )
    return state


def test_batches_of_different_widths_do_not_merge() -> None:
    three = _state([0, 2], [[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])
    four = _state([3], [[0.1, 0.2, 0.3, 0.4]])
    with pytest.raises(InvalidInputError) as error:
        three.merge(four)
    assert error.value.field == "scores"
    assert "3 and 4 score columns" in error.value.message
    first = Accumulator("multiclass").update([0, 2], [[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])
    second = Accumulator("multiclass").update([3], [[0.1, 0.2, 0.3, 0.4]])
    with pytest.raises(InvalidInputError) as error:
        first.merge(second).result()
    assert error.value.field == "scores"


def test_predictions_in_some_batches_only_do_not_merge() -> None:
    with_predictions = _state([0, 1], [[0.6, 0.4], [0.3, 0.7]], y_pred=[0, 0])
    without = _state([1], [[0.5, 0.5]])
    for first, second in ((with_predictions, without), (without, with_predictions)):
        with pytest.raises(InvalidInputError) as error:
            first.merge(second)
        assert error.value.field == "predictions"


def test_classes_fix_the_width_of_every_batch() -> None:
    accumulator = Accumulator("multiclass", classes=["a", "b", "c"])
    with pytest.raises(InvalidInputError) as error:
        accumulator.update(["a"], [[0.5, 0.5]])
    assert error.value.field == "scores"


# --- reading states back ----------------------------------------------------------------------


def _arrays(weights: list[float] | None = None) -> dict[str, NDArray[Any]]:
    state = _state(
        [0, 1, 2, 1, 0], [[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.1, 0.8], [0.6, 0.2, 0.2],
                          [0.3, 0.3, 0.4]],
        sample_weight=weights,
    )  # fmt: skip
    return state.to_arrays()


def _read(arrays: Mapping[str, NDArray[Any]]) -> MulticlassState:
    state: MulticlassState = MULTICLASS_STATE.from_arrays(arrays, parse_options(None), None)
    return state


def _refused(arrays: Mapping[str, NDArray[Any]]) -> str:
    with pytest.raises(InvalidInputError) as error:
        _read(arrays)
    assert error.value.field == "state"
    return error.value.message


def test_a_state_reads_back_as_written() -> None:
    for weights in (None, [1.0, 2.0, 0.0, 0.5, 3.0]):
        arrays = _arrays(weights)
        again = _read(arrays).to_arrays()
        assert list(again) == list(arrays)
        for name, array in arrays.items():
            assert again[name].dtype == array.dtype and np.array_equal(again[name], array), name


def _changed(name: str, value: NDArray[Any], weights: list[float] | None = None) -> str:
    arrays = _arrays(weights)
    arrays[name] = value
    return _refused(arrays)


def test_missing_and_unknown_arrays_are_refused() -> None:
    for name in _arrays():
        arrays = _arrays()
        del arrays[name]
        assert "is missing" in _refused(arrays)
    arrays = _arrays()
    arrays["extra"] = np.zeros(1)
    assert "extra" in _refused(arrays)


def test_wrong_dtypes_and_shapes_are_refused() -> None:
    arrays = _arrays()
    for name, array in arrays.items():
        other = np.int64 if array.dtype == np.float64 else np.float64
        assert "dtype" in _changed(name, array.astype(other))
        if array.ndim and name != "sums.squares":  # an exact sum takes as many parts as it needs
            assert _changed(name, array[:-1] if array.shape[0] else np.zeros(1, array.dtype))
        assert "dimensions" in _changed(name, array[None] if array.ndim < 2 else array[0])


def test_unsorted_or_repeated_scores_are_refused() -> None:
    values = _arrays()["blocks.values"]
    assert "ascending" in _changed("blocks.values", values[::-1].copy())
    repeated = values.copy()
    repeated[1] = repeated[0]
    assert "ascending" in _changed("blocks.values", repeated)
    bad = values.copy()
    bad[0] = np.nan
    assert "finite" in _changed("blocks.values", bad)


def test_masses_no_rows_could_have_are_refused() -> None:
    mass = _arrays()["blocks.mass"]
    for value in (-1.0, 0.0, 0.5, np.inf, 1e300):
        bad = mass.copy()
        bad[0] = value
        assert _changed("blocks.mass", bad)
    # Weighted: halves are fine, but every class weighs the same in every column.
    weighted = _arrays([1.0, 2.0, 0.0, 0.5, 3.0])["blocks.mass"]
    bad = weighted.copy()
    bad[0] *= 2
    assert "columns" in _changed("blocks.mass", bad, [1.0, 2.0, 0.0, 0.5, 3.0])


def test_inconsistent_counts_are_refused() -> None:
    arrays = _arrays()
    matrix = arrays["matrix"].copy()
    matrix[0, 0] += 1
    assert "matrix" in _changed("matrix", matrix)
    ranks = arrays["ranks"].copy()
    ranks[0, 0] += 6  # more rows than there are
    assert "ranks" in _changed("ranks", ranks)
    deep = MULTICLASS_STATE.of_batch(
        [0, 1], [[0.5, 0.3, 0.2], [0.1, 0.8, 0.1]], None, None, parse_options(OPTIONS), None
    ).to_arrays()
    deep["ranks"][2, 2] = 1.0  # 2 classes above and 3 equal: more than the 3 classes
    with pytest.raises(InvalidInputError, match="ranks"):
        MULTICLASS_STATE.from_arrays(deep, parse_options(OPTIONS), None)
    assert _changed("n_rows", np.array(6))
    assert _changed("n_rows", np.array(-1))
    bounds = arrays["blocks.bounds"].copy()
    bounds[3], bounds[4] = bounds[4], bounds[3]
    assert _changed("blocks.bounds", bounds)
    assert _changed("blocks.bounds", np.zeros(5, dtype=np.int64))
    assert _changed("check.row", np.array(5))
    on_one = _arrays()
    on_one["check.row"], on_one["check.row_sum"] = np.array(2), np.array(1.0)
    assert "off 1" in _refused(on_one)  # a state names only a row whose sum is off 1
    assert _changed("check.low", np.array(np.nan))
    assert _changed("sums.squares", np.array([-1.0]))
    assert _changed("sums.squares", np.array([1e308, 1e308]))
    assert _changed("sums.correct", arrays["sums.correct"] + 0.5)
    assert _changed("sums.confidence", np.full((4, 1), 1e6))


def test_states_for_other_options_or_classes_are_refused() -> None:
    arrays = _arrays()
    with pytest.raises(InvalidInputError) as error:
        MULTICLASS_STATE.from_arrays(arrays, parse_options({"top_k": [2]}), None)
    assert error.value.field == "state"
    with pytest.raises(InvalidInputError) as error:
        MULTICLASS_STATE.from_arrays(arrays, parse_options(None), ("a", "b"))
    assert error.value.field == "state"


_DTYPES = (np.float64, np.int64, np.bool_)
_VALUES = (0.0, 1.0, -1.0, 0.5, 2.0, 3.0, 1e300, -1e300, np.nan, np.inf, 5e-324, 7.0, 1e-7)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(sorted(_arrays())),
    st.sampled_from(_DTYPES),
    st.lists(st.integers(0, 4), max_size=2),
    st.lists(st.sampled_from(_VALUES), min_size=1, max_size=25),
    st.booleans(),
)
def test_any_array_either_reads_into_a_working_state_or_is_refused(
    name: str, dtype: type, shape: list[int], values: list[float], weighted: bool
) -> None:
    weights = [1.0, 2.0, 0.0, 0.5, 3.0] if weighted else None
    labels = [0, 1, 2, 1, 0]
    scores = [[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.1, 0.8], [0.6, 0.2, 0.2], [0.3, 0.3, 0.4]]
    written = Accumulator("multiclass").update(labels, scores, sample_weight=weights)
    document = decode(written.to_bytes())
    with np.errstate(invalid="ignore", over="ignore"):
        raw = np.resize(np.array(values), int(np.prod(shape, dtype=np.int64))).reshape(shape)
        document.arrays[name] = raw.astype(dtype)
    try:
        accumulator = Accumulator.from_bytes(encode(document))
    except InvalidInputError as error:
        assert error.field == "state"
        return
    # Accepted: a state that works, whose result is a result (or an error of its input).
    try:
        accumulator.result()
    except InvalidInputError as error:
        assert error.field in ("labels", "weights")
    assert Accumulator.from_bytes(accumulator.to_bytes()).n_rows == accumulator.n_rows


def test_the_state_grows_with_distinct_scores_not_rows() -> None:
    rng = np.random.default_rng(3)
    accumulator = Accumulator("multiclass")
    for _ in range(20):
        labels = rng.integers(0, 3, 500)
        scores = rng.integers(0, 5, (500, 3)) / 4.0
        accumulator.update(labels, scores)
    # 3 columns x 3 classes x at most 5 distinct scores (16 bytes each), whatever the 10,000
    # rows; beside them the 3 x 3 matrix, one row of ranks and the bins' sums.
    assert accumulator.n_rows == 10_000
    assert accumulator.to_bytes() == Accumulator.from_bytes(accumulator.to_bytes()).to_bytes()
    # Batches wait as they came (32 bytes a row here) only until they outweigh the folded
    # state (folds compact these repeated scores): the state never holds every row.
    assert accumulator.nbytes <= 10_000 * 32 // 4
    assert Accumulator.from_bytes(accumulator.to_bytes()).nbytes <= 45 * 16 + 2000
