"""The gRPC door on a real server (127.0.0.1, a free port) through real gRPC clients.

The servers run in an event loop of their own, in a background thread, as ``service.server``
runs them next to uvicorn; the tests call them with the plain synchronous client.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Coroutine, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc
import numpy as np
import pytest
from google.protobuf import descriptor_pool
from google.rpc import code_pb2, error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)
from grpc_status import rpc_status
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.typing import ArrayLike

from evalserve.service.config import Settings
from evalserve.service.evaluator import Evaluator
from evalserve.service.grpc_server import SERVICE_NAME, HealthServicer, create_grpc_server
from evalserve.v1 import evaluation_pb2 as pb
from evalserve.v1 import evaluation_pb2_grpc as pb_grpc
from tests.core.test_worked_examples import FAWCETT_LABELS, FAWCETT_SCORES

T = TypeVar("T")

M = pb.EvaluateStreamRequest
BINARY = pb.StreamHeader(task=pb.TASK_BINARY)


class LoopThread:
    """An asyncio event loop running in a daemon thread: the servers' home."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=60)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=60)
        self.loop.close()


@dataclass
class Served:
    loop: LoopThread
    server: grpc.aio.Server
    port: int
    health: HealthServicer
    channel: grpc.Channel
    stub: pb_grpc.EvaluationServiceStub


class BrokenEvaluator(Evaluator):
    """An evaluator with a bug: every call fails with an unexpected error."""

    async def run(self, function: Any, *args: object) -> Any:
        raise RuntimeError("secret internals: /srv/evalserve/state")


@contextmanager
def serving(settings: Settings, evaluator_type: type[Evaluator] = Evaluator) -> Iterator[Served]:
    loop = LoopThread()

    async def start() -> tuple[Evaluator, grpc.aio.Server, int, HealthServicer]:
        evaluator = evaluator_type(settings.workers)
        server, port, health = await create_grpc_server(settings, evaluator, port=0)
        await server.start()
        return evaluator, server, port, health

    try:
        evaluator, server, port, health = loop.run(start())
    except BaseException:
        loop.close()
        raise
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield Served(loop, server, port, health, channel, pb_grpc.EvaluationServiceStub(channel))
    finally:
        channel.close()
        loop.run(server.stop(None))
        evaluator.close()
        loop.close()


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    with serving(Settings(host="127.0.0.1")) as running:
        yield running


@pytest.fixture(scope="module")
def limited() -> Iterator[Served]:
    """A server with tiny limits: 1 KiB messages, 100 rows a request, 150 rows a stream."""
    small = Settings(
        host="127.0.0.1", max_request_bytes=1024, max_rows=100, max_stream_rows=150, max_classes=2
    )
    with serving(small) as running:
        yield running


def fawcett(**fields: Any) -> pb.EvaluateRequest:
    return pb.EvaluateRequest(
        task=pb.TASK_BINARY, labels=FAWCETT_LABELS, scores=FAWCETT_SCORES, **fields
    )


def f64(values: ArrayLike) -> bytes:
    return np.asarray(values, dtype="<f8").tobytes()


def bad_request(error: grpc.RpcError) -> error_details_pb2.BadRequest:
    """The google.rpc.BadRequest detail of a failed call (there must be exactly one, and
    besides it at most a RetryInfo)."""
    assert isinstance(error, grpc.Call)
    status = rpc_status.from_call(error)  # also checks code and message match the status
    assert status is not None, "no google.rpc.Status in the trailers"
    bad = [d for d in status.details if d.Is(error_details_pb2.BadRequest.DESCRIPTOR)]
    others = [d for d in status.details if d not in bad]
    assert len(bad) == 1
    assert all(d.Is(error_details_pb2.RetryInfo.DESCRIPTOR) for d in others), others
    detail = error_details_pb2.BadRequest()
    assert bad[0].Unpack(detail)
    return detail


