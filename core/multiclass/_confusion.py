"""The k x k confusion matrix and every metric of hard predictions made from it.

Rows are true classes, columns predicted classes; entries are weights (counts when
unweighted). Per class c: TP = C[c, c], support = row sum, predicted = column sum. Micro
averages pool the counts of all classes (each equals accuracy); macro and weighted averages
run over the classes present in labels and leave out per-class 0/0 values (the three averages
of Zhou, "Machine Learning", 2016, ch. 2, and of scikit-learn's user guide; scikit-learn's
``precision_recall_fscore_support``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from evalserve.core._result import MetricSink
from evalserve.core.binary._intervals import wilson_interval

__all__ = ["ClassCounts", "class_counts", "confusion_matrix", "hard_metrics"]

Floats = NDArray[np.float64]
Indices = NDArray[np.intp]

NEVER_PREDICTED = "class never predicted (TP + FP = 0)"
ABSENT = "class absent from labels (TP + FN = 0)"
NEITHER = "class neither in labels nor predicted (0/0)"


def confusion_matrix(
    labels: Indices, predicted: Indices, weights: Floats | None, n_classes: int
) -> Floats:
    """C[true, predicted] = total weight of those rows."""
    flat = labels * n_classes + predicted
    counts = np.bincount(flat, weights=weights, minlength=n_classes * n_classes)
    return counts.astype(np.float64, copy=False).reshape(n_classes, n_classes)


@dataclass(frozen=True, slots=True, eq=False)
class ClassCounts:
    """Per class: TP, support (TP + FN) and predicted (TP + FP); plus per-class precision,
    recall, F1 and F-beta with NaN where 0/0 (turned into None + reason by the caller)."""

    tp: Floats
    support: Floats
    predicted: Floats
    precision: Floats
    recall: Floats
    f1: Floats
    f_beta: Floats

    @property
    def present(self) -> NDArray[np.bool_]:
        return self.support > 0


def _ratio(numerator: Floats, denominator: Floats) -> Floats:
    out = np.full(numerator.shape, np.nan)
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out


def class_counts(matrix: Floats, beta: float) -> ClassCounts:
    tp = np.diagonal(matrix).copy()
    support = matrix.sum(axis=1)
    predicted = matrix.sum(axis=0)
    fp, fn = predicted - tp, support - tp
    b2 = beta * beta
    return ClassCounts(
        tp=tp,
        support=support,
        predicted=predicted,
        precision=_ratio(tp, predicted),
        recall=_ratio(tp, support),
        f1=_ratio(2 * tp, 2 * tp + fp + fn),
        f_beta=_ratio((1 + b2) * tp, (1 + b2) * tp + b2 * fn + fp),
    )


def hard_metrics(
    sink: MetricSink,
    matrix: Floats,
    counts: ClassCounts,
    classes: tuple[str, ...],
    *,
    level: float,
) -> None:
    """accuracy, balanced_accuracy, mcc, cohen_kappa (unweighted, linear and quadratic) and
    {precision, recall, f1}_{micro, macro, weighted} into ``sink``; the Wilson interval of
    accuracy."""
    total = float(matrix.sum())
    correct = float(counts.tp.sum())
    sink.set("accuracy", correct / total)
    interval = wilson_interval(correct, total, level)
    if interval is not None:
        sink.intervals["accuracy"] = interval
    present = counts.present
    sink.set("balanced_accuracy", float(counts.recall[present].mean()))
    _mcc(sink, matrix / total)
    _cohen_kappa(sink, matrix / total)
    _weighted_kappas(sink, matrix / total)
    for name in ("precision", "recall", "f1"):
        # Pooled over classes: sum TP / sum (TP + FP) = sum TP / sum (TP + FN) = accuracy.
        sink.set(f"{name}_micro", correct / total)
        values: Floats = getattr(counts, name)
        averaged(sink, name, values, counts.support, present, classes)


def averaged(
    sink: MetricSink,
    name: str,
    values: Floats,
    support: Floats,
    present: NDArray[np.bool_],
    classes: tuple[str, ...],
) -> None:
    """``{name}_macro`` and ``{name}_weighted`` over the present classes whose value is
    defined (not NaN); the present classes left out are named in ``warnings``. A present class
    has recall and F1; only its precision can be 0/0 (the class is never predicted)."""
    defined = present & ~np.isnan(values)
    left_out = np.flatnonzero(present & ~defined)
    if left_out.size:
        sink.warn(
            f"{name}_macro and {name}_weighted leave out {describe(classes, left_out)}: "
            f"{name} undefined ({NEVER_PREDICTED})"
        )
    if not defined.any():
        reason = f"no class present in labels has a defined {name}"
        sink.undefine(f"{name}_macro", reason)
        sink.undefine(f"{name}_weighted", reason)
        return
    sink.set(f"{name}_macro", float(values[defined].mean()))
    weight = support[defined]
    sink.set(f"{name}_weighted", float(np.dot(weight, values[defined]) / weight.sum()))


def describe(classes: tuple[str, ...], indices: Indices, limit: int = 10) -> str:
    """'class 'a'' or 'classes 'a', 'b' (and 3 more)'."""
    names = [repr(classes[int(index)]) for index in indices[:limit]]
    more = f" and {indices.size - limit} more" if indices.size > limit else ""
    noun = "class" if indices.size == 1 else "classes"
    return f"{noun} {', '.join(names)}{more}"


def _mcc(sink: MetricSink, proportions: Floats) -> None:
    # Gorodkin (2004) R_K, as scikit-learn's matthews_corrcoef, on proportions so that sums of
    # large weights neither overflow nor lose the 0/0 case; scikit-learn calls 0/0 0.
    true = proportions.sum(axis=1)
    predicted = proportions.sum(axis=0)
    # A spread 1 - sum p_c^2 is 0 exactly when one class holds all the weight: tested on the
    # counts, since the rounded proportions can leave 1e-16 where 0 is meant.
    if np.count_nonzero(true) <= 1 or np.count_nonzero(predicted) <= 1:
        sink.undefine(
            "mcc",
            "every row has the same true class or every prediction is the same class (0/0)",
        )
        return
    correct = float(np.trace(proportions))
    covariance = correct - float(np.dot(true, predicted))
    spread_true = 1.0 - float(np.dot(true, true))
    spread_predicted = 1.0 - float(np.dot(predicted, predicted))
    if spread_true * spread_predicted <= 0:  # a class holds all but ~1e-16 of the weight
        sink.undefine("mcc", "the confusion matrix is too close to a single class (0/0)")
        return
    sink.set("mcc", covariance / math.sqrt(spread_true * spread_predicted))


def _cohen_kappa(sink: MetricSink, proportions: Floats) -> None:
    # Cohen (1960): 1 - observed disagreement / chance disagreement (scikit-learn's form).
    true = proportions.sum(axis=1)
    predicted = proportions.sum(axis=0)
    # Chance agreement sum p_c t_c is 1 exactly when labels and predictions are all one and
    # the same class: tested on the counts (the rounded sum could miss 1 by 1e-16).
    together = np.flatnonzero(true) if np.count_nonzero(true) == 1 else None
    if together is not None and np.array_equal(together, np.flatnonzero(predicted)):
        sink.undefine(
            "cohen_kappa",
            "chance agreement is 1: labels and predictions are one and the same class",
        )
        return
    observed = 1.0 - float(np.trace(proportions))
    expected = 1.0 - float(np.dot(true, predicted))
    if expected <= 0:  # one class holds all but ~1e-16 of both marginals
        sink.undefine("cohen_kappa", "chance agreement rounds to 1 (0/0)")
        return
    sink.set("cohen_kappa", 1.0 - observed / expected)


# The weighted kappas: a disagreement between classes i and j (in the classes' order, taken as
# ordinal) weighs |i - j| ** power.
WEIGHTED_KAPPAS = (("cohen_kappa_linear", 1), ("cohen_kappa_quadratic", 2))


def _weighted_kappas(sink: MetricSink, proportions: Floats) -> None:
    # Cohen (1968): 1 - sum w O / sum w E, E the product of the marginals (scikit-learn's
    # cohen_kappa_score(weights=...) over every class, in the classes' order).
    true = proportions.sum(axis=1)
    predicted = proportions.sum(axis=0)
    index = np.arange(proportions.shape[0], dtype=np.float64)
    distance = np.abs(index[:, None] - index[None, :])
    for name, power in WEIGHTED_KAPPAS:
        weights = distance**power
        observed = float(np.sum(weights * proportions))
        expected = float(true @ weights @ predicted)
        if expected <= 0:  # all of both marginals in one class: no disagreement by chance
            sink.undefine(
                name,
                "chance disagreement is 0: labels and predictions are one and the same class (0/0)",
            )
            continue
        sink.set(name, 1.0 - observed / expected)
