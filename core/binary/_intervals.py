"""Closed-form confidence intervals: DeLong for the ROC AUC, Wilson for the proportions.

Each interval is an ``Interval`` (a result's ``intervals`` entry); an interval that cannot be
computed is left out and its reason goes to the warnings.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from evalserve.core._distributions import normal_quantile
from evalserve.core._result import MetricSink
from evalserve.core._result_parts import Interval
from evalserve.core.binary._delong import Placements

__all__ = [
    "WILSON_PROPORTIONS",
    "auc_interval",
    "auc_interval_of",
    "wilson_band",
    "wilson_interval",
    "wilson_intervals",
]


def _z(level: float) -> float:
    # From the lower tail: 0.5 + level / 2 rounds to 1 for the largest levels below 1 (and the
    # quantile of 1 is infinite), while (1 - level) / 2 stays positive.
    return -normal_quantile((1.0 - level) / 2.0)


def auc_interval(placed: Placements, level: float, method: str) -> Interval | str:
    """DeLong's interval for the AUC, or the reason there is none.

    ``wald`` (pROC's ``ci.auc(method = "delong")``): AUC -/+ z SE, clipped to [0, 1].
    ``logit``: the Wald interval of logit(AUC), with SE / (AUC (1 - AUC)) by the delta method,
    mapped back: it stays inside (0, 1) and is asymmetric near the bounds, where the Wald
    interval's coverage falls short.
    """
    positives, negatives = placed.positives, placed.negatives
    variance = placed.variance if positives > 1 and negatives > 1 else 0.0  # else: a reason
    return auc_interval_of(placed.auc, variance, positives, negatives, level, method)


def auc_interval_of(
    auc: float, variance: float, positives: float, negatives: float, level: float, method: str
) -> Interval | str:
    """``auc_interval`` from the AUC, DeLong's variance and the class masses."""
    if positives <= 1 or negatives <= 1:
        return (
            "DeLong's variance needs more than 1 positive and more than 1 negative (in units of"
            " sample weight)"
        )
    variance = max(variance, 0.0)
    std_error = math.sqrt(variance)
    z = _z(level)
    if method == "wald":
        lower, upper = max(0.0, auc - z * std_error), min(1.0, auc + z * std_error)
        name = "delong"
    elif std_error == 0.0 or auc in (0.0, 1.0):
        # No spread (every positive above every negative, or the reverse): a point.
        lower = upper = auc
        name = "delong-logit"
    else:
        centre = math.log(auc / (1.0 - auc))
        half = z * std_error / (auc * (1.0 - auc))
        lower, upper = _expit(centre - half), _expit(centre + half)
        name = "delong-logit"
    return Interval(lower=lower, upper=upper, level=level, method=name, std_error=std_error)


def _expit(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def wilson_interval(successes: float, trials: float, level: float) -> Interval | None:
    """Wilson's score interval for a proportion (None when there are no trials). With sample
    weights, the weights count as rows (frequency weights)."""
    if trials <= 0:
        return None
    # Successes and trials are sums of weights added in their own orders: with fractional
    # weights their ratio can pass 1 by a rounding.
    p = min(1.0, max(0.0, successes / trials))
    z = _z(level)
    z2n = z * z / trials
    centre = (p + z2n / 2.0) / (1.0 + z2n)
    half = z * math.sqrt(p * (1.0 - p) / trials + z2n / (4.0 * trials)) / (1.0 + z2n)
    return Interval(
        lower=max(0.0, centre - half),
        upper=min(1.0, centre + half),
        level=level,
        method="wilson",
        std_error=math.sqrt(p * (1.0 - p) / trials),
    )


def wilson_band(
    proportions: NDArray[np.float64], trials: float, level: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Wilson's score interval (Wilson 1927) of each of ``proportions`` over ``trials``: the
    lower and the upper bounds, clipped to [0, 1]; the proportions themselves when there are no
    trials (a band of width 0: nothing to say)."""
    if trials <= 0:
        return proportions.copy(), proportions.copy()
    z = _z(level)
    z2n = z * z / trials
    centre = (proportions + z2n / 2.0) / (1.0 + z2n)
    half = (
        z / (1.0 + z2n) * np.sqrt(proportions * (1.0 - proportions) / trials + z2n / (4.0 * trials))
    )
    return np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)


WILSON_PROPORTIONS = ("accuracy", "precision", "recall", "specificity")


def wilson_intervals(
    intervals: dict[str, Interval],
    sink: MetricSink,
    counts: tuple[float, float, float, float],
    level: float,
) -> None:
    """Wilson intervals of accuracy, precision, recall and specificity from (tp, fp, tn, fn);
    a proportion that is undefined (0/0) gets no interval."""
    tp, fp, tn, fn = counts
    fractions = {
        "accuracy": (tp + tn, tp + fp + tn + fn),
        "precision": (tp, tp + fp),
        "recall": (tp, tp + fn),
        "specificity": (tn, tn + fp),
    }
    for name, (successes, trials) in fractions.items():
        if sink.metrics.get(name) is None:
            continue
        interval = wilson_interval(successes, trials, level)
        if interval is not None:
            intervals[name] = interval