def retry_hint(error: grpc.RpcError) -> tuple[float | None, str | None]:
    """A failed call's RetryInfo delay (s) and its grpc-retry-pushback-ms trailer, or None."""
    assert isinstance(error, grpc.Call)
    status = rpc_status.from_call(error)
    delay = None
    for detail in status.details if status is not None else ():
        info = error_details_pb2.RetryInfo()
        if detail.Unpack(info):
            delay = info.retry_delay.ToMilliseconds() / 1000
    pushback = dict(error.trailing_metadata() or ()).get("grpc-retry-pushback-ms")
    return delay, pushback


def assert_refused(error: grpc.RpcError, code: grpc.StatusCode, field: str) -> str:
    """Check the code, the message naming the field, and the BadRequest detail; the message."""
    assert isinstance(error, grpc.Call)
    assert error.code() == code, error.details()
    assert error.details().startswith(f"{field}: "), error.details()
    violations = bad_request(error).field_violations
    assert [v.field for v in violations] == [field]
    assert violations[0].description
    assert error.details() == f"{field}: {violations[0].description}"
    return error.details()


# --- what works ---------------------------------------------------------------------------------


def test_evaluate_the_fawcett_table_gives_roc_auc_0_68(served: Served) -> None:
    response = served.stub.Evaluate(fawcett())
    assert response.task == pb.TASK_BINARY
    assert response.n_samples == 20
    assert response.metrics["roc_auc"] == pytest.approx(0.68, abs=1e-12)
    assert len(response.curves.roc.fpr) == 21
    assert response.conventions["threshold_rule"]


def test_raw_f64_columns_give_the_same_response_as_packed(served: Served) -> None:
    weights = [1.0 + (i % 3) for i in range(20)]
    options = pb.Options(threshold=0.54, head_k=[5])
    packed = served.stub.Evaluate(fawcett(weights=weights, options=options))
    raw = served.stub.Evaluate(
        pb.EvaluateRequest(
            task=pb.TASK_BINARY,
            labels_f64=f64(FAWCETT_LABELS),
            scores_f64=f64(FAWCETT_SCORES),
            weights_f64=f64(weights),
            options=options,
        )
    )
    assert raw == packed
    assert packed.metrics["accuracy"] != 0.7  # the weights and options did arrive


def test_undefined_metrics_come_back_in_undefined(served: Served) -> None:
    response = served.stub.Evaluate(
        pb.EvaluateRequest(task=pb.TASK_BINARY, labels=[0, 0, 0], scores=[0.1, 0.2, 0.3])
    )
    assert "roc_auc" not in response.metrics
    assert response.undefined["roc_auc"]


def test_a_request_above_grpcs_default_4_mib_is_accepted(served: Served) -> None:
    rng = np.random.default_rng(3)
    rows = 600_000  # 9.6 MB of labels and scores
    labels = (rng.random(rows) < 0.3).astype("<f8")
    scores = np.round(rng.random(rows), 3)  # ties
    request = pb.EvaluateRequest(
        task=pb.TASK_BINARY,
        labels_f64=labels.tobytes(),
        scores_f64=scores.astype("<f8").tobytes(),
        options=pb.Options(max_curve_points=0),
    )
    assert request.ByteSize() > 4 * 1024 * 1024
    response = served.stub.Evaluate(request)
    assert response.n_samples == rows
    assert 0.45 < response.metrics["roc_auc"] < 0.55


def stream_of(
    labels: np.ndarray[Any, Any], scores: np.ndarray[Any, Any], sizes: Sequence[int]
) -> list[pb.EvaluateStreamRequest]:
    """Batches of the given sizes, alternating packed and raw columns; the header rides along
    with the first batch, and an empty message sits in the middle."""
    messages: list[pb.EvaluateStreamRequest] = []
    start = 0
    for i, size in enumerate(sizes):
        part = slice(start, start + size)
        start += size
        if i % 2:
            message = M(labels_f64=f64(labels[part]), scores_f64=f64(scores[part]))
        else:
            message = M(labels=labels[part].tolist(), scores=scores[part].tolist())
        if i == 0:
            message.header.CopyFrom(pb.StreamHeader(task=pb.TASK_BINARY, options=OPTIONS))
        messages.append(message)
        if i == 1:
            messages.append(M())
    assert start == labels.size
    return messages


