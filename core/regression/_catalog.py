"""The regression entries of the metric catalog, and the conventions every response states."""

from __future__ import annotations

from evalserve.core._catalog import MetricInfo, entry_builder

__all__ = ["CATALOG_ENTRIES", "CONVENTIONS"]

_r = entry_builder("regression")


# y = labels, ŷ = predictions, r = y - ŷ, w = weights (1 when none came), n = sum w, mean_w =
# the w-weighted mean over rows, SSE = sum w r^2, p = options.n_params.
CATALOG_ENTRIES: tuple[MetricInfo, ...] = (
    # The definition is binary's, word for word, so the catalog keeps one entry for both tasks.
    _r("n_samples", None, "Number of rows received (weight-zero rows included)."),
    _r("mse", False, "Mean squared error mean_w((y - ŷ)^2) = SSE / n (scikit-learn)."),
    _r("rmse", False, "Root mean squared error sqrt(mse) (scikit-learn)."),
    _r("mae", False, "Mean absolute error mean_w(|y - ŷ|) (scikit-learn)."),
    _r(
        "mape", False,
        "Mean absolute percentage error mean_w(|y - ŷ| / max(|y|, eps)), eps = 2^-52, as a "
        "fraction (0.25 = 25%), as scikit-learn; undefined when a label is 0.",
    ),
    _r(
        "smape", False,
        "Symmetric MAPE mean_w(2|y - ŷ| / (|y| + |ŷ|)), a fraction in [0, 2]; a row with "
        "y = ŷ = 0 counts 0.",
    ),
    _r(
        "r2", True,
        "Coefficient of determination 1 - SSE / SST, SST = sum w (y - mean_w(y))^2 "
        "(scikit-learn r2_score); undefined for constant labels.",
        "r_squared", "coefficient_of_determination",
    ),
    _r(
        "adjusted_r2", True,
        "1 - (1 - R2)(n - 1) / (n - p - 1), p = options.n_params; undefined without n_params "
        "or when n - p - 1 <= 0.",
    ),
    _r(
        "explained_variance", True,
        "1 - Var_w(y - ŷ) / Var_w(y) (scikit-learn explained_variance_score); undefined for "
        "constant labels.",
    ),
    _r("max_error", False, "max |y - ŷ| over rows of positive weight (scikit-learn)."),
    _r(
        "median_absolute_error", False,
        "Weighted median of |y - ŷ|, the averaged inverted CDF: the mean of the two middle "
        "values when half the weight falls between them (np.median unweighted; scikit-learn).",
    ),
    _r(
        "aic", False,
        "Akaike: n ln(SSE / n) + 2p, the Gaussian -2 ln L + 2p without the constant "
        "n (1 + ln 2π) (seed 001; R extractAIC); undefined without n_params or when SSE = 0.",
    ),
    _r(
        "bic", False,
        "Bayesian (Schwarz): n ln(SSE / n) + p ln n, the same constant dropped (seed 001); "
        "undefined without n_params or when SSE = 0.",
    ),
    _r(
        "mallows_cp", False,
        "SSE / σ² - n + 2p, σ² = options.full_model_variance (the full model's "
        "SSE_m / (n - m - 1), seed 001); undefined without n_params or full_model_variance.",
        "cp",
    ),
)  # fmt: skip

CONVENTIONS: dict[str, str] = {
    "weights": (
        "frequency weights: every sum and mean is weighted and n = sum of the weights, so a "
        "weight 2 equals the row sent twice and weight-0 rows are ignored (n_samples still "
        "counts them)"
    ),
    "percentages": "mape and smape are fractions (0.25 = 25%), as scikit-learn's MAPE",
    "mape": (
        "|y - ŷ| / max(|y|, eps) as scikit-learn; null when a label of positive weight is 0 "
        "(scikit-learn returns about 1e15 there)"
    ),
    "smape": "2|y - ŷ| / (|y| + |ŷ|) per row, averaged; a row with y = ŷ = 0 counts 0",
    "r2": (
        "1 - SSE/SST, negative for a model worse than the mean; r2, adjusted_r2 and "
        "explained_variance are null for constant labels (scikit-learn: 1.0 or 0.0)"
    ),
    "median_absolute_error": (
        "weighted median by the averaged inverted CDF, as scikit-learn >= 1.8 (np.median "
        "unweighted)"
    ),
    "n_params": (
        "p = options.n_params in every formula, as given; adjusted_r2's n - p - 1 reads p as "
        "the predictors besides the intercept, while Mallows (Cp near p for an unbiased model) "
        "and R's extractAIC count the intercept in p; one count used for every model shifts "
        "aic, bic and mallows_cp by one constant and leaves their ranking of models unchanged"
    ),
    "information_criteria": (
        "aic = n ln(SSE/n) + 2p, bic = n ln(SSE/n) + p ln n: the Gaussian likelihood with the "
        "constant n (1 + ln 2π) dropped, as seed 001 and R's extractAIC (statsmodels keeps "
        "it); compare models on the same rows only"
    ),
    "mallows_cp": "SSE / σ² - n + 2p with σ² = options.full_model_variance",
    "undefined": "null with a reason in `undefined`, never 0 or NaN",
}
