"""Results out: ``core.EvaluationResult`` to the protobuf response, and the response back to the
JSON shape (for protobuf-over-HTTP clients and the contract tests)."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np
from google.protobuf.message import Message

from evalserve.core import (
    ClassRow,
    Comparison,
    CoverageReport,
    DriftTest,
    EvaluationResult,
    Interval,
    MetricInfo,
    MonitorVerdict,
    catalog_entries,
)
from evalserve.service.config import Settings
from evalserve.service.errors import PayloadTooLargeError
from evalserve.v1 import evaluation_pb2 as pb

__all__ = [
    "catalog_to_json",
    "catalog_to_proto",
    "check_response_size",
    "checked_response",
    "proto_to_json",
    "result_to_proto",
]


def check_response_size(size: int, settings: Settings) -> None:
    """Refuse to send a response over ``max_response_bytes`` (413 / RESOURCE_EXHAUSTED)."""
    if size > settings.max_response_bytes:
        raise PayloadTooLargeError(
            "response",
            f"the response would take {size} bytes, over the limit of"
            f" {settings.max_response_bytes} (max_response_bytes): ask for fewer curve points"
            " (options.max_curve_points, options.segment_curve_points), fewer classes or fewer"
            " segments",
        )


def checked_response(result: EvaluationResult, settings: Settings) -> pb.EvaluateResponse:
    """``result_to_proto``, refused when its encoding is over ``max_response_bytes``; with
    segments, as soon as the segments encoded so far are over it (the rest are not built)."""
    response = result_to_proto(result, segments=False)
    size = response.ByteSize()
    check_response_size(size, settings)
    for name, each in result.segments.items():
        entry = result_to_proto(each)
        # a lower bound of what the map entry adds: its key and the response, and one byte
        # for each of the three tags and three lengths (the exact size is checked at the end)
        size += entry.ByteSize() + len(name.encode()) + 6
        check_response_size(size, settings)
        response.segments[name].CopyFrom(entry)
    if result.segments:
        check_response_size(response.ByteSize(), settings)
    return response


def result_to_proto(result: EvaluationResult, *, segments: bool = True) -> pb.EvaluateResponse:
    """The response of ``result``; each segment's result a response of its own in
    ``segments`` (unless ``segments`` is False)."""
    response = pb.EvaluateResponse(
        task=pb.Task.Value(f"TASK_{result.task.upper()}"),
        n_samples=result.n_samples,
        undefined=result.undefined,
        conventions=result.conventions,
        warnings=result.warnings,
    )
    for name, value in result.metrics.items():
        if value is not None:
            response.metrics[name] = value
    if "roc" in result.curves:
        roc = result.curves["roc"]
        response.curves.roc.fpr.extend(roc["fpr"])
        response.curves.roc.tpr.extend(roc["tpr"])
        response.curves.roc.thresholds.extend(roc["thresholds"])
    if "pr" in result.curves:
        pr = result.curves["pr"]
        response.curves.pr.precision.extend(pr["precision"])
        response.curves.pr.recall.extend(pr["recall"])
        response.curves.pr.thresholds.extend(pr["thresholds"])
    for name, curve in result.curves.items():
        if name not in ("roc", "pr"):
            arrays = response.curves.other[name].arrays
            for key, values in curve.items():
                arrays[key].values.extend(values)
    for row in result.per_class:
        _add_class(response, row)
    for name, interval in result.intervals.items():
        response.intervals[name].CopyFrom(_interval_to_proto(interval))
    for name, drift in result.drift.items():
        response.drift[name].CopyFrom(_drift_to_proto(drift))
    for name, comparison in result.comparison.items():
        response.comparison[name].CopyFrom(_comparison_to_proto(comparison))
    if result.coverage is not None:
        response.coverage.CopyFrom(_coverage_to_proto(result.coverage))
    for name, verdict in result.monitor.items():
        response.monitor[name].CopyFrom(_monitor_to_proto(verdict))
    if result.monitor_state is not None:
        response.monitor_state = result.monitor_state
    if segments:
        for name, each in result.segments.items():
            response.segments[name].CopyFrom(result_to_proto(each))
    return response


def _monitor_to_proto(verdict: MonitorVerdict) -> pb.MonitorVerdict:
    """The monitor's verdict; a None field is unset."""
    return pb.MonitorVerdict(
        statistic=verdict.statistic,
        threshold=verdict.threshold,
        alarm=verdict.alarm,
        windows=verdict.windows,
        status=verdict.status,
        **_set(evalue=verdict.evalue, reason=verdict.reason),
    )