OPTIONS = pb.Options(threshold=0.4, beta=2.0, max_curve_points=50)


def test_a_stream_of_batches_equals_evaluate_on_the_concatenation(served: Served) -> None:
    rng = np.random.default_rng(11)
    labels = (rng.random(5000) < 0.2).astype(np.float64)
    scores = np.round(np.clip(rng.normal(0.3 + 0.3 * labels, 0.2), 0, 1), 2)  # many ties
    whole = served.stub.Evaluate(
        pb.EvaluateRequest(
            task=pb.TASK_BINARY, labels=labels.tolist(), scores=scores.tolist(), options=OPTIONS
        )
    )
    streamed = served.stub.EvaluateStream(iter(stream_of(labels, scores, [1200, 800, 2000, 1000])))
    assert streamed.n_samples == whole.n_samples == 5000
    assert set(streamed.metrics) == set(whole.metrics)
    for name, value in whole.metrics.items():
        assert streamed.metrics[name] == pytest.approx(value, rel=1e-12, abs=1e-12), name
    assert dict(streamed.undefined) == dict(whole.undefined)
    assert list(streamed.curves.roc.fpr) == pytest.approx(list(whole.curves.roc.fpr))
    assert list(streamed.curves.pr.precision) == pytest.approx(list(whole.curves.pr.precision))


def test_a_stream_of_the_fawcett_table_gives_0_68(served: Served) -> None:
    messages = [
        M(header=BINARY),
        M(labels=FAWCETT_LABELS[:7], scores=FAWCETT_SCORES[:7]),
        M(labels_f64=f64(FAWCETT_LABELS[7:]), scores_f64=f64(FAWCETT_SCORES[7:])),
    ]
    response = served.stub.EvaluateStream(iter(messages))
    assert response.n_samples == 20
    assert response.metrics["roc_auc"] == pytest.approx(0.68, abs=1e-12)


def test_list_metrics_lists_roc_auc_as_higher_is_better(served: Served) -> None:
    metrics = served.stub.ListMetrics(pb.ListMetricsRequest()).metrics
    catalog = {(info.task, info.name): info for info in metrics}
    assert len(catalog) == len(metrics)  # (task, name) is unique
    roc_auc = catalog[pb.TASK_BINARY, "roc_auc"]
    assert roc_auc.higher_is_better is True
    assert list(roc_auc.tasks) == [pb.TASK_BINARY]  # kept for v0.1 clients: the one task
    assert roc_auc.definition and roc_auc.convention and roc_auc.reference
    assert roc_auc.test.startswith("tests/core/")
    assert (roc_auc.range.lower, roc_auc.range.upper) == (0.0, 1.0)
    assert catalog[pb.TASK_BINARY, "log_loss"].higher_is_better is False
    assert not catalog[pb.TASK_BINARY, "log_loss"].range.HasField("upper")  # [0, inf)
    assert not catalog[pb.TASK_BINARY, "tp"].HasField("higher_is_better")
    threshold = catalog[pb.TASK_BINARY, "ks_threshold"]
    assert threshold.HasField("range") and not threshold.range.HasField("lower")
    assert catalog[pb.TASK_MULTICLASS, "brier_score"].range.upper == 2.0


@pytest.mark.parametrize("task", [pb.TASK_MULTICLASS, pb.TASK_DETECTION])
def test_list_metrics_takes_a_task(served: Served, task: pb.Task.ValueType) -> None:
    everything = served.stub.ListMetrics(pb.ListMetricsRequest()).metrics
    chosen = served.stub.ListMetrics(pb.ListMetricsRequest(task=task)).metrics
    assert list(chosen) == [info for info in everything if info.task == task]
    assert chosen


