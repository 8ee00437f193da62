"""The multilabel metrics' catalog entries, and the conventions a multilabel result carries.

Each entry names its reference (what the value is checked against) and the test that checks
it; ``tests/core/test_catalog.py`` fails when the test is missing or does not name the metric.
"""

from __future__ import annotations

from evalserve.core._metric_info import (
    COUNT,
    UNIT,
    MetricInfo,
    MetricRange,
    entry_builder,
)
from evalserve.core.binary._operating import OPERATING_VALUE_DEFINITIONS

__all__ = ["AVERAGES", "CATALOG_ENTRIES", "CONVENTIONS", "METRIC_NAMES"]

AVERAGES = ("micro", "macro", "weighted", "samples")

CONVENTIONS: dict[str, str] = {
    "threshold_rule": (
        "a label is predicted when its score >= options.threshold (as task binary); "
        "predictions, when sent, are used as they are"
    ),
    "scores": "without scores, the 0/1 predictions serve as scores (as task binary)",
    "undefined": "null with a reason in `undefined` (per label: the row's `undefined`), never 0",
    "zero_division": (
        "a 0/0 ratio is null and left out of every average; scikit-learn's default "
        "zero_division='warn' scores it 0 (and 'weighted' with no support 0). Our precision, "
        "recall and F1 equal scikit-learn's with zero_division=np.nan, whose averages skip NaN; "
        "jaccard_score has no NaN mode (0, 1 or 'warn' only): ours equals it on the labels or "
        "rows where it is defined"
    ),
    "micro": "counts pooled over all labels, labels with no positives included",
    "macro": (
        "mean over the labels with positives (weight > 0) whose value is defined; a label "
        "with no positives is left out of every macro and weighted average and named in "
        "`warnings` (scikit-learn averages it in: precision and F1 0, recall 0 or NaN, AP 0, "
        "AUC NaN). Equals scikit-learn's average='macro' with labels=<labels with positives> "
        "and zero_division=np.nan"
    ),
    "weighted": (
        "the labels of `macro`, weighted by support (positive weight). Equals scikit-learn's "
        "average='weighted' with zero_division=np.nan, except where no label with positives "
        "has the value defined: scikit-learn then returns 0 or an unweighted mean of labels "
        "without support, we return null"
    ),
    "samples": (
        "mean over rows, weighted by sample weight, of the row's ratio; rows where it is 0/0 "
        "(precision: no predicted label; recall: no true label; F1 and Jaccard: neither) are "
        "left out, as scikit-learn's average='samples' with zero_division=np.nan; rows of "
        "weight zero take no part"
    ),
    "roc_auc": (
        "per label as task binary (ties averaged); a label with one class only has no AUC and "
        "is left out of macro and weighted (scikit-learn: NaN); micro pools all n x k cells, "
        "each with its row's weight"
    ),
    "average_precision": (
        "step-wise, as scikit-learn, per label; a label with no positives has no AP "
        "(scikit-learn: 0 with a warning), one with no negatives has AP 1"
    ),
    "label_ranking_average_precision": (
        "scikit-learn's, ranks counting the labels scored >= (ties: highest rank); a row with "
        "no true label is left out (scikit-learn scores it 1)"
    ),
    "coverage_error": (
        "scikit-learn's (ties: highest rank); a row with no true label is left out "
        "(scikit-learn counts it 0)"
    ),
    "support": "per-label support is the weight of its positives (their count when unweighted)",
    "operating_points": (
        "per label, on its column (its rows positive where the label is 1): task binary's "
        "operating points and equal error rate with binary's names, rules and reasons in each "
        "per_class row, e.g. recall_at_precision_{p} and recall_at_precision_{p}_threshold, "
        "flagged_share_{q}_threshold / _actual, precision_at_flagged_share_{q}, "
        "recall_at_flagged_share_{q}, equal_error_rate and equal_error_rate_threshold (always); "
        "a label with no positives, or positive in every row, has them null with binary's "
        "one-class reason (its alert budgets are defined, as binary's). torchmetrics' "
        "multilabel_* functions answer 0 (threshold 1e6 or NaN) where ours is null"
    ),
    "operating_macro": (
        "{value}_macro of each operating-point value (not of thresholds, nor of "
        "flagged_share_{q}_actual): the labels of `macro` (with positives, value defined); a "
        "label with positives whose value is null (a precision no threshold reaches) is left "
        "out and named in `warnings`, which can lift the mean where torchmetrics would average "
        "a 0 in; null with a reason when no label is left. No threshold is averaged: each "
        "label's threshold is a score of its own column, and a mean of them is the threshold "
        "of no label"
    ),
}