def _set(**values: Any) -> dict[str, Any]:
    """The optional fields that have a value: a None one stays unset in the message."""
    return {name: value for name, value in values.items() if value is not None}


def _add_class(response: pb.EvaluateResponse, row: ClassRow) -> None:
    """One ``per_class`` entry: the defined metrics, the undefined ones' reasons, the intervals."""
    entry = response.per_class.add(class_name=row.class_name)
    for key, value in row.metrics.items():
        if value is not None:
            entry.metrics[key] = float(value)
    entry.undefined.update(row.undefined)
    for key, interval in row.intervals.items():
        entry.intervals[key].CopyFrom(_interval_to_proto(interval))


def _interval_to_proto(interval: Interval) -> pb.Interval:
    """The interval; the bootstrap's replicates and seed only when set."""
    return pb.Interval(
        lower=interval.lower,
        upper=interval.upper,
        level=interval.level,
        method=interval.method,
        std_error=interval.std_error,
        **_set(replicates=interval.replicates, seed=interval.seed),
    )


def _drift_to_proto(test: DriftTest) -> pb.DriftTest:
    """The drift test; a None statistic is an unset optional field."""
    return pb.DriftTest(
        baseline=test.baseline, method=test.method, status=test.status, **_verdict(test)
    )


def _comparison_to_proto(test: Comparison) -> pb.Comparison:
    """The comparison; a None statistic (or challenger AUC) is an unset optional field."""
    return pb.Comparison(
        method=test.method, status=test.status, **_set(challenger=test.challenger),
        **_verdict(test),
    )  # fmt: skip


def _verdict(test: DriftTest | Comparison) -> dict[str, Any]:
    return _set(
        delta=test.delta,
        z=test.z,
        df=test.df,
        p_value=test.p_value,
        significant=test.significant,
        std_error=test.std_error,
        reason=test.reason,
    )


def _coverage_to_proto(coverage: CoverageReport) -> pb.CoverageReport:
    """The coverage report; a None field is unset."""
    return pb.CoverageReport(
        n_labelled=coverage.n_labelled,
        **_set(
            n_predictions=coverage.n_predictions,
            label_coverage=coverage.label_coverage,
            label_delay_seconds=coverage.label_delay_seconds,
        ),
    )


# Every field of a test entry, in the JSON shape (unset optional fields are null).
DRIFT_KEYS = tuple(f.name for f in pb.DriftTest.DESCRIPTOR.fields)
COMPARISON_KEYS = tuple(f.name for f in pb.Comparison.DESCRIPTOR.fields)
MONITOR_KEYS = ("statistic", "threshold", "alarm", "windows", "evalue", "status", "reason")


def _message_to_json(message: Message, keys: tuple[str, ...]) -> dict[str, Any]:
    return {
        key: getattr(message, key)
        if not message.DESCRIPTOR.fields_by_name[key].has_presence or message.HasField(key)
        else None
        for key in keys
    }


def _class_to_json(row: pb.ClassMetrics) -> dict[str, Any]:
    return {
        "class": row.class_name,
        **dict(row.metrics),
        **{key: None for key in row.undefined},
        "undefined": dict(row.undefined),
        "intervals": {key: _interval_to_json(value) for key, value in row.intervals.items()},
    }


def _interval_to_json(interval: pb.Interval) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "lower": interval.lower,
        "upper": interval.upper,
        "level": interval.level,
        "method": interval.method,
        "std_error": interval.std_error,
    }
    for key in ("replicates", "seed"):
        if interval.HasField(key):
            entry[key] = getattr(interval, key)
    return entry


def _catalog_entry(info: MetricInfo) -> dict[str, Any]:
    """An entry in the JSON shape of ``evalserve.v1.MetricInfo``; ``tasks`` is kept for
    v0.1 clients and holds the entry's one task."""
    return {
        "name": info.name,
        "tasks": [info.task],
        "higher_is_better": info.higher_is_better,
        "definition": info.definition,
        "aliases": list(info.aliases),
        "task": info.task,
        "range": {"lower": _bound(info.range.lower), "upper": _bound(info.range.upper)},
        "convention": info.convention,
        "reference": info.reference,
        "test": info.test,
    }


