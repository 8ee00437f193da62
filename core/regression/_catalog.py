"""The regression metrics' catalog entries, and the conventions every regression result states.

Each entry names its reference (what the value is checked against) and the test that checks
it; ``tests/core/test_catalog.py`` fails when the test is missing or does not name the metric.
"""

from __future__ import annotations

from evalserve.core._metric_info import (
    COUNT,
    NON_NEGATIVE,
    SIGNED_UNIT,
    UNBOUNDED,
    UP_TO_ONE,
    MetricInfo,
    MetricRange,
    entry_builder,
)

__all__ = ["CATALOG_ENTRIES", "CONVENTIONS", "METRIC_NAMES", "PINBALL_TEMPLATE"]

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
        "constant n (1 + ln 2π) dropped, as the least-squares forms of Akaike (1974) and Schwarz "
        "(1978) and R's extractAIC (statsmodels keeps "
        "it); compare models on the same rows only"
    ),
    "mallows_cp": "SSE / σ² - n + 2p with σ² = options.full_model_variance",
    "pinball_loss": (
        "one metric per q of options.quantiles (none by default), named with q as written in "
        "full (pinball_loss_0.9); r = y - ŷ costs q r when positive (under-prediction) and "
        "(1 - q)(-r) when negative, as scikit-learn's mean_pinball_loss(alpha=q)"
    ),
    "mean_squared_log_error": (
        "ln(1 + x) as scikit-learn; null when a label or prediction of positive weight is "
        "<= -1 (scikit-learn raises, for rows of weight 0 too)"
    ),
    "correlations": (
        "pearson_r, spearman_r and concordance_correlation are null for fewer than 2 rows of "
        "positive weight or for constant labels or predictions (scipy returns NaN; Lin's "
        "formula would give 0 for one constant column)"
    ),
    "spearman_r": (
        "ties take their average rank (scipy.stats.spearmanr); weights are frequency weights: "
        "a row of weight w ranks as w copies of it, so a tie group's rank is the weight ranked "
        "before it plus half its own"
    ),
    "concordance_correlation": (
        "Lin (1989)'s population moments, divided by n = the sum of the weights (not n - 1)"
    ),
    "undefined": "null with a reason in `undefined`, never 0 or NaN",
}

_r = entry_builder("regression", CONVENTIONS)

PINBALL_TEMPLATE = "pinball_loss_{k}"

# The tests that check the entries (pytest node ids are paths from the repository root).
_RG = "tests/core/test_regression.py::"
_BREADTH = "tests/core/test_regression_breadth.py::"
_SKLEARN = _RG + "test_matches_scikit_learn"
_FORMULAS = _RG + "test_smape_and_the_criteria_match_their_formulas_row_by_row"
_LIKELIHOOD = (
    "the Gaussian -2 ln L from scipy.stats.norm.logpdf at the maximum-likelihood variance, less "
    "n (1 + ln 2π) as R's extractAIC, on a least-squares fit"
)

