"""The multiclass metric names (API.md "Canonical metric names"), their direction and
definition, and the conventions a multiclass result carries."""

from __future__ import annotations

from evalserve.core._catalog import MetricInfo, entry_builder

__all__ = ["AVERAGES", "CATALOG_ENTRIES", "CONVENTIONS", "METRIC_NAMES"]

AVERAGES = ("micro", "macro", "weighted")

_m = entry_builder("multiclass")


_HARD = {
    "precision": "TP / (TP + FP) of the class, predictions against labels",
    "recall": "TP / (TP + FN) of the class",
    "f1": "2 TP / (2 TP + FP + FN) of the class",
}


def _hard_entries() -> tuple[MetricInfo, ...]:
    entries = []
    for name, formula in _HARD.items():
        entries += [
            _m(
                f"{name}_micro", True,
                f"{formula.split(' of ')[0]} with counts pooled over all classes: equals "
                "accuracy when every row has one label and one prediction.",
            ),
            _m(
                f"{name}_macro", True,
                f"Mean of per-class {formula} over the classes present in labels where it "
                "is defined.",
            ),
            _m(
                f"{name}_weighted", True,
                f"Support-weighted mean of per-class {formula} over the classes present in "
                "labels where it is defined.",
            ),
        ]  # fmt: skip
    return tuple(entries)


CATALOG_ENTRIES: tuple[MetricInfo, ...] = (
    _m("n_samples", None, "Number of rows received (weight-zero rows included)."),
    _m("accuracy", True, "Share of rows (by weight) whose prediction is the true class."),
    _m(
        "balanced_accuracy", True,
        "Mean per-class recall over the classes present in labels.",
    ),
    _m(
        "mcc", True,
        "Matthews correlation of the k x k confusion matrix (Gorodkin's R_K, scikit-learn).",
    ),
    _m(
        "cohen_kappa", True,
        "(p_o - p_e) / (1 - p_e) of the k x k confusion matrix; p_e from its marginals.",
    ),
    _m(
        "log_loss", False,
        "-mean(log p_true), p_true the probability of the true class clipped to "
        "[eps, 1 - eps]; needs probability rows.",
    ),
    _m(
        "brier_score", False,
        "mean over rows of sum over classes (p_c - [c = true])^2, in [0, 2]; needs "
        "probability rows.",
    ),
    _m(
        "expected_calibration_error", False,
        "Top-label ECE: sum over equal-width confidence bins of |correct - confidence| summed "
        "in the bin, / total weight; confidence = max probability, correct = argmax is the "
        "true class (options.calibration_bins bins).",
    ),
    _m(
        "top_{k}_accuracy", True,
        "Share of rows whose true class is among the k highest scores; ties at the cut count "
        "pro rata (the expected value under a random order of the tied classes).",
    ),
    *_hard_entries(),
    _m(
        "roc_auc_ovr_macro", True,
        "Mean over the classes present in labels of the one-vs-rest ROC AUC (class column "
        "against every other row).",
    ),
    _m(
        "roc_auc_ovr_weighted", True,
        "Support-weighted mean of the one-vs-rest ROC AUC.",
    ),
    _m(
        "roc_auc_ovr_micro", True,
        "ROC AUC of the flattened one-vs-rest problem: all n x k (one-hot label, score) cells "
        "pooled, each with its row's weight.",
    ),
    _m(
        "roc_auc_ovo_macro", True,
        "Hand & Till (2001): mean over pairs of present classes of (A(i|j) + A(j|i)) / 2.",
    ),
    _m(
        "roc_auc_ovo_weighted", True,
        "Hand & Till pair AUCs weighted by the pair's prevalence (weight of its two classes).",
    ),
    _m(
        "average_precision_macro", True,
        "Mean over the classes present in labels of the one-vs-rest step-wise average "
        "precision (mAP).",
    ),
    _m(
        "average_precision_weighted", True,
        "Support-weighted mean of the one-vs-rest step-wise average precision.",
    ),
    _m(
        "average_precision_micro", True,
        "Step-wise average precision of all n x k (one-hot label, score) cells pooled.",
    ),
)  # fmt: skip

METRIC_NAMES = tuple(entry.name for entry in CATALOG_ENTRIES)

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
        "n (k - 1) negatives (label_binarize + ravel, seed 001)"
    ),
    "f1_macro": (
        "mean of per-class F1 (scikit-learn), not the F1 of macro precision and macro recall "
        "(Zhou's macro-F1, seed 000)"
    ),
    "roc_auc_ovo": (
        "Hand & Till (2001); weighted by pair prevalence as scikit-learn. Sample weights are "
        "frequency weights (scikit-learn refuses them for ovo): weight 2 equals the row twice"
    ),
    "roc_macro_curve": (
        "curves.roc_macro: vertical averaging of the per-class ROC curves of roc_auc_ovr_macro "
        "at the union of their FPR values; where a class's curve is vertical both ends are "
        "kept, so the averaged curve is exact and its area equals roc_auc_ovr_macro. "
        "scikit-learn's plot_roc example (seed 001) interpolates with np.interp, which keeps "
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
        "rows sum to 1 within 1e-6; otherwise they are null with a reason, never renormalized"
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
}
