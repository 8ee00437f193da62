"""The multiclass metrics' catalog entries, and the conventions a multiclass result carries.

Each entry names its reference (what the value is checked against) and the test that checks
it; ``tests/core/test_catalog.py`` fails when the test is missing or does not name the metric.
"""

from __future__ import annotations

from evalserve.core._metric_info import (
    COUNT,
    NON_NEGATIVE,
    SIGNED_UNIT,
    UNIT,
    MetricInfo,
    MetricRange,
    entry_builder,
)
from evalserve.core.binary._operating import OPERATING_VALUE_DEFINITIONS

__all__ = ["AVERAGES", "CATALOG_ENTRIES", "CONVENTIONS", "METRIC_NAMES"]

AVERAGES = ("micro", "macro", "weighted")

CONVENTIONS: dict[str, str] = {
    "labels": (
        "class indices 0..k-1 in score-column order, or class names when `classes` gives "
        "the names in score-column order"
    ),
    "predictions": (
        "the argmax of each score row when no predictions are sent; a tie goes to the lowest "
        "class index (numpy argmax)"
    ),
    "top_k_ties": (
        "a row whose true class has g classes scored strictly above it and e classes "
        "(itself included) scored equal counts min(1, max(0, (k - g) / e)): the expected hit "
        "under a random order of the tied classes. scikit-learn's top_k_accuracy_score ranks "
        "the highest class index first among ties; the two agree when no tie straddles the "
        "k-th place. k above the number of classes gives null"
    ),
    "ties": (
        "ranking metrics: tied scores form one threshold (averaged ranks, a diagonal ROC "
        "step), as task binary"
    ),
    "one_vs_rest": (
        "per class: the class's rows are positive, every other row negative, ranked by the "
        "class's score column; per_class[i] is class i"
    ),
    "absent_classes": (
        "a class with no weight in labels has null roc_auc, average_precision, ks_statistic "
        "and recall with a reason, is left out of every macro average (weighted averages give "
        "it weight 0 anyway) and is named in `warnings`; scikit-learn returns NaN or 0 there"
    ),
    "macro": (
        "mean over the classes present in labels whose value is defined; a per-class 0/0 (the "
        "precision of a class never predicted) is left out and named in `warnings`. Equals "
        "scikit-learn's average='macro' with labels=<present classes> and zero_division=nan"
    ),
    "weighted": "the classes of `macro`, weighted by support (the weight of their rows)",
    "micro": (
        "precision/recall/F1: counts pooled over all classes (each equals accuracy); "
        "roc_auc/average_precision: the flattened one-vs-rest problem, n positives against "
        "n (k - 1) negatives (label_binarize + ravel, as scikit-learn's plot_roc example)"
    ),
    "f1_macro": (
        "mean of per-class F1 (scikit-learn), not the F1 of macro precision and macro recall "
        "(Zhou's macro-F1: Zhou, Machine Learning, 2016, ch. 2)"
    ),
    "roc_auc_ovo": (
        "Hand & Till (2001); weighted by pair prevalence as scikit-learn. Sample weights are "
        "frequency weights (scikit-learn refuses them for ovo): weight 2 equals the row twice"
    ),
    "roc_macro_curve": (
        "curves.roc_macro: vertical averaging of the per-class ROC curves of roc_auc_ovr_macro "
        "at the union of their FPR values; where a class's curve is vertical both ends are "
        "kept, so the averaged curve is exact and its area equals roc_auc_ovr_macro. "
        "scikit-learn's plot_roc example interpolates with np.interp, which keeps "
        "one end of each vertical segment, and gets a different area (scikit-learn #13546). "
        "Thinned to options.max_curve_points points, every one on the exact curve"
    ),
    "confusion_matrix": (
        "curves.confusion_matrix.matrix: the k x k matrix of weights flattened row-major, row = "
        "true class, column = predicted class, classes in per_class order; "
        "curves.confusion_matrix.shape = [k, k]. Omitted with max_curve_points = 0"
    ),
    "probabilities": (
        "log_loss, brier_score and expected_calibration_error need scores in [0, 1] whose "
        "rows sum to 1 within max(1e-4, k x 1e-6) for k classes (the rounding of 6-decimal "
        "printing or float32); otherwise they are null with a reason. Rows are taken as they "
        "came, never renormalized (as scikit-learn)"
    ),
    "brier_score": (
        "the multiclass Brier score, sum over classes, in [0, 2] (scikit-learn's "
        "brier_score_loss for 3+ classes); for 2 classes it is twice task binary's"
    ),
    "expected_calibration_error": (
        "top-label: confidence = the highest probability of the row, correct = its argmax is "
        "the true class (the scores' argmax even when predictions are sent)"
    ),
    "intervals": (
        "per_class[i].intervals.roc_auc: DeLong's interval of the class's one-vs-rest AUC "
        "(options.auc_interval, options.confidence_level); intervals.accuracy: Wilson"
    ),
    "undefined": "null with a reason in `undefined` (per class: the row's `undefined`), never 0",
    "operating_points": (
        "per class, one-vs-rest (the class's rows positive, every other row negative, ranked by "
        "the class's score column): task binary's operating points and equal error rate with "
        "binary's names, rules and reasons in each per_class row, e.g. "
        "recall_at_precision_{p} and recall_at_precision_{p}_threshold, flagged_share_{q}_"
        "threshold / _actual, precision_at_flagged_share_{q}, recall_at_flagged_share_{q}, "
        "equal_error_rate and equal_error_rate_threshold (always); a class absent from labels, "
        "or the only class present, has them null with binary's one-class reason (its alert "
        "budgets are defined, as binary's). torchmetrics' multiclass_* functions answer 0 "
        "(threshold 1e6 or NaN) where ours is null"
    ),
    "operating_macro": (
        "{value}_macro of each operating-point value (not of thresholds, nor of "
        "flagged_share_{q}_actual): the mean over the classes present in labels whose value is "
        "defined, the rule of every macro average here (as roc_auc_ovr_macro leaves out a class "
        "absent from labels); a present class whose value is null (a precision no threshold "
        "reaches) is left out and named in `warnings`, which can lift the mean where "
        "torchmetrics would average a 0 in; null with a reason when no class is left. No "
        "threshold is averaged: each class's threshold is a score of its own column, and a mean "
        "of them is the threshold of no class"
    ),
}

