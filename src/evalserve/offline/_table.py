"""``--format table``: the result as aligned text for a person at a terminal.

The metrics in catalog order with their intervals, the undefined ones with their reasons, the
drift tests, the per-class rows and the warnings. The JSON output stays the complete answer
(curves are left out here).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from evalserve.core import EvaluationResult

__all__ = ["table"]


def table(result: EvaluationResult) -> str:
    body = result.to_dict()
    lines = [f"task {body['task']}, {body['n_samples']:,} samples", ""]
    rows = []
    for name, value in body["metrics"].items():
        interval = body["intervals"].get(name)
        shown = "undefined" if value is None else _number(value)
        around = (
            f"[{_number(interval['lower'])}, {_number(interval['upper'])}] "
            f"{interval['level']:.0%} {interval['method']}"
            if interval
            else ""
        )
        note = body["undefined"].get(name, "")
        rows.append((name, shown, around or note))
    lines += _aligned(("metric", "value", "interval / reason"), rows)
    for section in ("drift", "comparison"):
        if body[section]:
            lines += ["", section]
            lines += _aligned(
                ("metric", "reference", "delta", "p-value", "significant"),
                [
                    (
                        name,
                        _number(test.get("baseline", test.get("challenger"))),
                        _number(test.get("delta")),
                        _number(test.get("p_value")),
                        str(test.get("significant", "")),
                    )
                    for name, test in body[section].items()
                ],
            )
    if body["per_class"]:
        keys = [key for key in body["per_class"][0] if key not in ("undefined", "intervals")]
        lines += ["", "per class"]
        lines += _aligned(
            tuple(keys), [tuple(_cell(row.get(key)) for key in keys) for row in body["per_class"]]
        )
    if body["coverage"]:
        lines += ["", "coverage"]
        lines += _aligned(("", ""), [(k, _cell(v)) for k, v in body["coverage"].items()])
    for warning in body["warnings"]:
        lines.append(f"warning: {warning}")
    return "\n".join(lines)


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