_m = entry_builder("multilabel", CONVENTIONS)

# The tests that check the entries (pytest node ids are paths from the repository root).
_ML = "tests/core/test_multilabel.py::"
_PRF_TESTS = {
    "micro": _ML + "test_precision_recall_f1_micro_and_samples_match_sklearn_nan",
    "macro": _ML + "test_precision_recall_f1_macro_match_sklearn_on_labels_with_positives",
    "weighted": _ML + "test_precision_recall_f1_weighted_match_sklearn_nan",
    "samples": _ML + "test_precision_recall_f1_micro_and_samples_match_sklearn_nan",
}
# Where each average is defined, as its reference is called.
_KEPT = {
    "micro": "",
    "macro": " on the labels with positives",
    "weighted": "",
    "samples": "",
}

_PER_LABEL = {
    "precision": ("TP / (TP + FP)", "|Y_i & P_i| / |P_i|", "rows predicting no label"),
    "recall": ("TP / (TP + FN)", "|Y_i & P_i| / |Y_i|", "rows with no true label"),
    "f1": (
        "2 TP / (2 TP + FP + FN)",
        "2 |Y_i & P_i| / (|Y_i| + |P_i|)",
        "rows with neither a true nor a predicted label",
    ),
    "jaccard": (
        "TP / (TP + FP + FN) (IoU)",
        "|Y_i & P_i| / |Y_i | P_i| (IoU of the label sets)",
        "rows with neither a true nor a predicted label",
    ),
}


def _reference(name: str, average: str) -> tuple[str, str]:
    """The scikit-learn call a label metric is checked against, and the test that does."""
    if name == "jaccard":
        where = {
            "micro": " when some cell is true or predicted",
            "macro": " on the labels with positives",
            "weighted": " on the labels with positives",
            "samples": " on the rows with a true or predicted label",
        }[average]
        call = f"sklearn.metrics.jaccard_score(average='{average}'){where}"
        return call, _ML + "test_jaccard_matches_sklearn_on_defined_labels_and_rows"
    call = (
        f"sklearn.metrics.precision_recall_fscore_support(average='{average}', "
        f"zero_division=np.nan){_KEPT[average]}"
    )
    return call, _PRF_TESTS[average]


def _label_entries() -> tuple[MetricInfo, ...]:
    entries = []
    for name, (formula, per_row, left_out) in _PER_LABEL.items():
        alias = "iou" if name == "jaccard" else None
        definitions = {
            "micro": f"{formula}, counts pooled over all label cells.",
            "macro": (
                f"Mean of per-label {formula} over labels with positives where it is defined."
            ),
            "weighted": (
                f"Support-weighted mean of per-label {formula} over labels with positives where "
                "it is defined."
            ),
            "samples": f"Weighted mean over rows of {per_row}; {left_out} are left out.",
        }
        for average in AVERAGES:
            reference, test = _reference(name, average)
            entry = _m(
                f"{name}_{average}", True, UNIT, definitions[average],
                aliases=(f"{alias}_{average}",) if alias else (),
                conventions=(average, "threshold_rule", "zero_division", "undefined"),
                reference=reference, test=test,
            )  # fmt: skip
            entries.append(entry)
    return tuple(entries)


def _score_entry(name: str, average: str, definition: str, where: str) -> MetricInfo:
    function = "roc_auc_score" if name == "roc_auc" else "average_precision_score"
    return _m(
        f"{name}_{average}", True, UNIT, definition,
        conventions=(name, average, "scores", "undefined"),
        reference=f"sklearn.metrics.{function}(average='{average}'){where}",
        test=_ML + f"test_{name}_matches_sklearn",
    )  # fmt: skip