_m = entry_builder("multiclass", CONVENTIONS)

# The tests that check the entries (pytest node ids are paths from the repository root).
_MC = "tests/core/test_multiclass.py::"
_CONFUSION = _MC + "test_confusion_matrix_accuracy_and_agreement"
_NAN = ", zero_division=np.nan"

_HARD = {
    "precision": "TP / (TP + FP) of the class, predictions against labels",
    "recall": "TP / (TP + FN) of the class",
    "f1": "2 TP / (2 TP + FP + FN) of the class",
}


def _hard_entries() -> tuple[MetricInfo, ...]:
    entries = []
    test = _MC + "test_precision_recall_f1_per_class_and_averaged"
    for name, formula in _HARD.items():
        reference = f"sklearn.metrics.{name}_score"
        macro_conventions: tuple[str, ...] = ("macro", "absent_classes", "predictions")
        if name == "f1":
            macro_conventions = ("f1_macro", *macro_conventions)
        macro_conventions += ("undefined",)
        entries += [
            _m(
                f"{name}_micro", True, UNIT,
                f"{formula.split(' of ')[0]} with counts pooled over all classes: equals "
                "accuracy when every row has one label and one prediction.",
                conventions=("micro", "predictions"),
                reference=f"{reference}(average='micro')", test=test,
            ),
            _m(
                f"{name}_macro", True, UNIT,
                f"Mean of per-class {formula} over the classes present in labels where it "
                "is defined.",
                conventions=macro_conventions,
                reference=f"{reference}(average='macro', labels=<present classes>{_NAN})",
                test=test,
            ),
            _m(
                f"{name}_weighted", True, UNIT,
                f"Support-weighted mean of per-class {formula} over the classes present in "
                "labels where it is defined.",
                conventions=("weighted", "absent_classes", "predictions", "undefined"),
                reference=f"{reference}(average='weighted', labels=<present classes>{_NAN})",
                test=test,
            ),
        ]  # fmt: skip
    return tuple(entries)


_OVR = (
    "sklearn.metrics.roc_auc_score of each class's one-vs-rest column, averaged; "
    "sklearn.metrics.roc_auc_score(multi_class='ovr', average='{average}') when every class is "
    "present"
)
_OVO = (
    "Hand & Till (2001) recomputed over every pair of rows in numpy; "
    "sklearn.metrics.roc_auc_score(multi_class='ovo', average='{average}') when unweighted"
)
_AP = (
    "sklearn.metrics.average_precision_score of each class's one-vs-rest column, averaged; "
    "with average='{average}' on the one-hot labels when every class is present"
)
_FLAT = (
    "sklearn.metrics.{function} of the label_binarize-d labels and the scores, both "
    "ravel-ed (scikit-learn's plot_roc example)"
)


