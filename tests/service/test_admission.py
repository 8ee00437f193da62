"""Admission: at most ``max_inflight_requests`` evaluation requests at once, over both doors;
one more is refused at once (503 with Retry-After / UNAVAILABLE) before its body is read, while
health, readiness, the catalog and /metrics still answer; the place frees when the request
ends, and the Python client's retries turn "busy" into waiting. Per client, as
``client_identity`` knows clients: by a header a proxy sets, by peer address, or not at all."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import grpc
import httpx
import pytest
from evalserve_client import Client

from evalserve.service.config import Settings
from evalserve.service.errors import BusyError
from evalserve.service.evaluator import Evaluator
from evalserve.service.identity import MAX_IDENTITY_CHARS
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

    def __init__(self, service: Service, headers: dict[str, str] | None = None) -> None:
        self.release = threading.Event()
        self.response: httpx.Response | None = None
        self.headers = {"content-type": "application/x-ndjson", **(headers or {})}
        self._thread = threading.Thread(target=self._post, args=(service.url,))

    def _body(self) -> Iterator[bytes]:
        yield HEADER
        self.release.wait(timeout=60)
        yield ROWS

    def _post(self, url: str) -> None:
        with httpx.Client(base_url=url, timeout=60) as client:
            self.response = client.post(
                "/v1/evaluate/stream", content=self._body(), headers=self.headers
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


# --- per client ---------------------------------------------------------------------------------

SMALL = pb.EvaluateRequest(task=pb.TASK_BINARY, labels=[0, 1], scores=[0.2, 0.7])
CLIENT_LIMIT = "max_inflight_per_client"


def _service(**settings: Any) -> Iterator[Service]:
    with running(Settings(host="127.0.0.1", rest_port=0, grpc_port=0, **settings)) as service:
        yield service


@pytest.fixture(scope="module")
def forwarded() -> Iterator[Service]:
    """Clients known by the X-Forwarded-For a proxy appends to; one place each."""
    yield from _service(
        max_inflight_requests=8, max_inflight_per_client=1, client_identity="header:x-forwarded-for"
    )


@pytest.fixture(scope="module")
def by_peer() -> Iterator[Service]:
    yield from _service(max_inflight_requests=8, max_inflight_per_client=1, client_identity="peer")


@pytest.fixture(scope="module")
def by_default() -> Iterator[Service]:
    yield from _service(max_inflight_requests=3)


def _post(service: Service, forwarded: str | list[str] | None = None) -> httpx.Response:
    values = [forwarded] if isinstance(forwarded, str) else forwarded or []
    headers = [("X-Forwarded-For", value) for value in values]  # a header's name has no case
    return service.rest.post("/v1/evaluate", json=ONE_SHOT, headers=headers)


def _call(service: Service, forwarded: str | None = None) -> grpc.StatusCode:
    metadata = () if forwarded is None else (("x-forwarded-for", forwarded),)
    try:
        service.stub.Evaluate(SMALL, metadata=metadata, timeout=30)
    except grpc.RpcError as error:
        assert error.code() is not grpc.StatusCode.UNAVAILABLE or CLIENT_LIMIT in (
            error.details() or ""
        ), error.details()
        return error.code()
    return grpc.StatusCode.OK


def _refused_by_client(response: httpx.Response) -> bool:
    return response.status_code == 503 and CLIENT_LIMIT in response.json()["error"]["message"]


def test_a_forwarded_header_tells_the_clients_of_one_proxy_apart(forwarded: Service) -> None:
    # Every request comes from 127.0.0.1, as through an ingress; the held stream's client is
    # 10.0.0.1, whatever its own client wrote before the proxy appended that.
    with _HeldStream(forwarded, {"x-forwarded-for": "198.51.100.7, 10.0.0.1"}) as held:
        _wait_for(forwarded, 1)
        # the same client, on either door, is refused by its own limit ...
        assert _refused_by_client(_post(forwarded, "203.0.113.9, 10.0.0.1"))
        assert _refused_by_client(_post(forwarded, ["10.0.0.2", "10.0.0.1"]))  # the last line
        assert _call(forwarded, "10.0.0.1") is grpc.StatusCode.UNAVAILABLE
        assert _call(forwarded, "10.0.0.5,10.0.0.1") is grpc.StatusCode.UNAVAILABLE
        # ... and the others behind the same address are not, whatever is left of their entry
        assert _post(forwarded, "10.0.0.1, 10.0.0.2").status_code == 200
        assert _post(forwarded, ["10.0.0.1", "10.0.0.3"]).status_code == 200
        assert _call(forwarded, "10.0.0.1, 10.0.0.4") is grpc.StatusCode.OK
        # without the header a request is known by its peer address: another client
        assert _post(forwarded).status_code == 200
        assert _call(forwarded) is grpc.StatusCode.OK
        held.release.set()
    assert held.response is not None and held.response.status_code == 200
    _wait_for(forwarded, 0)
    assert _post(forwarded, "10.0.0.1").status_code == 200


def test_a_client_held_on_one_door_is_the_same_client_on_the_other(forwarded: Service) -> None:
    release = threading.Event()

    def messages() -> Iterator[pb.EvaluateStreamRequest]:
        yield pb.EvaluateStreamRequest(header=pb.StreamHeader(task=pb.TASK_BINARY))
        release.wait(timeout=60)

    call = forwarded.stub.EvaluateStream.future(
        messages(), metadata=(("x-forwarded-for", "10.0.0.7"),), timeout=60
    )
    try:
        _wait_for(forwarded, 1)
        assert _refused_by_client(_post(forwarded, "10.0.0.7"))
        assert _post(forwarded, "10.0.0.8").status_code == 200
    finally:
        release.set()
        call.cancel()
    _wait_for(forwarded, 0)


def test_an_over_long_identity_is_cut_to_its_first_characters(forwarded: Service) -> None:
    huge = "x" * 20_000
    with _HeldStream(forwarded, {"x-forwarded-for": f"10.0.0.1, {huge}"}) as held:
        _wait_for(forwarded, 1)
        # the held client is known by the first MAX_IDENTITY_CHARS characters of its entry
        assert _refused_by_client(_post(forwarded, "x" * MAX_IDENTITY_CHARS))
        assert _refused_by_client(_post(forwarded, "x" * MAX_IDENTITY_CHARS + "y"))
        assert _post(forwarded, "x" * (MAX_IDENTITY_CHARS - 1) + "y").status_code == 200
        held.release.set()
    assert held.response is not None and held.response.status_code == 200


def test_by_peer_one_address_is_one_client_whatever_it_forwards(by_peer: Service) -> None:
    with _HeldStream(by_peer, {"x-forwarded-for": "10.0.0.1"}) as held:
        _wait_for(by_peer, 1)
        refused = _post(by_peer, "10.0.0.2")  # no header changes who a peer is
        assert _refused_by_client(refused)
        assert refused.headers["retry-after"] == "1"
        assert _call(by_peer, "10.0.0.3") is grpc.StatusCode.UNAVAILABLE
        held.release.set()
    assert held.response is not None and held.response.status_code == 200
    _wait_for(by_peer, 0)
    assert _post(by_peer).status_code == 200


def test_by_default_no_client_is_refused_by_a_client_limit(by_default: Service) -> None:
    # max_inflight_requests=3: a per-client limit would be 1 place; off, one address takes all
    with _HeldStream(by_default) as first, _HeldStream(by_default) as second:
        _wait_for(by_default, 2)
        assert _post(by_default, "10.0.0.1").status_code == 200
        assert _call(by_default) is grpc.StatusCode.OK
        with _HeldStream(by_default) as third:
            _wait_for(by_default, 3)
            refused = _post(by_default)  # the server's limit, not a client's
            assert refused.status_code == 503
            assert "max_inflight_requests" in refused.json()["error"]["message"]
            with pytest.raises(grpc.RpcError) as busy:
                by_default.stub.Evaluate(SMALL, timeout=30)
            assert busy.value.code() is grpc.StatusCode.UNAVAILABLE
            assert "max_inflight_requests" in (busy.value.details() or "")
            third.release.set()
        first.release.set()
        second.release.set()
    for held in (first, second, third):
        assert held.response is not None and held.response.status_code == 200


def test_refusals_are_answered_the_same_every_time(one_place: Service) -> None:
    # Built once per kind of refusal: byte for byte the answer of the error table.
    with _HeldStream(one_place) as held:
        _wait_for(one_place, 1)
        answers = [one_place.rest.post("/v1/evaluate", json=ONE_SHOT) for _ in range(3)]
        statuses = []
        for _ in range(3):
            with pytest.raises(grpc.RpcError) as busy:
                one_place.stub.Evaluate(SMALL, timeout=30)
            statuses.append(busy.value)
        held.release.set()
    assert {answer.content for answer in answers} == {answers[0].content}
    assert answers[0].json() == {
        "error": {"code": "unavailable", "field": "", "message": str(BusyError(1))[2:]}
    }
    assert {(k, v) for k, v in answers[0].headers.items() if k not in ("date", "server")} == {
        ("content-type", "application/json"),
        ("content-length", str(len(answers[0].content))),
        ("retry-after", "1"),
    }
    assert {(s.code(), s.details()) for s in statuses} == {
        (grpc.StatusCode.UNAVAILABLE, str(BusyError(1)))
    }
    assert all(retry_hint(status) == (1.0, "1000") for status in statuses)


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