# Operating points (options recall_at_precision, precision_at_recall, tpr_at_fpr,
# specificity_at_sensitivity, flagged_share; k = each target): the macro average of each value
# (binary's OPERATING_VALUE_DEFINITIONS: one table for both tasks).
_OPERATING_TEST = "tests/core/test_multilabel_operating.py::test_macro_averages_of_the_values"


def _operating_entries() -> tuple[MetricInfo, ...]:
    return tuple(
        _m(
            f"{name}_macro", name != "equal_error_rate", UNIT,
            f"Mean over the labels with positives of each label's {what}, where defined (the "
            "per-label values and thresholds are in per_class).",
            conventions=("operating_points", "operating_macro", "undefined"),
            reference="the mean of the per-label values, each equal to task binary's on the "
            "label's column; torchmetrics' documented multilabel cases per label",
            test=_OPERATING_TEST,
        )
        for name, what in OPERATING_VALUE_DEFINITIONS
    )  # fmt: skip


CATALOG_ENTRIES: tuple[MetricInfo, ...] = (
    _m(
        "n_samples", None, COUNT, "Number of rows received (weight-zero rows included).",
        reference="the number of rows of the request",
        test=_ML + "test_every_metric_is_emitted_and_every_null_has_a_reason",
    ),
    _m(
        "subset_accuracy", True, UNIT,
        "Share of rows (by weight) whose predicted label set equals the true set exactly.",
        aliases=("exact_match_ratio",), conventions=("threshold_rule",),
        reference="sklearn.metrics.accuracy_score of the label indicator matrices",
        test=_ML + "test_subset_accuracy_and_hamming_loss_match_sklearn",
    ),
    _m(
        "hamming_loss", False, UNIT,
        "Share of wrong label cells: sum_i w_i |Y_i xor P_i| / (k sum_i w_i).",
        conventions=("threshold_rule",),
        reference="sklearn.metrics.hamming_loss",
        test=_ML + "test_subset_accuracy_and_hamming_loss_match_sklearn",
    ),
    *_label_entries(),
    _score_entry(
        "roc_auc", "micro",
        "ROC AUC of all n x k (label, score) cells pooled, each cell with its row's weight.",
        " when the pooled cells hold both classes",
    ),
    _score_entry(
        "roc_auc", "macro", "Mean of per-label ROC AUC over labels with both classes.",
        " on the labels with both classes",
    ),
    _score_entry(
        "roc_auc", "weighted",
        "Support-weighted mean of per-label ROC AUC over labels with both classes.",
        " on the labels with both classes",
    ),
    _score_entry(
        "average_precision", "micro",
        "Step-wise average precision of all n x k (label, score) cells pooled.",
        " when some cell is positive",
    ),
    _score_entry(
        "average_precision", "macro",
        "Mean of per-label step-wise average precision over labels with positives (mAP).",
        " on the labels with positives",
    ),
    _score_entry(
        "average_precision", "weighted",
        "Support-weighted mean of per-label step-wise average precision.",
        " on the labels with positives",
    ),
    _m(
        "label_ranking_average_precision", True, UNIT,
        "Weighted mean over rows with a true label of: the mean over its true labels l of "
        "|true labels scored >= s_l| / |labels scored >= s_l| (scikit-learn LRAP).",
        aliases=("lrap",), conventions=("label_ranking_average_precision", "undefined"),
        reference="sklearn.metrics.label_ranking_average_precision_score on the rows with a "
        "true label",
        test=_ML + "test_ranking_metrics_match_sklearn_on_rows_with_a_true_label",
    ),
    _m(
        "coverage_error", False, MetricRange(1, None),
        "Weighted mean over rows with a true label of the number of labels scored >= its "
        "lowest-scored true label (ties take the highest rank, as scikit-learn); at most k.",
        conventions=("coverage_error", "undefined"),
        reference="sklearn.metrics.coverage_error on the rows with a true label",
        test=_ML + "test_ranking_metrics_match_sklearn_on_rows_with_a_true_label",
    ),
    *_operating_entries(),
)  # fmt: skip

METRIC_NAMES = tuple(entry.name for entry in CATALOG_ENTRIES)