def test_list_metrics_refuses_an_unknown_task_naming_the_field(served: Served) -> None:
    with pytest.raises(grpc.RpcError) as refused:
        served.stub.ListMetrics(pb.ListMetricsRequest(task=pb.Task.ValueType(99)))
    message = assert_refused(refused.value, INVALID, "task")
    assert "unknown enum value 99" in message


def test_health_is_serving_for_the_server_and_the_service(served: Served) -> None:
    health = health_pb2_grpc.HealthStub(served.channel)
    for name in ("", SERVICE_NAME):
        # types-grpcio-health-checking's HealthStub lacks the generated Check method
        reply = health.Check(health_pb2.HealthCheckRequest(service=name))  # type: ignore[attr-defined]
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
    with pytest.raises(grpc.RpcError) as refused:
        health.Check(health_pb2.HealthCheckRequest(service="no.such.Service"))  # type: ignore[attr-defined]
    error = refused.value
    assert isinstance(error, grpc.Call)
    assert error.code() == grpc.StatusCode.NOT_FOUND


def test_reflection_describes_the_service(served: Served) -> None:
    database = ProtoReflectionDescriptorDatabase(served.channel)
    services = set(database.get_services())
    assert {SERVICE_NAME, "grpc.health.v1.Health"} <= services
    pool = descriptor_pool.DescriptorPool(database)
    service = pool.FindServiceByName(SERVICE_NAME)
    assert {m.name for m in service.methods} == {"Evaluate", "EvaluateStream", "ListMetrics"}
    assert service.methods_by_name["EvaluateStream"].client_streaming


def test_health_turns_not_serving_on_graceful_shutdown() -> None:
    with serving(Settings(host="127.0.0.1")) as running:
        health = health_pb2_grpc.HealthStub(running.channel)
        running.loop.run(running.health.enter_graceful_shutdown())
        for name in ("", SERVICE_NAME):
            # types-grpcio-health-checking's HealthStub lacks the generated Check method
            reply = health.Check(health_pb2.HealthCheckRequest(service=name))  # type: ignore[attr-defined]
            assert reply.status == health_pb2.HealthCheckResponse.NOT_SERVING


def test_a_port_in_use_is_an_error(served: Served) -> None:
    async def second() -> None:
        evaluator = Evaluator(1)
        try:
            await create_grpc_server(Settings(host="127.0.0.1"), evaluator, port=served.port)
        finally:
            evaluator.close()

    with pytest.raises(
        OSError, match=f"gRPC port {served.port} on 127.0.0.1 cannot be listened on"
    ):
        served.loop.run(second())


# --- bad input: a clear error, nothing else breaks ------------------------------------------

INVALID = grpc.StatusCode.INVALID_ARGUMENT
TOO_LARGE = grpc.StatusCode.RESOURCE_EXHAUSTED
BINARY_TASK = pb.TASK_BINARY

