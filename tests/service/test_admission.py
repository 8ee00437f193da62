"""Admission: at most ``max_inflight_requests`` evaluation requests at once, over both doors;
one more is refused at once (503 with Retry-After / UNAVAILABLE) before its body is read, while
health, readiness, the catalog and /metrics still answer; the place frees when the request
ends, and the Python client's retries turn "busy" into waiting."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import grpc
import httpx
import pytest
from evalserve_client import Client

from evalserve.service.config import Settings
from evalserve.service.errors import BusyError
from evalserve.service.usecase import Evaluator
from evalserve.v1 import evaluation_pb2 as pb
from evalserve.v1 import evaluation_pb2_grpc as pb_grpc
from tests.contract.servers import Service, running
from tests.service.test_grpc import retry_hint

HEADER = b'{"task": "binary"}\n'
ROWS = b'{"labels": [0, 0, 1, 1], "scores": [0.1, 0.4, 0.35, 0.8]}\n'
ONE_SHOT = {"task": "binary", "labels": [0, 0, 1, 1], "scores": [0.1, 0.4, 0.35, 0.8]}


def test_the_evaluator_admits_up_to_its_limit_and_frees_places() -> None:
    evaluator = Evaluator(1, max_inflight=2)
    try:
        with evaluator.admitted(), evaluator.admitted():
            assert evaluator.inflight == 2
            with pytest.raises(BusyError, match="max_inflight_requests"), evaluator.admitted():
                pass
        assert evaluator.inflight == 0
        with pytest.raises(ValueError), evaluator.admitted():  # an error frees the place too
            raise ValueError
        assert evaluator.inflight == 0
    finally:
        evaluator.close()


def _inflight(service: Service) -> float:
    for line in service.rest.get("/metrics").text.splitlines():
        if line.startswith("evalserve_inflight_requests "):
            return float(line.split()[1])
    raise AssertionError("evalserve_inflight_requests is not exported")


class _HeldStream:
    """A REST stream that sends its header, then waits for ``release`` before its rows: it holds
    one admission place for as long as the test wants."""

    def __init__(self, service: Service) -> None:
        self.release = threading.Event()
        self.response: httpx.Response | None = None
        self._thread = threading.Thread(target=self._post, args=(service.url,))

    def _body(self) -> Iterator[bytes]:
        yield HEADER
        self.release.wait(timeout=60)
        yield ROWS

    def _post(self, url: str) -> None:
        with httpx.Client(base_url=url, timeout=60) as client:
            self.response = client.post(
                "/v1/evaluate/stream",
                content=self._body(),
                headers={"content-type": "application/x-ndjson"},
            )

    def __enter__(self) -> _HeldStream:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.release.set()
        self._thread.join(timeout=60)


@pytest.fixture(scope="module")
def one_place() -> Iterator[Service]:
    with running(
        Settings(host="127.0.0.1", rest_port=0, grpc_port=0, max_inflight_requests=1)
    ) as s:
        yield s


def _wait_for(service: Service, inflight: float) -> None:
    deadline = time.monotonic() + 10
    while _inflight(service) != inflight:
        assert time.monotonic() < deadline, f"inflight never reached {inflight}"
        time.sleep(0.01)


def test_a_request_over_the_limit_is_refused_on_both_doors(one_place: Service) -> None:
    with _HeldStream(one_place) as held:
        _wait_for(one_place, 1)
        refused = one_place.rest.post("/v1/evaluate", json=ONE_SHOT)
        assert refused.status_code == 503
        assert refused.headers["retry-after"] == "1"
        error = refused.json()["error"]
        assert error["code"] == "unavailable"
        assert "max_inflight_requests" in error["message"]
        streamed = one_place.rest.post(
            "/v1/evaluate/stream", content=HEADER + ROWS,
            headers={"content-type": "application/x-ndjson"},
        )  # fmt: skip
        assert streamed.status_code == 503
        with pytest.raises(grpc.RpcError) as busy:
            one_place.stub.Evaluate(
                pb.EvaluateRequest(task=pb.TASK_BINARY, labels=[0, 1], scores=[0.2, 0.7])
            )
        assert busy.value.code() is grpc.StatusCode.UNAVAILABLE
        assert "max_inflight_requests" in (busy.value.details() or "")
        assert retry_hint(busy.value) == (1.0, "1000")
        # what is not an evaluation still answers
        for path in ("/healthz", "/readyz", "/v1/metrics", "/metrics"):
            assert one_place.rest.get(path).status_code == 200, path
        held.release.set()
    assert held.response is not None and held.response.status_code == 200
    assert held.response.json()["metrics"]["roc_auc"] == 0.75
    _wait_for(one_place, 0)
    assert one_place.rest.post("/v1/evaluate", json=ONE_SHOT).status_code == 200
    metrics = one_place.rest.get("/metrics").text
    assert 'evalserve_requests_total{code="503",method="evaluate",transport="rest"}' in metrics
    assert 'code="UNAVAILABLE",method="evaluate",transport="grpc"' in metrics
    assert "evalserve_inflight_requests_limit 1.0" in metrics


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_the_python_client_waits_out_a_busy_server(one_place: Service, transport: str) -> None:
    target = {"grpc": one_place.grpc_target, "rest": one_place.url}[transport]
    with _HeldStream(one_place) as held:
        _wait_for(one_place, 1)
        threading.Timer(0.3, held.release.set).start()
        started = time.monotonic()
        with Client(target, retries=6, backoff=0.1) as client:
            result = client.evaluate("binary", [0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
        assert time.monotonic() - started >= 0.25  # it was refused, then retried
    assert result.metrics["roc_auc"] == 0.75


class _CountingProxy:
    """A TCP proxy in front of the gRPC port that counts the bytes it forwards to the server:
    what the server has read off the wire, give or take the socket buffers."""

    def __init__(self, target_port: int) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.target_port = target_port
        self.to_server = 0
        self._threads: list[threading.Thread] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target_port))
            for source, sink, counted in ((client, server, True), (server, client, False)):
                thread = threading.Thread(
                    target=self._pipe, args=(source, sink, counted), daemon=True
                )
                thread.start()
                self._threads.append(thread)

    def _pipe(self, source: socket.socket, sink: socket.socket, counted: bool) -> None:
        try:
            while data := source.recv(1 << 16):
                sink.sendall(data)
                if counted:
                    self.to_server += len(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self.listener.close()


def _big_request(rows: int) -> pb.EvaluateRequest:
    return pb.EvaluateRequest(task=pb.TASK_BINARY, labels=[0, 1] * (rows // 2), scores=[0.5] * rows)


def _forwarded(grpc_port: int, request: pb.EvaluateRequest) -> tuple[grpc.StatusCode, int]:
    proxy = _CountingProxy(grpc_port)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{proxy.port}") as channel:
            stub = pb_grpc.EvaluationServiceStub(channel)
            with pytest.raises(grpc.RpcError) as refused:
                stub.Evaluate(request, timeout=60)
        return refused.value.code(), proxy.to_server
    finally:
        proxy.close()


@pytest.mark.slow
def test_a_grpc_call_over_the_limit_is_refused_before_its_message_is_read(
    one_place: Service,
) -> None:
    request = _big_request(10_000_000)  # 90 MB
    size = request.ByteSize()
    with _HeldStream(one_place) as held:
        _wait_for(one_place, 1)
        code, read = _forwarded(_port(one_place), request)
        held.release.set()
    assert code is grpc.StatusCode.UNAVAILABLE
    assert read < size / 10, (read, size)
    # The proxy does count a message the server reads: over max_rows, refused once decoded
    # (a message gRPC takes: at most GRPC_MESSAGE_CAP).
    request = _big_request(2_000_000)  # 18 MB
    size = request.ByteSize()
    with running(Settings(host="127.0.0.1", rest_port=0, grpc_port=0, max_rows=10)) as small:
        code, read = _forwarded(_port(small), request)
    assert code is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert read >= size


def _port(service: Service) -> int:
    return int(service.grpc_target.rsplit(":", 1)[1])
