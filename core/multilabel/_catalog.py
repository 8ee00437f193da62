"""The multilabel metric names (API.md "Canonical metric names"), their direction and
definition, and the conventions a multilabel result carries."""

from __future__ import annotations

from evalserve.core._catalog import MetricInfo, entry_builder

__all__ = ["CATALOG_ENTRIES", "CONVENTIONS", "METRIC_NAMES"]

AVERAGES = ("micro", "macro", "weighted", "samples")

_m = entry_builder("multilabel")


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
            aliases = (f"{alias}_{average}",) if alias else ()
            entries.append(_m(f"{name}_{average}", True, definitions[average], *aliases))
    return tuple(entries)


CATALOG_ENTRIES: tuple[MetricInfo, ...] = (
    _m("n_samples", None, "Number of rows received (weight-zero rows included)."),
    _m(
        "subset_accuracy", True,
        "Share of rows (by weight) whose predicted label set equals the true set exactly.",
        "exact_match_ratio",
    ),
    _m(
        "hamming_loss", False,
        "Share of wrong label cells: sum_i w_i |Y_i xor P_i| / (k sum_i w_i).",
    ),
    *_label_entries(),
    _m(
        "roc_auc_micro", True,
        "ROC AUC of all n x k (label, score) cells pooled, each cell with its row's weight.",
    ),
    _m("roc_auc_macro", True, "Mean of per-label ROC AUC over labels with both classes."),
    _m(
        "roc_auc_weighted", True,
        "Support-weighted mean of per-label ROC AUC over labels with both classes.",
    ),
    _m(
        "average_precision_micro", True,
        "Step-wise average precision of all n x k (label, score) cells pooled.",
    ),
    _m(
        "average_precision_macro", True,
        "Mean of per-label step-wise average precision over labels with positives (mAP).",
    ),
    _m(
        "average_precision_weighted", True,
        "Support-weighted mean of per-label step-wise average precision.",
    ),
    _m(
        "label_ranking_average_precision", True,
        "Weighted mean over rows with a true label of: the mean over its true labels l of "
        "|true labels scored >= s_l| / |labels scored >= s_l| (scikit-learn LRAP).",
        "lrap",
    ),
    _m(
        "coverage_error", False,
        "Weighted mean over rows with a true label of the number of labels scored >= its "
        "lowest-scored true label (ties take the highest rank, as scikit-learn).",
    ),
)  # fmt: skip

METRIC_NAMES = tuple(entry.name for entry in CATALOG_ENTRIES)

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
}
