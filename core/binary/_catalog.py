"""The binary metrics' catalog entries, and the conventions every binary result states.

Each entry names its reference (what the value is checked against) and the test that checks
it; ``tests/core/test_catalog.py`` fails when the test is missing or does not name the metric.
"""

from __future__ import annotations

from evalserve.core._metric_info import (
    COUNT,
    NON_NEGATIVE,
    SIGNED_UNIT,
    UNBOUNDED,
    UNIT,
    MetricInfo,
    entry_builder,
)

__all__ = ["CATALOG_ENTRIES", "CONVENTIONS", "METRIC_NAMES"]

CONVENTIONS = {
    "threshold_rule": "score >= threshold is positive",
    "ties": "averaged: tied scores form one ROC/PR point (a diagonal ROC step)",
    "average_precision": "step-wise, as scikit-learn",
    "head_k": "k counts sample weight (rows when unweighted); ties at the cut pro rata",
    "break_even_point": "R-precision: precision at k = number of positives",
    "ndcg": (
        "gain 1 per positive, discount 1 / log2(rank + 1); ties share their ranks at the mean "
        "gain (scikit-learn's ignore_ties=False); weight w spans w ranks; no positives: null"
    ),
    "undefined": "null with a reason in `undefined`, never 0 or NaN",
    "intervals": "roc_auc: DeLong (logit scale unless auc_interval is wald); accuracy, "
    "precision, recall, specificity: Wilson; average_precision, f1, ks_statistic, "
    "break_even_point, equal_error_rate, operating-point values: stratified bootstrap when "
    "bootstrap_replicates > 0",
    "weights": "frequency weights: weight 2 is the row given twice, in intervals and tests too",
    "roc_auc_partial": (
        "McClish's standardized area (1 + (A - min) / (max - min)) / 2 over FPR in [0, max_fpr], "
        "the curve cut at max_fpr by linear interpolation, as scikit-learn's "
        "roc_auc_score(max_fpr=...): 0.5 is chance, 1 perfect; the raw area is not reported"
    ),
    "interpolated_ap": (
        "ap_11_point and ap_all_point interpolate precision as PASCAL VOC (the highest precision "
        "at recall >= r): VOC 2007's 11 points and VOC 2010's area under that envelope; "
        "average_precision is scikit-learn's, without interpolation"
    ),
    "pr_auc_trapezoid": (
        "straight lines between PR points from (R=0, P=1), as scikit-learn's "
        "auc(recall, precision): optimistic next to the step-wise AP (Davis & Goadrich 2006)"
    ),
    "threshold_ties": (
        "ks_threshold and the optimal thresholds are scores of the rows; among thresholds that "
        "reach the best value the highest wins"
    ),
    "probabilities": (
        "log_loss, brier_score and expected_calibration_error need scores in [0, 1], else they "
        "are null with a reason (no sigmoid is applied); log_loss clips p to [eps, 1 - eps], "
        "eps the float64 machine epsilon, as scikit-learn"
    ),
    "calibration_bins": (
        "options.calibration_bins equal-width bins [b/B, (b+1)/B), a score of 1 in the last"
    ),
    "operating_points": (
        "on the exact curve, no interpolation; targets met within 1e-12 relative; a tie goes to "
        "the dominating point, then the higher threshold; unreachable: null (torchmetrics: 0)"
    ),
    "flagged_share": "ties at the cut flagged together: _actual may be below q",
    "equal_error_rate": "the curve point nearest FPR = FNR, as torchmetrics' binary_eer",
    "det_curve": "curves.det as scikit-learn's det_curve (ascending thresholds)",
}

_OP = "tests/core/test_binary_operating.py::"
_CURVES = "the definition evaluated on sklearn.metrics."
_BRUTE = "every distinct threshold tried in plain Python"
_m = entry_builder("binary", CONVENTIONS)

# The tests that check the entries (pytest node ids are paths from the repository root).
_SK = "tests/core/test_binary_sklearn.py::"
_COUNTS = _SK + "test_counts_match_sklearn_confusion_matrix"
_RATIOS = _SK + "test_ratio_matches_sklearn"
_CONFUSION = "sklearn.metrics.confusion_matrix(labels=[0, 1], sample_weight=...)"
_ZERO = "; where it is 0/0 scikit-learn returns 0 with a warning, ours is null"
_EXACT = "every threshold recomputed from the rows in exact fractions"
_FAWCETT = "Fawcett's 20-instance ROC example (Fawcett 2006, Fig. 3)"
_AT_THRESHOLD = ("threshold_rule", "weights")


