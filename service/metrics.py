"""Prometheus metrics of the service: model-quality gauges and request counters.

The names are a contract (docs/monitoring.md): the alerting rules, the dashboard and the
end-to-end test read them. Prefix ``evalserve_``, base units, ``_total`` on counters.

Per model (labels ``model``, ``version``, ``segment``; the last two "" when absent), from the
last evaluation of a request that named the model:

- ``evalserve_model_metric{metric}``: every defined scalar of the result that the catalog names
  (an operating point's target is part of its name: ``recall_at_precision_0.95``, bounded by
  the options' 8 targets each); ``evalserve_model_metric_ci_lower{metric}`` /
  ``_ci_upper{metric}``: interval bounds;
- ``evalserve_model_class_metric{class,metric}``: the numbers of each per-class row;
- ``evalserve_model_drift_z``, ``_drift_p_value``, ``_drift_significant`` (1/0) and
  ``_drift_insufficient_data`` (1/0), label ``metric``: only when the request had a baseline;
- ``evalserve_model_monitor_statistic``, ``_monitor_threshold`` and ``_monitor_alarm`` (1/0),
  label ``metric``: the AUC monitor after the window (with a baseline); the alert pages on the
  alarm, the per-window drift test above is information;
- ``evalserve_model_last_evaluation_timestamp_seconds``;
- counters ``evalserve_model_evaluations_total``, ``evalserve_model_rows_total`` and
  ``evalserve_model_positive_rows_total`` (binary: the result's ``n_positive``).

A request with segments also exports each segment's result as the label set (model, version,
segment=<the segment's name>), every gauge above included (the monitor's too), beside the
model's own (segment ""); those label sets count against the cap as any other.

Each evaluation replaces the model's gauges: a value that became undefined (or a drift test the
request no longer asks for) disappears instead of lingering.

Cardinality is bounded. A *label set* is one (model, version, segment, class) tuple, the
model-level one with class "". At most ``max_model_series`` are exported; a new one past the cap
is not exported and counts in ``evalserve_model_series_overflow_total`` (each time it is
refused), while those already exported keep updating. A model whose label sets were not updated
for ``model_series_ttl_seconds`` is removed at the next scrape (or evaluation).
``evalserve_model_series`` is the number of label sets exported.

Per request: ``evalserve_requests_total{transport,method,code}``,
``evalserve_request_duration_seconds{transport,method}`` and, for evaluations that succeeded,
``evalserve_request_rows{transport,method}``.

Why a collector over a store of our own, not labelled ``Gauge`` objects: the TTL and the cap
need a last-update time and a count per label set anyway, and replacing a model's whole set of
values at once (so an undefined value disappears) is one dictionary assignment here. The
collector reads a copy taken under the store's lock, so a scrape never sees half an update.
This works because the service runs one process per container: prometheus_client's
multiprocess mode supports neither custom collectors nor removing label sets.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from evalserve.core import CoverageReport, EvaluationResult, catalog_entry
from evalserve.service.config import Settings
from evalserve.service.records import ModelRef

__all__ = [
    "DURATION_BUCKETS",
    "ROWS_BUCKETS",
    "ModelQualityCollector",
    "ModelSeriesStore",
    "RequestObserver",
    "ServiceMetrics",
]

MODEL_LABELS: Final = ("model", "version", "segment")
# Evaluations take from a millisecond (a few rows) to minutes (10^8 rows streamed).
DURATION_BUCKETS: Final = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
    120.0, 300.0,
)  # fmt: skip
ROWS_BUCKETS: Final = tuple(float(10**power) for power in range(1, 9))  # 10 ... 1e8


@dataclass(frozen=True, slots=True)
class Drift:
    """The exported part of one drift test (``EvaluationResult.drift[metric]``)."""

    z: float | None
    p_value: float | None
    significant: bool | None
    insufficient_data: bool


@dataclass(frozen=True, slots=True)
class Monitor:
    """The exported part of the monitor's verdict (``EvaluationResult.monitor[metric]``)."""

    statistic: float
    threshold: float
    alarm: bool


