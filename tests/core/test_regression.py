"""The regression core: scikit-learn as the oracle, hand-checked numbers, the textbook formulas
of R², AIC, BIC and Mallows' Cp, undefined cases, input errors and Hypothesis invariants.

scikit-learn defines mse, rmse, mae, mape, r2, explained_variance, max_error and
median_absolute_error; it is compared on seeded random cases (heavy ties, float and integer
weights with zeros, n from 1 to 10^5) to 1e-9. SMAPE, adjusted R2, AIC, BIC and Mallows' Cp
are checked by hand with exact fractions, and AIC / Cp against an ordinary least-squares fit
(the setting of the textbook formulas: Akaike 1974, Schwarz 1978, Mallows 1973, as R's
``extractAIC`` computes them), in the tests of the section "the textbook formulas".
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
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

from evalserve import core
from evalserve.core import InvalidInputError, Options
from evalserve.core._result import TaskOutput
from evalserve.core.regression import CATALOG_ENTRIES, CONVENTIONS, compute_regression
from evalserve.core.regression._pointwise import OVERFLOW, weighted_median

Floats = NDArray[np.float64]
Metrics = dict[str, float | None]

REL = 1e-9
ABS = 1e-9
API_NAMES = (
    "mse", "rmse", "mae", "mape", "smape", "r2", "adjusted_r2", "explained_variance",
    "max_error", "median_absolute_error", "aic", "bic", "mallows_cp", "mean_squared_log_error",
    "pearson_r", "spearman_r", "concordance_correlation",
)  # fmt: skip
# With options.quantiles (0.1, 0.5, 0.9): the pinball losses come after mean_squared_log_error.
QUANTILES = (0.1, 0.5, 0.9)
PINBALL = tuple(f"pinball_loss_{q}" for q in QUANTILES)
QUANTILE_NAMES = (*API_NAMES[:14], *PINBALL, *API_NAMES[14:])
# Metrics that count n (the sum of the weights): they change when every weight is scaled.
N_METRICS = ("adjusted_r2", "aic", "bic", "mallows_cp")


def close(value: float) -> Any:
    return pytest.approx(value, rel=REL, abs=ABS)


def run(labels: Any, predictions: Any, weights: Any = None, **options: Any) -> TaskOutput:
    return compute_regression(
        labels, predictions, sample_weight=weights, options=Options(**options)
    )


def metrics(labels: Any, predictions: Any, weights: Any = None, **options: Any) -> Metrics:
    return run(labels, predictions, weights, **options).sink.metrics


# --- scikit-learn as the oracle -------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    y: Floats
    y_hat: Floats
    w: Floats | None

    @property
    def kept(self) -> NDArray[np.bool_]:
        return np.ones(self.y.size, bool) if self.w is None else self.w > 0

    @property
    def constant_labels(self) -> bool:
        kept = self.y[self.kept]
        return bool(kept.min() == kept.max())

    @property
    def zero_label(self) -> bool:
        return bool((self.y[self.kept] == 0).any())


def _data(kind: str, n: int, rng: np.random.Generator) -> tuple[Floats, Floats]:
    if kind == "ties":  # small integers: tied labels, tied |errors|, zero labels
        return rng.integers(0, 5, n).astype(float), rng.integers(0, 5, n).astype(float)
    if kind == "positive":  # MAPE's home ground
        y = rng.lognormal(2.0, 1.0, n)
        return y, y * rng.lognormal(0.0, 0.3, n)
    if kind == "unrelated":  # a model worse than the mean: negative r2
        return rng.normal(0, 1, n), rng.normal(3, 2, n)
    if kind == "outliers":
        y = rng.standard_t(1.5, n) * 100
        return y, y + rng.standard_t(1.5, n) * 10
    y = rng.normal(50, 10, n)
    return y, y + rng.normal(0.5, 2, n)


def _weights(kind: str, n: int, rng: np.random.Generator) -> Floats | None:
    if kind == "none":
        return None
    if kind == "integer":
        w = rng.integers(0, 4, n).astype(float)
    else:
        w = rng.uniform(0, 3, n) * (rng.random(n) > 0.2)
    if not w.any():
        w[rng.integers(n)] = 1.0
    return w


def _cases() -> Iterator[Any]:
    rng = np.random.default_rng(20250611)
    for kind in ("normal", "ties", "positive", "unrelated", "outliers"):
        for n in (1, 2, 3, 7, 40, 333):
            for weighting in ("none", "integer", "float"):
                for repeat in range(2):
                    y, y_hat = _data(kind, n, rng)
                    w = _weights(weighting, n, rng)
                    name = f"{kind}-n{n}-{weighting}-{repeat}"
                    yield pytest.param(Case(name, y, y_hat, w), id=name)
    y, y_hat = _data("normal", 100_000, rng)
    yield pytest.param(Case("large", y, y_hat, _weights("float", y.size, rng)), id="large")


CASES = list(_cases())


@pytest.mark.parametrize("case", CASES)
def test_matches_scikit_learn(case: Case) -> None:
    got = metrics(case.y, case.y_hat, case.w)
    y, y_hat, w = case.y, case.y_hat, case.w
    assert got["mse"] == close(skm.mean_squared_error(y, y_hat, sample_weight=w))
    assert got["rmse"] == close(skm.root_mean_squared_error(y, y_hat, sample_weight=w))
    assert got["mae"] == close(skm.mean_absolute_error(y, y_hat, sample_weight=w))
    assert got["median_absolute_error"] == close(
        skm.median_absolute_error(y, y_hat, sample_weight=w)
    )
    # max_error takes no weights in scikit-learn: ours is over the rows of positive weight.
    assert got["max_error"] == close(skm.max_error(y[case.kept], y_hat[case.kept]))
    if case.zero_label:
        assert got["mape"] is None
    else:
        expected = skm.mean_absolute_percentage_error(y, y_hat, sample_weight=w)
        assert got["mape"] == close(expected)
    if case.constant_labels:
        assert got["r2"] is None
        assert got["explained_variance"] is None
    else:
        assert got["r2"] == close(skm.r2_score(y, y_hat, sample_weight=w))
        expected = skm.explained_variance_score(y, y_hat, sample_weight=w)
        assert got["explained_variance"] == close(expected)


@pytest.mark.parametrize("case", CASES[::3])
def test_rec_curve_is_the_share_of_rows_within_each_error(case: Case) -> None:
    # Bi & Bennett's REC curve by brute force: for each distinct |y - ŷ| of the rows of
    # positive weight, the weight of the rows at most that far off over all the weight.
    weights = np.ones(case.y.size) if case.w is None else case.w
    kept = weights > 0
    errors = np.abs(case.y - case.y_hat)[kept]
    mass = weights[kept]
    distinct = np.unique(errors)
    share = np.array([mass[errors <= e].sum() for e in distinct]) / mass.sum()
    curve = run(case.y, case.y_hat, case.w, max_curve_points=100_000).curves["rec"]
    np.testing.assert_array_equal(curve["absolute_error"], distinct)
    np.testing.assert_allclose(curve["share"], share, rtol=1e-12)
    assert curve["share"][-1] == 1.0
    thinned = run(case.y, case.y_hat, case.w, max_curve_points=5).curves["rec"]
    assert thinned["share"].size <= 5
    assert thinned["absolute_error"][-1] == distinct[-1]  # the largest error is kept
    assert np.isin(thinned["absolute_error"], distinct).all()  # points of the exact curve
    assert "rec" not in run(case.y, case.y_hat, case.w, max_curve_points=0).curves


@pytest.mark.parametrize("case", CASES[::7])
def test_smape_and_the_criteria_match_their_formulas_row_by_row(case: Case) -> None:
    # Straight from the catalog definitions, in plain Python over the rows.
    w = [1.0] * case.y.size if case.w is None else case.w.tolist()
    rows = [(a, b, c) for a, b, c in zip(case.y.tolist(), case.y_hat.tolist(), w, strict=True)]
    n = math.fsum(c for _, _, c in rows)
    sse = math.fsum(c * (a - b) ** 2 for a, b, c in rows)
    terms = [c * 2 * abs(a - b) / (abs(a) + abs(b)) for a, b, c in rows if a or b]
    smape = math.fsum(terms) / n
    got = metrics(case.y, case.y_hat, case.w, n_params=2, full_model_variance=1.5)
    assert got["smape"] == close(smape)
    assert got["aic"] == close(n * math.log(sse / n) + 2 * 2)
    assert got["bic"] == close(n * math.log(sse / n) + 2 * math.log(n))
    assert got["mallows_cp"] == close(sse / 1.5 - n + 2 * 2)
    if got["r2"] is not None and n - 3 > 0:
        assert got["adjusted_r2"] == close(1 - (1 - got["r2"]) * (n - 1) / (n - 3))


def test_mape_floors_tiny_labels_at_eps_as_scikit_learn() -> None:
    y, y_hat = np.array([1e-20, -3e-17, 2.0]), np.array([1.0, 0.0, 1.0])
    assert metrics(y, y_hat)["mape"] == close(skm.mean_absolute_percentage_error(y, y_hat))


def test_median_is_np_median_unweighted_and_with_unit_weights() -> None:
    rng = np.random.default_rng(7)
    for n in (1, 2, 5, 6, 101):
        values = rng.integers(0, 4, n).astype(float)
        assert weighted_median(values, np.ones(n)) == np.median(values)
        assert weighted_median(values, np.full(n, 0.1)) == np.median(values)


def test_median_with_weights_by_hand() -> None:
    # |errors| 1, 2, 3, 4 with weights 1, 1, 1, 1: half the weight (2) is reached exactly at
    # 2, so the median is (2 + 3) / 2. With weights 1, 2, 1, 1 (total 5, half 2.5) it is 2.
    # With 3, 1, 0, 1 the weight-0 row is absent: half 2.5 lies inside the first value, 1.
    y_hat = np.zeros(4)
    y = np.array([1.0, 2.0, 3.0, 4.0])
    assert metrics(y, y_hat, [1, 1, 1, 1])["median_absolute_error"] == 2.5
    assert metrics(y, y_hat, [1, 2, 1, 1])["median_absolute_error"] == 2.0
    assert metrics(y, y_hat, [3, 1, 0, 1])["median_absolute_error"] == 1.0
    # half (2) is reached exactly at 2; the next row of positive weight is 4, not 3
    assert metrics(y, y_hat, [1, 1, 0, 2])["median_absolute_error"] == 3.0
    for w in ([1, 1, 1, 1], [1, 2, 1, 1], [3, 1, 0, 1], [1, 1, 0, 2]):
        expected = skm.median_absolute_error(y, y_hat, sample_weight=w)
        assert metrics(y, y_hat, w)["median_absolute_error"] == close(expected)


def test_scikit_learn_forces_r2_finite_where_ours_is_undefined() -> None:
    # The deviation, stated: constant labels give r2 = 1.0 (perfect) or 0.0 in scikit-learn.
    y = [3.0, 3.0, 3.0]
    assert skm.r2_score(y, y) == 1.0
    assert skm.r2_score(y, [3.0, 4.0, 3.0]) == 0.0
    assert metrics(y, y)["r2"] is None
    assert metrics(y, [3.0, 4.0, 3.0])["explained_variance"] is None


# --- by hand, with exact fractions ----------------------------------------------------------

Y = [1, 2, 3, 4]
Y_HAT = [Fraction(3, 2), Fraction(2), Fraction(2), Fraction(5)]


def test_every_metric_by_hand() -> None:
    # r = y - ŷ = -1/2, 0, 1, -1; SSE = 9/4; mean y = 5/2, SST = 9/4 + 1/4 + 1/4 + 9/4 = 5.
    n, p, sigma2 = 4, 1, Fraction(1, 2)
    r = [Fraction(a) - b for a, b in zip(Y, Y_HAT, strict=True)]
    sse = sum(x * x for x in r)
    assert sse == Fraction(9, 4)
    r2 = 1 - sse / 5
    mean_r = sum(r) / n  # -1/8
    explained = 1 - (sum((x - mean_r) ** 2 for x in r) / n) / Fraction(5, 4)
    expected: dict[str, Fraction | float] = {
        "mse": sse / n,  # 9/16
        "rmse": Fraction(3, 4),
        "mae": Fraction(5, 2) / n,  # 5/8
        "mape": (Fraction(1, 2) + 0 + Fraction(1, 3) + Fraction(1, 4)) / n,  # 13/48
        # 2|r| / (|y| + |ŷ|): 1/(5/2) = 2/5, 0, 2/5, 2/9
        "smape": (Fraction(2, 5) + 0 + Fraction(2, 5) + Fraction(2, 9)) / n,  # 23/90
        "r2": r2,  # 11/20
        "adjusted_r2": 1 - (1 - r2) * (n - 1) / (n - p - 1),  # 13/40
        "explained_variance": explained,  # 9/16
        "max_error": 1,
        "median_absolute_error": Fraction(3, 4),  # |r| sorted 0, 1/2, 1, 1
        "aic": n * math.log(sse / n) + 2 * p,  # 4 ln(9/16) + 2
        "bic": n * math.log(sse / n) + p * math.log(n),  # 4 ln(9/16) + ln 4
        "mallows_cp": sse / sigma2 - n + 2 * p,  # 9/2 - 4 + 2 = 5/2
        # (ln(1 + y) - ln(1 + ŷ))^2: ln(2/2.5)^2, 0, ln(4/3)^2, ln(5/6)^2
        "mean_squared_log_error": (
            math.log(2 / 2.5) ** 2 + math.log(4 / 3) ** 2 + math.log(5 / 6) ** 2
        )
        / n,
        # mean ŷ = 21/8; C = sum (y - 5/2)(ŷ - 21/8) = 21/4, SS(ŷ) = 123/16, SST = 5
        "pearson_r": 21 / math.sqrt(615),  # (21/4) / sqrt(5 * 123/16)
        # ranks 1, 2, 3, 4 and 1, 2.5, 2.5, 4 (ŷ = 2 tied): C = 9/2, SS = 5 and 9/2
        "spearman_r": 3 / math.sqrt(10),  # (9/2) / sqrt(5 * 9/2)
        # 2C / (SST + SS(ŷ) + n (mean r)^2) = (21/2) / (5 + 123/16 + 4/64) = 14/17
        "concordance_correlation": Fraction(14, 17),
    }
    assert expected["smape"] == Fraction(23, 90)
    assert expected["adjusted_r2"] == Fraction(13, 40)
    assert expected["explained_variance"] == Fraction(9, 16)
    assert expected["mallows_cp"] == Fraction(5, 2)
    got = metrics(Y, [float(x) for x in Y_HAT], n_params=p, full_model_variance=float(sigma2))
    assert got == {"n_samples": 4.0} | {
        name: close(float(value)) for name, value in expected.items()
    }
    assert list(got) == ["n_samples", *API_NAMES]


def test_weights_count_as_repeated_rows_by_hand() -> None:
    # Weights 2, 1, 0, 1 are the rows (1, 3/2), (1, 3/2), (2, 2), (4, 5): n = 4, SSE = 3/2,
    # mean y = 2, SST = 1 + 1 + 0 + 4 = 6, r2 = 3/4, adjusted (p = 1) = 1 - (1/4)(3/2) = 5/8.
    got = metrics(Y, [1.5, 2, 2, 5], [2, 1, 0, 1], n_params=1, full_model_variance=0.25)
    assert got["n_samples"] == 4.0  # rows received, weight-0 row included
    assert got["mse"] == close(3 / 8)
    assert got["r2"] == close(3 / 4)
    assert got["adjusted_r2"] == close(5 / 8)
    assert got["aic"] == close(4 * math.log(3 / 8) + 2)
    assert got["bic"] == close(4 * math.log(3 / 8) + math.log(4))
    assert got["mallows_cp"] == close(6 - 4 + 2)
    assert got["median_absolute_error"] == close(0.5)  # 1/2, 1/2, 0, 1: half (2) at 1/2


def test_smape_counts_zero_over_zero_as_a_perfect_row() -> None:
    # rows (0, 0): 0; (1, 3): 2 * 2 / 4 = 1; (-2, 2): 2 * 4 / 4 = 2, the maximum
    got = metrics([0.0, 1.0, -2.0], [0.0, 3.0, 2.0])
    assert got["smape"] == close(1.0)
    assert metrics([0.0], [0.0])["smape"] == 0.0
    assert metrics([0.0, 0.0], [5.0, -1e-300])["smape"] == 2.0


def test_smape_survives_the_ends_of_float64() -> None:
    # |y| + |ŷ| overflows at 1e308 and |y| / 2 underflows at 5e-324; the ratio does neither.
    huge, tiny = 1.7e308, 5e-324
    got = metrics([huge, tiny, tiny], [1e308, 0.0, 2 * tiny])
    assert got["smape"] == close((2 * 0.7 / 2.7 + 2 + 2 / 3) / 3)


# --- the textbook formulas on a least-squares fit ------------------------------------------


def _ols(x: Floats, y: Floats) -> Floats:
    design = np.column_stack([np.ones(len(y)), x])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    fitted: Floats = design @ coef
    return fitted


def _regression_data() -> tuple[Floats, Floats]:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(30, 3))
    y = 1.0 + 2.0 * x[:, 0] - 0.5 * x[:, 1] + rng.normal(0, 0.7, 30)
    return x, y


def test_aic_and_bic_drop_the_gaussian_constant() -> None:
    # Akaike (1974), Schwarz (1978): AIC = -2 ln L(θ̂) + 2p = n ln(SSE/n) + 2p (BIC: + p ln n).
    # The second "=" holds up to n (1 + ln 2π): -2 ln L at the maximum-likelihood σ² = SSE/n,
    # summed over the rows with scipy's normal density, minus that constant, is our value.
    x, y = _regression_data()
    fitted = _ols(x[:, :2], y)
    n, p = y.size, 3  # intercept and two slopes
    sse = float(np.sum((y - fitted) ** 2))
    log_l = float(np.sum(scipy_stats.norm.logpdf(y, loc=fitted, scale=math.sqrt(sse / n))))
    constant = n * (1 + math.log(2 * math.pi))
    got = metrics(y, fitted, n_params=p)
    assert got["aic"] == close(-2 * log_l + 2 * p - constant)
    assert got["bic"] == close(-2 * log_l + p * math.log(n) - constant)


def test_mallows_cp_second_form() -> None:
    # Mallows (1973): Cp = SSE/σ̂² - n + 2p = (n - m - 1) SSE_p / SSE_m - n + 2p, where the full
    # model has m features (and an intercept) and σ̂² = SSE_m / (n - m - 1).
    x, y = _regression_data()
    n, m, p = y.size, 3, 2
    sse_m = float(np.sum((y - _ols(x, y)) ** 2))
    sub = _ols(x[:, :1], y)
    sse_p = float(np.sum((y - sub) ** 2))
    sigma2 = sse_m / (n - m - 1)
    got = metrics(y, sub, n_params=p, full_model_variance=sigma2)
    assert got["mallows_cp"] == close((n - m - 1) * sse_p / sse_m - n + 2 * p)
    # Mallows' identity: the full model, counting its m + 1 coefficients, has Cp = m + 1.
    full = metrics(y, _ols(x, y), n_params=m + 1, full_model_variance=sigma2)
    assert full["mallows_cp"] == close(m + 1)


def test_adjusted_r2_is_the_standard_form_not_the_misprint() -> None:
    # Some surveys print R2_adj = 1 - (1 - R2) / (n - p - 1), without the factor (n - 1). The
    # standard form is 1 - (SSE / (n - p - 1)) / (SST / (n - 1)), which is what we return; the
    # misprint would even differ from R2 at p = 0.
    x, y = _regression_data()
    fitted = _ols(x, y)
    n, p = y.size, 3
    sse = float(np.sum((y - fitted) ** 2))
    sst = float(np.sum((y - y.mean()) ** 2))
    got = metrics(y, fitted, n_params=p)
    assert got["adjusted_r2"] == close(1 - (sse / (n - p - 1)) / (sst / (n - 1)))
    r2 = got["r2"]
    assert r2 is not None
    assert got["adjusted_r2"] != close(1 - (1 - r2) / (n - p - 1))
    assert metrics(y, fitted, n_params=0)["adjusted_r2"] == close(r2)


def test_r2_is_one_minus_sse_over_sst() -> None:
    # The textbook R2 = 1 - SSE/SST = SSR/SST. The second form holds for a least-squares fit with
    # an intercept on its own rows, not for predictions in general; we use the first.
    x, y = _regression_data()
    fitted = _ols(x, y)
    ssr = float(np.sum((fitted - y.mean()) ** 2))
    sst = float(np.sum((y - y.mean()) ** 2))
    assert metrics(y, fitted)["r2"] == close(ssr / sst)
    shrunk = 0.5 * fitted
    ssr = float(np.sum((shrunk - y.mean()) ** 2))
    sse = float(np.sum((y - shrunk) ** 2))
    assert metrics(y, shrunk)["r2"] == close(1 - sse / sst)
    assert metrics(y, shrunk)["r2"] != close(ssr / sst)


def test_mse_textbook_formula() -> None:
    # The textbook MSE = (1/n) sum (y_i - ŷ_i)^2.
    assert metrics([1.0, 2.0, 4.0], [2.0, 2.0, 1.0])["mse"] == close(10 / 3)


# --- undefined values: None with a reason ---------------------------------------------------


def test_constant_labels_leave_the_variance_shares_undefined() -> None:
    result = run([0.1, 0.1, 0.1], [0.1, 0.2, 0.0], n_params=1)
    sink = result.sink
    for name in ("r2", "explained_variance", "adjusted_r2"):
        assert sink.metrics[name] is None
        assert "constant" in sink.undefined[name]
    assert sink.metrics["mse"] == close(0.02 / 3)
    assert any("constant" in warning for warning in sink.warnings)
    # constant among the rows of positive weight is constant
    assert metrics([1.0, 2.0, 1.0], [1.0, 2.0, 3.0], [1, 0, 1])["r2"] is None
    assert metrics([5.0], [4.0])["r2"] is None


def test_zero_label_leaves_mape_undefined_and_names_the_row() -> None:
    result = run([1.0, 2.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0])
    assert result.sink.metrics["mape"] is None
    assert "row 2" in result.sink.undefined["mape"]
    assert result.sink.metrics["smape"] == close((2 / 3 + 2) / 4)
    # a weight-0 row is absent: its zero label does not count
    assert metrics([1.0, 0.0], [2.0, 1.0], [1, 0])["mape"] == 1.0
    # the reason names the row of the request, not of the kept rows
    reason = run([1.0, 2.0, 0.0], [1.0, 1.0, 1.0], [0, 1, 1]).sink.undefined["mape"]
    assert "row 2" in reason


@pytest.mark.parametrize(
    ("options", "undefined"),
    [
        pytest.param({}, {"adjusted_r2", "aic", "bic", "mallows_cp"}, id="no-options"),
        pytest.param({"n_params": 2}, {"mallows_cp"}, id="no-variance"),
        pytest.param({"full_model_variance": 1.0}, set(N_METRICS), id="no-n-params"),
        pytest.param({"n_params": 3, "full_model_variance": 1.0}, {"adjusted_r2"}, id="n-p-1=0"),
        pytest.param({"n_params": 9, "full_model_variance": 1.0}, {"adjusted_r2"}, id="p>n"),
        pytest.param({"n_params": 0, "full_model_variance": 1.0}, set(), id="p=0"),
    ],
)
def test_missing_options_leave_their_metrics_undefined(
    options: dict[str, Any], undefined: set[str]
) -> None:
    sink = run([1.0, 2.0, 3.0, 5.0], [1.5, 2.0, 2.5, 4.0], **options).sink
    assert {name for name, value in sink.metrics.items() if value is None} == undefined
    assert set(sink.undefined) == undefined
    for name in undefined:
        if "n_params" not in options:
            assert "options.n_params is not set" in sink.undefined[name]
        elif name == "adjusted_r2":
            assert "n - p - 1 > 0" in sink.undefined[name]
        else:
            assert "options.full_model_variance is not set" in sink.undefined[name]


def test_perfect_fit_leaves_aic_and_bic_undefined_but_not_cp() -> None:
    sink = run([1.0, 2.0, 4.0], [1.0, 2.0, 4.0], n_params=1, full_model_variance=2.0).sink
    assert sink.metrics["aic"] is None and sink.metrics["bic"] is None
    assert "SSE is 0" in sink.undefined["aic"]
    assert sink.metrics["mallows_cp"] == -3 + 2
    assert sink.metrics["r2"] == 1.0 and sink.metrics["adjusted_r2"] == 1.0


def test_overflow_is_none_with_a_reason_never_inf() -> None:
    sink = run([1e200, -1e200, 0.0], [-1e200, 1e200, 1.0], n_params=1).sink
    for name in ("mse", "rmse", "r2", "aic", "bic"):
        assert sink.metrics[name] is None
        assert sink.undefined[name] == OVERFLOW
    assert sink.metrics["mae"] == close(4e200 / 3 + 1 / 3)
    assert sink.metrics["smape"] == close((2 + 2 + 2) / 3)
    assert sink.metrics["median_absolute_error"] == close(2e200)


# --- input errors name the REST field -------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "predictions", "weights", "field", "fragment"),
    [
        pytest.param(None, [1.0], None, "labels", "required", id="no-labels"),
        pytest.param([], [], None, "labels", "empty", id="empty"),
        pytest.param([1.0, np.nan], [1.0, 2.0], None, "labels", "row 1", id="label-nan"),
        pytest.param(["a", "b"], [1.0, 2.0], None, "labels", "numbers", id="label-str"),
        pytest.param([[1.0], [2.0]], [1.0, 2.0], None, "labels", "1-d", id="label-2d"),
        pytest.param([1.0, 2.0], None, None, "predictions", "required", id="no-predictions"),
        pytest.param([1.0, 2.0], [1.0], None, "predictions", "expected 2", id="length"),
        pytest.param([1.0, 2.0], [1.0, np.inf], None, "predictions", "row 1", id="pred-inf"),
        pytest.param([1.0, 2.0], [[1.0, 2.0]], None, "predictions", "1-d", id="pred-2d"),
        pytest.param([1.0, 2.0], [1.0, 2.0], [1.0, -1.0], "weights", "non-negative", id="w-neg"),
        pytest.param([1.0, 2.0], [1.0, 2.0], [0, 0], "weights", "all weights are zero", id="w0"),
        pytest.param([1.0, 2.0], [1.0, 2.0], [1.0], "weights", "expected 2", id="w-length"),
        pytest.param([1.0, 2.0], [1.0, 2.0], [1.0, np.nan], "weights", "finite", id="w-nan"),
    ],
)
def test_bad_input_names_the_field(
    labels: Any, predictions: Any, weights: Any, field: str, fragment: str
) -> None:
    with pytest.raises(InvalidInputError) as error:
        compute_regression(labels, predictions, sample_weight=weights, options=Options())
    assert error.value.field == field
    assert fragment in error.value.message


# --- the catalog and the conventions --------------------------------------------------------


def test_catalog_entries_cover_exactly_what_is_emitted() -> None:
    names = [entry.name for entry in CATALOG_ENTRIES]
    assert sorted(names) == sorted(["n_samples", *API_NAMES, "pinball_loss_{k}"])
    assert all(entry.task == "regression" for entry in CATALOG_ENTRIES)
    emitted = run([1.0, 2.0, 3.0], [1.0, 2.5, 2.0], n_params=1, full_model_variance=1.0)
    assert set(emitted.sink.metrics) == set(names) - {"pinball_loss_{k}"}
    with_quantiles = run([1.0, 2.0, 3.0], [1.0, 2.5, 2.0], quantiles=QUANTILES).sink.metrics
    assert list(with_quantiles) == ["n_samples", *QUANTILE_NAMES]
    for name in PINBALL:
        entry = core.catalog_entry(name, "regression")
        assert entry is not None and entry.name == "pinball_loss_{k}"
    assert emitted.conventions == CONVENTIONS
    for key in ("weights", "mape", "smape", "information_criteria", "n_params"):
        assert CONVENTIONS[key]


def test_catalog_directions_follow_the_naming_contract() -> None:
    better = {entry.name: entry.higher_is_better for entry in CATALOG_ENTRIES}
    assert better.pop("n_samples") is None
    assert {name for name, up in better.items() if up} == {
        "r2",
        "adjusted_r2",
        "explained_variance",
        "pearson_r",
        "spearman_r",
        "concordance_correlation",
    }
    assert all(up is False for name, up in better.items() if name.endswith(("_error", "_loss")))
    assert better["pinball_loss_{k}"] is False


def test_the_catalog_holds_the_regression_entries_as_written() -> None:
    # Keyed by (task, name): regression's n_samples is its own entry, not binary's.
    for entry in CATALOG_ENTRIES:
        assert core.CATALOG["regression", entry.name] is entry
    assert core.catalog_entry("n_samples", "regression") is CATALOG_ENTRIES[0]
    aliases = [alias for entry in CATALOG_ENTRIES for alias in entry.aliases]
    assert not {alias for alias in aliases if core.catalog_entry(alias, "regression")}


# --- Hypothesis invariants ------------------------------------------------------------------

properties = settings(max_examples=100, deadline=None)


@st.composite
def integer_rows(draw: st.DrawFn) -> tuple[Floats, Floats, Floats]:
    """Small integer values and weights: every sum is exact in float64."""
    n = draw(st.integers(1, 12))
    values = st.integers(-6, 6).map(float)
    y = draw(arrays(np.float64, n, elements=values))
    y_hat = draw(arrays(np.float64, n, elements=values))
    w = draw(arrays(np.float64, n, elements=st.integers(0, 3).map(float)))
    if not w.any():
        w[0] = 1.0
    return y, y_hat, w


@st.composite
def float_rows(draw: st.DrawFn) -> tuple[Floats, Floats, Floats]:
    n = draw(st.integers(1, 12))
    # No magnitudes under 1e-3: MAPE floors |y| at eps, which scaling would not keep.
    values = st.one_of(st.just(0.0), st.floats(1e-3, 1e3), st.floats(-1e3, -1e-3))
    y = draw(arrays(np.float64, n, elements=values))
    y_hat = draw(arrays(np.float64, n, elements=values))
    w = draw(arrays(np.float64, n, elements=st.floats(0.01, 5.0)))
    return y, y_hat, w


def assert_same(a: Metrics, b: Metrics, skip: tuple[str, ...] = ()) -> None:
    assert list(a) == list(b)
    for name, value in a.items():
        if name in skip:
            continue
        if value is None:
            assert b[name] is None, name
        else:
            assert b[name] == pytest.approx(value, rel=1e-9, abs=1e-9), name


OPTIONS: dict[str, Any] = {"n_params": 1, "full_model_variance": 0.7, "quantiles": QUANTILES}


@properties
@given(integer_rows(), st.randoms(use_true_random=False))
def test_row_order_changes_nothing(rows: tuple[Floats, Floats, Floats], rnd: Any) -> None:
    y, y_hat, w = rows
    order = list(range(y.size))
    rnd.shuffle(order)
    assert_same(
        metrics(y, y_hat, w, **OPTIONS), metrics(y[order], y_hat[order], w[order], **OPTIONS)
    )


@properties
@given(float_rows(), st.randoms(use_true_random=False))
def test_row_order_changes_nothing_with_float_rows(
    rows: tuple[Floats, Floats, Floats], rnd: Any
) -> None:
    y, y_hat, w = rows
    order = list(range(y.size))
    rnd.shuffle(order)
    assert_same(
        metrics(y, y_hat, w, **OPTIONS), metrics(y[order], y_hat[order], w[order], **OPTIONS)
    )


@properties
@given(integer_rows())
def test_integer_weights_equal_repeated_rows(rows: tuple[Floats, Floats, Floats]) -> None:
    # Weight 2 == the row sent twice, weight 0 == the row not sent; n counts the copies.
    y, y_hat, w = rows
    repeat = w.astype(int)
    weighted = metrics(y, y_hat, w, **OPTIONS)
    repeated = metrics(np.repeat(y, repeat), np.repeat(y_hat, repeat), **OPTIONS)
    assert repeated["n_samples"] == repeat.sum()
    assert_same(weighted, repeated, skip=("n_samples",))


@properties
@given(float_rows(), st.sampled_from([0.25, 3.0, 1e3]))
def test_scaling_every_weight_changes_only_the_n_metrics(
    rows: tuple[Floats, Floats, Floats], factor: float
) -> None:
    # Means and the median are ratios of weight sums; n = sum of the weights is not.
    y, y_hat, w = rows
    before, after = metrics(y, y_hat, w, **OPTIONS), metrics(y, y_hat, w * factor, **OPTIONS)
    assert_same(before, after, skip=N_METRICS)
    if before["aic"] is not None:
        n, mse = float(np.sum(w)), before["mse"]
        assert mse is not None
        scaled = n * factor * math.log(mse) + 2
        assert after["aic"] == pytest.approx(scaled, rel=1e-9, abs=1e-9)


@properties
@given(integer_rows(), st.integers(-1000, 1000).map(float))
def test_shifting_labels_and_predictions_keeps_the_error_metrics(
    rows: tuple[Floats, Floats, Floats], shift: float
) -> None:
    y, y_hat, w = rows
    before, after = metrics(y, y_hat, w, **OPTIONS), metrics(y + shift, y_hat + shift, w, **OPTIONS)
    assert_same(before, after, skip=("mape", "smape", "mean_squared_log_error"))


@properties
@given(float_rows(), st.sampled_from([-8.0, -0.5, 0.25, 2.0, 1024.0]))
def test_scaling_labels_and_predictions(rows: tuple[Floats, Floats, Floats], k: float) -> None:
    # Powers of two scale exactly: errors scale by |k|, squares by k^2, n ln(SSE/n) moves by
    # 2 n ln|k|, Cp's SSE / σ² by k^2; the ratios stay.
    y, y_hat, w = rows
    a, b = metrics(y, y_hat, w, **OPTIONS), metrics(k * y, k * y_hat, w, **OPTIONS)
    n = float(np.sum(w))
    expected = dict(a)
    for name, power in (("mse", 2), ("rmse", 1), ("mae", 1), ("max_error", 1)):
        value = a[name]
        expected[name] = None if value is None else value * abs(k) ** power
    median = a["median_absolute_error"]
    assert median is not None
    expected["median_absolute_error"] = median * abs(k)
    for name in ("aic", "bic"):
        value = a[name]
        expected[name] = None if value is None else value + 2 * n * math.log(abs(k))
    assert a["mallows_cp"] is not None
    expected["mallows_cp"] = (a["mallows_cp"] + n - 2) * k * k - n + 2
    # The pinball loss scales by |k|; a negative k swaps the signs of the residuals, so q's loss
    # becomes that of 1 - q. Correlations are unchanged (both columns scale alike).
    for q, name in zip(QUANTILES, PINBALL, strict=True):
        mirrored = a[name if k > 0 else PINBALL[QUANTILES.index(round(1 - q, 10))]]
        expected[name] = None if mirrored is None else mirrored * abs(k)
    assert_same(expected, b, skip=("mean_squared_log_error",))


@properties
@given(float_rows())
def test_bounds_and_orderings(rows: tuple[Floats, Floats, Floats]) -> None:
    y, y_hat, w = rows
    got = metrics(y, y_hat, w, n_params=1)
    smape = got["smape"]
    assert smape is not None and 0 <= smape <= 2
    assert got["mae"] is not None and got["rmse"] is not None and got["max_error"] is not None
    assert got["mae"] <= got["rmse"] * (1 + 1e-12) + 1e-12
    assert got["rmse"] <= got["max_error"] * (1 + 1e-12) + 1e-12
    r2, explained, adjusted = got["r2"], got["explained_variance"], got["adjusted_r2"]
    if r2 is not None:
        # explained_variance = r2 + mean(r)^2 / Var(y); adjusting only lowers r2
        assert explained is not None
        assert r2 <= 1 + 1e-12 and r2 <= explained + 1e-9
        assert adjusted is None or adjusted <= r2 + 1e-9
    # symmetric in labels and predictions: every error metric but MAPE
    swapped = metrics(y_hat, y, w, n_params=1)
    names = ("mse", "mae", "smape", "max_error", "median_absolute_error", "aic", "bic")
    assert_same({name: got[name] for name in names}, {name: swapped[name] for name in names})


@settings(max_examples=200, deadline=None)
@given(
    arrays(
        np.float64, st.integers(1, 6), elements=st.floats(allow_nan=False, allow_infinity=False)
    ),
    st.data(),
)
def test_any_finite_input_gives_floats_or_none_with_a_reason(
    y: Floats, data: st.DataObject
) -> None:
    elements = st.floats(allow_nan=False, allow_infinity=False)
    y_hat = data.draw(arrays(np.float64, y.size, elements=elements))
    w = data.draw(arrays(np.float64, y.size, elements=st.sampled_from([0.0, 1e-100, 1.0, 1e100])))
    if not w.any():
        w[0] = 1.0
    sink = run(y, y_hat, w, n_params=2, full_model_variance=1e-100, quantiles=QUANTILES).sink
    assert list(sink.metrics) == ["n_samples", *QUANTILE_NAMES]
    for name, value in sink.metrics.items():
        if value is None:
            assert sink.undefined[name], name
        else:
            assert isinstance(value, float) and math.isfinite(value), name
            assert name not in sink.undefined


@pytest.mark.parametrize("base", [1000.0, 517.3, 1.0, 0.001])
def test_r2_of_labels_a_few_ulps_apart_matches_exact_arithmetic(base: float) -> None:
    """Labels that differ only in their last bits have an SST of ~1e-26: the naive two-pass
    sum put a rounding error as large as SST itself into it (r2 = -1e32 moved by 2x when the
    weights were scaled, found by Hypothesis in CI). The corrected two-pass sum agrees with
    rational arithmetic to the 1e-9 asked here; the naive sum fails this test."""
    rng = np.random.default_rng(7)
    for _ in range(50):
        n = int(rng.integers(2, 12))
        y = base + rng.integers(0, 4, n) * np.spacing(base)
        if y.min() == y.max():
            continue
        y_hat = y + rng.normal(0, 10, n)
        w = rng.uniform(0.01, 5, n)
        ys, hats, ws = ([Fraction(float(v)) for v in col] for col in (y, y_hat, w))
        total = sum(ws, Fraction(0))
        mean = sum((wi * yi for wi, yi in zip(ws, ys, strict=True)), Fraction(0)) / total
        sst = sum((wi * (yi - mean) ** 2 for wi, yi in zip(ws, ys, strict=True)), Fraction(0))
        sse = sum(
            (wi * (yi - hi) ** 2 for wi, yi, hi in zip(ws, ys, hats, strict=True)), Fraction(0)
        )
        exact = float(1 - sse / sst)
        for factor in (1.0, 0.25, 3.0, 1e3):
            got = core.evaluate("regression", y, y_pred=y_hat, sample_weight=w * factor)
            assert got.metrics["r2"] == pytest.approx(exact, rel=1e-9), (base, factor)


def test_a_weighted_median_tie_survives_scaling_the_weights() -> None:
    """Weights a, b, a + b put exactly half the weight at or below the second value: the median
    is the mean of the second and third. Scaled by a constant, the cumulative sum rounds a few
    ulps to either side of half; the median must not move (it did with a tolerance of one eps:
    this test fails on that code; found by Hypothesis)."""
    rng = np.random.default_rng(3)
    values = np.array([1.0, 2.0, 4.0])
    for _ in range(2000):
        a, b = rng.uniform(0.01, 5, 2)
        weights = np.array([a, b, a + b])
        assert weighted_median(values, weights) == 3.0
        for factor in (0.25, 3.0, 1e3, 0.1, 7.0):
            assert weighted_median(values, weights * factor) == 3.0, (a, b, factor)