# Operating points (options recall_at_precision, precision_at_recall, tpr_at_fpr,
# specificity_at_sensitivity, flagged_share; k = each target): the macro average of each value
# (binary's OPERATING_VALUE_DEFINITIONS: one table for both tasks).
_OPERATING_TEST = "tests/core/test_multiclass_operating.py::test_macro_averages_of_the_values"


def _operating_entries() -> tuple[MetricInfo, ...]:
    return tuple(
        _m(
            f"{name}_macro", name != "equal_error_rate", UNIT,
            f"Mean over the classes present in labels of each class's one-vs-rest {what}, "
            "where defined (the per-class values and thresholds are in per_class).",
            conventions=("operating_points", "operating_macro", "one_vs_rest", "undefined"),
            reference="the mean of the per-class values, each equal to task binary's on the "
            "class's one-vs-rest rows; torchmetrics' documented multiclass cases per class",
            test=_OPERATING_TEST,
        )
        for name, what in OPERATING_VALUE_DEFINITIONS
    )  # fmt: skip


CATALOG_ENTRIES: tuple[MetricInfo, ...] = (
    _m(
        "n_samples", None, COUNT, "Number of rows received (weight-zero rows included).",
        reference="the number of rows of the request", test=_CONFUSION,
    ),
    _m(
        "accuracy", True, UNIT, "Share of rows (by weight) whose prediction is the true class.",
        conventions=("predictions",),
        reference="sklearn.metrics.accuracy_score", test=_CONFUSION,
    ),
    _m(
        "balanced_accuracy", True, UNIT,
        "Mean per-class recall over the classes present in labels.",
        conventions=("predictions", "absent_classes"),
        reference="sklearn.metrics.balanced_accuracy_score", test=_CONFUSION,
    ),
    _m(
        "mcc", True, SIGNED_UNIT,
        "Matthews correlation of the k x k confusion matrix (Gorodkin's R_K, scikit-learn).",
        conventions=("predictions", "undefined"),
        reference="sklearn.metrics.matthews_corrcoef; where it is 0/0 scikit-learn returns 0, "
        "ours is null",
        test=_CONFUSION,
    ),
    _m(
        "cohen_kappa", True, SIGNED_UNIT,
        "(p_o - p_e) / (1 - p_e) of the k x k confusion matrix; p_e from its marginals.",
        conventions=("predictions", "undefined"),
        reference="sklearn.metrics.cohen_kappa_score; where it is 0/0 scikit-learn returns NaN "
        "or 0, ours is null",
        test=_CONFUSION,
    ),
    _m(
        "cohen_kappa_linear", True, SIGNED_UNIT,
        "1 - sum w O / sum w E over the k x k confusion matrix O and the product of its "
        "marginals E, w_ij = |i - j|: disagreements between classes farther apart in the "
        "classes' order (ordinal classes) weigh more (Cohen 1968).",
        conventions=("predictions", "undefined"),
        reference="sklearn.metrics.cohen_kappa_score(weights='linear', labels=<every class>); "
        "where it is 0/0 scikit-learn returns NaN, ours is null",
        test=_CONFUSION,
    ),
    _m(
        "cohen_kappa_quadratic", True, SIGNED_UNIT,
        "As cohen_kappa_linear with w_ij = (i - j)^2 (the quadratic weighted kappa of "
        "ordinal ratings).",
        conventions=("predictions", "undefined"),
        reference="sklearn.metrics.cohen_kappa_score(weights='quadratic', labels=<every "
        "class>); where it is 0/0 scikit-learn returns NaN, ours is null",
        test=_CONFUSION,
    ),
    _m(
        "log_loss", False, NON_NEGATIVE,
        "-mean(log p_true), p_true the probability of the true class clipped to "
        "[eps, 1 - eps]; needs probability rows.",
        conventions=("probabilities", "undefined"),
        reference="sklearn.metrics.log_loss(labels=<every class>)",
        test=_MC + "test_log_loss_and_brier_score",
    ),
    _m(
        "brier_score", False, MetricRange(0, 2),
        "mean over rows of sum over classes (p_c - [c = true])^2, in [0, 2]; needs "
        "probability rows.",
        conventions=("brier_score", "probabilities", "undefined"),
        reference="sklearn.metrics.brier_score_loss(labels=<every class>, scale_by_half=False)",
        test=_MC + "test_log_loss_and_brier_score",
    ),
    _m(
        "expected_calibration_error", False, UNIT,
        "Top-label ECE: sum over equal-width confidence bins of |correct - confidence| summed "
        "in the bin, / total weight; confidence = max probability, correct = argmax is the "
        "true class (options.calibration_bins bins).",
        aliases=("ece",),
        conventions=("expected_calibration_error", "probabilities", "undefined"),
        reference="the top-label binned sum recomputed row by row in numpy",
        test=_MC + "test_top_label_calibration_error",
    ),
    _m(
        "top_{k}_accuracy", True, UNIT,
        "Share of rows whose true class is among the k highest scores (k = each "
        "options.top_k); ties at the cut count pro rata (the expected value under a random "
        "order of the tied classes).",
        conventions=("top_k_ties", "undefined"),
        reference="sklearn.metrics.top_k_accuracy_score where no tie straddles the k-th place; "
        "everywhere, the expected hit over every order of each row's tied classes, enumerated",
        test=_MC + "test_top_k_accuracy",
    ),
    *_hard_entries(),
    _m(
        "roc_auc_ovr_macro", True, UNIT,
        "Mean over the classes present in labels of the one-vs-rest ROC AUC (class column "
        "against every other row).",
        conventions=("one_vs_rest", "macro", "absent_classes", "ties", "undefined"),
        reference=_OVR.format(average="macro"), test=_MC + "test_one_vs_rest_roc_auc",
    ),
    _m(
        "roc_auc_ovr_weighted", True, UNIT,
        "Support-weighted mean of the one-vs-rest ROC AUC.",
        conventions=("one_vs_rest", "weighted", "absent_classes", "ties", "undefined"),
        reference=_OVR.format(average="weighted"), test=_MC + "test_one_vs_rest_roc_auc",
    ),
    _m(
        "roc_auc_ovr_micro", True, UNIT,
        "ROC AUC of the flattened one-vs-rest problem: all n x k (one-hot label, score) cells "
        "pooled, each with its row's weight.",
        conventions=("micro", "ties", "undefined"),
        reference=_FLAT.format(function="roc_auc_score")
        + "; sklearn.metrics.roc_auc_score(average='micro') of the one-hot labels",
        test=_MC + "test_micro_roc_auc_and_average_precision_flatten_one_vs_rest",
    ),
    _m(
        "roc_auc_ovo_macro", True, UNIT,
        "Hand & Till (2001): mean over pairs of present classes of (A(i|j) + A(j|i)) / 2.",
        conventions=("roc_auc_ovo", "absent_classes", "ties", "undefined"),
        reference=_OVO.format(average="macro"), test=_MC + "test_one_vs_one_roc_auc",
    ),
    _m(
        "roc_auc_ovo_weighted", True, UNIT,
        "Hand & Till pair AUCs weighted by the pair's prevalence (weight of its two classes).",
        conventions=("roc_auc_ovo", "absent_classes", "ties", "undefined"),
        reference=_OVO.format(average="weighted"), test=_MC + "test_one_vs_one_roc_auc",
    ),
    _m(
        "average_precision_macro", True, UNIT,
        "Mean over the classes present in labels of the one-vs-rest step-wise average "
        "precision (mAP).",
        conventions=("one_vs_rest", "macro", "absent_classes", "ties", "undefined"),
        reference=_AP.format(average="macro"),
        test=_MC + "test_average_precision_per_class_and_averaged",
    ),
    _m(
        "average_precision_weighted", True, UNIT,
        "Support-weighted mean of the one-vs-rest step-wise average precision.",
        conventions=("one_vs_rest", "weighted", "absent_classes", "ties", "undefined"),
        reference=_AP.format(average="weighted"),
        test=_MC + "test_average_precision_per_class_and_averaged",
    ),
    _m(
        "average_precision_micro", True, UNIT,
        "Step-wise average precision of all n x k (one-hot label, score) cells pooled.",
        conventions=("micro", "ties", "undefined"),
        reference=_FLAT.format(function="average_precision_score"),
        test=_MC + "test_micro_roc_auc_and_average_precision_flatten_one_vs_rest",
    ),
    *_operating_entries(),
)  # fmt: skip

METRIC_NAMES = tuple(entry.name for entry in CATALOG_ENTRIES)
