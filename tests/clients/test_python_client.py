"""The Python client (clients/python, ``evalserve_client``) against a real server on loopback:
every request of the contract table through both transports gives ``core.evaluate``'s answer
exactly, large binary inputs stream, refusals come back as typed exceptions with the server's
field and message, unavailable servers are retried, and the stubs are what the pinned
generator makes of the proto."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from evalserve_client import (
    AsyncClient,
    Client,
    EvalserveError,
    EvaluationResult,
    InvalidArgument,
    TooLarge,
    Unavailable,
)

from core import evaluate
from service.config import Settings
from tests.contract.doors import column
from tests.contract.servers import Service, running
from tests.contract.test_same_answer import REQUESTS, assert_same, expected_of, request_of

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "clients" / "python"
COMMITTED = CLIENT / "src" / "evalserve_client" / "_proto"


def _grpc_of(service: Service) -> str:
    # servers.running connects its own channel to the gRPC port; read it back from there
    target: str = service.channel._channel.target().decode()  # type: ignore[attr-defined]
    return target


def targets(service: Service) -> dict[str, str]:
    return {"grpc": _grpc_of(service), "rest": service.url}


def arguments(request: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """A contract-table request as ``evaluate`` arguments (what a caller would pass)."""
    keywords = {key: request.get(key) for key in ("options", "classes", "model", "baseline",
                                                  "challenger")}  # fmt: skip
    if request["task"] == "detection":
        images = request["images"]
        y_true = [{"boxes": i["gt_boxes"], "classes": i["gt_classes"]} for i in images]
        y_score = [
            {"boxes": i["pred_boxes"], "classes": i["pred_classes"], "scores": i["pred_scores"]}
            for i in images
        ]
        return ("detection", y_true, y_score), keywords
    labels: Any = request.get("labels")
    if not (isinstance(labels, list) and labels and isinstance(labels[0], str)):
        labels = column(request, "labels")
    keywords["y_pred"] = column(request, "predictions")
    keywords["sample_weight"] = column(request, "weights")
    return (request["task"], labels, column(request, "scores")), keywords


@pytest.mark.parametrize("transport", ["grpc", "rest"])
@pytest.mark.parametrize("case", list(REQUESTS))
def test_every_case_gives_the_core_answer(service: Service, case: str, transport: str) -> None:
    args, keywords = arguments(request_of(case))
    with Client(targets(service)[transport]) as client:
        result = client.evaluate(*args, **keywords)
    assert isinstance(result, EvaluationResult)
    assert_same(result.to_dict(), expected_of(case))
    assert result.metrics == result.to_dict()["metrics"]


def test_the_typed_result_and_plain_inputs(service: Service) -> None:
    y_true = [0, 0, 1, 1]
    y_score = [0.1, 0.4, 0.35, 0.8]
    expected = evaluate("binary", np.asarray(y_true, float), np.asarray(y_score)).to_dict()
    for target in targets(service).values():
        with Client(target) as client:
            result = client.evaluate("binary", y_true, y_score)  # plain lists
        assert_same(result.to_dict(), expected)
        assert result.metrics["roc_auc"] == 0.75
        assert result.task == "binary"
        assert result.n_samples == 4
        assert set(result.curves) >= {"roc", "pr"}
        assert "roc_auc" in result.intervals
        assert result.drift == {}
        assert result.comparison == {}
        assert result.per_class == []
        assert isinstance(result.undefined, dict)
        assert isinstance(result.warnings, list)


def _rows(n_rows: int, seed: int) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    rng = np.random.default_rng(seed)
    labels = (rng.random(n_rows) < 0.3).astype(np.float64)
    scores = np.round(1 / (1 + np.exp(-rng.normal(1.2 * labels - 0.6, 1.0))), 3)
    return labels, scores


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_an_input_over_the_threshold_streams(limited: Service, transport: str) -> None:
    """2 500 rows: over the limited server's 2 000 rows a request, under its 3 000 a stream, so
    only a stream gets through; the answer is the one-shot core answer."""
    labels, scores = _rows(2500, seed=3)
    options = {"max_curve_points": 0}
    expected = evaluate("binary", labels, scores, options=options).to_dict()
    target = targets(limited)[transport]
    with Client(target) as client, pytest.raises(TooLarge) as refused:
        client.evaluate("binary", labels, scores, options=options)
    assert refused.value.message
    with Client(target, stream_threshold=1000, chunk_rows=700) as client:
        result = client.evaluate("binary", labels, scores, options=options)
    assert_same(result.to_dict(), expected)


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_a_million_rows_stream_by_default(service: Service, transport: str) -> None:
    labels, scores = _rows(1_000_001, seed=4)
    # integer weights: their sums are exact in any batch order (fractional ones are merged per
    # 250 000-row chunk, and float addition is not associative over a million rows)
    weights = np.random.default_rng(5).integers(1, 4, size=len(labels)).astype(np.float64)
    expected = evaluate("binary", labels, scores, sample_weight=weights).to_dict()
    with Client(targets(service)[transport]) as client:
        assert client.stream_threshold < len(labels)
        result = client.evaluate("binary", labels, scores, sample_weight=weights, timeout=300)
    assert_same(result.to_dict(), expected)


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_a_refusal_is_a_typed_error_with_the_servers_field(
    service: Service, transport: str
) -> None:
    with Client(targets(service)[transport]) as client:
        with pytest.raises(InvalidArgument) as refused:
            client.evaluate("binary", [0, 1, 1], [0.2, float("nan"), 0.7])
        assert refused.value.field == "scores"
        assert "nan" in refused.value.message
        with pytest.raises(InvalidArgument) as refused:
            client.evaluate("binary", [0, 1], [0.2, 0.7], options={"beta": -1.0})
        assert refused.value.field == "options.beta"
        assert isinstance(refused.value, EvalserveError)
        assert refused.value.message in str(refused.value)


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_too_many_rows_is_too_large(limited: Service, transport: str) -> None:
    labels, scores = _rows(2500, seed=6)
    with Client(targets(limited)[transport]) as client, pytest.raises(TooLarge) as refused:
        client.evaluate("binary", labels, scores)
    assert refused.value.code in ("too_large", "resource_exhausted")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_a_dead_server_is_retried_then_unavailable(transport: str) -> None:
    port = _free_port()
    target = f"127.0.0.1:{port}" if transport == "grpc" else f"http://127.0.0.1:{port}"
    started = time.monotonic()
    with Client(target, retries=2, backoff=0.05, timeout=5) as client, pytest.raises(Unavailable):
        client.evaluate("binary", [0, 1], [0.2, 0.7])
    assert time.monotonic() - started < 10


def test_a_server_briefly_unavailable_is_retried() -> None:
    """The first attempts find nothing on the port; the server comes up during the backoff."""
    port = _free_port()
    settings = Settings(host="127.0.0.1", rest_port=port, grpc_port=0)
    release = threading.Event()

    def serve_soon() -> None:
        time.sleep(0.5)
        with running(settings):
            release.wait(timeout=60)

    server = threading.Thread(target=serve_soon, daemon=True)
    server.start()
    try:
        with Client(f"http://127.0.0.1:{port}", retries=8, backoff=0.1) as client:
            result = client.evaluate("binary", [0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
        assert result.metrics["roc_auc"] == 0.75
    finally:
        release.set()
        server.join(timeout=60)


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_the_async_client(service: Service, limited: Service, transport: str) -> None:
    labels, scores = _rows(2500, seed=7)
    expected = evaluate("binary", labels, scores).to_dict()
    case = "task-multiclass"
    args, keywords = arguments(request_of(case))

    async def main() -> None:
        async with AsyncClient(targets(service)[transport]) as client:
            one, two = await asyncio.gather(
                client.evaluate("binary", labels, scores), client.evaluate(*args, **keywords)
            )
            assert_same(one.to_dict(), expected)
            assert_same(two.to_dict(), expected_of(case))
            with pytest.raises(InvalidArgument) as refused:
                await client.evaluate("binary", [0, 1], [0.2, 0.7], options={"beta": -1.0})
            assert refused.value.field == "options.beta"
        async with AsyncClient(
            targets(limited)[transport], stream_threshold=1000, chunk_rows=700
        ) as client:
            streamed = await client.evaluate("binary", labels, scores)
            assert_same(streamed.to_dict(), expected)

    asyncio.run(main())


def test_regenerating_the_client_stubs_changes_nothing(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(CLIENT / "generate.py"), str(tmp_path)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    fresh = {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    committed = {
        p.relative_to(COMMITTED): p.read_bytes()
        for p in COMMITTED.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert sorted(fresh) == sorted(committed)
    stale = [str(name) for name, content in fresh.items() if committed[name] != content]
    assert stale == [], f"stale client stubs, run `python clients/python/generate.py`: {stale}"


def test_client_and_server_stubs_live_side_by_side() -> None:
    """Both are importable in one process: the same proto file, one descriptor, no clash."""
    from evalserve.v1 import evaluation_pb2 as server_pb
    from evalserve_client._proto.evalserve.v1 import evaluation_pb2 as client_pb

    assert client_pb.DESCRIPTOR.name == server_pb.DESCRIPTOR.name
    assert client_pb.EvaluateRequest.DESCRIPTOR.full_name == "evalserve.v1.EvaluateRequest"