EVALUATE_ERRORS = [
    pytest.param(pb.EvaluateRequest(labels=[0, 1], scores=[0.1, 0.9]), "task", id="task-unset"),
    pytest.param(
        pb.EvaluateRequest(task=pb.Task.ValueType(99), labels=[0, 1], scores=[0.1, 0.9]),
        "task",
        id="task-unknown-enum-value",
    ),
    pytest.param(pb.EvaluateRequest(task=BINARY_TASK), "labels", id="empty"),
    pytest.param(
        pb.EvaluateRequest(task=BINARY_TASK, labels=[0, 1, 1], scores=[0.1, 0.9]),
        "scores",
        id="length-mismatch",
    ),
    pytest.param(fawcett(weights=[1.0] * 19), "weights", id="weights-length-mismatch"),
    pytest.param(
        pb.EvaluateRequest(task=BINARY_TASK, labels=[0, 1], scores=[float("nan"), 0.9]),
        "scores",
        id="nan-score",
    ),
    pytest.param(
        pb.EvaluateRequest(task=BINARY_TASK, labels=[0, 1], scores=[0.1, float("inf")]),
        "scores",
        id="infinite-score",
    ),
    pytest.param(
        pb.EvaluateRequest(task=BINARY_TASK, labels=[0, 2], scores=[0.1, 0.9]),
        "labels",
        id="label-outside-0-1",
    ),
    pytest.param(
        pb.EvaluateRequest(task=BINARY_TASK, label_names=["cat", "dog"], scores=[0.1, 0.9]),
        "labels",
        id="label-names-for-binary",
    ),
    pytest.param(fawcett(weights=[1.0] * 19 + [-1.0]), "weights", id="negative-weight"),
    pytest.param(fawcett(weights=[0.0] * 20), "weights", id="all-zero-weights"),
    pytest.param(fawcett(predictions=[0.5] * 20), "predictions", id="predictions-not-0-1"),
    pytest.param(fawcett(options=pb.Options(beta=0.0)), "options.beta", id="beta-zero"),
    pytest.param(fawcett(options=pb.Options(beta=-1.0)), "options.beta", id="beta-negative"),
    pytest.param(fawcett(options=pb.Options(max_fpr=1.5)), "options.max_fpr", id="max-fpr-high"),
    pytest.param(fawcett(options=pb.Options(max_fpr=0.0)), "options.max_fpr", id="max-fpr-zero"),
    pytest.param(
        fawcett(options=pb.Options(confidence_level=1.0)),
        "options.confidence_level",
        id="confidence-level-1",
    ),
    pytest.param(
        fawcett(options=pb.Options(threshold=float("nan"))), "options.threshold", id="threshold-nan"
    ),
    pytest.param(fawcett(options=pb.Options(top_k=[0])), "options.top_k", id="top-k-zero"),
    pytest.param(fawcett(options=pb.Options(head_k=[-5.0])), "options.head_k", id="head-k-neg"),
    pytest.param(
        fawcett(options=pb.Options(max_curve_points=1)),
        "options.max_curve_points",
        id="max-curve-points-1",
    ),
    pytest.param(
        fawcett(options=pb.Options(calibration_bins=0)),
        "options.calibration_bins",
        id="calibration-bins-0",
    ),
    pytest.param(fawcett(model=pb.Model(version="7")), "model.name", id="model-without-name"),
    pytest.param(fawcett(scores_f64=f64(FAWCETT_SCORES)), "scores", id="scores-packed-and-raw"),
    pytest.param(
        pb.EvaluateRequest(
            task=BINARY_TASK, labels=[0, 1], labels_f64=f64([0, 1]), scores=[0.1, 0.9]
        ),
        "labels",
        id="labels-packed-and-raw",
    ),
    pytest.param(
        pb.EvaluateRequest(task=BINARY_TASK, labels=[0, 1], scores_f64=b"\0" * 15),
        "scores_f64",
        id="raw-bytes-not-a-multiple-of-8",
    ),
    pytest.param(
        pb.EvaluateRequest(task=BINARY_TASK, labels_f64=f64([0, 1, 1]), scores_f64=f64([0.1, 0.9])),
        "scores",
        id="raw-length-mismatch",
    ),
    pytest.param(fawcett(weights_f64=f64([float("nan")] * 20)), "weights", id="raw-nan-weights"),
    pytest.param(
        pb.EvaluateRequest(task=pb.TASK_MULTICLASS, labels=[0, 3], scores=[0.9, 0.1, 0.2, 0.8]),
        "labels",
        id="multiclass-label-outside-the-classes",
    ),
]


@pytest.mark.parametrize(("request_message", "field"), EVALUATE_ERRORS)
def test_evaluate_refuses_bad_input(
    served: Served, request_message: pb.EvaluateRequest, field: str
) -> None:
    with pytest.raises(grpc.RpcError) as refused:
        served.stub.Evaluate(request_message)
    assert_refused(refused.value, INVALID, field)


