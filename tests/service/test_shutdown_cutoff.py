"""SIGTERM while requests outlive ``shutdown_grace_seconds``: each is cut off with a retryable
503 + Retry-After (REST) or UNAVAILABLE (gRPC), never a 500, and the process exits cleanly."""

from __future__ import annotations

import signal
import socket
import threading
import time
from collections.abc import Iterator

import grpc
import httpx
import pytest

from evalserve.v1 import evaluation_pb2 as pb
from evalserve.v1 import evaluation_pb2_grpc as pb_grpc
from tests.service.test_server import Running, _big_request, started

pytestmark = pytest.mark.slow

HEADER = b'{"task": "binary"}\n'
ROWS = b'{"labels": [0, 0, 1, 1], "scores": [0.1, 0.4, 0.35, 0.8]}\n'


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


@pytest.fixture
def service() -> Iterator[Running]:
    yield from started("--workers", "1", "--shutdown-grace-seconds", "1")


def test_sigterm_cuts_off_long_requests_with_503_and_unavailable(service: Running) -> None:
    host, port = service.rest.removeprefix("http://").split(":")
    rest = socket.create_connection((host, int(port)), timeout=30)
    rest.sendall(
        b"POST /v1/evaluate/stream HTTP/1.1\r\nhost: x\r\ncontent-type: application/x-ndjson\r\n"
        b"transfer-encoding: chunked\r\n\r\n" + _chunk(HEADER) + _chunk(ROWS)
    )
    stop = threading.Event()

    def keep_streaming() -> None:  # a batch every 0.3 s: well within the idle timeout
        while not stop.wait(0.3):
            try:
                rest.sendall(_chunk(ROWS))
            except OSError:
                return

    def messages() -> Iterator[pb.EvaluateStreamRequest]:
        yield pb.EvaluateStreamRequest(header=pb.StreamHeader(task=pb.TASK_BINARY))
        stop.wait(timeout=60)

    sender = threading.Thread(target=keep_streaming, daemon=True)
    sender.start()
    channel = grpc.insecure_channel(service.grpc)
    call = pb_grpc.EvaluationServiceStub(channel).EvaluateStream.future(messages(), timeout=60)
    try:
        time.sleep(1.0)  # both streams are admitted and under way
        service.process.send_signal(signal.SIGTERM)
        answer = b""
        while b"\r\n\r\n" not in answer and (data := rest.recv(65536)):
            answer += data
        while (data := rest.recv(65536)) and b"}}" not in answer:
            answer += data
        error = call.exception(timeout=30)
    finally:
        stop.set()
        rest.close()
        channel.close()
    head = answer.split(b"\r\n\r\n", 1)[0].lower()
    assert answer.startswith(b"HTTP/1.1 503"), answer
    assert b"retry-after: 1" in head
    assert b'"code":"unavailable"' in answer and b"shutting down" in answer
    assert error is not None
    assert error.code() is grpc.StatusCode.UNAVAILABLE  # type: ignore[attr-defined]
    assert "shutting down" in (error.details() or "")  # type: ignore[attr-defined]
    assert service.process.wait(timeout=60) == 0
    time.sleep(0.2)
    output = "".join(service.lines)
    assert "Traceback" not in output and "Internal Server Error" not in output, output


@pytest.fixture
def no_grace() -> Iterator[Running]:
    yield from started("--workers", "1", "--shutdown-grace-seconds", "0")


def test_sigterm_during_a_long_evaluation_gives_503(no_grace: Running) -> None:
    body = _big_request(4_000_000)
    outcome: dict[str, object] = {}

    def post() -> None:
        try:
            response = httpx.post(
                f"{no_grace.rest}/v1/evaluate",
                content=body,
                headers={"content-type": "application/x-protobuf"},
                timeout=120,
            )
            outcome["status"] = response.status_code
            outcome["retry-after"] = response.headers.get("retry-after")
            outcome["code"] = response.json()["error"]["code"]
        except httpx.HTTPError as error:  # pragma: no cover - the assertion below reports it
            outcome["error"] = repr(error)

    worker = threading.Thread(target=post)
    worker.start()
    deadline = time.monotonic() + 30
    while "evalserve_inflight_requests 1.0" not in httpx.get(f"{no_grace.rest}/metrics").text:
        assert time.monotonic() < deadline, "the request was never admitted"
        time.sleep(0.01)
    no_grace.process.send_signal(signal.SIGTERM)
    worker.join(timeout=120)
    assert outcome == {"status": 503, "retry-after": "1", "code": "unavailable"}
    assert no_grace.process.wait(timeout=60) == 0
    time.sleep(0.2)
    output = "".join(no_grace.lines)
    assert "Traceback" not in output, output
