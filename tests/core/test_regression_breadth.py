"""The quantile, logarithmic and agreement metrics of task regression: pinball_loss_{q},
mean_squared_log_error, pearson_r, spearman_r and concordance_correlation.

References: scikit-learn's ``mean_pinball_loss`` (Koenker & Bassett 1978's check function) and
``mean_squared_log_error`` with sample weights; scipy's ``pearsonr`` and ``spearmanr``
(Spearman 1904, ties at their average rank), which take no weights: with integer weights they
are compared on the rows repeated, the frequency-weight convention. Lin's concordance
correlation coefficient (Lin 1989) is checked by hand in exact fractions on a worked example and
against a numpy transcription of his formula (population moments). Hypothesis checks tiny
inputs, constant columns, repeated rows and merged batches.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from numpy.typing import NDArray
from scipy import stats as scipy_stats
from sklearn import metrics as skm

from evalserve.core import Accumulator, Options, evaluate
from evalserve.core._state_format import StateDocument, encode
from evalserve.core.regression import compute_regression
from evalserve.core.regression._agreement import OLDER_STATE, pinball_name
from tests.core.test_regression import CASES, Case
from tests.core.test_regression_state import _arrays, _older

Floats = NDArray[np.float64]
Metrics = dict[str, float | None]

REL = 1e-9
QUANTILES = (1e-05, 0.05, 0.1, 0.25, 0.5, 0.9, 0.99)
CORRELATIONS = ("pearson_r", "spearman_r", "concordance_correlation")


def close(value: float, rel: float = REL) -> Any:
    return pytest.approx(value, rel=rel, abs=rel)


def metrics(labels: Any, predictions: Any, weights: Any = None, **options: Any) -> Metrics:
    output = compute_regression(
        labels, predictions, sample_weight=weights, options=Options(**options)
    )
    return output.sink.metrics


def reasons(labels: Any, predictions: Any, weights: Any = None, **options: Any) -> dict[str, str]:
    output = compute_regression(
        labels, predictions, sample_weight=weights, options=Options(**options)
    )
    return output.sink.undefined


def repeated(case: Case) -> tuple[Floats, Floats]:
    """The rows, each repeated its (integer) weight times."""
    counts = np.ones(case.y.size, int) if case.w is None else case.w.astype(int)
    return np.repeat(case.y, counts), np.repeat(case.y_hat, counts)


def _integer_weighted(case: Case) -> bool:
    return case.w is None or bool((case.w == np.round(case.w)).all())


# --- pinball loss: scikit-learn ------------------------------------------------------------


@pytest.mark.parametrize("case", CASES)
def test_pinball_loss_matches_scikit_learn(case: Case) -> None:
    got = metrics(case.y, case.y_hat, case.w, quantiles=QUANTILES)
    for q in QUANTILES:
        expected = skm.mean_pinball_loss(case.y, case.y_hat, alpha=q, sample_weight=case.w)
        assert got[f"pinball_loss_{q}"] == close(expected), q


def test_pinball_names_follow_the_option() -> None:
    # q written as head_metric_names writes k; no option, no pinball metric.
    assert [pinball_name(q) for q in (0.9, 0.5, 1e-05, 0.123456789)] == [
        "pinball_loss_0.9", "pinball_loss_0.5", "pinball_loss_1e-05", "pinball_loss_0.123456789",
    ]  # fmt: skip
    got = metrics([1.0, 2.0], [1.5, 1.5])
    assert not [name for name in got if name.startswith("pinball")]
    # Under-prediction costs q: y = 2, ŷ = 0 gives 2q; over-prediction 2(1 - q).
    got = metrics([2.0, 0.0], [0.0, 2.0], [1.0, 0.0], quantiles=(0.9, 0.1))
    assert got["pinball_loss_0.9"] == close(1.8) and got["pinball_loss_0.1"] == close(0.2)
    assert [name for name in got if name.startswith("pinball")] == [
        "pinball_loss_0.1", "pinball_loss_0.9",
    ]  # fmt: skip
    # at q = 0.5 the pinball loss is half the mean absolute error
    got = metrics([1.0, 5.0, -2.0], [0.5, 7.0, 1.0], quantiles=(0.5,))
    assert got["mae"] is not None and got["pinball_loss_0.5"] == close(got["mae"] / 2)


# --- mean squared log error: scikit-learn, and null where it raises --------------------------


@pytest.mark.parametrize("case", CASES)
def test_mean_squared_log_error_matches_scikit_learn(case: Case) -> None:
    # Shifted above -1 wherever they are not: scikit-learn's domain.
    y, y_hat = np.abs(case.y), np.abs(case.y_hat) * 0.5
    got = metrics(y, y_hat, case.w)["mean_squared_log_error"]
    expected = skm.mean_squared_log_error(y, y_hat, sample_weight=case.w)
    assert got == close(expected)
    # Values in (-1, 0) are in the domain: ln(1 + x) < 0.
    y_low, y_hat_low = np.tanh(case.y) * 0.999, np.tanh(case.y_hat) * 0.99
    got = metrics(y_low, y_hat_low, case.w)["mean_squared_log_error"]
    expected = skm.mean_squared_log_error(y_low, y_hat_low, sample_weight=case.w)
    assert got == close(expected)


def test_mean_squared_log_error_is_null_where_scikit_learn_raises() -> None:
    for labels, predictions in (([0.5, -1.0, 2.0], [1.0, 1.0, 1.0]), ([0.5, 1, 2], [1, -3, 1])):
        with pytest.raises(ValueError, match="less than or equal to -1"):
            skm.mean_squared_log_error(labels, predictions)
        got = metrics(labels, predictions)
        assert got["mean_squared_log_error"] is None
        reason = reasons(labels, predictions)["mean_squared_log_error"]
        assert "row 1" in reason and "<= -1" in reason
        assert got["mse"] is not None  # the other metrics stay
    # A row of weight 0 is absent (scikit-learn still raises for it).
    got = metrics([0.5, -2.0, 2.0], [1.0, 1.0, 1.0], [1.0, 0.0, 1.0])
    expected = skm.mean_squared_log_error([0.5, 2.0], [1.0, 1.0])
    assert got["mean_squared_log_error"] == close(expected)
    # The row named is the request's, counted in the order the rows were added.
    accumulator = Accumulator("regression").update([1.0, 2.0], y_pred=[1.0, 1.0])
    accumulator.update([3.0, -5.0], y_pred=[1.0, 1.0])
    assert "row 3" in accumulator.result().undefined["mean_squared_log_error"]


# --- Pearson and Spearman: scipy, unweighted and on repeated rows ----------------------------


@pytest.mark.parametrize("case", [c for c in CASES if _integer_weighted(c.values[0])])
def test_pearson_and_spearman_match_scipy(case: Case) -> None:
    got = metrics(case.y, case.y_hat, case.w)
    y, y_hat = repeated(case)
    if y.size < 2 or y.min() == y.max() or y_hat.min() == y_hat.max():
        for name in ("pearson_r", "spearman_r"):
            assert got[name] is None
        return
    assert got["pearson_r"] == close(float(scipy_stats.pearsonr(y, y_hat).statistic))
    assert got["spearman_r"] == close(float(scipy_stats.spearmanr(y, y_hat).statistic))


def test_spearman_with_fractional_weights_uses_the_average_rank_of_the_weight() -> None:
    # Frequency weights: a tie group's rank is the weight ranked before it plus half its own
    # (the average position of its rows, less a constant 1/2 that no correlation sees). Scaling
    # every weight by a constant changes nothing; weights 2 and 0.5 x 4 of the same rows agree.
    rng = np.random.default_rng(4)
    y = rng.integers(0, 6, 30).astype(float)
    y_hat = y + rng.integers(-2, 3, 30).astype(float)
    w = rng.uniform(0.1, 3.0, 30)

    def ranks(values: Floats) -> Floats:
        out = np.empty(values.size)
        for v in np.unique(values):
            at = values == v
            out[at] = w[values < v].sum() + w[at].sum() / 2
        return out

    a, b = ranks(y), ranks(y_hat)
    mean_a, mean_b = np.average(a, weights=w), np.average(b, weights=w)
    cov = np.sum(w * (a - mean_a) * (b - mean_b))
    rho = float(cov) / math.sqrt(np.sum(w * (a - mean_a) ** 2) * np.sum(w * (b - mean_b) ** 2))
    assert metrics(y, y_hat, w)["spearman_r"] == close(rho)
    assert metrics(y, y_hat, w * 7.5)["spearman_r"] == close(rho)
    halves = metrics(np.repeat(y, 4), np.repeat(y_hat, 4), np.repeat(w / 4, 4))
    assert halves["spearman_r"] == close(rho)


# --- Lin's concordance correlation coefficient ---------------------------------------------


def lin_ccc(y: Floats, y_hat: Floats, w: Floats | None = None) -> float:
    """Lin (1989), eq. (2) with his moment estimates over n (not n - 1): 2 s_xy / (s_x² + s_y² +
    (x̄ - ȳ)²), here with frequency weights."""
    w = np.ones(y.size) if w is None else w
    n = w.sum()
    mx, my = np.sum(w * y) / n, np.sum(w * y_hat) / n
    sxy = np.sum(w * (y - mx) * (y_hat - my)) / n
    sx2, sy2 = np.sum(w * (y - mx) ** 2) / n, np.sum(w * (y_hat - my) ** 2) / n
    return float(2 * sxy / (sx2 + sy2 + (mx - my) ** 2))


def test_concordance_correlation_by_hand_and_by_formula() -> None:
    # Worked example: y = 1, 2, 3, 4 and ŷ = 2, 3, 5, 4 (a shift and a swap).
    # x̄ = 5/2, ȳ = 7/2; s_x² = (9/4 + 1/4 + 1/4 + 9/4)/4 = 5/4; s_y² = (9/4 + 1/4 + 9/4 +
    # 1/4)/4 = 5/4; s_xy = ((-3/2)(-3/2) + (-1/2)(-1/2) + (1/2)(3/2) + (3/2)(1/2))/4 = 1;
    # CCC = 2 / (5/4 + 5/4 + 1) = 4/7, while Pearson's r = 1 / (5/4) = 4/5: the shift of 1
    # costs agreement, not correlation.
    y, y_hat = [1.0, 2.0, 3.0, 4.0], [2.0, 3.0, 5.0, 4.0]
    sx2 = sy2 = Fraction(5, 4)
    sxy = Fraction(1)
    ccc = 2 * sxy / (sx2 + sy2 + (Fraction(5, 2) - Fraction(7, 2)) ** 2)
    assert ccc == Fraction(4, 7)
    got = metrics(y, y_hat)
    assert got["concordance_correlation"] == close(float(ccc), 1e-15)
    assert got["pearson_r"] == close(0.8, 1e-15)
    assert lin_ccc(np.array(y), np.array(y_hat)) == close(float(ccc), 1e-15)
    # Perfect agreement is 1, a mirror -1; a scale change costs agreement too.
    assert metrics(y, y)["concordance_correlation"] == 1.0
    assert metrics(y, [5 - v for v in y])["concordance_correlation"] == close(-1.0, 1e-15)
    assert metrics(y, [2 * v for v in y])["concordance_correlation"] == close(
        lin_ccc(np.array(y), 2 * np.array(y)), 1e-15
    )
    # The formula in numpy on the seeded cases (with their weights: frequency weights).
    for case in (c.values[0] for c in CASES):
        got_ccc = metrics(case.y, case.y_hat, case.w)["concordance_correlation"]
        kept = case.kept
        y_k, y_hat_k = case.y[kept], case.y_hat[kept]
        if kept.sum() < 2 or y_k.min() == y_k.max() or y_hat_k.min() == y_hat_k.max():
            assert got_ccc is None
            continue
        w = None if case.w is None else case.w[kept]
        assert got_ccc == close(lin_ccc(y_k, y_hat_k, w)), case.name


# --- undefined: tiny inputs, constant columns ------------------------------------------------


def test_fewer_than_two_rows_or_a_constant_column_leave_the_correlations_null() -> None:
    one = reasons([3.0], [2.0])
    weighted_one = reasons([3.0, 1.0], [2.0, 5.0], [0.0, 4.0])
    for reason in (one, weighted_one):
        for name in CORRELATIONS:
            assert "at least 2 rows" in reason[name]
    labels = reasons([2.0, 2.0, 2.0], [1.0, 2.0, 3.0])
    predictions = reasons([1.0, 2.0, 3.0], [5.0, 5.0, 5.0])
    for name in CORRELATIONS:
        assert labels[name].startswith("Labels are constant")
        assert predictions[name].startswith("Predictions are constant")
    got = metrics([1.0, 2.0], [3.0, 1.0])  # two rows: r = -1 exactly
    assert got["pearson_r"] == close(-1.0, 1e-15) and got["spearman_r"] == close(-1.0, 1e-15)
    # Lin with a constant column would be 0 (x̄ ≠ ȳ) or 0/0: null, like the two others.
    assert metrics([1.0, 2.0, 3.0], [5.0, 5.0, 5.0])["concordance_correlation"] is None


small = st.floats(-1e3, 1e3, allow_nan=False, allow_subnormal=False)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 2).flatmap(
        lambda n: st.tuples(
            arrays(np.float64, n, elements=small),
            arrays(np.float64, n, elements=small),
            arrays(np.float64, n, elements=st.sampled_from([0.0, 0.5, 1.0, 3.0])),
        )
    )
)
def test_tiny_inputs_give_a_value_or_null_with_a_reason(rows: tuple[Floats, ...]) -> None:
    y, y_hat, w = rows
    if not w.any():
        w[0] = 1.0
    got = metrics(y, y_hat, w, quantiles=(0.1, 0.5))
    why = reasons(y, y_hat, w, quantiles=(0.1, 0.5))
    kept = w > 0
    distinct = kept.sum() == 2 and y[kept][0] != y[kept][1] and y_hat[kept][0] != y_hat[kept][1]
    if distinct and "underflows" in why.get("pearson_r", ""):
        distinct = False  # values 1e-300 apart: their variance is below float64's range
    for name in CORRELATIONS:
        if distinct:  # two distinct rows: a perfect (anti-)correlation
            value = got[name]
            assert value is not None and abs(value) <= 1
            assert abs(got["pearson_r"] or 0) == close(1.0, 1e-15)
            assert abs(got["spearman_r"] or 0) == close(1.0, 1e-15)
        else:
            assert got[name] is None and why[name]
    for q in (0.1, 0.5):
        assert got[f"pinball_loss_{q}"] is not None


@settings(max_examples=150, deadline=None)
@given(
    arrays(np.float64, st.integers(2, 20), elements=small),
    st.sampled_from(["labels", "predictions"]),
    st.floats(-50, 50, allow_nan=False),
)
def test_a_constant_column_is_null_with_a_reason(
    column: Floats, which: str, constant: float
) -> None:
    fixed = np.full(column.size, constant)
    y, y_hat = (fixed, column) if which == "labels" else (column, fixed)
    why = reasons(y, y_hat)
    for name in CORRELATIONS:
        assert "constant" in why[name]


# --- weights and merges ------------------------------------------------------------------


@st.composite
def weighted_rows(draw: st.DrawFn) -> tuple[Floats, Floats, Floats]:
    n = draw(st.integers(1, 25))
    values = st.one_of(st.integers(-4, 4).map(float), small)
    y = draw(arrays(np.float64, n, elements=values))
    y_hat = draw(arrays(np.float64, n, elements=values))
    w = draw(arrays(np.float64, n, elements=st.integers(0, 3).map(float)))
    if not w.any():
        w[0] = 1.0
    return y, y_hat, w


NEW = ("mean_squared_log_error", "pinball_loss_0.1", "pinball_loss_0.9", *CORRELATIONS)


@settings(max_examples=150, deadline=None)
@given(weighted_rows())
def test_integer_weights_equal_repeated_rows(rows: tuple[Floats, Floats, Floats]) -> None:
    y, y_hat, w = rows
    counts = w.astype(int)
    weighted = metrics(y, y_hat, w, quantiles=(0.1, 0.9))
    copies = metrics(np.repeat(y, counts), np.repeat(y_hat, counts), quantiles=(0.1, 0.9))
    for name in NEW:
        value = weighted[name]
        if value is None:
            assert copies[name] is None, name
        else:
            assert copies[name] == close(value, 1e-12), name


@settings(max_examples=150, deadline=None)
@given(weighted_rows(), st.data())
def test_merged_batches_give_the_one_shot_values(
    rows: tuple[Floats, Floats, Floats], data: st.DataObject
) -> None:
    y, y_hat, w = rows
    w = w * data.draw(st.sampled_from([1.0, 0.37]))  # integer or fractional weights
    options = {"quantiles": (0.1, 0.9)}
    cuts = sorted(set(data.draw(st.lists(st.integers(1, max(y.size - 1, 1)), max_size=5))))
    parts = np.split(np.arange(y.size), [c for c in cuts if c < y.size])
    accumulators = [
        Accumulator("regression", options).update(y[p], y_pred=y_hat[p], sample_weight=w[p])
        for p in parts
    ]
    merged = accumulators[0]
    for other in accumulators[1:]:
        merged = merged.merge(Accumulator.from_bytes(other.to_bytes()))
    got = merged.result()
    expected = evaluate("regression", y, y_pred=y_hat, sample_weight=w, options=options)
    assert got.undefined == expected.undefined
    for name in NEW:
        value = expected.metrics[name]
        if value is None:
            assert got.metrics[name] is None
        else:
            assert got.metrics[name] == pytest.approx(value, rel=1e-12, abs=1e-12), name


def test_pearson_of_single_row_batches_far_from_zero_matches_exact_arithmetic() -> None:
    """Labels and predictions 1e8 + k 1e-6 sent one row at a time: the pairwise update of the
    cross moment subtracts means that agree in 14 digits; with the double-double means it
    agrees with rational arithmetic to 1e-12 (r and Lin's CCC)."""
    rng = np.random.default_rng(12)
    y = 1e8 + rng.integers(-5, 6, 300) * 1e-6
    y_hat = y + rng.integers(-3, 4, 300) * 1e-6
    w = rng.uniform(0.1, 3, 300)
    accumulator = Accumulator("regression")
    for i in range(y.size):
        accumulator.update(y[i : i + 1], y_pred=y_hat[i : i + 1], sample_weight=w[i : i + 1])
    a, b, c = ([Fraction(float(v)) for v in column] for column in (y, y_hat, w))
    total = sum(c, Fraction(0))
    ma = sum((wi * v for wi, v in zip(c, a, strict=True)), Fraction(0)) / total
    mb = sum((wi * v for wi, v in zip(c, b, strict=True)), Fraction(0)) / total
    sab = sum((wi * (u - ma) * (v - mb) for wi, u, v in zip(c, a, b, strict=True)), Fraction(0))
    saa = sum((wi * (u - ma) ** 2 for wi, u in zip(c, a, strict=True)), Fraction(0))
    sbb = sum((wi * (v - mb) ** 2 for wi, v in zip(c, b, strict=True)), Fraction(0))
    got = accumulator.result().metrics
    assert got["pearson_r"] == pytest.approx(float(sab) / math.sqrt(saa * sbb), rel=1e-12)
    ccc = 2 * sab / (saa + sbb + total * (ma - mb) ** 2)
    assert got["concordance_correlation"] == pytest.approx(float(ccc), rel=1e-12)


# --- a state written before these metrics ----------------------------------------------------


def test_an_older_state_reads_with_these_metrics_null() -> None:
    options = {"quantiles": (0.5,)}
    new = Accumulator("regression", options).update([1.0, 2.0, 4.0], y_pred=[1.5, 2.0, 3.0])
    older_arrays = _older(_arrays(new))
    older = Accumulator.from_bytes(
        encode(StateDocument("regression", {"quantiles": [0.5]}, None, older_arrays))
    )
    result = older.result()
    expected = new.result()
    for name in ("mean_squared_log_error", "pinball_loss_0.5", *CORRELATIONS):
        assert result.metrics[name] is None and result.undefined[name] == OLDER_STATE
    for name in ("mse", "mae", "r2", "max_error", "median_absolute_error"):
        assert result.metrics[name] == expected.metrics[name]
    assert "rec" in result.curves
    # Merged with a new state: the older one's rows lack what the new metrics need.
    both = older.merge(new).result()
    again = evaluate("regression", [1.0, 2.0, 4.0] * 2, y_pred=[1.5, 2.0, 3.0] * 2)
    assert both.undefined["spearman_r"] == OLDER_STATE
    assert both.metrics["max_error"] == again.metrics["max_error"]
    assert both.metrics["median_absolute_error"] == again.metrics["median_absolute_error"]
    # and an older state's arrays written back keep its layout
    assert older.merge(new).to_bytes()


@pytest.mark.parametrize("tiny", [1.35492552e-160, 1e-170])
def test_a_subnormal_variance_is_undefined_not_a_rounded_value(tiny: float) -> None:
    """Values a few 1e-160 apart square to a subnormal variance, with too few bits left to
    divide by: Pearson's r of two distinct rows came out 0.99997, not 1. It is null with the
    underflow reason (as a zero variance was); so is r2 over such labels."""
    got, why = metrics([0.0, 1.0], [tiny, 0.0]), reasons([0.0, 1.0], [tiny, 0.0])
    for name in ("pearson_r", "spearman_r", "concordance_correlation"):
        assert got[name] is None and "underflows" in why[name], name
    got, why = metrics([tiny, 0.0], [0.0, 1.0]), reasons([tiny, 0.0], [0.0, 1.0])
    assert got["r2"] is None and "underflows" in why["r2"]
    assert metrics([0.0, 1e-150], [1e-150, 0.0])["pearson_r"] == pytest.approx(-1.0, abs=1e-15)
