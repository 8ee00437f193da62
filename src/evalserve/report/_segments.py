"""The report's segments: what a team monitoring a model per country, channel or tier reads.

A result with segments (``evaluate(..., segments=...)``) holds one full result per segment. The
page then has a table of every segment, worst first by the task's first headline metric (as
its catalog entry says which way is better; undefined values last): its rows, the headline
metrics with their intervals, its drift, challenger and monitor verdicts, and whether its first
headline metric is worse than the overall value by more than its interval allows (the
segment's interval lies wholly on the worse side of the overall value). A segment whose rows
weigh nothing says so in its row.

Each segment's charts are there on demand, one ``<details>`` per segment drawn when opened,
made by the same chart makers as the overall result's, from the segment's curves thinned to
``SEGMENT_POINTS`` points each, and without the charts that redraw the ROC curve's points
(``LEFT_OUT``): a page of 50 segments stays a few megabytes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from evalserve.core import EvaluationResult, Interval, Options, catalog_entry, task_spec
from evalserve.report._binary_charts import binary_charts
from evalserve.report._charts import Chart, charts_of
from evalserve.report._parts import VALIDATE
from evalserve.report._request import SEGMENT_POINTS

__all__ = [
    "LEFT_OUT",
    "SEGMENT_POINTS",
    "SegmentRow",
    "against_overall",
    "headline_columns",
    "higher_is_better",
    "interval_bounds",
    "segment_charts",
    "segment_rows",
    "thinned",
]

# Curves thinned for a segment's charts: one-dimensional, every array of one length.
_THINNED = ("roc", "pr", "det", "rec", "roc_macro", "sample")
# Their arrays of rates in [0, 1], rounded for a segment's charts.
_RATES = frozenset({"fpr", "tpr", "fnr", "precision", "recall", "share"})
# Charts of the overall result a segment's section leaves out, by task: task binary's threshold
# view, DET curve, gain and lift charts and score distributions redraw the ROC curve's points
# (the ROC and precision-recall curves, the calibration and the confusion matrix stay).
LEFT_OUT: Mapping[str, frozenset[str]] = MappingProxyType(
    {"binary": frozenset({"threshold", "det", "gain", "distributions"})}
)
INSUFFICIENT = "insufficient_data"


@dataclass(frozen=True)
class SegmentRow:
    """One segment as the table shows it: ``name``, its ``result``, ``insufficient`` (why it
    has no metrics, "" when it has), ``value`` (its first headline metric, None when
    undefined) and ``against`` (its first headline metric against the overall value: "worse",
    "better", "within" or "" when not judged)."""

    name: str
    result: EvaluationResult
    insufficient: str
    value: float | None
    against: str


def headline_columns(result: EvaluationResult) -> tuple[str, ...]:
    """The task's headline metrics the overall result or any segment has, in the task's
    order."""
    present = set(result.metrics)
    for each in result.segments.values():
        present.update(each.metrics)
    return tuple(name for name in task_spec(result.task).headline if name in present)


def higher_is_better(task: str, metric: str) -> bool | None:
    entry = catalog_entry(metric, task)
    return None if entry is None else entry.higher_is_better


def segment_rows(result: EvaluationResult) -> list[SegmentRow]:
    """The segments, worst first by the first headline metric (ascending when higher is
    better, descending when lower is), undefined values and insufficient data last, ties by
    name."""
    columns = headline_columns(result)
    metric = columns[0] if columns else None
    better = None if metric is None else higher_is_better(result.task, metric)
    rows = []
    for name, each in result.segments.items():
        value = None if metric is None else _number(each.metrics.get(metric))
        against = "" if metric is None else against_overall(result, each, metric)
        rows.append(SegmentRow(name, each, _insufficient(each), value, against))

    def order(row: SegmentRow) -> tuple[bool, float, str]:
        if row.value is None or better is None:
            return (row.value is None, 0.0, row.name)
        return (False, row.value if better else -row.value, row.name)

    return sorted(rows, key=order)


def against_overall(result: EvaluationResult, segment: EvaluationResult, metric: str) -> str:
    """The segment's ``metric`` against the overall value: "worse" when its interval lies
    wholly on the worse side of the overall value (higher is better: its upper bound below
    it; lower is better: its lower bound above it), "better" when wholly on the other side,
    "within" otherwise; "" when not judged (no interval, no overall value, no direction)."""
    overall = _number(result.metrics.get(metric))
    interval = segment.intervals.get(metric)
    better = higher_is_better(result.task, metric)
    if overall is None or interval is None or better is None:
        return ""
    below, above = interval.upper < overall, interval.lower > overall
    if below or above:
        return "worse" if below == better else "better"
    return "within"


def segment_charts(
    result: EvaluationResult, segment: EvaluationResult, options: Options, *, validate: bool = True
) -> list[Chart]:
    """The charts of one segment: the overall result's chart makers on the segment's result,
    its curves thinned to ``SEGMENT_POINTS`` and their rates rounded to 4 decimals (the
    tooltips' precision), without the charts ``LEFT_OUT``; ``validate``: check the
    specifications against Vega-Lite's schema (the page checks its first segment's only)."""
    left_out = LEFT_OUT.get(result.task, frozenset())
    light = thinned(segment, SEGMENT_POINTS)
    token = VALIDATE.set(validate)
    try:
        if result.task == "binary":
            charts = binary_charts(light, options, skip=left_out)
        else:
            charts = charts_of(light, options)
    finally:
        VALIDATE.reset(token)
    return [chart for chart in charts if chart.key not in left_out]


def thinned(result: EvaluationResult, points: int) -> EvaluationResult:
    """``result`` with each of its one-dimensional curves cut to at most ``points`` points,
    evenly spaced along the curve's order, the first and the last kept, and its rates rounded
    to 4 decimals; the rest unchanged."""
    curves = dict(result.curves)
    for name in _THINNED:
        curve = curves.get(name)
        if curve is None:
            continue
        sizes = {np.asarray(values).shape for values in curve.values()}
        if len(sizes) != 1 or len(size := next(iter(sizes))) != 1:
            continue
        keep = np.unique(np.linspace(0, size[0] - 1, min(points, size[0])).round().astype(np.intp))
        curves[name] = {
            key: np.round(np.asarray(values)[keep], 4)
            if key in _RATES
            else np.asarray(values)[keep]
            for key, values in curve.items()
        }
    return dataclasses.replace(result, curves=curves)


def interval_bounds(interval: Interval) -> str:
    return f"[{interval.lower:.4g}, {interval.upper:.4g}]"


def _insufficient(segment: EvaluationResult) -> str:
    """Why a segment has no metrics (its warning, without the code), or "" when it has."""
    if segment.metrics:
        return ""
    for warning in segment.warnings:
        if warning.startswith(INSUFFICIENT):
            return warning.removeprefix(INSUFFICIENT).lstrip(": ") or "no rows to evaluate"
    return "no metrics"


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if np.isfinite(number) else None
