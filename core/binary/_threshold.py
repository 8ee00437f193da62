"""Confusion counts at one threshold and every rate made from them.

Definitions follow the textbook ones (confusion matrix, accuracy, error rate, sensitivity,
specificity, precision, recall, F1, F-beta: Zhou, "Machine Learning", 2016, ch. 2; Manning,
Raghavan & Schütze, "Introduction to Information Retrieval", 2008, ch. 8) and scikit-learn's
names. Accuracy is (TP + TN) / (P + N) and F-beta (1 + b^2) P R / (b^2 P + R); notes that print
(TP + TN) / (FP + FN) or (a^2 + 1) P R / a^2 (P + R) have typos.
"""

from __future__ import annotations

import math

from evalserve.core._result import MetricSink

__all__ = ["NO_NEGATIVES", "NO_POSITIVES", "ONE_CLASS", "confusion_metrics"]

NO_PREDICTED_POSITIVES = "no predicted positives (TP + FP = 0)"
NO_PREDICTED_NEGATIVES = "no predicted negatives (TN + FN = 0)"
NO_POSITIVES = "no actual positives (TP + FN = 0)"
NO_NEGATIVES = "no actual negatives (TN + FP = 0)"
# What ranking metrics say when one class is absent, before which class: "... no actual positives".
ONE_CLASS = "only one class is present: "


def confusion_metrics(
    sink: MetricSink, tp: float, fp: float, tn: float, fn: float, *, beta: float
) -> None:
    """Write the counts and every threshold metric of the catalog into ``sink``."""
    positives, negatives = tp + fn, tn + fp
    predicted_pos, predicted_neg = tp + fp, tn + fn
    total = positives + negatives
    for name, value in (
        ("tp", tp), ("fp", fp), ("tn", tn), ("fn", fn),
        ("n_positive", positives), ("n_negative", negatives),
        ("n_predicted_positive", predicted_pos), ("n_predicted_negative", predicted_neg),
    ):  # fmt: skip
        sink.set(name, value)
    sink.ratio("accuracy", tp + tn, total, "no samples")
    sink.ratio("error_rate", fp + fn, total, "no samples")
    sink.ratio("prevalence", positives, total, "no samples")
    sink.ratio("precision", tp, predicted_pos, NO_PREDICTED_POSITIVES)
    sink.ratio("recall", tp, positives, NO_POSITIVES)
    sink.ratio("fnr", fn, positives, NO_POSITIVES)
    sink.ratio("specificity", tn, negatives, NO_NEGATIVES)
    sink.ratio("fpr", fp, negatives, NO_NEGATIVES)
    sink.ratio("npv", tn, predicted_neg, NO_PREDICTED_NEGATIVES)
    both = "no predicted and no actual positives (0/0)"
    sink.ratio("f1", 2 * tp, 2 * tp + fn + fp, both)
    b2 = beta * beta
    sink.ratio("f_beta", (1 + b2) * tp, (1 + b2) * tp + b2 * fn + fp, both)
    if positives == 0 or negatives == 0:
        reason = NO_POSITIVES if positives == 0 else NO_NEGATIVES
        sink.undefine("balanced_accuracy", reason)
        sink.undefine("youden_j", reason)
    else:
        recall, specificity = tp / positives, tn / negatives
        sink.set("balanced_accuracy", (recall + specificity) / 2)
        sink.set("youden_j", recall + specificity - 1)
    _mcc(sink, tp, fp, tn, fn)
    _cohen_kappa(sink, tp, fp, tn, fn)


def _mcc(sink: MetricSink, tp: float, fp: float, tn: float, fn: float) -> None:
    # Matthews (1975); scikit-learn calls the 0/0 case 0, we call it undefined. Computed on
    # proportions: the product of four weighted sums would overflow or underflow.
    total = tp + fp + tn + fn
    tp, fp, tn, fn = tp / total, fp / total, tn / total, fn / total
    product = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
    if product == 0:
        sink.undefine("mcc", "a row or column of the confusion matrix is empty (0/0)")
        return
    sink.set("mcc", (tp * tn - fp * fn) / math.sqrt(product))


def _cohen_kappa(sink: MetricSink, tp: float, fp: float, tn: float, fn: float) -> None:
    # Cohen (1960): (p_o - p_e) / (1 - p_e), chance agreement from the two marginals.
    total = tp + fp + tn + fn
    observed = (tp + tn) / total
    expected = ((tp + fp) / total) * ((tp + fn) / total) + ((tn + fn) / total) * ((tn + fp) / total)
    if expected >= 1:
        sink.undefine(
            "cohen_kappa", "chance agreement is 1: truth and prediction are one and the same class"
        )
        return
    sink.set("cohen_kappa", (observed - expected) / (1 - expected))
