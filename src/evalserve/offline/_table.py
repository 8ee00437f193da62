"""``--format table``: the result as aligned text for a person at a terminal.

The metrics in catalog order with their intervals, the undefined ones with their reasons, the
drift tests, the per-class rows and the warnings. The JSON output stays the complete answer
(curves are left out here).

With segments, each segment's table follows the overall one, under a line naming the segment,
its rows and its value of the task's headline metric (the first of its ``TaskSpec.headline``):
the worst segment first (lowest when higher is better, highest when lower is), those whose
value is undefined last, ties by name.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from evalserve.core import (
    ClassRow,
    Comparison,
    DriftTest,
    EvaluationResult,
    Interval,
    catalog_entry,
    task_spec,
)

__all__ = ["segment_order", "table"]


def table(result: EvaluationResult) -> str:
    lines = [f"task {result.task}, {result.n_samples:,} samples", "", *_body(result)]
    if not result.segments:
        return "\n".join(lines)
    headline = task_spec(result.task).headline[0]
    lines += ["", f"{len(result.segments)} segments, the worst {headline} first"]
    for name in segment_order(result):
        segment = result.segments[name]
        value = segment.metrics.get(headline)
        shown = "undefined" if value is None else _number(value)
        lines += ["", f"segment {name!r}: {segment.n_samples:,} samples, {headline} {shown}"]
        lines += _body(segment)
    return "\n".join(lines)


def segment_order(result: EvaluationResult) -> list[str]:
    """The segments' names, the worst value of the task's headline metric first (undefined
    values last, ties by name)."""
    headline = task_spec(result.task).headline[0]
    entry = catalog_entry(headline, result.task)
    sign = -1.0 if entry is not None and entry.higher_is_better is False else 1.0

    def key(name: str) -> tuple[bool, float, str]:
        value = result.segments[name].metrics.get(headline)
        number = math.nan if value is None else float(value)
        defined = math.isfinite(number)
        return (not defined, sign * number if defined else 0.0, name)

    return sorted(result.segments, key=key)


def _body(result: EvaluationResult) -> list[str]:
    lines = _metric_lines(result)
    drift = {name: (test.baseline, test) for name, test in result.drift.items()}
    comparison = {name: (test.challenger, test) for name, test in result.comparison.items()}
    lines += _test_lines("drift", "baseline", drift)
    lines += _test_lines("comparison", "challenger", comparison)
    lines += _class_lines(result.per_class)
    if result.coverage is not None:
        lines += ["", "coverage"]
        lines += _aligned(("", ""), [(k, _cell(v)) for k, v in result.coverage.to_dict().items()])
    for warning in result.warnings:
        lines.append(f"warning: {warning}")
    return lines


def _metric_lines(result: EvaluationResult) -> list[str]:
    rows = []
    for name, value in result.metrics.items():
        interval = result.intervals.get(name)
        shown = "undefined" if value is None else _number(value)
        around = "" if interval is None else _interval(interval)
        note = result.undefined.get(name, "")
        rows.append((name, shown, around or note))
    return _aligned(("metric", "value", "interval / reason"), rows)


def _interval(interval: Interval) -> str:
    return (
        f"[{_number(interval.lower)}, {_number(interval.upper)}] "
        f"{interval.level:.0%} {interval.method}"
    )


def _test_lines(
    section: str, against: str, tests: Mapping[str, tuple[float | None, DriftTest | Comparison]]
) -> list[str]:
    """The tests of ``section``, each with the other side's value (column ``against``: the
    baseline's, the challenger's; nothing without)."""
    if not tests:
        return []
    rows = [
        (
            name,
            _number(reference),
            _number(test.delta),
            _number(test.p_value),
            str(test.significant),
        )
        for name, (reference, test) in tests.items()
    ]
    header = ("metric", against, "delta", "p-value", "significant")
    return ["", section, *_aligned(header, rows)]


def _class_lines(per_class: Sequence[ClassRow]) -> list[str]:
    """The per-class rows, with the first row's metrics as the columns."""
    if not per_class:
        return []
    keys = list(per_class[0].metrics)
    rows = [
        (_cell(row.class_name), *(_cell(row.metrics.get(key)) for key in keys)) for row in per_class
    ]
    return ["", "per class", *_aligned(("class", *keys), rows)]


def _cell(value: Any) -> str:
    if value is None:
        return "undefined"
    if isinstance(value, float):
        return _number(value)
    return str(value)


def _number(value: Any) -> str:
    if value is None:
        return "-"
    number = float(value)
    if math.isfinite(number) and number == int(number) and abs(number) < 1e15:
        return f"{int(number):,}"
    return f"{number:.6g}"


def _aligned(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(str(row[i])) for row in (header, *rows)) for i in range(len(header))]
    return [
        "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in (header, *rows)
    ]
