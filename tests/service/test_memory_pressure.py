"""Memory under pressure, on the real service in its own process: with a budget of 1 GiB, eight
concurrent 5M-row requests on each door never take the process past the budget over its
baseline; each gets its answer or a clean refusal (503 / RESOURCE_EXHAUSTED with a retry hint,
413), and the memory of the burst goes back to the system once it is over.

Peaks are the kernel's high-water mark of the server process (VmHWM), so no sample is missed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import grpc
import httpx
import numpy as np
import orjson
import pytest

from evalserve.service.budget import GRPC_MESSAGE_CAP
from evalserve.v1 import evaluation_pb2 as pb
from evalserve.v1 import evaluation_pb2_grpc as pb_grpc
from tests.service.test_server import Running, _start

pytestmark = pytest.mark.slow

BUDGET = 1 << 30
ROWS = 5_000_000
CONCURRENT = int(__import__("os").environ.get("PRESSURE_CONCURRENT", "8"))
BATCHES = 10  # streams send the rows in this many batches
REFUSALS = {503, 413, "RESOURCE_EXHAUSTED", "UNAVAILABLE"}


def _status_kb(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"{key} not in /proc/{pid}/status")


@pytest.fixture
def service() -> Iterator[Running]:
    # 4 places: a call reserves a quarter of the budget before its message arrives, and gRPC
    # takes messages up to half of that, and up to GRPC_MESSAGE_CAP (2M rows a message)
    running = _start(
        "--memory-budget-bytes", str(BUDGET), "--workers", "2",
        "--max-inflight-requests", "4", "--max-inflight-per-client", "4",
    )  # fmt: skip
    yield running
    running.process.kill()
    running.process.wait(timeout=30)
    if running.process.stderr is not None:
        running.process.stderr.close()


def _columns() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    return rng.integers(0, 2, ROWS), rng.random(ROWS)


def _json_body(labels: np.ndarray, scores: np.ndarray) -> bytes:
    return orjson.dumps(
        {"task": "binary", "labels": labels, "scores": scores}, option=orjson.OPT_SERIALIZE_NUMPY
    )


def _proto(labels: np.ndarray, scores: np.ndarray) -> pb.EvaluateRequest:
    return pb.EvaluateRequest(
        task=pb.TASK_BINARY,
        labels_f64=labels.astype("<f8").tobytes(),
        scores_f64=scores.astype("<f8").tobytes(),
    )


def _rest(url: str, path: str, body: bytes, content_type: str) -> Callable[[], object]:
    def send() -> object:
        response = httpx.post(
            url + path, content=body, headers={"content-type": content_type}, timeout=300
        )
        return response.status_code

    return send


def _grpc_call(target: str, call: Callable[[pb_grpc.EvaluationServiceStub], object]) -> object:
    with grpc.insecure_channel(target, options=[("grpc.max_send_message_length", -1)]) as channel:
        try:
            call(pb_grpc.EvaluationServiceStub(channel))
        except grpc.RpcError as error:
            return error.code().name
        return 200


def _senders(service: Running, door: str) -> Callable[[], object]:
    labels, scores = _columns()
    if door == "rest-json":
        return _rest(service.rest, "/v1/evaluate", _json_body(labels, scores), "application/json")
    if door == "rest-protobuf":
        body = _proto(labels, scores).SerializeToString()
        return _rest(service.rest, "/v1/evaluate", body, "application/x-protobuf")
    parts = np.array_split(np.arange(ROWS), BATCHES)
    if door == "rest-ndjson":
        lines = [b'{"task": "binary"}']
        lines += [orjson.dumps({"labels": labels[p], "scores": scores[p]},
                               option=orjson.OPT_SERIALIZE_NUMPY) for p in parts]  # fmt: skip
        return _rest(service.rest, "/v1/evaluate/stream", b"\n".join(lines), "application/x-ndjson")
    if door == "grpc":  # the largest unary message the server takes; larger inputs stream
        rows = (GRPC_MESSAGE_CAP - 1024) // 16
        message = _proto(labels[:rows], scores[:rows])
        return lambda: _grpc_call(service.grpc, lambda stub: stub.Evaluate(message, timeout=300))
    assert door == "grpc-stream"
    messages = [pb.EvaluateStreamRequest(header=pb.StreamHeader(task=pb.TASK_BINARY))]
    messages += [
        pb.EvaluateStreamRequest(
            labels_f64=labels[p].astype("<f8").tobytes(),
            scores_f64=scores[p].astype("<f8").tobytes(),
        )
        for p in parts
    ]
    return lambda: _grpc_call(
        service.grpc, lambda stub: stub.EvaluateStream(iter(messages), timeout=300)
    )


def _settled_rss(pid: int, within: float = 10.0) -> int:
    """The server's RSS once it stops falling (the burst's memory given back)."""
    deadline = time.monotonic() + within
    last = _status_kb(pid, "VmRSS")
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = _status_kb(pid, "VmRSS")
        if now >= last - (1 << 20):
            return now
        last = now
    return last


@pytest.mark.parametrize(
    "door", ["rest-json", "rest-protobuf", "rest-ndjson", "grpc", "grpc-stream"]
)
def test_a_burst_of_large_requests_stays_inside_the_budget(service: Running, door: str) -> None:
    send = _senders(service, door)
    pid = service.process.pid
    # warm up: one small evaluation, so the baseline holds what every request needs
    small = {"task": "binary", "labels": [0, 1, 0, 1], "scores": [0.1, 0.9, 0.3, 0.6]}
    assert httpx.post(service.rest + "/v1/evaluate", json=small, timeout=30).status_code == 200
    baseline = _settled_rss(pid)
    assert _status_kb(pid, "VmHWM") <= baseline + (64 << 20)  # nothing big has run yet
    probes: list[float] = []
    done = threading.Event()

    def probe() -> None:
        while not done.is_set():
            started = time.perf_counter()
            httpx.get(service.rest + "/healthz", timeout=30)
            probes.append(time.perf_counter() - started)
            time.sleep(0.05)

    prober = threading.Thread(target=probe)
    prober.start()
    try:
        with ThreadPoolExecutor(CONCURRENT) as pool:
            outcomes = list(pool.map(lambda _: send(), range(CONCURRENT)))
    finally:
        done.set()
        prober.join()
    peak = _status_kb(pid, "VmHWM")
    after = _settled_rss(pid)
    print(
        f"{door}: outcomes {sorted(map(str, outcomes))}, baseline {baseline / 2**20:.0f} MiB, "
        f"peak +{(peak - baseline) / 2**20:.0f} MiB, after +{(after - baseline) / 2**20:.0f} "
        f"MiB, /healthz max {max(probes):.3f} s"
    )
    assert set(outcomes) <= {200} | REFUSALS, outcomes
    assert 200 in outcomes, outcomes  # the budget admits at least one at a time
    assert peak - baseline <= BUDGET, (
        f"peak {peak / 2**20:.0f} MiB over a baseline of {baseline / 2**20:.0f} MiB"
    )
    # The burst's memory went back to the system (measured: 1-60 MiB stays on a quiet
    # machine, up to 132 MiB while other tests run beside it).
    assert after - baseline < BUDGET // 4, (after / 2**20, baseline / 2**20)