def _bound(value: float | None) -> float | None:
    return None if value is None else float(value)


def catalog_to_json(task: str | None = None) -> dict[str, Any]:
    """``GET /v1/metrics``: every entry, or those of ``task`` (an unknown task raises
    ``InvalidInputError`` naming the field ``task``)."""
    return {"metrics": [_catalog_entry(info) for info in catalog_entries(task)]}


def _task(task: str) -> pb.Task.ValueType:
    return pb.Task.Value(f"TASK_{task.upper()}")


def catalog_to_proto(task: str | None = None) -> pb.ListMetricsResponse:
    """``ListMetrics``: the entries of ``catalog_to_json``, field for field."""
    response = pb.ListMetricsResponse()
    for info in catalog_entries(task):
        entry = response.metrics.add(
            name=info.name,
            tasks=[_task(info.task)],
            definition=info.definition,
            aliases=info.aliases,
            task=_task(info.task),
            convention=info.convention,
            reference=info.reference,
            test=info.test,
        )
        if info.higher_is_better is not None:
            entry.higher_is_better = info.higher_is_better
        entry.range.SetInParent()  # present even when both ends are unbounded
        if info.range.lower is not None:
            entry.range.lower = info.range.lower
        if info.range.upper is not None:
            entry.range.upper = info.range.upper
    return response


def proto_to_json(response: pb.EvaluateResponse) -> dict[str, Any]:
    """The JSON body for a protobuf response: undefined metrics come back as null, the +inf
    curve start as null; each segment's body in ``segments`` when there are segments."""
    body = _response_to_json(response)
    if response.segments:  # present only with segments, as in EvaluationResult.to_dict
        body["segments"] = {name: proto_to_json(each) for name, each in response.segments.items()}
    return body


def _response_to_json(response: pb.EvaluateResponse) -> dict[str, Any]:
    metrics: dict[str, float | None] = dict(response.metrics)
    for name in response.undefined:
        metrics[name] = None

    def floats(values: Any) -> list[float | None]:
        array = np.asarray(values, dtype=np.float64)
        return [float(v) if np.isfinite(v) else None for v in array]

    curves: dict[str, Any] = {}
    if response.curves.HasField("roc"):
        roc = response.curves.roc
        curves["roc"] = {"fpr": floats(roc.fpr), "tpr": floats(roc.tpr),
                         "thresholds": floats(roc.thresholds)}  # fmt: skip
    if response.curves.HasField("pr"):
        pr = response.curves.pr
        curves["pr"] = {"precision": floats(pr.precision), "recall": floats(pr.recall),
                        "thresholds": floats(pr.thresholds)}  # fmt: skip
    for name, named in response.curves.other.items():
        curves[name] = {key: floats(values.values) for key, values in named.arrays.items()}
    return {
        "task": pb.Task.Name(response.task).removeprefix("TASK_").lower(),
        "n_samples": response.n_samples,
        "metrics": metrics,
        "undefined": dict(response.undefined),
        "per_class": [_class_to_json(row) for row in response.per_class],
        "curves": curves,
        "intervals": {k: _interval_to_json(v) for k, v in response.intervals.items()},
        "drift": {k: _message_to_json(v, DRIFT_KEYS) for k, v in response.drift.items()},
        "comparison": {
            k: _message_to_json(v, COMPARISON_KEYS) for k, v in response.comparison.items()
        },
        "conventions": dict(response.conventions),
        "warnings": list(response.warnings),
        "coverage": coverage_to_json(response),
        "monitor": {k: _message_to_json(v, MONITOR_KEYS) for k, v in response.monitor.items()},
        "monitor_state": (
            base64.b64encode(response.monitor_state).decode("ascii")
            if response.monitor_state
            else None
        ),
    }


def coverage_to_json(response: pb.EvaluateResponse) -> dict[str, Any]:
    """The coverage block: {} without one; else n_labelled and the fields that are set."""
    if not response.HasField("coverage"):
        return {}
    report = response.coverage
    fields = {f.name: value for f, value in report.ListFields()}
    return {**fields, "n_labelled": report.n_labelled}