def _count(name: str, definition: str, *conventions: str) -> MetricInfo:
    return _m(
        name, None, COUNT, definition,
        conventions=conventions, reference=_CONFUSION, test=_COUNTS,
    )  # fmt: skip


CATALOG_ENTRIES: tuple[MetricInfo, ...] = (
    # Counts at the threshold (weighted sums when sample weights are given).
    _m(
        "n_samples", None, COUNT, "Number of rows received (weight-zero rows included).",
        reference="the number of rows of the request", test=_COUNTS,
    ),
    _count("tp", "True positives: positives with score >= threshold.", *_AT_THRESHOLD),
    _count("fp", "False positives: negatives with score >= threshold.", *_AT_THRESHOLD),
    _count("tn", "True negatives: negatives with score < threshold.", *_AT_THRESHOLD),
    _count("fn", "False negatives: positives with score < threshold.", *_AT_THRESHOLD),
    _count("n_positive", "Actual positives P = TP + FN.", "weights"),
    _count("n_negative", "Actual negatives N = TN + FP.", "weights"),
    _count("n_predicted_positive", "Predicted positives P' = TP + FP.", *_AT_THRESHOLD),
    _count("n_predicted_negative", "Predicted negatives N' = TN + FN.", *_AT_THRESHOLD),
    # Rates at the threshold.
    _m(
        "accuracy", True, UNIT, "(TP + TN) / (P + N).",
        conventions=("threshold_rule",),
        reference="sklearn.metrics.accuracy_score", test=_COUNTS,
    ),
    _m(
        "error_rate", False, UNIT, "(FP + FN) / (P + N) = 1 - accuracy.",
        conventions=("threshold_rule",),
        reference="1 - sklearn.metrics.accuracy_score", test=_COUNTS,
    ),
    _m(
        "precision", True, UNIT, "TP / (TP + FP).",
        aliases=("ppv",), conventions=("threshold_rule", "undefined"),
        reference="sklearn.metrics.precision_score" + _ZERO, test=_RATIOS,
    ),
    _m(
        "recall", True, UNIT, "TP / (TP + FN) = TP / P.",
        aliases=("sensitivity", "tpr", "hit_rate"), conventions=("threshold_rule", "undefined"),
        reference="sklearn.metrics.recall_score" + _ZERO, test=_RATIOS,
    ),
    _m(
        "specificity", True, UNIT, "TN / (TN + FP) = TN / N.",
        aliases=("tnr", "selectivity"), conventions=("threshold_rule", "undefined"),
        reference="sklearn.metrics.recall_score(pos_label=0)" + _ZERO, test=_RATIOS,
    ),
    _m(
        "fpr", False, UNIT, "FP / (FP + TN) = 1 - specificity.",
        aliases=("fall_out",), conventions=("threshold_rule", "undefined"),
        reference="1 - sklearn.metrics.recall_score(pos_label=0)",
        test=_SK + "test_complementary_rates_match_sklearn",
    ),
    _m(
        "fnr", False, UNIT, "FN / (FN + TP) = 1 - recall.",
        aliases=("miss_rate",), conventions=("threshold_rule", "undefined"),
        reference="1 - sklearn.metrics.recall_score",
        test=_SK + "test_complementary_rates_match_sklearn",
    ),
    _m(
        "npv", True, UNIT, "TN / (TN + FN).",
        conventions=("threshold_rule", "undefined"),
        reference="sklearn.metrics.precision_score(pos_label=0)" + _ZERO, test=_RATIOS,
    ),
    _m(
        "f1", True, UNIT, "2 TP / (2 TP + FP + FN): harmonic mean of precision and recall.",
        conventions=("threshold_rule", "undefined"),
        reference="sklearn.metrics.f1_score" + _ZERO, test=_RATIOS,
    ),
    _m(
        "f_beta", True, UNIT,
        "(1 + b^2) TP / ((1 + b^2) TP + b^2 FN + FP), b = options.beta.",
        conventions=("threshold_rule", "undefined"),
        reference="sklearn.metrics.fbeta_score(beta=options.beta)" + _ZERO,
        test=_SK + "test_f_beta_matches_sklearn_fbeta",
    ),
    _m(
        "balanced_accuracy", True, UNIT,
        "(recall + specificity) / 2; undefined unless both classes are present.",
        conventions=("threshold_rule", "undefined"),
        reference="sklearn.metrics.balanced_accuracy_score",
        test=_SK + "test_balanced_accuracy_and_youden_j_match_sklearn",
    ),
    _m(
        "mcc", True, SIGNED_UNIT,
        "Matthews: (TP TN - FP FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)).",
        conventions=("threshold_rule", "undefined"),
        reference="sklearn.metrics.matthews_corrcoef; where it is 0/0 scikit-learn returns 0, "
        "ours is null",
        test=_SK + "test_mcc_matches_sklearn",
    ),
    _m(
        "cohen_kappa", True, SIGNED_UNIT, "(p_o - p_e) / (1 - p_e); p_e from the marginals.",
        conventions=("threshold_rule", "undefined"),
        reference="sklearn.metrics.cohen_kappa_score(labels=[0, 1]); where it is 0/0 "
        "scikit-learn returns NaN, ours is null",
        test=_SK + "test_cohen_kappa_matches_sklearn",
    ),
    _m(
        "youden_j", True, SIGNED_UNIT, "recall + specificity - 1.",
        aliases=("informedness",), conventions=("threshold_rule", "undefined"),
        reference="sklearn.metrics.balanced_accuracy_score(adjusted=True)",
        test=_SK + "test_balanced_accuracy_and_youden_j_match_sklearn",
    ),
    _m(
        "prevalence", None, UNIT, "P / (P + N).",
        conventions=("weights",), reference=_CONFUSION, test=_COUNTS,
    ),
    # Over all thresholds.
    _m(
        "roc_auc", True, UNIT,
        "Area under the tie-grouped ROC curve = Mann-Whitney U / (P N) with averaged ranks.",
        aliases=("auc", "auroc"), conventions=("ties", "weights", "undefined"),
        reference="sklearn.metrics.roc_auc_score; the Mann-Whitney U of scipy.stats.rankdata "
        "average ranks; pROC's auc (tests/core/test_proc_reference.py); " + _FAWCETT
        + ", AUC 0.68 (tests/core/test_worked_examples.py)",
        test=_SK + "test_roc_auc_matches_sklearn",
    ),
    _m(
        "roc_auc_partial", True, UNIT,
        "McClish-standardized area under the ROC curve for FPR <= options.max_fpr; only with "
        "options.max_fpr.",
        conventions=("roc_auc_partial", "ties", "undefined"),
        reference="sklearn.metrics.roc_auc_score(max_fpr=options.max_fpr)",
        test=_SK + "test_roc_auc_partial_matches_sklearn_max_fpr",
    ),
    _m(
        "average_precision", True, UNIT,
        "Step-wise AP = sum_n (R_n - R_{n-1}) P_n over thresholds (scikit-learn).",
        aliases=("ap",), conventions=("average_precision", "ties", "undefined"),
        reference="sklearn.metrics.average_precision_score",
        test=_SK + "test_average_precision_matches_sklearn",
    ),
    _m(
        "pr_auc_trapezoid", True, UNIT, "Trapezoidal area under the PR curve from (0, 1).",
        conventions=("pr_auc_trapezoid", "ties", "undefined"),
        reference="sklearn.metrics.auc(recall, precision) of "
        "sklearn.metrics.precision_recall_curve",
        test=_SK + "test_pr_auc_trapezoid_matches_sklearn_auc_of_pr_curve",
    ),
    _m(
        "ap_11_point", True, UNIT,
        "VOC 2007: mean of max precision at recall >= r, r = 0, .1, ..., 1.",
        conventions=("interpolated_ap", "ties", "undefined"),
        reference="PASCAL VOC 2007's 11-point AP (Everingham et al. 2010), " + _EXACT
        + "; the 15-image precision-recall worked example, 31/33 "
        "(tests/core/test_worked_examples.py)",
        test=_SK + "test_interpolated_aps_match_brute_force",
    ),
    _m(
        "ap_all_point", True, UNIT, "VOC 2010+: area under the monotone precision envelope.",
        conventions=("interpolated_ap", "ties", "undefined"),
        reference="the VOC devkit's VOCap (Everingham et al. 2010), " + _EXACT
        + "; the 15-image precision-recall worked example, 59/63 "
        "(tests/core/test_worked_examples.py)",
        test=_SK + "test_interpolated_aps_match_brute_force",
    ),
    _m(
        "break_even_point", True, UNIT,
        "Precision = recall point, as R-precision (precision at k = P; ties pro rata).",
        aliases=("bep", "r_precision"), conventions=("break_even_point", "head_k", "undefined"),
        reference="R-precision (Manning, Raghavan & Schütze 2008, ch. 8), the tie group at the "
        "cut pro rata, recomputed from the rows",
        test=_SK + "test_break_even_point_is_r_precision",
    ),
    _m(
        "ks_statistic", True, UNIT, "Kolmogorov-Smirnov: max |TPR - FPR| over thresholds.",
        aliases=("ks",), conventions=("ties", "weights", "undefined"),
        reference="scipy.stats.ks_2samp of the two classes' scores; weighted, " + _EXACT
        + "; " + _FAWCETT + ", KS 0.4",
        test=_SK + "test_ks_statistic_matches_scipy_ks_2samp",
    ),
    _m(
        "ks_threshold", None, UNBOUNDED,
        "The highest threshold where the KS statistic is reached.",
        conventions=("threshold_ties", "undefined"),
        reference=_EXACT + "; " + _FAWCETT + ", threshold 0.54",
        test=_SK + "test_ks_statistic_and_threshold_match_brute_force",
    ),
    _m(
        "optimal_threshold_youden", None, UNBOUNDED,
        "Threshold maximizing Youden's J = TPR - FPR.",
        conventions=("threshold_ties", "undefined"),
        reference=_EXACT + "; " + _FAWCETT + ", threshold 0.54",
        test=_SK + "test_optimal_threshold_youden_matches_brute_force",
    ),
    _m(
        "optimal_threshold_f1", None, UNBOUNDED, "Threshold maximizing F1.",
        conventions=("threshold_ties", "undefined"),
        reference=_EXACT, test=_SK + "test_optimal_threshold_f1_matches_brute_force",
    ),
    _m(
        "precision_at_{k}", True, UNIT,
        "Positive share of the top k (by score, in sample weight; k = each options.head_k, "
        "capped at the total weight); ties at the cut pro rata.",
        conventions=("head_k", "ties"),
        reference="the expected value over every order of the tied rows, enumerated in exact "
        "fractions",
        test=_SK + "test_head_metrics_are_the_expected_value_over_tie_orders",
    ),
    _m(
        "recall_at_{k}", True, UNIT,
        "Share of all positives found in the top k; ties pro rata.",
        conventions=("head_k", "ties", "undefined"),
        reference="the expected value over every order of the tied rows, enumerated in exact "
        "fractions",
        test=_SK + "test_head_metrics_are_the_expected_value_over_tie_orders",
    ),
    _m(
        "ndcg_at_{k}", True, UNIT,
        "Normalized discounted cumulative gain of the top k: DCG@k = sum over the ranks r <= k "
        "of gain / log2(r + 1) (gain 1 for a positive), over the ideal DCG@k (every positive "
        "first); k = each options.head_k in sample weight, capped at the total weight; tied "
        "rows share their ranks at the group's mean gain.",
        conventions=("ndcg", "head_k", "weights", "undefined"),
        reference="sklearn.metrics.ndcg_score([labels], [scores], k=k, ignore_ties=False) "
        "(McSherry & Najork 2008); integer weights against repeated rows; the expected DCG over "
        "every order of the tied rows, enumerated",
        test="tests/core/test_binary_ndcg.py::test_ndcg_matches_sklearn_with_heavy_ties",
    ),
    # Operating points (options recall_at_precision, precision_at_recall, tpr_at_fpr,
    # specificity_at_sensitivity, flagged_share; k = each target).
    _m(
        "recall_at_precision_{k}", True, UNIT,
        "The highest recall of a threshold whose precision is >= k.",
        conventions=("operating_points", "undefined"),
        reference=_CURVES + "precision_recall_curve; torchmetrics' documented cases",
        test=_OP + "test_operating_points_match_their_definition_on_sklearn_curves",
    ),
    _m(
        "recall_at_precision_{k}_threshold", None, UNBOUNDED,
        "The threshold of recall_at_precision_{k}.",
        conventions=("operating_points", "threshold_rule", "undefined"),
        reference=_CURVES + "precision_recall_curve; torchmetrics' documented cases",
        test=_OP + "test_operating_points_match_their_definition_on_sklearn_curves",
    ),
    _m(
        "precision_at_recall_{k}", True, UNIT,
        "The highest precision of a threshold whose recall is >= k.",
        conventions=("operating_points", "undefined"),
        reference=_CURVES + "precision_recall_curve; torchmetrics' documented cases",
        test=_OP + "test_operating_points_match_their_definition_on_sklearn_curves",
    ),
    _m(
        "precision_at_recall_{k}_threshold", None, UNBOUNDED,
        "The threshold of precision_at_recall_{k}.",
        conventions=("operating_points", "threshold_rule", "undefined"),
        reference=_CURVES + "precision_recall_curve; torchmetrics' documented cases",
        test=_OP + "test_operating_points_match_their_definition_on_sklearn_curves",
    ),
    _m(
        "tpr_at_fpr_{k}", True, UNIT,
        "The highest true positive rate of a threshold whose FPR is <= k (0 when only "
        "flagging nothing keeps it).",
        conventions=("operating_points", "undefined"),
        reference=_CURVES + "roc_curve",
        test=_OP + "test_operating_points_match_their_definition_on_sklearn_curves",
    ),
    _m(
        "tpr_at_fpr_{k}_threshold", None, UNBOUNDED,
        "The threshold of tpr_at_fpr_{k}; null when only flagging nothing keeps FPR <= k.",
        conventions=("operating_points", "threshold_rule", "undefined"),
        reference=_CURVES + "roc_curve",
        test=_OP + "test_operating_points_match_their_definition_on_sklearn_curves",
    ),
    _m(
        "specificity_at_sensitivity_{k}", True, UNIT,
        "The highest specificity of a threshold whose sensitivity is >= k.",
        conventions=("operating_points", "undefined"),
        reference=_CURVES + "roc_curve; torchmetrics' documented cases",
        test=_OP + "test_operating_points_match_their_definition_on_sklearn_curves",
    ),
    _m(
        "specificity_at_sensitivity_{k}_threshold", None, UNBOUNDED,
        "The threshold of specificity_at_sensitivity_{k}.",
        conventions=("operating_points", "threshold_rule", "undefined"),
        reference=_CURVES + "roc_curve; torchmetrics' documented cases",
        test=_OP + "test_operating_points_match_their_definition_on_sklearn_curves",
    ),
    _m(
        "flagged_share_{k}_threshold", None, UNBOUNDED,
        "The lowest threshold that flags at most a share k of the rows (an alert budget).",
        conventions=("flagged_share", "threshold_rule", "undefined"),
        reference=_BRUTE, test=_OP + "test_flagged_share_matches_brute_force",
    ),
    _m(
        "flagged_share_{k}_actual", None, UNIT,
        "The share of the rows that flagged_share_{k}_threshold flags (at most k).",
        conventions=("flagged_share", "weights", "undefined"),
        reference=_BRUTE, test=_OP + "test_flagged_share_matches_brute_force",
    ),
    _m(
        "precision_at_flagged_share_{k}", True, UNIT,
        "Precision at flagged_share_{k}_threshold.",
        conventions=("flagged_share", "undefined"),
        reference=_BRUTE, test=_OP + "test_flagged_share_matches_brute_force",
    ),
    _m(
        "recall_at_flagged_share_{k}", True, UNIT,
        "Recall at flagged_share_{k}_threshold.",
        conventions=("flagged_share", "undefined"),
        reference=_BRUTE, test=_OP + "test_flagged_share_matches_brute_force",
    ),
    _m(
        "equal_error_rate", False, UNIT,
        "(FPR + FNR) / 2 where the two are nearest each other on the curve.",
        aliases=("eer",), conventions=("equal_error_rate", "undefined"),
        reference="torchmetrics' binary_eer rule on sklearn.metrics.roc_curve("
        "drop_intermediate=False); torchmetrics' documented cases",
        test=_OP + "test_equal_error_rate_matches_its_definition",
    ),
    _m(
        "equal_error_rate_threshold", None, UNBOUNDED,
        "The threshold of equal_error_rate.",
        conventions=("equal_error_rate", "threshold_rule", "undefined"),
        reference="torchmetrics' binary_eer rule on sklearn.metrics.roc_curve("
        "drop_intermediate=False)",
        test=_OP + "test_equal_error_rate_matches_its_definition",
    ),
    # Calibration.
    _m(
        "log_loss", False, NON_NEGATIVE,
        "-mean(y log p + (1 - y) log(1 - p)), p clipped to [eps, 1 - eps].",
        conventions=("probabilities", "undefined"),
        reference="sklearn.metrics.log_loss(labels=[0, 1])",
        test=_SK + "test_log_loss_and_brier_score_match_sklearn",
    ),
    _m(
        "brier_score", False, UNIT, "mean((p - y)^2).",
        conventions=("probabilities", "undefined"),
        reference="sklearn.metrics.brier_score_loss(labels=[0, 1])",
        test=_SK + "test_log_loss_and_brier_score_match_sklearn",
    ),
    _m(
        "expected_calibration_error", False, UNIT,
        "sum over equal-width bins of |sum(y) - sum(p)| / total weight "
        "(options.calibration_bins bins).",
        aliases=("ece",), conventions=("calibration_bins", "probabilities", "undefined"),
        reference="the binned sum recomputed row by row in plain Python",
        test=_SK + "test_expected_calibration_error_matches_brute_force",
    ),
)  # fmt: skip

METRIC_NAMES = tuple(entry.name for entry in CATALOG_ENTRIES)