@dataclass(slots=True)
class ModelSeries:
    """Everything exported for one (model, version, segment): the gauges of its last evaluation
    and its counters."""

    updated: float
    metrics: dict[str, float] = field(default_factory=dict)
    ci_lower: dict[str, float] = field(default_factory=dict)
    ci_upper: dict[str, float] = field(default_factory=dict)
    drift: dict[str, Drift] = field(default_factory=dict)
    monitor: dict[str, Monitor] = field(default_factory=dict)
    classes: dict[str, dict[str, float]] = field(default_factory=dict)
    evaluations: int = 0
    rows: int = 0
    positive_rows: float | None = None  # None until a binary evaluation reports n_positive

    @property
    def label_sets(self) -> int:
        return 1 + len(self.classes)


def _number(value: Any) -> float | None:
    """A value worth a sample: a real number, not a bool, None or NaN."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return None if math.isnan(number) else number


def _defined(values: Mapping[str, Any]) -> dict[str, float]:
    numbers = {name: _number(value) for name, value in values.items()}
    return {name: number for name, number in numbers.items() if number is not None}


def scalar_metrics(result: EvaluationResult) -> dict[str, float]:
    """The defined metrics of ``result`` that the catalog names (``precision_at_100`` too),
    and its label coverage and delay when the request said (``metric`` = label_coverage,
    label_delay_seconds)."""
    values = {
        name: value
        for name, value in _defined(result.metrics).items()
        if catalog_entry(name, result.task) is not None
    }
    if result.coverage is not None:
        values.update(_coverage_metrics(result.coverage))
    return values


def _coverage_metrics(coverage: CoverageReport) -> dict[str, float]:
    return _defined(
        {
            "label_coverage": coverage.label_coverage,
            "label_delay_seconds": coverage.label_delay_seconds,
        }
    )


def class_metrics(result: EvaluationResult) -> dict[str, dict[str, float]]:
    """Per class: the defined numbers of its ``per_class`` row (in the result's order)."""
    return {row.class_name: _defined(row.metrics) for row in result.per_class}


def _lower_bounds(result: EvaluationResult) -> dict[str, float]:
    return _defined({name: interval.lower for name, interval in result.intervals.items()})


def _upper_bounds(result: EvaluationResult) -> dict[str, float]:
    return _defined({name: interval.upper for name, interval in result.intervals.items()})


def _drift(result: EvaluationResult) -> dict[str, Drift]:
    return {
        name: Drift(
            z=_number(test.z),
            p_value=_number(test.p_value),
            significant=test.significant,
            insufficient_data=test.status == "insufficient_data",
        )
        for name, test in result.drift.items()
    }


def _monitor(result: EvaluationResult) -> dict[str, Monitor]:
    return {
        name: Monitor(verdict.statistic, verdict.threshold, verdict.alarm)
        for name, verdict in result.monitor.items()
    }


class ModelSeriesStore:
    """The model series to export, keyed by ``ModelRef``; thread-safe (evaluations record from
    the worker threads while the event loop scrapes).

    ``clock`` gives unix seconds: the last-evaluation timestamp and the TTL both read it (tests
    inject one instead of sleeping).
    """

    def __init__(
        self, max_series: int, ttl_seconds: float, clock: Callable[[], float] = time.time
    ) -> None:
        self.max_series = max_series
        self.ttl_seconds = ttl_seconds
        self.clock = clock
        self._lock = threading.Lock()
        self._models: dict[ModelRef, ModelSeries] = {}
        self._overflow = 0

    def record(self, model: ModelRef, result: EvaluationResult) -> int:
        """Replace the gauges of ``model`` with those of ``result`` and add to its counters;
        the number of label sets the cap refused."""
        classes = class_metrics(result)
        with self._lock:
            now = self.clock()
            self._expire(now)
            series = self._models.get(model)
            if series is None:
                if self._count() >= self.max_series:
                    self._overflow += 1 + len(classes)
                    return 1 + len(classes)
                series = self._models[model] = ModelSeries(updated=now)
            refused = self._admit_classes(series, classes)
            self._overflow += refused
            series.updated = now
            series.metrics = scalar_metrics(result)
            series.ci_lower = _lower_bounds(result)
            series.ci_upper = _upper_bounds(result)
            series.drift = _drift(result)
            series.monitor = _monitor(result)
            series.evaluations += 1
            series.rows += result.n_samples
            positives = series.metrics.get("n_positive")
            if positives is not None:
                series.positive_rows = (series.positive_rows or 0.0) + positives
            return refused

    def _admit_classes(self, series: ModelSeries, classes: dict[str, dict[str, float]]) -> int:
        """Set the model's classes to ``classes``: those already exported first, new ones while
        the cap allows; the number refused. Classes the result no longer has are dropped."""
        previous, series.classes = series.classes, {}
        admitted = {name for name in classes if name in previous}
        room = self.max_series - self._count() - len(admitted)
        refused = 0
        for name in classes:
            if name in admitted:
                continue
            if room > 0:
                admitted.add(name)
                room -= 1
            else:
                refused += 1
        series.classes = {name: values for name, values in classes.items() if name in admitted}
        return refused

    def _count(self) -> int:
        return sum(series.label_sets for series in self._models.values())

    def _expire(self, now: float) -> None:
        stale = [m for m, s in self._models.items() if now - s.updated >= self.ttl_seconds]
        for model in stale:
            del self._models[model]

    def snapshot(self) -> tuple[dict[ModelRef, ModelSeries], int]:
        """A copy of the live series (stale ones removed first) and the overflow count."""
        with self._lock:
            self._expire(self.clock())
            # The dictionaries of a series are replaced, never mutated, after recording:
            # a shallow copy of each series is a consistent snapshot.
            return {m: replace(s) for m, s in self._models.items()}, self._overflow


def _model_values(model: ModelRef) -> list[str]:
    return [model.name, model.version, model.segment]


class ModelQualityCollector(Collector):
    """Reads ``ModelSeriesStore`` at scrape time into metric families."""

    def __init__(self, store: ModelSeriesStore) -> None:
        self.store = store

    def describe(self) -> list[Metric]:
        # Empty families (the names alone): the registry checks them for clashes at
        # registration instead of calling ``collect`` early.
        return list(self._families({}, 0))

    def collect(self) -> Iterator[Metric]:
        models, overflow = self.store.snapshot()
        return self._families(models, overflow)

    def _families(self, models: dict[ModelRef, ModelSeries], overflow: int) -> Iterator[Metric]:
        per_metric = [*MODEL_LABELS, "metric"]

        def gauge(name: str, documentation: str, labels: list[str]) -> GaugeMetricFamily:
            return GaugeMetricFamily(f"evalserve_{name}", documentation, labels=labels)

        def counter(name: str, documentation: str, labels: list[str]) -> CounterMetricFamily:
            return CounterMetricFamily(f"evalserve_{name}", documentation, labels=labels)

        metric = gauge("model_metric", "Metric of the last evaluation of the model.", per_metric)
        lower = gauge("model_metric_ci_lower", "Lower bound of the metric's interval.", per_metric)
        upper = gauge("model_metric_ci_upper", "Upper bound of the metric's interval.", per_metric)
        per_class = gauge(
            "model_class_metric",
            "Per-class metric of the last evaluation of the model.",
            [*MODEL_LABELS, "class", "metric"],
        )
        drift_z = gauge("model_drift_z", "z statistic of the drift test.", per_metric)
        drift_p = gauge("model_drift_p_value", "p-value of the drift test.", per_metric)
        drift_significant = gauge(
            "model_drift_significant", "1 when the drift test is significant, else 0.", per_metric
        )
        drift_insufficient = gauge(
            "model_drift_insufficient_data",
            "1 when the drift test had too few samples for a verdict, else 0.",
            per_metric,
        )
        monitor_statistic = gauge(
            "model_monitor_statistic",
            "The AUC monitor's e-detector statistic after the last window.",
            per_metric,
        )
        monitor_threshold = gauge(
            "model_monitor_threshold",
            "The statistic's alarm threshold (the promised run length to a false alarm).",
            per_metric,
        )
        monitor_alarm = gauge(
            "model_monitor_alarm",
            "1 when the AUC monitor alarms (the statistic reached its threshold), else 0.",
            per_metric,
        )
        timestamp = gauge(
            "model_last_evaluation_timestamp_seconds",
            "Unix time of the last evaluation of the model.",
            list(MODEL_LABELS),
        )
        evaluations = counter(
            "model_evaluations_total", "Evaluations of the model.", list(MODEL_LABELS)
        )
        rows = counter("model_rows_total", "Rows evaluated for the model.", list(MODEL_LABELS))
        positive_rows = counter(
            "model_positive_rows_total",
            "Labelled positive rows evaluated for the model (binary; weighted when weights are"
            " sent).",
            list(MODEL_LABELS),
        )
        for model, series in models.items():
            labels = _model_values(model)
            for name, value in series.metrics.items():
                metric.add_metric([*labels, name], value)
            for name, value in series.ci_lower.items():
                lower.add_metric([*labels, name], value)
            for name, value in series.ci_upper.items():
                upper.add_metric([*labels, name], value)
            for class_name, values in series.classes.items():
                for name, value in values.items():
                    per_class.add_metric([*labels, class_name, name], value)
            for name, test in series.drift.items():
                if test.z is not None:
                    drift_z.add_metric([*labels, name], test.z)
                if test.p_value is not None:
                    drift_p.add_metric([*labels, name], test.p_value)
                if test.significant is not None:
                    drift_significant.add_metric([*labels, name], float(test.significant))
                drift_insufficient.add_metric([*labels, name], float(test.insufficient_data))
            for name, verdict in series.monitor.items():
                monitor_statistic.add_metric([*labels, name], verdict.statistic)
                monitor_threshold.add_metric([*labels, name], verdict.threshold)
                monitor_alarm.add_metric([*labels, name], float(verdict.alarm))
            timestamp.add_metric(labels, series.updated)
            evaluations.add_metric(labels, series.evaluations)
            rows.add_metric(labels, series.rows)
            if series.positive_rows is not None:
                positive_rows.add_metric(labels, series.positive_rows)
        exported = gauge("model_series", "Model label sets exported now.", [])
        exported.add_metric([], sum(series.label_sets for series in models.values()))
        refused = counter(
            "model_series_overflow_total",
            "Model label sets not exported because of the cap (max_model_series).",
            [],
        )
        refused.add_metric([], overflow)
        yield from (metric, lower, upper, per_class, drift_z, drift_p, drift_significant)
        yield from (drift_insufficient, monitor_statistic, monitor_threshold, monitor_alarm)
        yield from (timestamp, evaluations, rows, positive_rows)
        yield from (exported, refused)


class ServiceMetrics:
    """Every metric of the service, registered on ``registry`` (the one ``/metrics`` serves).

    One instance serves both transports: the model series are one store, whichever transport the
    evaluation came through.
    """

    def __init__(
        self,
        settings: Settings,
        registry: CollectorRegistry,
        *,
        clock: Callable[[], float] = time.time,
        inflight: Callable[[], float] | None = None,
    ) -> None:
        """``inflight``: how many evaluation requests are admitted now (``Evaluator.inflight``),
        exported as ``evalserve_inflight_requests`` beside its limit."""
        if inflight is not None:
            Gauge(
                "evalserve_inflight_requests",
                "Evaluation requests admitted and not yet answered (both transports, streams too).",
                registry=registry,
            ).set_function(inflight)
            Gauge(
                "evalserve_inflight_requests_limit",
                "max_inflight_requests: more evaluation requests are refused as busy.",
                registry=registry,
            ).set(settings.max_inflight_requests)
        self.store = ModelSeriesStore(
            settings.max_model_series, settings.model_series_ttl_seconds, clock
        )
        registry.register(ModelQualityCollector(self.store))
        self.requests = Counter(
            "evalserve_requests",
            "Requests by transport, method and status code (HTTP status or gRPC code name).",
            ["transport", "method", "code"],
            registry=registry,
        )
        self.duration = Histogram(
            "evalserve_request_duration_seconds",
            "Time from the request's arrival to its answer.",
            ["transport", "method"],
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self.rows = Histogram(
            "evalserve_request_rows",
            "Rows evaluated per successful request (images for detection).",
            ["transport", "method"],
            buckets=ROWS_BUCKETS,
            registry=registry,
        )

    def observer(self, transport: str, method: str) -> RequestObserver:
        """What the use case tells about one request's evaluation."""
        return RequestObserver(self, transport, method)

    def answered(self, transport: str, method: str, code: str, seconds: float) -> None:
        """Count one answered request."""
        self.requests.labels(transport, method, code).inc()
        self.duration.labels(transport, method).observe(seconds)


@dataclass(frozen=True, slots=True)
class RequestObserver:
    """``usecase.EvaluationObserver`` for one request: rows by transport and method, and the
    model series when the request named a model."""

    metrics: ServiceMetrics
    transport: str
    method: str

    def evaluated(self, model: ModelRef | None, result: EvaluationResult) -> None:
        self.metrics.rows.labels(self.transport, self.method).observe(result.n_samples)
        if model is not None:
            self.metrics.store.record(model, result)
            # Each segment: the model's label set with ``segment`` its name (the use case
            # refuses a model.segment beside segments), under the same cap.
            for name, each in result.segments.items():
                self.metrics.store.record(replace(model, segment=name), each)
