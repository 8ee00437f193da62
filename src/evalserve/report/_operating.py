"""Task binary's operating points as the report shows them: one row per value the result
holds for the options' targets (recall at a precision, precision at a recall, TPR at an FPR,
specificity at a sensitivity, the alert budgets' flagged share, precision and recall) and the
equal error rate, each with its threshold, its interval when the result has one, or why it is
undefined; and where each lies on the ROC and precision-recall curves.

The names come from the core (``operating_names``), so the report shows what the evaluator
wrote and nothing it did not: a result without these options has no rows but the equal error
rate, and a result of another task none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from evalserve.core import OPERATING_KINDS as KINDS
from evalserve.core import EvaluationResult, Interval, Options, operating_names, target_label

__all__ = ["EER", "OperatingPoint", "curve_position", "operating_points", "precision_of"]

EER = "equal_error_rate"

# What a person reads for each option's value ({t}: the target).
_LABELS = {
    "recall_at_precision": "Recall at precision ≥ {t}",
    "precision_at_recall": "Precision at recall ≥ {t}",
    "tpr_at_fpr": "True positive rate at FPR ≤ {t}",
    "specificity_at_sensitivity": "Specificity at sensitivity ≥ {t}",
}
# An alert budget's three values, in the order of ``operating_names`` after the threshold.
_BUDGET_LABELS = (
    "Share flagged within a budget of {t}",
    "Precision within a budget of {t}",
    "Recall within a budget of {t}",
)


@dataclass(frozen=True)
class OperatingPoint:
    """One value of an operating point: ``option`` (the option's name, or ``equal_error_rate``)
    and its ``target``; ``metric``, the value's name in the result, and ``value``; the
    threshold achieving it; ``reason``: why the value or the threshold is undefined ("" when
    both are defined); ``primary``: the value a chart marks (an alert budget has three values
    and one point, at its share flagged)."""

    option: str
    target: float | None
    label: str
    metric: str
    value: float | None
    threshold_metric: str
    threshold: float | None
    interval: Interval | None
    reason: str
    primary: bool


def operating_points(result: EvaluationResult, options: Options) -> list[OperatingPoint]:
    """The operating points ``result`` holds, in the options' order, then the equal error
    rate; empty for a task other than binary."""
    if result.task != "binary":
        return []
    found: list[OperatingPoint] = []
    for kind in KINDS:
        for target in getattr(options, kind):
            names = operating_names(kind, target)
            text = target_label(target)
            if kind == "flagged_share":
                threshold, *values = names
                labels = [label.format(t=text) for label in _BUDGET_LABELS]
            else:
                values, threshold = [names[0]], names[1]
                labels = [_LABELS[kind].format(t=text)]
            for index, (name, label) in enumerate(zip(values, labels, strict=True)):
                point = _point(result, kind, target, label, name, threshold, primary=index == 0)
                if point is not None:
                    found.append(point)
    eer = _point(result, EER, None, "Equal error rate", EER, f"{EER}_threshold", primary=True)
    if eer is not None:
        found.append(eer)
    return found


def _point(
    result: EvaluationResult,
    option: str,
    target: float | None,
    label: str,
    name: str,
    threshold: str,
    *,
    primary: bool,
) -> OperatingPoint | None:
    if name not in result.metrics:
        return None
    value = _number(result.metrics.get(name))
    at = _number(result.metrics.get(threshold))
    reason = result.undefined.get(name) or result.undefined.get(threshold) or ""
    return OperatingPoint(
        option=option,
        target=target,
        label=label,
        metric=name,
        value=value,
        threshold_metric=threshold,
        threshold=at,
        interval=result.intervals.get(name),
        reason=reason,
        primary=primary,
    )


def curve_position(result: EvaluationResult, point: OperatingPoint) -> tuple[float, float] | None:
    """Where ``point`` lies on the ROC curve: (FPR, TPR) at its threshold, or None when it has
    no threshold or the result no ROC curve.

    The coordinate the value states is exact (a recall is the TPR, a specificity 1 - FPR, an
    alert budget's share flagged and recall fix both); the other is the curve's at the nearest
    threshold it kept (``max_curve_points`` thins it), as the optimum markers are, held within
    the target the point meets (a TPR at FPR <= 0.1 is not drawn at an FPR of 0.1003)."""
    roc = result.curves.get("roc")
    positives = _number(result.metrics.get("n_positive")) or 0.0
    negatives = _number(result.metrics.get("n_negative")) or 0.0
    if roc is None or point.threshold is None or positives <= 0 or negatives <= 0:
        return None
    nearest = _nearest(roc, point.threshold)
    if nearest is None:
        return None
    fpr, tpr = nearest
    value, target = point.value, point.target
    # The other coordinate, from the thinned curve, kept within the target the point meets.
    if point.option == "recall_at_precision" and value is not None and target:
        tpr = value
        fpr = min(fpr, tpr * positives * (1.0 - target) / (target * negatives))
    elif point.option == "tpr_at_fpr" and value is not None and target is not None:
        tpr, fpr = value, min(fpr, target)
    elif point.option == "specificity_at_sensitivity" and value is not None and target:
        fpr, tpr = 1.0 - value, max(tpr, target)
    elif point.option == "precision_at_recall" and value and target is not None:
        tpr = max(tpr, target)
        fpr = tpr * positives * (1.0 - value) / (value * negatives)
    elif point.option == "flagged_share" and target is not None:
        recall = _metric(result, operating_names("flagged_share", target)[3])
        if value is not None and recall is not None:
            tpr = recall
            fpr = max(0.0, value * (positives + negatives) - recall * positives) / negatives
    return min(max(fpr, 0.0), 1.0), min(max(tpr, 0.0), 1.0)


def precision_of(result: EvaluationResult, fpr: float, tpr: float) -> float | None:
    """The precision at a ROC point, from the class totals (weighted); None when nothing is
    flagged."""
    positives = _number(result.metrics.get("n_positive")) or 0.0
    negatives = _number(result.metrics.get("n_negative")) or 0.0
    flagged = tpr * positives + fpr * negatives
    return tpr * positives / flagged if flagged > 0 else None


def _nearest(roc: Mapping[str, np.ndarray], threshold: float) -> tuple[float, float] | None:
    thresholds = roc["thresholds"]
    finite = np.flatnonzero(np.isfinite(thresholds))
    if not finite.size:
        return None
    index = finite[np.argmin(np.abs(thresholds[finite] - threshold))]
    return float(roc["fpr"][index]), float(roc["tpr"][index])


def _metric(result: EvaluationResult, name: str) -> float | None:
    return _number(result.metrics.get(name))


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
