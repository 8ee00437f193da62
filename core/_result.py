"""The evaluation result: plain Python values, ready for JSON or protobuf.

Metrics are ``float`` or ``None``; every ``None`` has its reason in ``undefined``. Numpy scalars
never leak out of here.
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalserve.core._result_parts import (
    ClassRow,
    Comparison,
    CoverageReport,
    DriftTest,
    Interval,
    MonitorVerdict,
)

__all__ = ["EvaluationResult", "MetricSink", "TaskOutput"]

Curve = dict[str, NDArray[np.float64]]


@dataclass
class MetricSink:
    """Collects metrics as they are computed; a value that is undefined carries its reason."""

    metrics: dict[str, float | None] = field(default_factory=dict)
    undefined: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    intervals: dict[str, Interval] = field(default_factory=dict)

    def set(self, name: str, value: float | np.floating[Any] | int) -> None:
        number = float(value)
        if not math.isfinite(number):
            # A guard, not a convention: every caller handles its 0/0 cases before this point.
            raise ArithmeticError(f"metric {name} came out as {number}")
        self.metrics[name] = number

    def ratio(self, name: str, numerator: float, denominator: float, reason: str) -> None:
        """numerator / denominator, or None with ``reason`` when the denominator is zero."""
        if denominator == 0:
            self.undefine(name, reason)
        else:
            self.set(name, numerator / denominator)

    def undefine(self, name: str, reason: str) -> None:
        self.metrics[name] = None
        self.undefined[name] = reason

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    def absorb(self, other: MetricSink) -> None:
        """Everything ``other`` collected, as if written here in its order."""
        for name, value in other.metrics.items():
            if value is None:
                self.undefine(name, other.undefined[name])
            else:
                self.metrics[name] = value
        for message in other.warnings:
            self.warn(message)
        self.intervals.update(other.intervals)


@dataclass
class TaskOutput:
    """What one task's ``compute`` returns; ``core.evaluate`` wraps it in the result."""

    sink: MetricSink
    per_class: list[ClassRow] = field(default_factory=list)
    curves: dict[str, Curve] = field(default_factory=dict)
    conventions: dict[str, str] = field(default_factory=dict)


@dataclass
class EvaluationResult:
    """What ``core.evaluate`` returns; ``to_dict`` gives the REST response body."""

    task: str
    n_samples: int
    metrics: dict[str, float | None]
    undefined: dict[str, str]
    curves: dict[str, Curve] = field(default_factory=dict)
    intervals: dict[str, Interval] = field(default_factory=dict)
    drift: dict[str, DriftTest] = field(default_factory=dict)
    comparison: dict[str, Comparison] = field(default_factory=dict)
    per_class: list[ClassRow] = field(default_factory=list)
    conventions: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # Label coverage of the evaluated window, when the request said (core/_coverage.py).
    coverage: CoverageReport | None = None
    # The AUC monitor's verdict and the state to send with the next window (with a baseline).
    monitor: dict[str, MonitorVerdict] = field(default_factory=dict)
    monitor_state: bytes | None = None
    # With segments (core/_segments.py): each segment's own result, by name.
    segments: dict[str, EvaluationResult] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON body of the REST response (non-finite curve thresholds become null); the
        segments' results, by name, when the request had segments."""
        body = self._body()
        if self.segments:
            body["segments"] = {name: each.to_dict() for name, each in self.segments.items()}
        return body

    def _body(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "n_samples": self.n_samples,
            "metrics": dict(self.metrics),
            "undefined": dict(self.undefined),
            "per_class": [row.to_dict() for row in self.per_class],
            "curves": {
                name: {key: _json_floats(values) for key, values in curve.items()}
                for name, curve in self.curves.items()
            },
            "intervals": {k: v.to_dict() for k, v in self.intervals.items()},
            "drift": {k: v.to_dict() for k, v in self.drift.items()},
            "comparison": {k: v.to_dict() for k, v in self.comparison.items()},
            "conventions": dict(self.conventions),
            "warnings": list(self.warnings),
            "coverage": {} if self.coverage is None else self.coverage.to_dict(),
            "monitor": {k: v.to_dict() for k, v in self.monitor.items()},
            "monitor_state": None if self.monitor_state is None else _base64(self.monitor_state),
        }


def _base64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _json_floats(values: NDArray[np.float64]) -> list[float | None]:
    finite = np.isfinite(values)
    as_list: list[float | None] = values.tolist()
    if not finite.all():
        for index in np.flatnonzero(~finite):
            as_list[int(index)] = None
    return as_list
