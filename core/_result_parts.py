"""The typed parts of a result: intervals, drift and comparison tests, the monitor's verdict,
per-class rows and the label coverage report.

Each part is a frozen record with the fields of the ``evalserve.v1`` message of the same name
(``ClassRow``: ``ClassMetrics``); its ``to_dict`` gives the part's JSON shape in the REST
response, where an optional field that is ``None`` is left out (intervals, coverage) or null
(tests).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ClassRow", "Comparison", "CoverageReport", "DriftTest", "Interval", "MonitorVerdict"]


@dataclass(frozen=True, slots=True)
class Interval:
    """A confidence interval of one metric: ``method`` is "delong", "delong-logit", "wilson" or
    "bootstrap-percentile"; ``replicates`` and ``seed`` are the bootstrap's (else None)."""

    lower: float
    upper: float
    level: float
    method: str
    # The metric's standard error (bootstrap: the replicates' standard deviation).
    std_error: float
    replicates: int | None = None
    seed: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{"lower", "upper", "level", "method", "std_error"}``, with ``replicates`` and
        ``seed`` when they are set."""
        entry: dict[str, Any] = {
            "lower": self.lower,
            "upper": self.upper,
            "level": self.level,
            "method": self.method,
            "std_error": self.std_error,
        }
        if self.replicates is not None:
            entry["replicates"] = self.replicates
        if self.seed is not None:
            entry["seed"] = self.seed
        return entry


@dataclass(frozen=True, slots=True)
class DriftTest:
    """The current metric against the baseline's (unpaired). Without a verdict (``status``
    "insufficient_data" or "undefined") the statistics are None and ``reason`` says why;
    ``df`` is set for a t test only (payload baselines)."""

    baseline: float
    method: str
    status: str
    delta: float | None = None
    z: float | None = None
    df: float | None = None
    p_value: float | None = None
    significant: bool | None = None
    std_error: float | None = None
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Every field, None as null."""
        return {"baseline": self.baseline, "method": self.method, **_verdict(self)}


@dataclass(frozen=True, slots=True)
class Comparison:
    """The challenger's metric against the champion's on the same rows (paired); ``challenger``
    is None when the champion's is undefined. The statistics as in ``DriftTest``."""

    challenger: float | None
    method: str
    status: str
    delta: float | None = None
    z: float | None = None
    df: float | None = None
    p_value: float | None = None
    significant: bool | None = None
    std_error: float | None = None
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Every field, None as null."""
        return {"challenger": self.challenger, "method": self.method, **_verdict(self)}


def _verdict(test: DriftTest | Comparison) -> dict[str, Any]:
    return {
        "delta": test.delta,
        "z": test.z,
        "df": test.df,
        "p_value": test.p_value,
        "significant": test.significant,
        "std_error": test.std_error,
        "status": test.status,
        "reason": test.reason,
    }


@dataclass(frozen=True, slots=True)
class ClassRow:
    """One class (or label) of a result: its metrics in the task's order, None for an undefined
    one, whose reason is in ``undefined``; ``intervals`` of its metrics (may be empty)."""

    class_name: str
    metrics: dict[str, float | None]
    undefined: dict[str, str] = field(default_factory=dict)
    intervals: dict[str, Interval] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """``{"class": name, <metric>: value, ..., "undefined": {...}, "intervals": {...}}``."""
        return {
            "class": self.class_name,
            **self.metrics,
            "undefined": dict(self.undefined),
            "intervals": {name: interval.to_dict() for name, interval in self.intervals.items()},
        }


@dataclass(frozen=True, slots=True)
class CoverageReport:
    """The label coverage of the evaluated window: ``n_labelled`` rows evaluated (images for
    detection) of the request's ``n_predictions``, their share ``label_coverage`` (both None
    when the request gave no ``n_predictions``) and the request's ``label_delay_seconds``."""

    n_labelled: int
    n_predictions: int | None = None
    label_coverage: float | None = None
    label_delay_seconds: float | None = None

    def to_dict(self) -> dict[str, int | float]:
        """``n_labelled`` and the fields that are set."""
        report: dict[str, int | float] = {"n_labelled": self.n_labelled}
        if self.n_predictions is not None:
            report["n_predictions"] = self.n_predictions
        if self.label_coverage is not None:
            report["label_coverage"] = self.label_coverage
        if self.label_delay_seconds is not None:
            report["label_delay_seconds"] = self.label_delay_seconds
        return report


@dataclass(frozen=True, slots=True)
class MonitorVerdict:
    """The sequential monitor of a metric after this window (``core/binary/_monitor.py``): its
    ``statistic`` against its ``threshold`` (``alarm`` when it reaches it), the ``windows`` that
    added evidence so far, this window's ``evalue`` (None when it added none), and ``status``
    "ok" or "insufficient_data" with its ``reason``."""

    statistic: float
    threshold: float
    alarm: bool
    windows: int
    evalue: float | None
    status: str
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Every field, None as null."""
        return {
            "statistic": self.statistic,
            "threshold": self.threshold,
            "alarm": self.alarm,
            "windows": self.windows,
            "evalue": self.evalue,
            "status": self.status,
            "reason": self.reason,
        }