def _rows(labels: Sequence[float], scores: Sequence[float], **fields: Any) -> M:
    return M(labels=labels, scores=scores, **fields)


STREAM_ERRORS = [
    pytest.param([_rows([0, 1], [0.1, 0.9])], "header", "message 1", id="no-header"),
    pytest.param([], "header", "empty", id="empty-stream"),
    pytest.param(
        [M(header=BINARY), _rows([0, 1], [0.1, 0.9]), M(header=BINARY)],
        "header",
        "header twice: message 3",
        id="header-twice",
    ),
    pytest.param(
        [_rows([0, 1], [0.1, 0.9], header=BINARY), M(header=BINARY)],
        "header",
        "message 2",
        id="header-twice-right-after",
    ),
    pytest.param([M(header=BINARY)], "rows", "no rows", id="header-but-no-rows"),
    pytest.param([M(header=pb.StreamHeader())], "task", "required", id="header-without-task"),
    pytest.param(
        [M(header=pb.StreamHeader(task=pb.TASK_REGRESSION, baseline=pb.Baseline(roc_auc=0.9)))],
        "baseline",
        "take task TASK_BINARY, not TASK_REGRESSION",  # the enum's wire names
        id="drift-baseline-of-another-task",
    ),
    pytest.param(
        [M(header=pb.StreamHeader(task=pb.TASK_BINARY, options=pb.Options(beta=0)))],
        "options.beta",
        "(0, 10000]",
        id="bad-option-in-header",
    ),
    pytest.param(
        [M(header=BINARY), _rows([0, 1], [0.1, 0.9]), _rows([0, 1, 1], [0.2, 0.3])],
        "batch 3.scores",
        "expected 3",
        id="wrong-shape-batch",
    ),
    pytest.param(
        [M(header=BINARY), _rows([0, 1], [0.1, float("nan")])],
        "batch 2.scores",
        "finite",
        id="nan-score-in-batch",
    ),
    pytest.param(
        [M(header=BINARY), _rows([0, 3], [0.1, 0.2])],
        "batch 2.labels",
        "0 or 1",
        id="label-outside-0-1-in-batch",
    ),
    pytest.param(
        [M(header=BINARY), M(labels=[0, 1], scores_f64=b"\0" * 9)],
        "batch 2.scores_f64",
        "8 bytes",
        id="raw-bytes-not-a-multiple-of-8",
    ),
    pytest.param(
        [M(header=BINARY), M(labels=[0, 1], scores=[0.1, 0.2], scores_f64=f64([1, 2]))],
        "batch 2.scores",
        "not both",
        id="packed-and-raw-in-batch",
    ),
    pytest.param(
        [M(header=BINARY), _rows([0, 1], [0.1, 0.2], weights=[1, -1])],
        "batch 2.weights",
        "non-negative",
        id="negative-weight-in-batch",
    ),
    pytest.param(
        [
            M(header=BINARY),
            _rows([0, 1], [0.1, 0.2], predictions=[0, 1]),
            _rows([0, 1], [0.1, 0.2]),
        ],
        "batch 3.predictions",
        "every batch",
        id="predictions-in-some-batches",
    ),
]


@pytest.mark.parametrize(("messages", "field", "says"), STREAM_ERRORS)
def test_evaluate_stream_refuses_bad_streams(
    served: Served, messages: list[pb.EvaluateStreamRequest], field: str, says: str
) -> None:
    with pytest.raises(grpc.RpcError) as refused:
        served.stub.EvaluateStream(iter(messages))
    assert says in assert_refused(refused.value, INVALID, field)


def test_an_unexpected_error_is_internal_logged_and_says_nothing_inside(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger="evalserve.service.grpc_server")
    with serving(Settings(host="127.0.0.1"), BrokenEvaluator) as running:
        with pytest.raises(grpc.RpcError) as failed:
            running.stub.Evaluate(fawcett())
        error = failed.value
        assert isinstance(error, grpc.Call)
        assert error.code() == grpc.StatusCode.INTERNAL
        assert "secret" not in error.details()
        assert rpc_status.from_call(error) is None
        # Catalog calls do not touch the evaluator and keep working.
        assert running.stub.ListMetrics(pb.ListMetricsRequest()).metrics
    logged = [r.exc_info[1] for r in caplog.records if r.exc_info]
    assert any("secret internals" in str(error) for error in logged)


