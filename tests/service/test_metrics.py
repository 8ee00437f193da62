"""The Prometheus export on real servers: REST (uvicorn) and gRPC (grpc.aio) on 127.0.0.1,
sharing one ``ServiceMetrics`` as ``service.server`` runs them, scraped from ``/metrics`` and
parsed with prometheus_client's own parser. The clock of the model series is injected, so the
TTL is tested without sleeping."""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import grpc
import httpx
import numpy as np
import orjson
import prometheus_client
import pytest
import uvicorn
from prometheus_client.parser import text_string_to_metric_families

from evalserve.core import catalog_entry, evaluate
from evalserve.service.config import Settings
from evalserve.service.evaluator import Evaluator
from evalserve.service.grpc_server import create_grpc_server
from evalserve.service.metrics import ModelQualityCollector, ModelSeriesStore, ServiceMetrics
from evalserve.service.records import ModelRef
from evalserve.service.rest import create_app
from evalserve.v1 import evaluation_pb2 as pb
from evalserve.v1 import evaluation_pb2_grpc as pb_grpc
from tests.core.test_worked_examples import FAWCETT_LABELS, FAWCETT_SCORES
from tests.docs.pages import metrics_contract
from tests.service.test_grpc import BrokenEvaluator, LoopThread

JSON = "application/json"
NDJSON = "application/x-ndjson"
START = 1_700_000_000.0  # unix seconds on the injected clock


