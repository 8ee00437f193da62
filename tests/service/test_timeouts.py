"""No admission place is held forever: a body that does not arrive, a stream that trickles or
goes silent, is cut off (408 / DEADLINE_EXCEEDED) and its place freed; blank lines cost little;
a client that leaves stops its stream; one client cannot take every place. Real servers on
loopback ports, with small timeouts."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import grpc
import pytest

from evalserve.service.config import Settings
from evalserve.v1 import evaluation_pb2 as pb
from evalserve.v1 import evaluation_pb2_grpc as pb_grpc
from tests.contract.servers import Service, running

pytestmark = pytest.mark.slow

TIMEOUT = 1.5  # both timeouts of the service under test, in seconds
HEADER = b'{"task": "binary"}\n'
ROWS = b'{"labels": [0, 0, 1, 1], "scores": [0.1, 0.4, 0.35, 0.8]}\n'
ONE_SHOT = {"task": "binary", "labels": [0, 0, 1, 1], "scores": [0.1, 0.4, 0.35, 0.8]}


@pytest.fixture(scope="module")
def quick() -> Iterator[Service]:
    settings = Settings(
        host="127.0.0.1",
        rest_port=0,
        grpc_port=0,
        max_inflight_requests=16,
        max_inflight_per_client=16,
        request_read_timeout_seconds=TIMEOUT,
        stream_idle_timeout_seconds=TIMEOUT,
    )
    with running(settings) as service:
        yield service


@pytest.fixture(scope="module")
def patient() -> Iterator[Service]:
    """Long timeouts (so only a disconnect can free a place) and the default per-client cap,
    clients known by their address."""
    settings = Settings(
        host="127.0.0.1",
        rest_port=0,
        grpc_port=0,
        max_inflight_requests=4,
        client_identity="peer",
    )
    with running(settings) as service:
        yield service


def _inflight(service: Service) -> float:
    for line in service.rest.get("/metrics").text.splitlines():
        if line.startswith("evalserve_inflight_requests "):
            return float(line.split()[1])
    raise AssertionError("evalserve_inflight_requests is not exported")


def _wait_for(service: Service, inflight: float, within: float = 10) -> float:
    """Seconds until the service has ``inflight`` requests in flight."""
    started = time.monotonic()
    while _inflight(service) != inflight:
        assert time.monotonic() - started < within, f"inflight never reached {inflight}"
        time.sleep(0.02)
    return time.monotonic() - started


def _connect(service: Service) -> socket.socket:
    port = int(service.url.rsplit(":", 1)[1])
    connection = socket.create_connection(("127.0.0.1", port), timeout=30)
    return connection


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def _open_stream(service: Service) -> socket.socket:
    """A chunked NDJSON stream that has sent its request head and its header line."""
    connection = _connect(service)
    connection.sendall(
        b"POST /v1/evaluate/stream HTTP/1.1\r\nhost: x\r\ncontent-type: application/x-ndjson\r\n"
        b"transfer-encoding: chunked\r\n\r\n" + _chunk(HEADER)
    )
    return connection


def _status(connection: socket.socket) -> tuple[int, bytes]:
    """The status and the whole raw answer read from ``connection``."""
    answer = b""
    while b"\r\n\r\n" not in answer:
        data = connection.recv(65536)
        if not data:
            break
        answer += data
    assert answer.startswith(b"HTTP/1.1 "), answer
    head, _, body = answer.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.lower().split(b"\r\n")
        if line.startswith(b"content-length:")
    )
    while len(body) < length and (data := connection.recv(65536)):
        body += data
    return int(answer.split()[1]), head + b"\r\n\r\n" + body


class _Trickle:
    """A REST stream sending one byte of a batch line every 0.2 s: never idle for long, but
    never finishing a batch."""

    def __init__(self, service: Service) -> None:
        self.connection = _open_stream(service)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._send, daemon=True)
        self.thread.start()

    def _send(self) -> None:
        for byte in ROWS * 100:
            if self.stop.wait(0.2):
                return
            try:
                self.connection.sendall(_chunk(bytes([byte])))
            except OSError:
                return

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=10)
        self.connection.close()


def _silent_grpc_stream(service: Service) -> tuple[grpc.Future[pb.EvaluateResponse], object]:
    """A gRPC stream that sends its header, then nothing until ``release`` is set."""
    release = threading.Event()

    def messages() -> Iterator[pb.EvaluateStreamRequest]:
        yield pb.EvaluateStreamRequest(header=pb.StreamHeader(task=pb.TASK_BINARY))
        release.wait(timeout=60)

    call = service.stub.EvaluateStream.future(messages(), timeout=60)
    return call, release


def test_a_trickling_stream_is_cut_at_the_idle_timeout(quick: Service) -> None:
    trickle = _Trickle(quick)
    try:
        started = time.monotonic()
        status, answer = _status(trickle.connection)
        elapsed = time.monotonic() - started
    finally:
        trickle.close()
    assert status == 408, answer
    assert b'"code":"timeout"' in answer and b"stream_idle_timeout_seconds" in answer
    assert TIMEOUT * 0.8 < elapsed < TIMEOUT + 5, elapsed
    _wait_for(quick, 0)


def test_a_silent_grpc_stream_is_cut_at_the_idle_timeout(quick: Service) -> None:
    call, release = _silent_grpc_stream(quick)
    started = time.monotonic()
    try:
        with pytest.raises(grpc.RpcError) as cut:
            call.result(timeout=30)
    finally:
        release.set()  # type: ignore[attr-defined]
    assert cut.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
    assert "stream_idle_timeout_seconds" in (cut.value.details() or "")
    assert time.monotonic() - started < TIMEOUT + 5
    _wait_for(quick, 0)


def test_sixteen_stuck_clients_hold_their_places_only_until_the_timeout(quick: Service) -> None:
    trickles = [_Trickle(quick) for _ in range(8)]
    silent = [_silent_grpc_stream(quick) for _ in range(8)]
    try:
        _wait_for(quick, 16)
        assert quick.rest.post("/v1/evaluate", json=ONE_SHOT).status_code == 503
        _wait_for(quick, 0, within=TIMEOUT + 10)
        # the stuck clients are still connected; a normal request is served
        answer = quick.rest.post("/v1/evaluate", json=ONE_SHOT)
        assert answer.status_code == 200
        assert answer.json()["metrics"]["roc_auc"] == 0.75
        reply = quick.stub.Evaluate(
            pb.EvaluateRequest(task=pb.TASK_BINARY, labels=[0, 1], scores=[0.2, 0.7]), timeout=30
        )
        assert reply.metrics
        for trickle in trickles:
            assert _status(trickle.connection)[0] == 408
        for call, _ in silent:
            assert call.exception(timeout=30).code() is grpc.StatusCode.DEADLINE_EXCEEDED  # type: ignore[union-attr]
    finally:
        for trickle in trickles:
            trickle.close()
        for _, release in silent:
            release.set()  # type: ignore[attr-defined]


def test_a_body_shorter_than_its_content_length_gets_408(quick: Service) -> None:
    connection = _connect(quick)
    try:
        connection.sendall(
            b"POST /v1/evaluate HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            b"content-length: 1000\r\n\r\n" + b'{"task": "binary", "l'
        )
        started = time.monotonic()
        status, answer = _status(connection)
        elapsed = time.monotonic() - started
    finally:
        connection.close()
    assert status == 408, answer
    assert b"request_read_timeout_seconds" in answer
    assert elapsed < TIMEOUT + 5, elapsed
    _wait_for(quick, 0)


def test_blank_lines_cost_little(quick: Service) -> None:
    body = HEADER + b"\n" * 200_000 + b"  \r\n" * 10_000 + ROWS
    started = time.monotonic()
    answer = quick.rest.post(
        "/v1/evaluate/stream", content=body, headers={"content-type": "application/x-ndjson"}
    )
    elapsed = time.monotonic() - started
    assert answer.status_code == 200, answer.text
    assert answer.json()["metrics"]["roc_auc"] == 0.75
    assert elapsed < 5, elapsed  # 24.6 s when each blank line took a trip to a worker thread
    only_blank = quick.rest.post(
        "/v1/evaluate/stream",
        content=HEADER + b"\n" * 200_000,
        headers={"content-type": "application/x-ndjson"},
    )
    assert only_blank.status_code == 400
    assert only_blank.json()["error"]["code"] == "stream_protocol"


def test_a_client_that_leaves_frees_its_stream_place(patient: Service) -> None:
    connection = _open_stream(patient)
    connection.sendall(_chunk(ROWS))
    _wait_for(patient, 1)
    connection.close()
    assert _wait_for(patient, 0) < 5  # the idle timeout is 30 s


# Merging this many batches takes seconds (100 us each at the very least): a stream that goes on
# after its client has left holds its place that long. Its 1.2 MB fit the kernel's buffers, so
# the client's close arrives while most of its batches have not been read.
LONG_STREAM = 20_000


def test_a_client_that_leaves_after_sending_its_whole_stream_stops_it(patient: Service) -> None:
    body = HEADER + ROWS * LONG_STREAM
    connection = _connect(patient)
    connection.sendall(
        b"POST /v1/evaluate/stream HTTP/1.1\r\nhost: x\r\ncontent-type: application/x-ndjson"
        b"\r\ncontent-length: %d\r\n\r\n" % len(body) + body
    )
    _wait_for(patient, 1)
    time.sleep(0.3)  # the body has arrived whole; its batches are being merged
    connection.close()
    assert _wait_for(patient, 0) < 1  # at its next batch, not after the last one


def test_a_grpc_stream_cancelled_after_its_last_message_stops(patient: Service) -> None:
    def messages() -> Iterator[bytes]:
        header = pb.EvaluateStreamRequest(header=pb.StreamHeader(task=pb.TASK_BINARY))
        yield header.SerializeToString()
        batch = pb.EvaluateStreamRequest(labels=[0, 1], scores=[0.2, 0.7]).SerializeToString()
        for _ in range(LONG_STREAM):
            yield batch

    channel = grpc.insecure_channel(patient.grpc_target)
    stream: grpc.StreamUnaryMultiCallable[bytes, pb.EvaluateResponse] = channel.stream_unary(
        "/evalserve.v1.EvaluationService/EvaluateStream",
        request_serializer=None,
        response_deserializer=pb.EvaluateResponse.FromString,
    )
    try:
        call = stream.future(messages(), timeout=120)
        _wait_for(patient, 1)
        time.sleep(0.5)  # messages are being merged
        call.cancel()
        assert _wait_for(patient, 0) < 1
    finally:
        channel.close()


def test_a_cancelled_grpc_stream_frees_its_place(patient: Service) -> None:
    call, release = _silent_grpc_stream(patient)
    try:
        _wait_for(patient, 1)
        call.cancel()
        assert _wait_for(patient, 0) < 5
    finally:
        release.set()  # type: ignore[attr-defined]


def test_one_client_cannot_take_every_place(patient: Service) -> None:
    # max_inflight_requests=4: one client address gets half of them
    held = [_open_stream(patient) for _ in range(2)]
    try:
        _wait_for(patient, 2)
        refused = patient.rest.post("/v1/evaluate", json=ONE_SHOT)
        assert refused.status_code == 503
        assert refused.headers["retry-after"] == "1"
        assert "max_inflight_per_client" in refused.json()["error"]["message"]
        channel = grpc.insecure_channel(patient.grpc_target)
        with pytest.raises(grpc.RpcError) as busy:
            pb_grpc.EvaluationServiceStub(channel).Evaluate(
                pb.EvaluateRequest(task=pb.TASK_BINARY, labels=[0, 1], scores=[0.2, 0.7])
            )
        channel.close()
        assert busy.value.code() is grpc.StatusCode.UNAVAILABLE
    finally:
        for connection in held:
            connection.close()
    _wait_for(patient, 0)
    assert patient.rest.post("/v1/evaluate", json=ONE_SHOT).status_code == 200


def test_an_expired_grpc_deadline_frees_the_stream_place(patient: Service) -> None:
    release = threading.Event()

    def messages() -> Iterator[pb.EvaluateStreamRequest]:
        yield pb.EvaluateStreamRequest(header=pb.StreamHeader(task=pb.TASK_BINARY))
        release.wait(timeout=60)

    call = patient.stub.EvaluateStream.future(messages(), timeout=1.0)
    try:
        error = call.exception(timeout=30)
        assert error is not None
        assert error.code() is grpc.StatusCode.DEADLINE_EXCEEDED  # type: ignore[attr-defined]
        assert _wait_for(patient, 0) < 5  # the idle timeout is 30 s
    finally:
        release.set()