# --- size limits ----------------------------------------------------------------------------


def _assert_oversize(error: grpc.RpcError) -> None:
    assert isinstance(error, grpc.Call)
    assert error.code() == TOO_LARGE
    assert "larger than max" in error.details()
    assert "1024" in error.details()


def test_a_message_over_the_size_limit_is_refused_by_grpc(limited: Served) -> None:
    request = pb.EvaluateRequest(task=BINARY_TASK, labels=[0, 1] * 40, scores=[0.5] * 80)
    assert request.ByteSize() > 1024
    with pytest.raises(grpc.RpcError) as refused:
        limited.stub.Evaluate(request)
    _assert_oversize(refused.value)


def test_a_stream_message_over_the_size_limit_is_refused_by_grpc(limited: Served) -> None:
    big = M(labels=[0, 1] * 40, scores=[0.5] * 80)
    with pytest.raises(grpc.RpcError) as refused:
        limited.stub.EvaluateStream(iter([M(header=BINARY), big]))
    _assert_oversize(refused.value)


def test_too_many_rows_is_resource_exhausted(limited: Served) -> None:
    request = pb.EvaluateRequest(task=BINARY_TASK, labels_f64=f64([0] * 101), scores=[0.5])
    assert request.ByteSize() < 1024
    with pytest.raises(grpc.RpcError) as refused:
        limited.stub.Evaluate(request)
    assert_refused(refused.value, TOO_LARGE, "labels_f64")
    # final: no retry hint, and a pushback that keeps any retry policy from sending it again
    assert retry_hint(refused.value) == (None, "-1")


def test_too_many_classes_is_resource_exhausted(limited: Served) -> None:
    with pytest.raises(grpc.RpcError) as refused:
        limited.stub.Evaluate(fawcett(classes=["a", "b", "c"]))
    assert_refused(refused.value, TOO_LARGE, "classes")


def test_a_stream_over_the_row_limit_is_resource_exhausted(limited: Served) -> None:
    batch = M(labels_f64=f64([0, 1] * 30), scores_f64=f64([0.5] * 60))  # 60 rows each
    messages = [M(header=BINARY), batch, batch, batch]
    with pytest.raises(grpc.RpcError) as refused:
        limited.stub.EvaluateStream(iter(messages))
    assert_refused(refused.value, TOO_LARGE, "batch 4")


def test_a_response_larger_than_the_request_limit_is_sent(limited: Served) -> None:
    response = limited.stub.Evaluate(fawcett())
    assert response.ByteSize() > 1024
    assert response.metrics["roc_auc"] == pytest.approx(0.68, abs=1e-12)


# --- no input reaches INTERNAL --------------------------------------------------------------

_wild = st.lists(st.one_of(st.sampled_from([0.0, 1.0, 2.0, -1.0, 0.5]), st.floats()), max_size=6)


def _rare(draw: st.DrawFn) -> bool:
    return draw(st.integers(0, 4)) == 0


@st.composite
def _column(draw: st.DrawFn, n: int, plausible: st.SearchStrategy[float]) -> list[float]:
    """Mostly n plausible values; sometimes anything."""
    return draw(_wild) if _rare(draw) else draw(st.lists(plausible, min_size=n, max_size=n))