class Clock:
    """Unix seconds that move only when a test says so."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


@dataclass
class Stack:
    """Both doors over one evaluator and one ``ServiceMetrics``."""

    rest: httpx.Client
    stub: pb_grpc.EvaluationServiceStub
    clock: Clock
    metrics: ServiceMetrics


@contextmanager
def stack(settings: Settings, evaluator_type: type[Evaluator] = Evaluator) -> Iterator[Stack]:
    """Both servers in one event loop (the evaluator's semaphore belongs to one loop), as
    ``service.server.run`` runs them, with an injected clock."""
    clock = Clock()
    registry = prometheus_client.CollectorRegistry()
    evaluators: list[Evaluator] = []  # made in the loop below; read by the in-flight gauge
    metrics = ServiceMetrics(
        settings, registry, clock=clock, inflight=lambda: sum(e.inflight for e in evaluators)
    )
    loop = LoopThread()

    async def start() -> tuple[Evaluator, grpc.aio.Server, int, uvicorn.Server, int]:
        evaluator = evaluator_type(settings.workers)
        evaluators.append(evaluator)
        app = create_app(settings, evaluator, registry, metrics=metrics)
        server, port, _ = await create_grpc_server(settings, evaluator, port=0, metrics=metrics)
        await server.start()
        rest = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off")
        )
        task = asyncio.create_task(rest.serve())
        while not rest.started:
            assert not task.done(), "uvicorn did not start"
            await asyncio.sleep(0.01)
        rest_tasks.append(task)
        return evaluator, server, port, rest, rest.servers[0].sockets[0].getsockname()[1]

    rest_tasks: list[asyncio.Task[None]] = []

    async def stop(server: grpc.aio.Server, rest: uvicorn.Server) -> None:
        rest.should_exit = True
        await asyncio.gather(server.stop(None), *rest_tasks)

    try:
        evaluator, server, port, rest, rest_port = loop.run(start())
    except BaseException:
        loop.close()
        raise
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{rest_port}", timeout=60) as client:
            yield Stack(client, pb_grpc.EvaluationServiceStub(channel), clock, metrics)
    finally:
        channel.close()
        loop.run(stop(server, rest))
        evaluator.close()
        loop.close()


@pytest.fixture(scope="module")
def served() -> Iterator[Stack]:
    with stack(Settings(host="127.0.0.1")) as running:
        yield running


# --- reading /metrics ---------------------------------------------------------------------------

Labels = frozenset[tuple[str, str]]


def scrape(running: Stack) -> dict[tuple[str, Labels], float]:
    """Every sample of ``/metrics``: (sample name, labels) -> value."""
    response = running.rest.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def values(
    scraped: Mapping[tuple[str, Labels], float], name: str, key: str = "metric", **labels: str
) -> dict[str, float]:
    """The samples of ``name`` that carry ``labels``, by the value of their label ``key``."""
    wanted = set(labels.items())
    return {
        dict(sample_labels).get(key, ""): value
        for (sample_name, sample_labels), value in scraped.items()
        if sample_name == name and wanted <= sample_labels
    }


def one(scraped: Mapping[tuple[str, Labels], float], name: str, **labels: str) -> float | None:
    """The value of the sample with exactly these labels, or None."""
    return scraped.get((name, frozenset(labels.items())))


def model_labels(name: str, version: str = "", segment: str = "") -> dict[str, str]:
    return {"model": name, "version": version, "segment": segment}


def model_series(scraped: Mapping[tuple[str, Labels], float]) -> set[tuple[str, Labels]]:
    """Every sample that belongs to a model."""
    return {key for key in scraped if any(label == "model" for label, _ in key[1])}


# --- requests -----------------------------------------------------------------------------------


def fawcett(**fields: Any) -> dict[str, Any]:
    return {"task": "binary", "labels": FAWCETT_LABELS, "scores": FAWCETT_SCORES, **fields}


def post(running: Stack, body: Any) -> httpx.Response:
    return running.rest.post(
        "/v1/evaluate", content=orjson.dumps(body), headers={"content-type": "application/json"}
    )


def evaluated(running: Stack, body: Any) -> dict[str, Any]:
    response = post(running, body)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def post_stream(running: Stack, *lines: Any) -> httpx.Response:
    content = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    return running.rest.post(
        "/v1/evaluate/stream", content=content, headers={"content-type": NDJSON}
    )


def separable(n: int, seed: int) -> dict[str, list[float]]:
    """n binary rows, half positives, with an AUC near 0.8."""
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % 2
    scores = rng.normal(labels * 1.2, 1.0)
    return {"labels": labels.astype(float).tolist(), "scores": scores.tolist()}


def exported_metrics(result: Mapping[str, Any]) -> dict[str, float]:
    """What the gauges must hold for a response: its defined, catalogued metrics."""
    return {
        name: value
        for name, value in result["metrics"].items()
        if value is not None and catalog_entry(name) is not None
    }


def assert_gauges_mirror(
    scraped: Mapping[tuple[str, Labels], float], result: Mapping[str, Any], **labels: str
) -> None:
    gauges = values(scraped, "evalserve_model_metric", **labels)
    assert gauges == pytest.approx(exported_metrics(result), rel=1e-12)
    assert not set(gauges) & set(result["undefined"])
    for bound in ("lower", "upper"):
        expected = {name: i[bound] for name, i in result["intervals"].items()}
        got = values(scraped, f"evalserve_model_metric_ci_{bound}", **labels)
        assert got == pytest.approx(expected, rel=1e-12)


# --- the gauges, door by door -------------------------------------------------------------------


def test_a_named_model_over_rest_exports_its_gauges_and_counters(served: Stack) -> None:
    labels = model_labels("fraud", "7", "eu")
    result = evaluated(served, fawcett(model={"name": "fraud", "version": "7", "segment": "eu"}))
    scraped = scrape(served)
    assert_gauges_mirror(scraped, result, **labels)
    gauges = values(scraped, "evalserve_model_metric", **labels)
    assert gauges["roc_auc"] == pytest.approx(0.68)
    for name in ("average_precision", "accuracy", "precision", "recall", "f1", "log_loss"):
        assert name in gauges
    for name in ("brier_score", "ks_statistic", "prevalence", "n_samples", "n_positive"):
        assert name in gauges
    assert values(scraped, "evalserve_model_metric_ci_lower", **labels)["roc_auc"] < 0.68
    assert values(scraped, "evalserve_model_metric_ci_upper", **labels)["roc_auc"] > 0.68
    stamp = one(scraped, "evalserve_model_last_evaluation_timestamp_seconds", **labels)
    assert stamp == START
    assert one(scraped, "evalserve_model_evaluations_total", **labels) == 1
    assert one(scraped, "evalserve_model_rows_total", **labels) == 20
    assert one(scraped, "evalserve_model_positive_rows_total", **labels) == 10
    assert not values(scraped, "evalserve_model_drift_z", **labels)  # no baseline
    assert not values(scraped, "evalserve_model_drift_insufficient_data", **labels)
    assert not values(scraped, "evalserve_model_class_metric", **labels)  # binary

    served.clock.now += 5
    evaluated(served, fawcett(model={"name": "fraud", "version": "7", "segment": "eu"}))
    scraped = scrape(served)
    assert one(scraped, "evalserve_model_evaluations_total", **labels) == 2
    assert one(scraped, "evalserve_model_rows_total", **labels) == 40
    assert one(scraped, "evalserve_model_positive_rows_total", **labels) == 20
    assert one(scraped, "evalserve_model_last_evaluation_timestamp_seconds", **labels) == START + 5


def test_a_named_model_over_grpc_exports_the_same_gauges(served: Stack) -> None:
    request = pb.EvaluateRequest(
        task=pb.TASK_BINARY,
        labels=FAWCETT_LABELS,
        scores=FAWCETT_SCORES,
        model=pb.Model(name="fraud-grpc", version="v1.2"),
    )
    response = served.stub.Evaluate(request)
    scraped = scrape(served)
    labels = model_labels("fraud-grpc", "v1.2")
    gauges = values(scraped, "evalserve_model_metric", **labels)
    catalogued = {k: v for k, v in response.metrics.items() if catalog_entry(k) is not None}
    assert gauges == pytest.approx(catalogued, rel=1e-12)
    assert gauges["roc_auc"] == pytest.approx(0.68)
    lower = values(scraped, "evalserve_model_metric_ci_lower", **labels)
    assert lower["roc_auc"] == pytest.approx(response.intervals["roc_auc"].lower, rel=1e-12)
    assert one(scraped, "evalserve_model_rows_total", **labels) == 20
    # The same request over REST gives the same gauges, under its own labels.
    rest = evaluated(served, fawcett(model={"name": "fraud-rest", "version": "v1.2"}))
    scraped = scrape(served)
    assert values(scraped, "evalserve_model_metric", **model_labels("fraud-rest", "v1.2")) == (
        pytest.approx(exported_metrics(rest), rel=1e-12)
    )


def test_streams_export_the_gauges_on_both_doors(served: Stack) -> None:
    rows = separable(400, seed=1)
    halves = [{k: v[:150] for k, v in rows.items()}, {k: v[150:] for k, v in rows.items()}]
    header = {"task": "binary", "model": {"name": "stream-rest", "segment": "us"}}
    response = post_stream(served, header, *halves)
    assert response.status_code == 200, response.text
    rest = response.json()

    messages = [
        pb.EvaluateStreamRequest(
            header=pb.StreamHeader(
                task=pb.TASK_BINARY, model=pb.Model(name="stream-grpc", segment="us")
            )
        ),
        *(
            pb.EvaluateStreamRequest(labels=half["labels"], scores=half["scores"])
            for half in halves
        ),
    ]
    grpc_response = served.stub.EvaluateStream(iter(messages))
    scraped = scrape(served)
    for name in ("stream-rest", "stream-grpc"):
        labels = model_labels(name, segment="us")
        assert_gauges_mirror(scraped, rest, **labels)
        assert one(scraped, "evalserve_model_rows_total", **labels) == 400
        assert one(scraped, "evalserve_model_evaluations_total", **labels) == 1
    assert grpc_response.metrics["roc_auc"] == pytest.approx(rest["metrics"]["roc_auc"])


OPERATING = {
    "recall_at_precision": [0.6, 1.0],
    "tpr_at_fpr": [0.1],
    "flagged_share": [0.25],
    "bootstrap_replicates": 100,
}


EXPORTED_OPERATING = (
    "recall_at_precision_0.6",
    "recall_at_precision_0.6_threshold",
    "tpr_at_fpr_0.1",
    "tpr_at_fpr_0.1_threshold",
    "equal_error_rate",
    "flagged_share_0.25_threshold",
    "precision_at_flagged_share_0.25",
)


def test_operating_points_are_gauges_named_by_their_target_on_both_doors(served: Stack) -> None:
    """The target is part of the `metric` label (recall_at_precision_0.6, its _threshold):
    bounded, as each option takes at most 8 targets; an unreachable target is not exported."""
    rows = separable(400, seed=3)
    rows["scores"][0] = 100.0  # a negative above every positive: precision 1 is out of reach
    rest = evaluated(served, {"task": "binary", **rows, "options": OPERATING,
                              "model": {"name": "fraud-op"}})  # fmt: skip
    request = pb.EvaluateRequest(
        task=pb.TASK_BINARY,
        labels=rows["labels"],
        scores=rows["scores"],
        options=pb.Options(
            recall_at_precision=[0.6, 1.0], tpr_at_fpr=[0.1], flagged_share=[0.25],
            bootstrap_replicates=100,
        ),
        model=pb.Model(name="fraud-op-grpc"),
    )  # fmt: skip
    served.stub.Evaluate(request)
    scraped = scrape(served)
    assert rest["metrics"]["recall_at_precision_1"] is None
    for name in ("fraud-op", "fraud-op-grpc"):
        labels = model_labels(name)
        assert_gauges_mirror(scraped, rest, **labels)
        gauges = values(scraped, "evalserve_model_metric", **labels)
        for metric in EXPORTED_OPERATING:
            assert gauges[metric] == pytest.approx(rest["metrics"][metric], rel=1e-12), metric
        assert "recall_at_precision_1" not in gauges
        lower = values(scraped, "evalserve_model_metric_ci_lower", **labels)
        assert lower["recall_at_precision_0.6"] <= gauges["recall_at_precision_0.6"]


def test_a_multiclass_model_exports_per_class_gauges(served: Stack) -> None:
    rng = np.random.default_rng(2)
    n, classes = 300, ["cat", "dog", "cow"]
    labels = rng.integers(0, 3, n)
    scores = rng.dirichlet(np.ones(3), n) + np.eye(3)[labels]
    scores /= scores.sum(axis=1, keepdims=True)
    body = {
        "task": "multiclass",
        "classes": classes,
        "labels": [classes[i] for i in labels],
        "scores": scores.tolist(),
        "model": {"name": "animals"},
    }
    result = evaluated(served, body)
    scraped = scrape(served)
    model = model_labels("animals")
    gauges = values(scraped, "evalserve_model_metric", **model)
    assert gauges == pytest.approx(exported_metrics(result), rel=1e-12)
    for name in ("accuracy", "balanced_accuracy", "f1_macro", "roc_auc_ovr_macro", "log_loss"):
        assert name in gauges
    for row in result["per_class"]:
        per_class = values(
            scraped, "evalserve_model_class_metric", **model, **{"class": row["class"]}
        )
        assert per_class["roc_auc"] == pytest.approx(row["roc_auc"], rel=1e-12)
        assert per_class["f1"] == pytest.approx(row["f1"], rel=1e-12)
        assert per_class["support"] == row["support"]
    exported_classes = values(scraped, "evalserve_model_class_metric", key="class", **model)
    assert set(exported_classes) == set(classes)


def test_a_baseline_exports_the_drift_gauges(served: Stack) -> None:
    model = {"name": "drifting"}
    labels = model_labels("drifting")
    baseline = {"roc_auc": 0.95, "n_positive": 5000, "n_negative": 5000}
    result = evaluated(
        served, {"task": "binary", **separable(600, 3), "model": model, "baseline": baseline}
    )
    drift = result["drift"]["roc_auc"]
    assert drift["status"] == "ok" and drift["significant"] is True
    scraped = scrape(served)
    assert values(scraped, "evalserve_model_drift_z", **labels) == {
        "roc_auc": pytest.approx(drift["z"], rel=1e-12)
    }
    assert values(scraped, "evalserve_model_drift_p_value", **labels) == {
        "roc_auc": pytest.approx(drift["p_value"], rel=1e-12, abs=1e-300)
    }
    assert values(scraped, "evalserve_model_drift_significant", **labels) == {"roc_auc": 1.0}
    assert values(scraped, "evalserve_model_drift_insufficient_data", **labels) == {"roc_auc": 0.0}

    # Too few samples for a verdict: insufficient data, and no z, p or verdict.
    result = evaluated(served, fawcett(model=model, baseline=baseline))
    assert result["drift"]["roc_auc"]["status"] == "insufficient_data"
    scraped = scrape(served)
    assert values(scraped, "evalserve_model_drift_insufficient_data", **labels) == {"roc_auc": 1.0}
    for name in ("z", "p_value", "significant"):
        assert not values(scraped, f"evalserve_model_drift_{name}", **labels), name

    # Without a baseline the drift series go away.
    evaluated(served, fawcett(model=model))
    scraped = scrape(served)
    for name in ("z", "p_value", "significant", "insufficient_data"):
        assert not values(scraped, f"evalserve_model_drift_{name}", **labels), name
    assert values(scraped, "evalserve_model_metric", **labels)["roc_auc"] == pytest.approx(0.68)


def test_a_request_without_a_model_exports_nothing_model_specific(served: Stack) -> None:
    before = scrape(served)
    evaluated(served, fawcett())
    served.stub.Evaluate(
        pb.EvaluateRequest(task=pb.TASK_BINARY, labels=FAWCETT_LABELS, scores=FAWCETT_SCORES)
    )
    assert post_stream(served, {"task": "binary"}, separable(40, 4)).status_code == 200
    after = scrape(served)
    assert model_series(after) == model_series(before)
    for key in model_series(before):
        assert after[key] == before[key], key
    assert one(after, "evalserve_model_series") == one(before, "evalserve_model_series")
    for transport, method in (("rest", "evaluate"), ("grpc", "evaluate")):
        labels = {
            "transport": transport,
            "method": method,
            "code": "200" if transport == "rest" else "OK",
        }
        assert one(after, "evalserve_requests_total", **labels) == (
            (one(before, "evalserve_requests_total", **labels) or 0) + 1
        )


def test_undefined_metrics_are_not_exported_and_a_value_that_became_undefined_goes(
    served: Stack,
) -> None:
    model = {"name": "flaky", "version": "1"}
    labels = model_labels("flaky", "1")
    evaluated(served, fawcett(model=model))
    gauges = values(scrape(served), "evalserve_model_metric", **labels)
    assert "roc_auc" in gauges and "f1" in gauges
    # One class only: the AUC, precision and F1 are undefined (null with a reason).
    result = evaluated(
        served, {"task": "binary", "labels": [0, 0, 0], "scores": [0.6, 0.2, 0.7], "model": model}
    )
    assert {"roc_auc", "recall"} <= set(result["undefined"])
    scraped = scrape(served)
    gauges = values(scraped, "evalserve_model_metric", **labels)
    assert gauges == pytest.approx(exported_metrics(result), rel=1e-12)
    assert not set(gauges) & set(result["undefined"])
    assert "roc_auc" not in values(scraped, "evalserve_model_metric_ci_lower", **labels)
    assert gauges["n_samples"] == 3
    assert all(not math.isnan(value) for value in gauges.values())


# --- model names --------------------------------------------------------------------------------

BAD_MODELS = {
    "space-in-name": ({"name": "fraud model"}, "model.name", "' ' at position 5"),
    "semicolon-in-segment": ({"name": "fraud", "segment": "eu;x"}, "model.segment", "';'"),
    "quote-in-version": ({"name": "fraud", "version": 'v"1'}, "model.version", "'\"'"),
    "non-ascii-name": ({"name": "modèle"}, "model.name", "'è'"),
    "newline-at-the-end": ({"name": "fraud\n"}, "model.name", "position 5"),
    "long-name": ({"name": "m" * 129}, "model.name", "at most 128 characters, but got 129"),
    "long-version": ({"name": "m", "version": "1" * 200}, "model.version", "got 200"),
    "long-segment": ({"name": "m", "segment": "s" * 129}, "model.segment", "at most 128"),
}


@pytest.mark.parametrize("case", list(BAD_MODELS))
def test_a_bad_model_name_is_refused_on_both_doors_before_evaluation(
    served: Stack, case: str
) -> None:
    model, field, says = BAD_MODELS[case]
    before = model_series(scrape(served))
    response = post(served, fawcett(model=model))
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert (error["code"], error["field"]) == ("invalid_argument", field)
    assert says in error["message"]

    stream = post_stream(served, {"task": "binary", "model": model}, separable(10, 5))
    assert stream.status_code == 422, stream.text
    assert stream.json()["error"]["field"] == f"line 1.{field}"

    call: Callable[[], object]
    for call in (
        lambda: served.stub.Evaluate(
            pb.EvaluateRequest(
                task=pb.TASK_BINARY,
                labels=FAWCETT_LABELS,
                scores=FAWCETT_SCORES,
                model=pb.Model(**model),
            )
        ),
        lambda: served.stub.EvaluateStream(
            iter(
                [
                    pb.EvaluateStreamRequest(
                        header=pb.StreamHeader(task=pb.TASK_BINARY, model=pb.Model(**model)),
                        labels=FAWCETT_LABELS,
                        scores=FAWCETT_SCORES,
                    )
                ]
            )
        ),
    ):
        with pytest.raises(grpc.RpcError) as raised:
            call()
        assert isinstance(raised.value, grpc.Call)
        assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert raised.value.details().startswith(f"{field}: ")
        assert says in raised.value.details()
    assert model_series(scrape(served)) == before


def test_every_allowed_character_and_the_longest_names_are_taken(served: Stack) -> None:
    name = "Az09_.:/-" + "x" * 119
    assert len(name) == 128
    model = {"name": name, "version": "v" * 128, "segment": "team/eu-west:1.2_a"}
    evaluated(served, fawcett(model=model))
    labels = model_labels(name, "v" * 128, "team/eu-west:1.2_a")
    assert values(scrape(served), "evalserve_model_metric", **labels)["roc_auc"] == (
        pytest.approx(0.68)
    )


# --- the cap and the TTL ------------------------------------------------------------------------


def test_the_cap_refuses_new_label_sets_and_counts_them_while_old_ones_update() -> None:
    with stack(Settings(host="127.0.0.1", max_model_series=3)) as running:
        for name in ("a", "b", "c"):
            evaluated(running, fawcett(model={"name": name}))
        scraped = scrape(running)
        assert one(scraped, "evalserve_model_series") == 3
        assert one(scraped, "evalserve_model_series_overflow_total") == 0

        evaluated(running, fawcett(model={"name": "d"}))  # answered, but not exported
        running.stub.Evaluate(
            pb.EvaluateRequest(
                task=pb.TASK_BINARY,
                labels=FAWCETT_LABELS,
                scores=FAWCETT_SCORES,
                model=pb.Model(name="e"),
            )
        )
        running.clock.now += 10
        result = evaluated(running, {"task": "binary", **separable(100, 6), "model": {"name": "a"}})
        scraped = scrape(running)
        assert one(scraped, "evalserve_model_series") == 3
        assert one(scraped, "evalserve_model_series_overflow_total") == 2
        exported = values(scraped, "evalserve_model_evaluations_total", key="model")
        assert exported == {"a": 2, "b": 1, "c": 1}
        assert values(scraped, "evalserve_model_metric", **model_labels("a"))["roc_auc"] == (
            pytest.approx(result["metrics"]["roc_auc"], rel=1e-12)
        )
        stamp = one(
            scraped,
            "evalserve_model_last_evaluation_timestamp_seconds",
            model="a",
            version="",
            segment="",
        )
        assert stamp == START + 10
        assert not values(scraped, "evalserve_model_metric", **model_labels("d"))


def test_the_cap_counts_classes_and_keeps_the_classes_already_exported() -> None:
    with stack(Settings(host="127.0.0.1", max_model_series=6)) as running:

        def multiclass(name: str, classes: list[str]) -> dict[str, Any]:
            k = len(classes)
            labels = [i % k for i in range(4 * k)]
            scores = [[0.7 if j == i % k else 0.3 / (k - 1) for j in range(k)] for i in labels]
            return {
                "task": "multiclass",
                "classes": classes,
                "labels": labels,
                "scores": scores,
                "model": {"name": name},
            }

        evaluated(running, multiclass("m", ["x", "y", "z"]))  # 4 label sets
        evaluated(running, multiclass("n", ["p", "q", "r"]))  # 1 + 1 fit, 2 classes refused
        scraped = scrape(running)
        assert one(scraped, "evalserve_model_series") == 6
        assert one(scraped, "evalserve_model_series_overflow_total") == 2
        by_class = values(scraped, "evalserve_model_class_metric", key="class", model="n")
        assert set(by_class) == {"p"}
        # "m" loses a class: room for one more of "n"; "m" keeps what it still has.
        evaluated(running, multiclass("m", ["x", "y"]))
        evaluated(running, multiclass("n", ["p", "q", "r"]))
        scraped = scrape(running)
        assert set(values(scraped, "evalserve_model_class_metric", key="class", model="m")) == {
            "x",
            "y",
        }
        assert set(values(scraped, "evalserve_model_class_metric", key="class", model="n")) == {
            "p",
            "q",
        }
        assert one(scraped, "evalserve_model_series") == 6
        assert one(scraped, "evalserve_model_series_overflow_total") == 3


def test_series_not_updated_for_the_ttl_are_removed() -> None:
    settings = Settings(host="127.0.0.1", model_series_ttl_seconds=60, max_model_series=2)
    with stack(settings) as running:
        evaluated(running, fawcett(model={"name": "old"}))
        running.clock.now += 30
        evaluated(running, fawcett(model={"name": "fresh"}))
        evaluated(running, fawcett(model={"name": "refused"}))  # over the cap of 2
        running.clock.now += 30  # "old" is 60 s old: gone at this scrape
        scraped = scrape(running)
        assert set(values(scraped, "evalserve_model_evaluations_total", key="model")) == {"fresh"}
        assert not values(scraped, "evalserve_model_metric", model="old")
        assert one(scraped, "evalserve_model_series") == 1

        evaluated(running, fawcett(model={"name": "refused"}))  # the TTL made room
        running.clock.now += 59
        scraped = scrape(running)
        models = set(values(scraped, "evalserve_model_evaluations_total", key="model"))
        assert models == {"refused"}
        assert one(scraped, "evalserve_model_series_overflow_total") == 1

        running.clock.now += 1
        scraped = scrape(running)
        assert not model_series(scraped)
        assert one(scraped, "evalserve_model_series") == 0


# --- requests -----------------------------------------------------------------------------------


def requests(scraped: Mapping[tuple[str, Labels], float], transport: str) -> dict[str, float]:
    """``evalserve_requests_total`` of one transport, keyed "method code"."""
    return {
        f"{dict(labels)['method']} {dict(labels)['code']}": value
        for (name, labels), value in scraped.items()
        if name == "evalserve_requests_total" and dict(labels)["transport"] == transport
    }


def test_requests_are_counted_and_timed_by_transport_method_and_code() -> None:
    with stack(Settings(host="127.0.0.1", max_request_bytes=2048, max_rows=30)) as running:
        evaluated(running, fawcett())
        evaluated(running, fawcett(model={"name": "x"}))
        bad_json = running.rest.post("/v1/evaluate", content=b"{", headers={"content-type": JSON})
        assert bad_json.status_code == 400
        assert post(running, fawcett(model={"name": "a b"})).status_code == 422
        assert post(running, fawcett(labels=[0, 1] * 20, scores=[0.5] * 40)).status_code == 413
        assert post(running, {"task": "binary", **separable(300, 7)}).status_code == 413  # body
        assert (
            running.rest.post(
                "/v1/evaluate", content=b"x", headers={"content-type": "text/csv"}
            ).status_code
            == 415
        )
        assert running.rest.get("/v1/evaluate").status_code == 405
        assert post_stream(running, {"task": "binary"}, separable(8, 8)).status_code == 200
        assert post_stream(running, separable(8, 8)).status_code == 400  # no header
        assert running.rest.get("/v1/metrics").status_code == 200
        assert running.rest.get("/healthz").status_code == 200  # not an API method: not counted

        stub = running.stub
        stub.Evaluate(
            pb.EvaluateRequest(task=pb.TASK_BINARY, labels=FAWCETT_LABELS, scores=FAWCETT_SCORES)
        )
        with pytest.raises(grpc.RpcError):
            stub.Evaluate(pb.EvaluateRequest(task=pb.TASK_BINARY, labels=[0, 1], scores=[0.5]))
        with pytest.raises(grpc.RpcError):
            stub.Evaluate(
                pb.EvaluateRequest(task=pb.TASK_BINARY, labels=[0, 1] * 20, scores=[0.5] * 40)
            )
        stub.EvaluateStream(
            iter(
                [
                    pb.EvaluateStreamRequest(
                        header=pb.StreamHeader(task=pb.TASK_BINARY),
                        labels=[0, 1],
                        scores=[0.2, 0.8],
                    )
                ]
            )
        )
        stub.ListMetrics(pb.ListMetricsRequest())

        scraped = scrape(running)
        assert requests(scraped, "rest") == {
            "evaluate 200": 2,
            "evaluate 400": 1,
            "evaluate 422": 1,
            "evaluate 413": 2,
            "evaluate 415": 1,
            "evaluate 405": 1,
            "evaluate_stream 200": 1,
            "evaluate_stream 400": 1,
            "list_metrics 200": 1,
        }
        assert requests(scraped, "grpc") == {
            "evaluate OK": 1,
            "evaluate INVALID_ARGUMENT": 1,
            "evaluate RESOURCE_EXHAUSTED": 1,
            "evaluate_stream OK": 1,
            "list_metrics OK": 1,
        }
        for transport, method, count in (
            ("rest", "evaluate", 8),
            ("rest", "evaluate_stream", 2),
            ("rest", "list_metrics", 1),
            ("grpc", "evaluate", 3),
            ("grpc", "evaluate_stream", 1),
            ("grpc", "list_metrics", 1),
        ):
            labels = {"transport": transport, "method": method}
            assert one(scraped, "evalserve_request_duration_seconds_count", **labels) == count
            total = one(scraped, "evalserve_request_duration_seconds_sum", **labels)
            assert total is not None and 0 < total < 60
        # Rows per successful evaluation: REST 20 + 20 and a stream of 8; gRPC 20 and 2.
        rows = {
            (transport, method): (
                one(scraped, "evalserve_request_rows_count", transport=transport, method=method),
                one(scraped, "evalserve_request_rows_sum", transport=transport, method=method),
            )
            for transport in ("rest", "grpc")
            for method in ("evaluate", "evaluate_stream")
        }
        assert rows == {
            ("rest", "evaluate"): (2, 40),
            ("rest", "evaluate_stream"): (1, 8),
            ("grpc", "evaluate"): (1, 20),
            ("grpc", "evaluate_stream"): (1, 2),
        }
        bucket = one(
            scraped,
            "evalserve_request_rows_bucket",
            transport="rest",
            method="evaluate",
            le="100.0",
        )
        assert bucket == 2
        les = values(
            scraped, "evalserve_request_rows_bucket", key="le", transport="rest", method="evaluate"
        )
        assert {float(le) for le in les} == {10.0**p for p in range(1, 9)} | {math.inf}


def test_internal_errors_are_counted_on_both_doors() -> None:
    with stack(Settings(host="127.0.0.1"), BrokenEvaluator) as running:
        assert post(running, fawcett()).status_code == 500
        with pytest.raises(grpc.RpcError) as raised:
            running.stub.Evaluate(
                pb.EvaluateRequest(
                    task=pb.TASK_BINARY, labels=FAWCETT_LABELS, scores=FAWCETT_SCORES
                )
            )
        assert isinstance(raised.value, grpc.Call)
        assert raised.value.code() == grpc.StatusCode.INTERNAL
        scraped = scrape(running)
        assert requests(scraped, "rest") == {"evaluate 500": 1}
        assert requests(scraped, "grpc") == {"evaluate INTERNAL": 1}
        assert not model_series(scraped)


def test_label_coverage_and_delay_are_model_gauges_while_sent(served: Stack) -> None:
    """A request with coverage exports its label_coverage and label_delay_seconds beside the
    quality metrics; the next evaluation without coverage removes them (its values replace)."""
    labels = model_labels("late-labels")
    coverage = {"n_predictions": 80, "label_delay_seconds": 5400}
    answer = evaluated(served, fawcett(model={"name": "late-labels"}, coverage=coverage))
    assert answer["coverage"]["label_coverage"] == 0.25
    gauges = values(scrape(served), "evalserve_model_metric", **labels)
    assert gauges["label_coverage"] == 0.25
    assert gauges["label_delay_seconds"] == 5400
    assert gauges["roc_auc"] == pytest.approx(0.68)
    evaluated(served, fawcett(model={"name": "late-labels"}))
    gauges = values(scrape(served), "evalserve_model_metric", **labels)
    assert "label_coverage" not in gauges and "label_delay_seconds" not in gauges


# --- concurrency ----------------------------------------------------------------------------------


def test_concurrent_evaluations_of_one_model_all_count(served: Stack) -> None:
    threads, each = 8, 10
    model = {"name": "busy"}
    failures: list[BaseException] = []
    scrapes = 0
    done = threading.Event()

    def evaluate_many(index: int) -> None:
        try:
            for _ in range(each):
                if index % 2:
                    evaluated(served, fawcett(model=model))
                else:
                    served.stub.Evaluate(
                        pb.EvaluateRequest(
                            task=pb.TASK_BINARY,
                            labels=FAWCETT_LABELS,
                            scores=FAWCETT_SCORES,
                            model=pb.Model(name="busy"),
                        )
                    )
        except BaseException as error:
            failures.append(error)

    def scrape_meanwhile() -> None:
        nonlocal scrapes
        try:
            while not done.is_set():
                gauges = values(scrape(served), "evalserve_model_metric", **model_labels("busy"))
                assert not gauges or gauges["roc_auc"] == pytest.approx(0.68)
                scrapes += 1
        except BaseException as error:
            failures.append(error)

    scraper = threading.Thread(target=scrape_meanwhile)
    scraper.start()
    workers = [threading.Thread(target=evaluate_many, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    done.set()
    scraper.join(timeout=60)
    assert not failures, failures
    assert scrapes > 0
    scraped = scrape(served)
    labels = model_labels("busy")
    assert one(scraped, "evalserve_model_evaluations_total", **labels) == threads * each
    assert one(scraped, "evalserve_model_rows_total", **labels) == threads * each * 20


@pytest.mark.parametrize("cap", [100, 6])
def test_the_store_survives_many_threads_recording_and_collecting(cap: int) -> None:
    """Without servers: threads record results of several models into one store while others
    collect. With room for all, every evaluation counts; with a small cap, the cap holds at
    every collection and refusals are counted."""
    results = [
        evaluate("binary", FAWCETT_LABELS, FAWCETT_SCORES),
        evaluate("binary", [0, 0, 0], [0.1, 0.2, 0.3]),  # undefined AUC
        evaluate("multiclass", [0, 1, 2, 1], np.eye(3)[[0, 1, 2, 1]] * 0.7 + 0.1),
    ]
    store = ModelSeriesStore(max_series=cap, ttl_seconds=3600)
    collector = ModelQualityCollector(store)
    models = [ModelRef(f"m{i}") for i in range(4)]
    failures: list[BaseException] = []
    stop = threading.Event()
    rounds, recorders_n = 300, 6
    rows_sent: list[int] = []

    def record(seed: int) -> None:
        try:
            rng = np.random.default_rng(seed)
            for _ in range(rounds):
                result = results[rng.integers(3)]
                store.record(models[rng.integers(4)], result)
                rows_sent.append(result.n_samples)
        except BaseException as error:
            failures.append(error)

    def collect() -> None:
        try:
            while not stop.is_set():
                families = {family.name: family for family in collector.collect()}
                assert families["evalserve_model_series"].samples[0].value <= cap
                counted = {
                    s.labels["model"] for s in families["evalserve_model_evaluations"].samples
                }
                gauged = {s.labels["model"] for s in families["evalserve_model_metric"].samples}
                assert gauged <= counted
        except BaseException as error:
            failures.append(error)

    collectors = [threading.Thread(target=collect) for _ in range(2)]
    recorders = [threading.Thread(target=record, args=(seed,)) for seed in range(recorders_n)]
    for thread in (*collectors, *recorders):
        thread.start()
    for thread in recorders:
        thread.join(timeout=120)
    stop.set()
    for thread in collectors:
        thread.join(timeout=60)
    assert not failures, failures
    snapshot, overflow = store.snapshot()
    evaluations = sum(series.evaluations for series in snapshot.values())
    assert sum(series.label_sets for series in snapshot.values()) <= cap
    if cap == 100:
        assert (evaluations, overflow) == (recorders_n * rounds, 0)
        assert sum(series.rows for series in snapshot.values()) == sum(rows_sent)
    else:
        # Refusals happen, but whether a whole evaluation is refused depends on the order the
        # threads ran in: when every model got in first, only the multiclass classes past the
        # cap are refused and every evaluation still counts.
        assert overflow > 0
        assert evaluations <= recorders_n * rounds


# --- the contract -------------------------------------------------------------------------------


def test_every_name_of_the_contract_is_exported(served: Stack) -> None:
    """The metrics contract of docs/monitoring.md fixes the names the rules, dashboard and e2e
    test use: the service exports every one, with the type the contract gives it."""
    contract = metrics_contract()
    names = set(contract)
    assert len(names) >= 15
    baseline = {"roc_auc": 0.95, "n_positive": 5000, "n_negative": 5000}
    evaluated(
        served,
        {"task": "binary", **separable(200, 9), "model": {"name": "all"}, "baseline": baseline},
    )
    evaluated(
        served,
        {
            "task": "multiclass",
            "labels": [0, 1, 2, 1],
            "scores": (np.eye(3)[[0, 1, 2, 1]] * 0.7 + 0.1).tolist(),
            "model": {"name": "all-mc"},
        },
    )
    served.stub.ListMetrics(pb.ListMetricsRequest())
    text = served.rest.get("/metrics").text
    families = {family.name for family in text_string_to_metric_families(text)}
    samples = {
        sample.name for family in text_string_to_metric_families(text) for sample in family.samples
    }
    missing = {name for name in names if name not in families | samples}
    assert not missing, sorted(missing)
    # prometheus_client names a counter's family without its _total suffix.
    kinds = {family.name: family.type for family in text_string_to_metric_families(text)}
    assert {name: kinds[name.removesuffix("_total")] for name in names} == contract
