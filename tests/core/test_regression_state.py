"""Task regression's ``Accumulator`` state against ``evaluate`` on all rows at once.

Rows are split at random into batches, the batches dealt to shards, the shards merged in a
random order (some through ``to_bytes`` / ``from_bytes``); the result must be what ``evaluate``
gives on the rows in the order they were merged. The counts, max_error, the median and every
reason are exact; sums and second moments are added in another order, so the metrics built on
them agree to 1e-12 relative, with an absolute floor where a metric is a difference of
near-equal terms (``tolerance`` says which and why). ``from_arrays`` refuses every array a
state could not have written.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from evalserve.core import Accumulator, InvalidInputError, Options, evaluate
from evalserve.core._state import MIN_FOLD
from evalserve.core._state_format import StateDocument, encode
from evalserve.core.regression._pairs import PAIR_BYTES
from evalserve.core.regression._state import (
    FIXED_BYTES,
    REGRESSION_STATE,
    RegressionState,
)

Floats = NDArray[np.float64]
Rows = tuple[Floats, Floats, Floats | None]  # labels, predictions, weights (None: unweighted)

OPTIONS: dict[str, Any] = {"n_params": 2, "full_model_variance": 0.7, "quantiles": (0.1, 0.9)}
# Correlations: C over sqrt(M2(y) M2(ŷ)) (or Lin's sum of squares), whose terms bound |C|: the
# pairwise update keeps C within a few eps of them, so the correlation within 1e-12 of 1.
CORRELATIONS = ("pearson_r", "spearman_r", "concordance_correlation")
REL = 1e-12
EXACT = ("n_samples", "max_error", "median_absolute_error")


# --- rows --------------------------------------------------------------------------------------


def _column(draw: st.DrawFn, n: int, kind: str) -> Floats:
    if kind == "ties":  # small integers: tied errors, zero labels, constant columns
        return np.array(draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n)), float)
    if kind == "offset":  # far from zero, small spread: the means nearly cancel in δ
        offset = draw(st.sampled_from([1e6, -3e9, 1e12]))
        steps = draw(st.lists(st.integers(-4, 4), min_size=n, max_size=n))
        return offset + np.array(steps, float) * draw(st.sampled_from([1e-3, 0.5, 7.0]))
    if kind == "large":
        exponents = draw(st.lists(st.integers(-3, 100), min_size=n, max_size=n))
        signs = draw(st.lists(st.sampled_from([-1.0, 1.0]), min_size=n, max_size=n))
        mantissas = draw(st.lists(st.floats(1, 10), min_size=n, max_size=n))
        column: Floats = np.array(signs) * np.array(mantissas) * 10.0 ** np.array(exponents)
        return column
    values = st.one_of(st.just(0.0), st.floats(-1e3, 1e3, allow_subnormal=False))
    return np.array(draw(st.lists(values, min_size=n, max_size=n)), float)


@st.composite
def rows(draw: st.DrawFn) -> Rows:
    n = draw(st.integers(1, 40))
    kind = draw(st.sampled_from(["ties", "floats", "offset", "large"]))
    labels = _column(draw, n, kind)
    if draw(st.booleans()) and n > 1:
        labels = np.full(n, labels[0])  # constant labels: r2 undefined
    if draw(st.booleans()):
        predictions = _column(draw, n, kind)
    else:  # a model close to the labels
        noise = _column(draw, n, "ties") * draw(st.sampled_from([1e-6, 0.1, 1.0]))
        predictions = labels + noise * np.maximum(np.abs(labels), 1.0) * 1e-3
    weighting = draw(st.sampled_from(["none", "integer", "float"]))
    if weighting == "none":
        return labels, predictions, None
    if weighting == "integer":
        weights = np.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), float)
    else:
        element = st.one_of(st.just(0.0), st.floats(0.01, 5.0))
        weights = np.array(draw(st.lists(element, min_size=n, max_size=n)), float)
    if not weights.any():
        weights[draw(st.integers(0, n - 1))] = 1.0
    return labels, predictions, weights


def _cut(data: st.DataObject, n: int) -> list[tuple[int, int]]:
    """Random contiguous batches covering rows 0..n-1, many of one row."""
    cuts = sorted(set(data.draw(st.lists(st.integers(1, max(n - 1, 1)), max_size=n))) - {n})
    bounds = [0, *cuts, n]
    return list(itertools.pairwise(bounds))


def _batch(table: Rows, start: int, stop: int, drop_weights: bool) -> Rows:
    labels, predictions, weights = table
    part = slice(start, stop)
    kept = None if weights is None or drop_weights else weights[part]
    return labels[part], predictions[part], kept


def _concatenate(batches: list[Rows]) -> Rows:
    weighted = any(weights is not None for _, _, weights in batches)
    weights = None
    if weighted:  # a batch sent without weights counts each row once
        weights = np.concatenate(
            [np.ones(len(labels)) if w is None else w for labels, _, w in batches]
        )
    labels = np.concatenate([labels for labels, _, _ in batches])
    predictions = np.concatenate([predictions for _, predictions, _ in batches])
    return labels, predictions, weights


# --- comparing a result with evaluate's ------------------------------------------------------


def tolerance(name: str, expected: dict[str, float | None], n: float) -> float:
    """The absolute difference allowed for metric ``name`` beside 1e-12 relative (n: the sum
    of the weights).

    Every sum and M2 of the state is within a few eps times log2(rows) of its one-batch value
    (non-negative terms, pairwise sums), ~1e-14 relative. A metric that is a ratio of them
    inherits that; one that subtracts near-equal terms inherits it relative to the terms,
    which is the floor here: r2 = 1 - SSE/SST (and its twins) to 1e-12 of SSE/SST = |1 - r2|;
    n ln(SSE/n) + 2p to 1e-12 of n (1 + |ln(SSE/n)|) (the log of a sum accurate to δ moves by
    δ, and n is itself a sum of weights) plus the penalty; SSE/σ² - n + 2p to 1e-12 of
    SSE/σ² + n + 2p."""
    value, mse = expected[name], expected["mse"]
    assert value is not None and mse is not None
    p, sigma2 = int(OPTIONS["n_params"]), float(OPTIONS["full_model_variance"])
    if name in ("r2", "adjusted_r2", "explained_variance"):
        return REL * abs(1 - value)
    if name in ("aic", "bic"):
        return REL * (n * (1 + abs(math.log(mse))) + 2 * p + p * abs(math.log(n)))
    if name == "mallows_cp":
        return REL * (n * mse / sigma2 + n + 2 * p)
    if name in CORRELATIONS:
        return REL
    return 0.0


def assert_matches(got: Any, expected: Any, n: float) -> None:
    assert got.task == expected.task == "regression"
    assert got.n_samples == expected.n_samples
    assert list(got.metrics) == list(expected.metrics)
    assert got.undefined == expected.undefined  # every reason, the row MAPE names included
    assert got.warnings == expected.warnings
    assert got.conventions == expected.conventions
    for name, value in expected.metrics.items():
        if value is None or name in EXACT:
            assert got.metrics[name] == value, name
        else:
            allowed = tolerance(name, expected.metrics, n)
            assert got.metrics[name] == pytest.approx(value, rel=REL, abs=allowed), name


# --- the property ------------------------------------------------------------------------------


def _merged(
    data: st.DataObject, parts: list[tuple[Accumulator, list[Rows]]]
) -> tuple[Accumulator, list[Rows]]:
    """Merge the shards pairwise in a random order, some through bytes; the rows follow."""
    while len(parts) > 1:
        first = parts.pop(data.draw(st.integers(0, len(parts) - 1)))
        second = parts.pop(data.draw(st.integers(0, len(parts) - 1)))
        accumulator = first[0].merge(second[0])
        if data.draw(st.booleans()):
            accumulator = Accumulator.from_bytes(accumulator.to_bytes())
        parts.append((accumulator, first[1] + second[1]))
    return parts[0]


@settings(max_examples=250, deadline=None)
@given(rows(), st.data())
def test_batches_and_shards_merged_in_any_order_give_the_one_shot_result(
    table: Rows, data: st.DataObject
) -> None:
    n_shards = data.draw(st.integers(1, 4))
    shards = [(Accumulator("regression", OPTIONS), list[Rows]()) for _ in range(n_shards)]
    for start, stop in _cut(data, table[0].size):
        accumulator, sent = shards[data.draw(st.integers(0, n_shards - 1))]
        # A batch may come without weights beside weighted ones: its rows count once.
        batch = _batch(table, start, stop, drop_weights=data.draw(st.integers(0, 9)) == 0)
        weights = batch[2]
        if data.draw(st.booleans()):  # predictions sent as y_score, as evaluate takes them
            accumulator.update(batch[0], batch[1], sample_weight=weights)
        else:
            accumulator.update(batch[0], y_pred=batch[1], sample_weight=weights)
        sent.append(batch)
    shards = [
        (Accumulator.from_bytes(a.to_bytes()), sent) if data.draw(st.booleans()) else (a, sent)
        for a, sent in shards
    ]
    accumulator, sent = _merged(data, shards)
    if not sent:
        with pytest.raises(InvalidInputError, match="no rows were added"):
            accumulator.result()
        return
    labels, predictions, weights = _concatenate(sent)
    if weights is not None and not weights.any():  # a batch may weigh nothing, the whole not
        with pytest.raises(InvalidInputError, match="all weights are zero"):
            accumulator.result()
        return
    expected = evaluate(
        "regression", labels, y_pred=predictions, sample_weight=weights, options=OPTIONS
    )
    n = float(labels.size if weights is None else np.sum(weights))
    assert_matches(accumulator.result(), expected, n)
    assert accumulator.n_rows == labels.size


def test_single_row_batches_of_labels_far_from_zero_keep_r2_exact() -> None:
    """Labels 1e8 + k 1e-6 (|mean| / sd ~ 1e14) sent one row at a time: the pairwise update
    subtracts means that agree in 14 digits. With the means rounded to float64 alone, r2 was
    off in its fourth digit here; kept as mean + low part it agrees with rational arithmetic
    to 1e-12."""
    rng = np.random.default_rng(11)
    labels = 1e8 + rng.integers(-5, 6, 300) * 1e-6
    predictions = labels + rng.integers(-3, 4, 300) * 1e-6
    weights = rng.uniform(0.1, 3, 300)
    accumulator = Accumulator("regression")
    for i in range(labels.size):
        accumulator.update(labels[i : i + 1], y_pred=predictions[i : i + 1],
                           sample_weight=weights[i : i + 1])  # fmt: skip
    y, y_hat, w = (
        [Fraction(float(v)) for v in column] for column in (labels, predictions, weights)
    )
    total = sum(w, Fraction(0))
    mean = sum((a * b for a, b in zip(w, y, strict=True)), Fraction(0)) / total
    sst = sum((a * (b - mean) ** 2 for a, b in zip(w, y, strict=True)), Fraction(0))
    sse = sum((a * (b - c) ** 2 for a, b, c in zip(w, y, y_hat, strict=True)), Fraction(0))
    got = accumulator.result().metrics["r2"]
    assert got == pytest.approx(float(1 - sse / sst), rel=1e-12)


def test_the_median_weighs_tied_errors_together_whatever_their_order() -> None:
    """|errors| 1 (weights 1 and 1e-20) and 3 (weight 1): the cumulative weight at 1 is half
    the total up to 1e-20, inside the allowance for rounding, so the median is (1 + 3) / 2.
    Read row by row, the answer depended on the order of the tied rows (1 when the tiny weight
    came last, found while writing the state); the distribution of distinct errors has no
    order within a tie, and batches cannot change it."""
    y_hat = np.zeros(3)
    for labels, weights in (
        ([1.0, 1.0, 3.0], [1.0, 1e-20, 1.0]),
        ([1.0, 1.0, 3.0], [1e-20, 1.0, 1.0]),
    ):
        result = evaluate("regression", labels, y_pred=y_hat, sample_weight=weights)
        assert result.metrics["median_absolute_error"] == 2.0
        accumulator = Accumulator("regression")
        for i in range(3):
            accumulator.update(
                labels[i : i + 1], y_pred=y_hat[i : i + 1], sample_weight=weights[i : i + 1]
            )
        assert accumulator.result().metrics["median_absolute_error"] == 2.0


def test_mape_names_the_row_in_the_order_the_rows_were_added() -> None:
    first = Accumulator("regression").update([1.0, 2.0], y_pred=[1.0, 1.0])
    first.update([3.0, 0.0, 0.0], y_pred=[1.0, 1.0, 1.0], sample_weight=[1.0, 0.0, 2.0])
    reason = first.result().undefined["mape"]
    expected = evaluate("regression", [1.0, 2.0, 3.0, 0.0, 0.0], y_pred=[1.0] * 5,
                        sample_weight=[1, 1, 1, 0, 2]).undefined["mape"]  # fmt: skip
    assert reason == expected
    assert "row 4" in reason  # row 3 has weight 0: its zero label does not count
    # merged accumulators: this one's rows, then the other's
    clean = Accumulator("regression").update([1.0, 2.0, 3.0], y_pred=[1.0, 1.0, 1.0])
    second = Accumulator("regression").update([5.0, 0.0], y_pred=[1.0, 1.0])
    assert "row 1:" in second.merge(clean).result().undefined["mape"]
    assert "row 4:" in clean.merge(second).result().undefined["mape"]
    assert "row 4:" in first.merge(second).result().undefined["mape"]


def test_overflow_is_none_with_the_reason_evaluate_gives() -> None:
    labels = np.array([1e200, -1e200, 0.0, 3.0, 1.7e308, -1e300])
    predictions = np.array([-1e200, 1e200, 1.0, 2.0, -1.7e308, 1.7e308])
    accumulator = Accumulator("regression", OPTIONS)
    for i in range(0, labels.size, 2):
        accumulator.update(labels[i : i + 2], y_pred=predictions[i : i + 2])
    merged = Accumulator.from_bytes(accumulator.to_bytes()).result()
    expected = evaluate("regression", labels, y_pred=predictions, options=OPTIONS)
    assert merged.undefined == expected.undefined
    assert "overflow" in merged.undefined["r2"] and "overflow" in merged.undefined["max_error"]
    assert merged.metrics["smape"] == pytest.approx(expected.metrics["smape"], rel=REL)


def test_the_state_grows_with_the_distinct_pairs_only() -> None:
    rng = np.random.default_rng(5)
    accumulator = Accumulator("regression")
    seen: set[tuple[float, float]] = set()
    for _ in range(20):
        labels = rng.integers(-100, 100, 500).astype(float)
        predictions = labels + rng.integers(-4, 5, 500)
        accumulator.update(labels, y_pred=predictions)
        seen |= set(zip(labels.tolist(), predictions.tolist(), strict=True))
    assert accumulator.n_rows == 10_000
    result = accumulator.result()
    assert result.metrics["max_error"] == 4.0
    state = REGRESSION_STATE.from_arrays(_arrays(accumulator), Options(), None)
    assert state.size == len(seen) <= 200 * 9  # labels -100..99, errors -4..4
    sample = 32 * 1000  # the sample is full: 1,000 rows of a key and three floats
    assert state.nbytes == FIXED_BYTES + PAIR_BYTES * len(seen) + sample
    # Batches' pairs wait unsorted (16 bytes each) only until they outweigh the distinct pairs
    # held (folds compact these repeated pairs): never all 10,000 rows at once.
    held = FIXED_BYTES + PAIR_BYTES * len(seen) + sample
    assert accumulator.nbytes <= held + 16 * (MIN_FOLD + 500)
    assert Accumulator.from_bytes(accumulator.to_bytes()).nbytes == state.nbytes


# --- input errors: the ones evaluate raises -------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "keywords"),
    [
        pytest.param(([1.0, 2.0], [1.0, 2.0]), {"y_pred": [1.0, 2.0]}, id="scores-and-predictions"),
        pytest.param(([1.0, 2.0],), {}, id="no-predictions"),
        pytest.param(([1.0, np.nan],), {"y_pred": [1.0, 2.0]}, id="label-nan"),
        pytest.param(([1.0, 2.0],), {"y_pred": [1.0]}, id="length"),
        pytest.param(([1.0, 2.0],), {"y_pred": [1, 2], "sample_weight": [1, -1]}, id="w-neg"),
        pytest.param((["a", "b"],), {"y_pred": [1.0, 2.0]}, id="label-str"),
    ],
)
def test_a_bad_batch_raises_what_evaluate_raises_and_changes_nothing(
    arguments: tuple[Any, ...], keywords: dict[str, Any]
) -> None:
    with pytest.raises(InvalidInputError) as expected:
        evaluate("regression", *arguments, **keywords)
    accumulator = Accumulator("regression").update([4.0], y_pred=[3.0])
    before = accumulator.to_bytes()
    with pytest.raises(InvalidInputError) as got:
        accumulator.update(*arguments, **keywords)
    assert (got.value.field, got.value.message) == (expected.value.field, expected.value.message)
    assert accumulator.to_bytes() == before


def test_class_names_are_refused_as_evaluate_refuses_them() -> None:
    with pytest.raises(InvalidInputError) as expected:
        evaluate("regression", [1.0], y_pred=[1.0], classes=["a"])
    with pytest.raises(InvalidInputError) as got:
        Accumulator("regression", classes=["a"]).update([1.0], y_pred=[1.0])
    assert (got.value.field, got.value.message) == (expected.value.field, expected.value.message)


def test_an_empty_accumulator_has_no_result() -> None:
    for accumulator in (
        Accumulator("regression"),
        Accumulator("regression").update([], y_pred=[]),
        Accumulator.from_bytes(Accumulator("regression").to_bytes()),
        Accumulator("regression").merge(Accumulator("regression")),
    ):
        assert accumulator.n_rows == 0
        with pytest.raises(InvalidInputError) as error:
            accumulator.result()
        assert error.value.field == "labels"


# --- from_arrays: every array a state could not have written is refused ----------------------


def _arrays(accumulator: Accumulator) -> dict[str, Any]:
    state = accumulator._state()
    assert isinstance(state, RegressionState)
    return state.to_arrays()


def _valid(weighted: bool = True) -> dict[str, Any]:
    # |errors| 0.5, 2, (1: weight 0), 1 and 2: distinct 0.5, 1, 2; a label 0 at row 1.
    weights = [1.0, 2.5, 0.0, 1.0] if weighted else None
    accumulator = Accumulator("regression").update(
        [1.0, 0.0, 2.0, 4.0], y_pred=[1.5, 2.0, 1.0, 5.0], sample_weight=weights
    )
    return _arrays(accumulator.update([3.0], y_pred=[1.0]))


JOINT_NAMES = (
    "positive_sum", "negative_sum", "log_sum", "log_refused_row", "prediction_min",
    "prediction_max", "cross", "predictions.mean", "predictions.mean_low", "predictions.m2",
)  # fmt: skip


def _older(arrays: dict[str, Any]) -> dict[str, Any]:
    """The arrays as a state written before the pairs and the joint statistics were kept:
    the distinct |errors| with their weights instead of the pairs."""
    older = {
        name: value
        for name, value in arrays.items()
        if not name.startswith("pairs.") and name not in JOINT_NAMES
    }
    if "pairs.masses" in arrays:
        absolute = np.abs(arrays["pairs.labels"] - arrays["pairs.predictions"])
        values, inverse = np.unique(absolute, return_inverse=True)
        older["errors.values"] = values
        older["errors.masses"] = np.bincount(inverse, weights=arrays["pairs.masses"])
    return older


def _with(name: str, value: Any, weighted: bool = True, older: bool = False) -> dict[str, Any]:
    arrays = _older(_valid(weighted)) if older else _valid(weighted)
    if value is None:
        del arrays[name]
    else:
        arrays[name] = np.asarray(value)
    return arrays


def _older_with(name: str, value: Any, weighted: bool = True) -> dict[str, Any]:
    return _with(name, value, weighted, older=True)


F, I8 = np.float64, np.int64
BAD_ARRAYS = {
    "missing": _with("sse", None),
    "dtype": _with("n_rows", np.array(5.0)),
    "dimensions": _with("weight", np.array([4.5])),
    "negative-count": _with("n_rows", np.array(-1, I8)),
    "uncountable-rows": _with("n_rows", np.array(2**60, I8)),
    "kept-above-rows": _with("n_kept", np.array(9, I8)),
    "nothing-kept": _with("n_kept", np.array(0, I8)),
    "zero-row-beyond": _with("zero_label_row", np.array(5, I8)),
    "zero-row-below": _with("zero_label_row", np.array(-2, I8)),
    "zero-row-no-zero-label": _with("label_min", np.array(0.5)),
    "weight-zero": _with("weight", np.array(0.0)),
    "weight-nan": _with("weight", np.array(np.nan)),
    "weight-inf": _with("weight", np.array(np.inf)),
    "sse-negative": _with("sse", np.array(-1.0)),
    "sse-nan": _with("sse", np.array(np.nan)),
    "mape-nan": _with("percentage_sum", np.array(np.nan)),
    "smape-above-2": _with("smape_sum", np.array(20.0)),
    "labels-min-above-max": _with("label_max", np.array(-1.0)),
    "labels-inf": _with("label_max", np.array(np.inf)),
    "mean-nan": _with("labels.mean", np.array(np.nan)),
    "low-inf": _with("residuals.mean_low", np.array(np.inf)),
    "m2-negative": _with("residuals.m2", np.array(-1e-3)),
    "m2-nan": _with("labels.m2", np.array(np.nan)),
    "m2-inf-with-mean": _with("labels.m2", np.array(np.inf)),
    "older-errors-empty": _older_with("errors.values", np.array([], F)),
    "older-errors-descending": _older_with("errors.values", np.array([1.0, 0.5, 2.0])),
    "older-errors-tied": _older_with("errors.values", np.array([0.5, 0.5, 2.0])),
    "older-errors-negative": _older_with("errors.values", np.array([-1.0, 0.5, 2.0])),
    "older-errors-nan": _older_with("errors.values", np.array([0.5, 1.0, np.nan])),
    "older-errors-2d": _older_with("errors.values", np.zeros((2, 2))),
    "older-masses-length": _older_with("errors.masses", np.array([1.0, 1.0])),
    "older-masses-zero": _older_with("errors.masses", np.array([0.0, 1.0, 3.5])),
    "older-masses-negative": _older_with("errors.masses", np.array([-1.0, 1.0, 3.5])),
    "older-masses-inf": _older_with("errors.masses", np.array([np.inf, 1.0, 3.5])),
    "older-masses-off-weight": _older_with("errors.masses", np.array([2.0, 1.0, 3.5])),
    "older-unweighted-fraction": _older_with("errors.masses", np.array([1.5, 1.5, 2.0]), False),
    "older-unweighted-kept": _older_with("n_kept", np.array(4, I8), False),
    "older-unweighted-sum": _older_with("errors.masses", np.array([1.0, 2.0, 3.0]), False),
    "older-unweighted-weight": _older_with("weight", np.array(4.5), False),
    # |errors| 0.5, 2, 1 and 2 of the pairs (0, 2), (1, 1.5), (3, 1), (4, 5), weights 2.5, 1, 1, 1
    "pairs-empty": _valid()
    | {f"pairs.{c}": np.array([], F) for c in ("labels", "predictions", "masses")},
    "pairs-descending": _with("pairs.labels", np.array([1.0, 0.0, 3.0, 4.0])),
    "pairs-tied": _valid()
    | {
        "pairs.labels": np.array([0.0, 0.0, 3.0, 4.0]),
        "pairs.predictions": np.array([2.0, 2.0, 1.0, 5.0]),
    },
    "pairs-predictions-descending": _valid()
    | {
        "pairs.labels": np.array([0.0, 0.0, 3.0, 4.0]),
        "pairs.predictions": np.array([2.0, 1.5, 1.0, 5.0]),
    },
    "pairs-nan": _with("pairs.predictions", np.array([2.0, 1.5, np.nan, 5.0])),
    "pairs-inf": _with("pairs.labels", np.array([0.0, 1.0, 3.0, np.inf])),
    "pairs-2d": _with("pairs.labels", np.zeros((2, 2))),
    "pairs-length": _with("pairs.predictions", np.array([2.0, 1.5, 1.0])),
    "pairs-span": _with("pairs.predictions", np.array([2.0, 1.5, 1.0, 4.0])),
    "pairs-too-many": _valid()
    | {f"pairs.{c}": np.arange(9, dtype=F) for c in ("labels", "predictions")}
    | {"pairs.masses": np.full(9, 5.5 / 9)},
    "pairs-masses-zero": _with("pairs.masses", np.array([0.0, 1.0, 1.0, 3.5])),
    "pairs-masses-negative": _with("pairs.masses", np.array([-1.0, 1.0, 1.0, 4.5])),
    "pairs-masses-inf": _with("pairs.masses", np.array([np.inf, 1.0, 1.0, 1.0])),
    "pairs-masses-off-weight": _with("pairs.masses", np.array([2.5, 1.0, 1.0, 2.0])),
    "pairs-unweighted-fraction": _with("pairs.masses", np.array([1.5, 0.5, 1, 1, 1]), False),
    "pairs-unweighted-sum": _with("pairs.masses", np.array([1.0, 1, 1, 1, 2]), False),
    "positive-sum-negative": _with("positive_sum", np.array(-1.0)),
    "negative-sum-nan": _with("negative_sum", np.array(np.nan)),
    "signed-sums-disagree": _with("positive_sum", np.array(100.0)),
    "log-sum-negative": _with("log_sum", np.array(-0.5)),
    "log-row-beyond": _with("log_refused_row", np.array(5, I8)),
    "log-row-below": _with("log_refused_row", np.array(-2, I8)),
    "log-row-no-value-below-minus-one": _with("log_refused_row", np.array(1, I8)),
    "log-row-dtype": _with("log_refused_row", np.array(1.0)),
    "prediction-min-above-max": _with("prediction_max", np.array(0.5)),
    "prediction-min-inf": _with("prediction_min", np.array(-np.inf)),
    "cross-nan": _with("cross", np.array(np.nan)),
    "cross-minus-inf": _with("cross", np.array(-np.inf)),
    "prediction-m2-negative": _with("predictions.m2", np.array(-1.0)),
    "prediction-mean-inf": _with("predictions.mean", np.array(np.inf)),
    "joint-missing": _with("cross", None),
    "flag-dtype": _with("weighted", np.array(1, I8)),
    **{
        f"sample-{kind}": _valid() | changes
        for kind, changes in {
            "short": {"sample.keys": _valid()["sample.keys"][:-1]},
            "row-missing": {
                f"sample.{name}": _valid()[f"sample.{name}"][:-1]
                for name in ("keys", "labels", "predictions", "weights")
            },
            "key": {"sample.keys": _valid()["sample.keys"] + 1},
            "label-outside": {"sample.labels": _valid()["sample.labels"] + 100.0},
            "prediction-outside": {"sample.predictions": _valid()["sample.predictions"] - 9.0},
            "label-nan": {"sample.labels": np.full(4, np.nan)},
            "weight-zero": {"sample.weights": np.zeros(4)},
            "unordered": {
                f"sample.{name}": _valid()[f"sample.{name}"][::-1]
                for name in ("keys", "labels", "predictions", "weights")
            },
            "keys-dtype": {"sample.keys": _valid()["sample.keys"].astype(np.float64)},
        }.items()
    },
}


def test_the_valid_arrays_are_read_back() -> None:
    for weighted in (True, False):
        arrays = _valid(weighted)
        state = REGRESSION_STATE.from_arrays(arrays, Options(), None)
        assert state.to_arrays().keys() == arrays.keys()
        for name, array in state.to_arrays().items():
            assert array.dtype == arrays[name].dtype
            np.testing.assert_array_equal(array, arrays[name])


@pytest.mark.parametrize("arrays", BAD_ARRAYS.values(), ids=BAD_ARRAYS.keys())
def test_from_arrays_refuses_what_no_state_writes(arrays: dict[str, Any]) -> None:
    with pytest.raises(InvalidInputError) as error:
        REGRESSION_STATE.from_arrays(arrays, Options(), None)
    assert error.value.field == "state"
    # and through the bytes, as a client would send them
    document = StateDocument("regression", {}, None, arrays)
    with pytest.raises(InvalidInputError) as error:
        Accumulator.from_bytes(encode(document))
    assert error.value.field == "state"


def _split_rows(n: int, seed: int) -> tuple[Floats, Floats, Floats]:
    rng = np.random.default_rng(seed)
    labels = rng.normal(10, 3, n)
    predictions = np.round(labels + rng.normal(0, 1, n), 1)  # ties among the predictions
    weights = rng.integers(0, 4, n).astype(float)  # weight 0: left out of the sample too
    return labels, predictions, weights


@pytest.mark.parametrize("seed", range(4))
def test_the_sample_of_merged_batches_is_the_sample_of_all_rows(seed: int) -> None:
    labels, predictions, weights = _split_rows(6000, seed)
    options = {"max_curve_points": 100_000}
    whole = evaluate("regression", labels, y_pred=predictions, sample_weight=weights,
                     options=options).curves["sample"]  # fmt: skip
    assert whole["actual"].size == 1000  # of the rows of positive weight, 1,000 at most
    rng = np.random.default_rng(seed + 100)
    cuts = np.sort(rng.choice(np.arange(1, 6000), 9, replace=False))
    parts = [
        Accumulator("regression", options).update(
            labels[part], y_pred=predictions[part], sample_weight=weights[part]
        )
        for part in np.split(np.arange(6000), cuts)
    ]
    first = int(rng.integers(len(parts)))
    merged = parts[first]
    for index in rng.permutation(len(parts)):
        if index != first:
            merged = merged.merge(Accumulator.from_bytes(parts[index].to_bytes()))
    assert merged.n_rows == 6000
    sample = merged.result().curves["sample"]
    for name in ("actual", "predicted", "weight"):
        np.testing.assert_array_equal(sample[name], whole[name], err_msg=name)
    # Rows of the input, with their own weights, none of weight 0.
    rows = set(zip(labels.tolist(), predictions.tolist(), weights.tolist(), strict=True))
    kept = zip(
        sample["actual"].tolist(),
        sample["predicted"].tolist(),
        sample["weight"].tolist(),
        strict=True,
    )
    assert all(row in rows and row[2] > 0 for row in kept)


def test_the_sample_is_spread_over_the_rows_and_thinned_by_the_curve_points() -> None:
    labels = np.arange(100_000, dtype=np.float64)  # the sample's labels: a uniform draw
    result = evaluate("regression", labels, y_pred=labels + 0.5)
    sample = result.curves["sample"]["actual"]
    assert sample.size == 1000 and np.unique(sample).size == 1000
    assert abs(np.mean(sample) - 50_000) < 3_000  # 3.3 standard errors of the mean
    deciles = np.histogram(sample, bins=10, range=(0, 100_000))[0]
    assert deciles.min() > 60 and deciles.max() < 140
    small = evaluate("regression", labels, y_pred=labels + 0.5, options={"max_curve_points": 10})
    np.testing.assert_array_equal(small.curves["sample"]["actual"], sample[:10])
    none = evaluate("regression", labels, y_pred=labels, options={"max_curve_points": 0})
    assert "sample" not in none.curves


def test_a_state_of_format_version_1_reads_without_a_sample() -> None:
    arrays = {name: value for name, value in _valid().items() if not name.startswith("sample.")}
    old = Accumulator.from_bytes(encode(StateDocument("regression", {}, None, arrays)))
    assert "sample" not in old.result().curves
    assert "rec" in old.result().curves
    new = Accumulator("regression").update([1.0, 2.0], y_pred=[1.5, 2.5])
    assert "sample" in new.result().curves
    assert "sample" not in old.merge(new).result().curves  # the old state's rows are unknown
    weightless = {
        name: value
        for name, value in _arrays(
            Accumulator("regression").update([1.0], y_pred=[2.0], sample_weight=[0.0])
        ).items()
        if not name.startswith("sample.")
    }
    REGRESSION_STATE.from_arrays(weightless, Options(), None)  # no rows: nothing missing


def test_a_state_with_class_names_is_refused() -> None:
    with pytest.raises(InvalidInputError) as error:
        REGRESSION_STATE.from_arrays(_valid(), Options(), ("a",))
    assert error.value.field == "state"


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(sorted(_valid())),
    st.one_of(
        st.floats(allow_nan=True, allow_infinity=True).map(lambda v: np.array(v)),
        st.integers(-(2**63), 2**63 - 1).map(lambda v: np.array(v, np.int64)),
        st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=6).map(
            lambda v: np.array(v, np.float64)
        ),
        st.booleans().map(np.array),
    ),
)
def test_a_tampered_array_is_refused_or_gives_a_result_never_a_crash(
    name: str, value: NDArray[Any]
) -> None:
    arrays = _valid() | {name: value}
    try:
        state = REGRESSION_STATE.from_arrays(arrays, Options(), None)
    except InvalidInputError as error:
        assert error.field == "state"
        return
    result = Accumulator.from_bytes(
        encode(StateDocument("regression", {}, None, state.to_arrays()))
    ).result()
    for metric, number in result.metrics.items():
        assert (number is None) == (metric in result.undefined)
        assert number is None or math.isfinite(number)
