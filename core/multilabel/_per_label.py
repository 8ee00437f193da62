"""One metric for every label: values, which labels have it defined, and why the others do not;
and the label averages (macro, weighted) built from it.

A label with no positives (of weight > 0) is absent: every macro and weighted average leaves it
out, whatever its own value (its precision may be 0, its F1 0: false positives on a label
nobody has are counted by the micro averages instead). A label whose value is undefined (0/0) is
left out too. The averages therefore run over "labels with positives whose value is defined",
which is scikit-learn's ``average="macro"`` / ``"weighted"`` with ``labels=<labels with
positives>`` and ``zero_division=np.nan``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from evalserve.core._result import MetricSink

__all__ = ["PerLabel", "label_averages", "ratio"]

Floats = NDArray[np.float64]
Bools = NDArray[np.bool_]

NO_LABEL_WITH_POSITIVES = "no label has a positive (every label is absent from labels)"


@dataclass(frozen=True, slots=True, eq=False)
class PerLabel:
    """``values[j]`` is the metric of label j, 0.0 where ``defined[j]`` is False; ``reasons``
    maps each undefined label to its reason."""

    values: Floats
    defined: Bools
    reasons: dict[int, str]

    def value(self, label: int) -> float | None:
        return float(self.values[label]) if self.defined[label] else None


def ratio(numerator: Floats, denominator: Floats, reason: str) -> PerLabel:
    """numerator / denominator per label; a zero denominator leaves the label undefined."""
    defined = denominator > 0
    values = np.divide(
        numerator, denominator, out=np.zeros(numerator.shape, dtype=np.float64), where=defined
    )
    return PerLabel(values, defined, dict.fromkeys(np.flatnonzero(~defined).tolist(), reason))


def label_averages(sink: MetricSink, name: str, metric: PerLabel, support: Floats) -> None:
    """``{name}_macro``: the mean over labels with positives whose value is defined;
    ``{name}_weighted``: the same labels, weighted by support (positive weight)."""
    kept = metric.defined & (support > 0)
    if not kept.any():
        reason = NO_LABEL_WITH_POSITIVES
        if (support > 0).any():
            example = metric.reasons[int(np.argmax(support > 0))]
            reason = f"undefined for every label with positives ({example})"
        sink.undefine(f"{name}_macro", reason)
        sink.undefine(f"{name}_weighted", reason)
        return
    values, weights = metric.values[kept], support[kept]
    sink.set(f"{name}_macro", float(np.mean(values)))
    # Elementwise products and numpy's own sum, not a BLAS dot: the same numbers give the same
    # result wherever they sit in memory (a merged state and the rows agree to the bit).
    sink.set(f"{name}_weighted", float((weights * values).sum() / weights.sum()))