# y = labels, ŷ = predictions, r = y - ŷ, w = weights (1 when none came), n = sum w, mean_w =
# the w-weighted mean over rows, SSE = sum w r^2, p = options.n_params.
CATALOG_ENTRIES: tuple[MetricInfo, ...] = (
    _r(
        "n_samples", None, COUNT, "Number of rows received (weight-zero rows included).",
        conventions=("weights",),
        reference="the number of rows of the request", test=_RG + "test_every_metric_by_hand",
    ),
    _r(
        "mse", False, NON_NEGATIVE,
        "Mean squared error mean_w((y - ŷ)^2) = SSE / n (scikit-learn).",
        conventions=("weights",),
        reference="sklearn.metrics.mean_squared_error", test=_SKLEARN,
    ),
    _r(
        "rmse", False, NON_NEGATIVE, "Root mean squared error sqrt(mse) (scikit-learn).",
        conventions=("weights",),
        reference="sklearn.metrics.root_mean_squared_error", test=_SKLEARN,
    ),
    _r(
        "mae", False, NON_NEGATIVE, "Mean absolute error mean_w(|y - ŷ|) (scikit-learn).",
        conventions=("weights",),
        reference="sklearn.metrics.mean_absolute_error", test=_SKLEARN,
    ),
    _r(
        "mape", False, NON_NEGATIVE,
        "Mean absolute percentage error mean_w(|y - ŷ| / max(|y|, eps)), eps = 2^-52, as a "
        "fraction (0.25 = 25%), as scikit-learn; undefined when a label is 0.",
        conventions=("percentages", "mape", "weights", "undefined"),
        reference="sklearn.metrics.mean_absolute_percentage_error; where a label is 0 "
        "scikit-learn returns about 1e15, ours is null",
        test=_SKLEARN,
    ),
    _r(
        "smape", False, MetricRange(0, 2),
        "Symmetric MAPE mean_w(2|y - ŷ| / (|y| + |ŷ|)), a fraction in [0, 2]; a row with "
        "y = ŷ = 0 counts 0.",
        conventions=("percentages", "smape", "weights"),
        reference="the definition summed row by row in plain Python; by hand in exact "
        "fractions, 23/90 (test_every_metric_by_hand)",
        test=_FORMULAS,
    ),
    _r(
        "r2", True, UP_TO_ONE,
        "Coefficient of determination 1 - SSE / SST, SST = sum w (y - mean_w(y))^2 "
        "(scikit-learn r2_score); undefined for constant labels.",
        aliases=("r_squared", "coefficient_of_determination"),
        conventions=("r2", "weights", "undefined"),
        reference="sklearn.metrics.r2_score; where the labels are constant scikit-learn "
        "returns 1.0 or 0.0, ours is null",
        test=_SKLEARN,
    ),
    _r(
        "adjusted_r2", True, UP_TO_ONE,
        "1 - (1 - R2)(n - 1) / (n - p - 1), p = options.n_params; undefined without n_params "
        "or when n - p - 1 <= 0.",
        conventions=("n_params", "r2", "undefined"),
        reference="1 - (SSE / (n - p - 1)) / (SST / (n - 1)) on a least-squares fit "
        "(numpy.linalg.lstsq)",
        test=_RG + "test_adjusted_r2_is_the_standard_form_not_the_misprint",
    ),
    _r(
        "explained_variance", True, UP_TO_ONE,
        "1 - Var_w(y - ŷ) / Var_w(y) (scikit-learn explained_variance_score); undefined for "
        "constant labels.",
        conventions=("r2", "weights", "undefined"),
        reference="sklearn.metrics.explained_variance_score", test=_SKLEARN,
    ),
    _r(
        "max_error", False, NON_NEGATIVE,
        "max |y - ŷ| over rows of positive weight (scikit-learn).",
        conventions=("weights",),
        reference="sklearn.metrics.max_error on the rows of positive weight (it takes no "
        "weights)",
        test=_SKLEARN,
    ),
    _r(
        "median_absolute_error", False, NON_NEGATIVE,
        "Weighted median of |y - ŷ|, the averaged inverted CDF: the mean of the two middle "
        "values when half the weight falls between them (np.median unweighted; scikit-learn).",
        conventions=("median_absolute_error", "weights"),
        reference="sklearn.metrics.median_absolute_error(sample_weight=...)", test=_SKLEARN,
    ),
    _r(
        "aic", False, UNBOUNDED,
        "Akaike: n ln(SSE / n) + 2p, the Gaussian -2 ln L + 2p without the constant "
        "n (1 + ln 2π) (Akaike 1974; R's extractAIC); undefined without n_params or when "
        "SSE = 0.",
        conventions=("information_criteria", "n_params", "undefined"),
        reference="-2 ln L + 2p (Akaike 1974), " + _LIKELIHOOD,
        test=_RG + "test_aic_and_bic_drop_the_gaussian_constant",
    ),
    _r(
        "bic", False, UNBOUNDED,
        "Bayesian (Schwarz 1978): n ln(SSE / n) + p ln n, the same constant dropped; "
        "undefined without n_params or when SSE = 0.",
        conventions=("information_criteria", "n_params", "undefined"),
        reference="-2 ln L + p ln n (Schwarz 1978), " + _LIKELIHOOD,
        test=_RG + "test_aic_and_bic_drop_the_gaussian_constant",
    ),
    _r(
        "mallows_cp", False, UNBOUNDED,
        "SSE / σ² - n + 2p, σ² = options.full_model_variance (the full model's "
        "SSE_m / (n - m - 1), Mallows 1973); undefined without n_params or "
        "full_model_variance.",
        aliases=("cp",), conventions=("mallows_cp", "n_params", "undefined"),
        reference="Mallows (1973): (n - m - 1) SSE_p / SSE_m - n + 2p on least-squares fits, "
        "and Cp = m + 1 for the full model",
        test=_RG + "test_mallows_cp_second_form",
    ),
    _r(
        "mean_squared_log_error", False, NON_NEGATIVE,
        "Mean squared logarithmic error mean_w((ln(1 + y) - ln(1 + ŷ))^2) (scikit-learn); "
        "undefined when a label or prediction is <= -1.",
        aliases=("msle",), conventions=("mean_squared_log_error", "weights", "undefined"),
        reference="sklearn.metrics.mean_squared_log_error(sample_weight=...); where a value is "
        "<= -1 scikit-learn raises, ours is null",
        test=_BREADTH + "test_mean_squared_log_error_matches_scikit_learn",
    ),
    _r(
        PINBALL_TEMPLATE, False, NON_NEGATIVE,
        "Pinball (quantile) loss at level q = k of options.quantiles: mean_w(q max(r, 0) + "
        "(1 - q) max(-r, 0)), r = y - ŷ, the check function of quantile regression (Koenker "
        "& Bassett 1978); its minimum over constant predictions is at the q-quantile of y.",
        conventions=("pinball_loss", "weights"),
        reference="sklearn.metrics.mean_pinball_loss(alpha=q, sample_weight=...)",
        test=_BREADTH + "test_pinball_loss_matches_scikit_learn",
    ),
    _r(
        "pearson_r", True, SIGNED_UNIT,
        "Pearson correlation of y and ŷ: C / sqrt(SST · SS(ŷ)), C = sum w (y - mean_w(y))"
        "(ŷ - mean_w(ŷ)); undefined for constant labels or predictions or under 2 rows.",
        aliases=("pearson_correlation",), conventions=("correlations", "weights", "undefined"),
        reference="scipy.stats.pearsonr (unweighted); with integer weights, on the rows "
        "repeated",
        test=_BREADTH + "test_pearson_and_spearman_match_scipy",
    ),
    _r(
        "spearman_r", True, SIGNED_UNIT,
        "Spearman rank correlation (Spearman 1904): pearson_r of the ranks of y and of ŷ, "
        "ties at their average rank, weights as frequencies; undefined for constant labels "
        "or predictions or under 2 rows.",
        aliases=("spearman_correlation",),
        conventions=("spearman_r", "correlations", "weights", "undefined"),
        reference="scipy.stats.spearmanr (unweighted); with integer weights, on the rows "
        "repeated",
        test=_BREADTH + "test_pearson_and_spearman_match_scipy",
    ),
    _r(
        "concordance_correlation", True, SIGNED_UNIT,
        "Lin's concordance correlation coefficient 2 s_xy / (s_x^2 + s_y^2 + (mean_w(y) - "
        "mean_w(ŷ))^2), population moments (over n), x = y and y = ŷ (Lin 1989): pearson_r "
        "shrunk by any shift or scale between ŷ and y; undefined for constant labels or "
        "predictions or under 2 rows.",
        aliases=("ccc", "lin_ccc"),
        conventions=("concordance_correlation", "correlations", "weights", "undefined"),
        reference="Lin (1989)'s formula by hand on a worked example (exact fractions) and in "
        "numpy row by row",
        test=_BREADTH + "test_concordance_correlation_by_hand_and_by_formula",
    ),
)  # fmt: skip

METRIC_NAMES = tuple(entry.name for entry in CATALOG_ENTRIES)
