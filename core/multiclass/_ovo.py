"""One-vs-one ROC AUC (Hand & Till 2001, "A Simple Generalisation of the Area Under the ROC
Curve for Multiple Class Classification Problems").

Â(i|j) = P(score_i of a class-i row > score_i of a class-j row), ties counting half: the AUC of
class i against class j ranked by column i. The pair's AUC is (Â(i|j) + Â(j|i)) / 2; the
macro average is their mean over the pairs of classes present in labels, the weighted average
weighs each pair by its prevalence (the weight of its two classes), as scikit-learn's
``roc_auc_score(multi_class="ovo", average="weighted")``. Sample weights are frequency weights:
a pair of rows counts the product of their weights.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from evalserve.core._result import MetricSink

__all__ = ["ovo_metrics"]

Floats = NDArray[np.float64]


def ovo_metrics(sink: MetricSink, pairs: Floats, class_mass: Floats) -> None:
    """``pairs[i, j]``: the weighted count of (class-i row, class-j row) pairs that column i
    ranks right (ties half); ``class_mass``: the weight of each class."""
    present = np.flatnonzero(class_mass > 0)
    if present.size < 2:
        reason = "one-vs-one needs at least two classes present in labels"
        sink.undefine("roc_auc_ovo_macro", reason)
        sink.undefine("roc_auc_ovo_weighted", reason)
        return
    mass = class_mass[present]
    conditional = pairs[np.ix_(present, present)] / np.outer(mass, mass)  # Â(i|j)
    first, second = np.triu_indices(present.size, k=1)
    pair_auc = (conditional[first, second] + conditional[second, first]) / 2
    prevalence = mass[first] + mass[second]
    sink.set("roc_auc_ovo_macro", float(pair_auc.mean()))
    sink.set("roc_auc_ovo_weighted", float(np.dot(prevalence, pair_auc) / prevalence.sum()))