@st.composite
def _requests(draw: st.DrawFn) -> pb.EvaluateRequest:
    """Mostly near-valid binary requests, so that each draw goes wrong in a few places."""
    task = draw(st.sampled_from([1] * 18 + [0, 2, 3, 4, 5, 6]))
    request = pb.EvaluateRequest(task=pb.Task.ValueType(task))
    n = draw(st.integers(0, 8))
    plausible = {
        "labels": st.sampled_from([0.0, 1.0]),
        "scores": st.floats(0, 1),
        "predictions": st.sampled_from([0.0, 1.0]),
        "weights": st.floats(0, 10),
    }
    for name, values in plausible.items():
        if name in ("predictions", "weights") and not _rare(draw):
            continue
        column = draw(_column(n, values))
        form = draw(st.sampled_from(["packed"] * 4 + ["raw"] * 4 + ["bytes", "both"]))
        if form in ("packed", "both"):
            getattr(request, name).extend(column)
        if form in ("raw", "both"):
            setattr(request, f"{name}_f64", f64(column))
        if form == "bytes":
            setattr(request, f"{name}_f64", draw(st.binary(max_size=20)))
    if _rare(draw):
        request.label_names.extend(draw(st.lists(st.text(max_size=3), max_size=3)))
    if _rare(draw):
        request.classes.extend(draw(st.lists(st.text(max_size=3), max_size=3)))
    options = request.options
    number = st.one_of(st.floats(-1, 2), st.floats())
    integer = st.one_of(st.integers(-2, 20), st.integers(-(2**63), 2**63 - 1))
    for name in ("threshold", "beta", "max_fpr", "confidence_level"):
        if _rare(draw):
            setattr(options, name, draw(number))
    for name in ("max_curve_points", "n_params", "calibration_bins"):
        if _rare(draw):
            setattr(options, name, draw(integer))
    if _rare(draw):
        options.top_k.extend(draw(st.lists(integer, max_size=3)))
    if _rare(draw):
        options.head_k.extend(draw(st.lists(number, max_size=3)))
    if _rare(draw):
        request.model.CopyFrom(pb.Model(name=draw(st.text(max_size=3))))
    return request


# Extreme numbers that once crashed the core with an overflow (an INTERNAL): now refused.
EXTREME_NUMBERS = [
    pytest.param(fawcett(options=pb.Options(beta=1e155)), id="beta-squared-overflows"),
    pytest.param(fawcett(weights=[1e-300] * 20), id="weights-squared-underflow"),
    pytest.param(fawcett(weights=[1e308] * 20), id="weight-sum-overflows"),
    pytest.param(fawcett(weights=[1e300] + [1e-300] * 19), id="weights-of-extreme-range"),
]


@pytest.mark.parametrize("request_message", EXTREME_NUMBERS)
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_extreme_numbers_are_refused_not_internal(
    served: Served, request_message: pb.EvaluateRequest
) -> None:
    with pytest.raises(grpc.RpcError) as refused:
        served.stub.Evaluate(request_message)
    error = refused.value
    assert isinstance(error, grpc.Call)
    assert error.code() in (INVALID, TOO_LARGE), error.details()


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,  # the same examples every run: a failure here is a finding, not noise
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(request=_requests())
def test_no_request_reaches_internal(served: Served, request: pb.EvaluateRequest) -> None:
    try:
        served.stub.Evaluate(request)
    except grpc.RpcError as error:
        assert isinstance(error, grpc.Call)
        assert error.code() in (INVALID, TOO_LARGE), error.details()
        status = rpc_status.from_call(error)
        assert status is not None
        assert status.code in (code_pb2.INVALID_ARGUMENT, code_pb2.RESOURCE_EXHAUSTED)


# --- and the server still serves --------------------------------------------------------------


def test_the_servers_still_serve_after_all_the_errors(served: Served, limited: Served) -> None:
    for running in (served, limited):
        response = running.stub.Evaluate(fawcett(options=pb.Options(max_curve_points=0)))
        assert response.metrics["roc_auc"] == pytest.approx(0.68, abs=1e-12)
        health = health_pb2_grpc.HealthStub(running.channel)
        # types-grpcio-health-checking's HealthStub lacks the generated Check method
        reply = health.Check(health_pb2.HealthCheckRequest(service=SERVICE_NAME))  # type: ignore[attr-defined]
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
