"""The whole service as users start it: ``python -m evalserve.service`` in its own process,
both doors on loopback, a big request that must not stall health checks, and a graceful SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import grpc
import httpx
import numpy as np
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from evalserve.v1 import evaluation_pb2 as pb
from tests.service.ready import wait_ready

pytestmark = pytest.mark.slow


@dataclass
class Running:
    process: subprocess.Popen[str]
    rest: str
    grpc: str
    lines: list[str]


def _start(*flags: str) -> Running:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "evalserve.service", "--rest-port", "0", "--grpc-port", "0", *flags],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    lines: list[str] = []
    ready = wait_ready(process, lines, timeout=60)
    if ready is not None:
        host, rest_port, _, grpc_port = ready[0].groups()
        return Running(process, f"http://{host}:{rest_port}", f"{host}:{grpc_port}", lines)
    process.kill()
    raise AssertionError(f"the service did not start: {''.join(lines)}")


def started(*flags: str) -> Iterator[Running]:
    """A fixture's body: the service started with ``flags``, killed (if still running) after
    the test."""
    running = _start(*flags)
    yield running
    if running.process.poll() is None:
        running.process.kill()
        running.process.wait(timeout=30)
    if running.process.stderr is not None:
        running.process.stderr.close()


@pytest.fixture
def service() -> Iterator[Running]:
    yield from started("--workers", "1")


def _big_request(rows: int) -> bytes:
    rng = np.random.default_rng(7)
    labels = (rng.random(rows) < 0.1).astype(np.float64)
    scores = rng.random(rows)
    message = pb.EvaluateRequest(
        task=pb.TASK_BINARY,
        labels_f64=labels.astype("<f8").tobytes(),
        scores_f64=scores.astype("<f8").tobytes(),
    )
    return message.SerializeToString()


@pytest.mark.alone  # it times the probes
def test_health_stays_fast_while_a_big_request_runs(service: Running) -> None:
    body = _big_request(4_000_000)
    outcome: dict[str, int] = {}

    def post() -> None:
        response = httpx.post(
            f"{service.rest}/v1/evaluate",
            content=body,
            headers={"content-type": "application/x-protobuf"},
            timeout=120,
        )
        outcome["status"] = response.status_code

    worker = threading.Thread(target=post)
    worker.start()
    time.sleep(0.3)  # the evaluation is under way
    latencies = []
    for _ in range(5):
        started = time.perf_counter()
        assert httpx.get(f"{service.rest}/healthz", timeout=10).status_code == 200
        latencies.append(time.perf_counter() - started)
        with grpc.insecure_channel(service.grpc) as channel:
            # types-grpcio-health-checking's HealthStub lacks the generated Check method
            reply = health_pb2_grpc.HealthStub(channel).Check(  # type: ignore[attr-defined]
                health_pb2.HealthCheckRequest(service=""), timeout=10
            )
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
    worker.join(timeout=120)
    assert outcome == {"status": 200}
    assert max(latencies) < 1.0, latencies


def test_sigterm_finishes_in_flight_requests_then_exits(service: Running) -> None:
    body = _big_request(4_000_000)
    outcome: dict[str, object] = {}

    def post() -> None:
        try:
            response = httpx.post(
                f"{service.rest}/v1/evaluate",
                content=body,
                headers={"content-type": "application/x-protobuf"},
                timeout=120,
            )
            outcome["status"] = response.status_code
        except httpx.HTTPError as error:  # pragma: no cover - the assertion below reports it
            outcome["error"] = repr(error)

    worker = threading.Thread(target=post)
    worker.start()
    time.sleep(0.5)  # the request has been received and is being evaluated
    service.process.send_signal(signal.SIGTERM)
    worker.join(timeout=120)
    assert outcome == {"status": 200}
    assert service.process.wait(timeout=60) == 0
    time.sleep(0.2)
    output = "".join(service.lines)
    assert "shutting down" in output and "stopped" in output
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{service.rest}/healthz", timeout=2)


def test_bad_settings_are_refused_at_start() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "evalserve.service", "--rest-port", "70000"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    assert "rest_port" in done.stderr
