"""Request bodies on the event loop: read into one buffer without a long hold of the loop
(``service.body``), and a large body refused before it is read left unread: the connection is
closed after the answer instead of the server reading the rest (``BodyLimitMiddleware``)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import contextmanager, suppress

import prometheus_client
import pytest
from starlette.types import Message, Receive, Scope, Send

from evalserve.service import body
from evalserve.service.budget import MemoryBudget
from evalserve.service.config import Settings
from evalserve.service.evaluator import Evaluator
from evalserve.service.rest import create_app
from evalserve.service.rest_middleware import DRAIN_BYTES, BodyLimitMiddleware
from tests.service.test_rest import serving

MIB = 1 << 20


async def _chunks(parts: Iterable[bytes]) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


def _read(parts: list[bytes], declared: int | None) -> tuple[bytearray, list[int]]:
    reserved: list[int] = []
    read = asyncio.run(body.read_body(_chunks(parts), declared, reserved.append))
    return read, reserved


def test_a_declared_body_is_filled_in_place() -> None:
    parts = [b"a" * 1000, b"b" * 24, b"c" * 3000]
    read, reserved = _read(parts, 4024)
    assert type(read) is bytearray and read == b"".join(parts)
    assert reserved == []  # reserved by the caller, from the declared length


def test_a_body_shorter_than_declared_keeps_what_came() -> None:
    read, _ = _read([b"x" * 10], 100)
    assert read == b"x" * 10


def test_a_body_longer_than_declared_grows_and_reserves() -> None:
    read, reserved = _read([b"x" * 10, b"y" * 10], 15)
    assert read == b"x" * 10 + b"y" * 10
    assert reserved == [20]


def test_a_chunked_body_is_joined_and_reserved_as_it_arrives() -> None:
    parts = [bytes([i]) * (100 + i) for i in range(50)]
    read, reserved = _read(parts, None)
    assert read == b"".join(parts)
    sizes = [len(p) for p in parts]
    assert reserved == [sum(sizes[: i + 1]) for i in range(len(sizes))]


def test_the_join_of_a_chunked_body_gives_the_loop_turns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(body, "JOIN_BYTES", 1000)
    turns = 0

    async def ticking() -> None:
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(0)

    async def main() -> bytearray:
        ticker = asyncio.create_task(ticking())
        await asyncio.sleep(0)
        started = turns
        read = await body.read_body(_chunks([b"z" * 500] * 20), None, lambda _: None)
        ticker.cancel()
        assert turns - started >= 10  # the join of 10,000 bytes yielded every 1,000
        return read

    assert asyncio.run(main()) == b"z" * 10_000


def test_a_refused_chunk_stops_the_read() -> None:
    taken: list[bytes] = []

    async def parts() -> AsyncIterator[bytes]:
        for part in (b"a" * 10, b"b" * 10, b"c" * 10):
            taken.append(part)
            yield part

    def reserve(size: int) -> None:
        if size > 15:
            raise MemoryError(size)

    with pytest.raises(MemoryError):
        asyncio.run(body.read_body(parts(), None, reserve))
    assert len(taken) == 2


def test_uninitialized_buffers_have_the_size_asked() -> None:
    assert len(body.uninitialized(0)) == 0
    buffer = body.uninitialized(MIB)
    assert type(buffer) is bytearray and len(buffer) == MIB
    buffer[:3] = b"abc"
    assert buffer[:3] == b"abc"


# --- answers given before the body is read ----------------------------------------------------


def _scope(headers: dict[str, str]) -> Scope:
    raw = [(k.encode(), v.encode()) for k, v in headers.items()]
    return {"type": "http", "method": "POST", "path": "/v1/evaluate", "headers": raw}


async def _refusing_app(scope: Scope, receive: Receive, send: Send) -> None:
    """Reads ``scope["read"]`` messages of the body, then answers 503."""
    for _ in range(scope.get("read", 0)):
        await receive()
    await send({"type": "http.response.start", "status": 503, "headers": []})
    await send({"type": "http.response.body", "body": b"busy"})


def _answer(headers: dict[str, str], read: int = 0, parts: int = 1) -> tuple[list[Message], int]:
    """What the middleware sends for a request whose body is ``parts`` messages (the app reads
    ``read`` of them), and how many it received."""
    sent: list[Message] = []
    received = 0
    size = int(headers.get("content-length", 0) or 4 * MIB) // parts

    async def receive() -> Message:
        nonlocal received
        received += 1
        return {"type": "http.request", "body": b" " * size, "more_body": received < parts}

    async def send(message: Message) -> None:
        sent.append(message)

    middleware = BodyLimitMiddleware(_refusing_app, max_bytes=256 * MIB)
    asyncio.run(middleware({**_scope(headers), "read": read}, receive, send))
    return sent, received


def _closes(sent: list[Message]) -> bool:
    start = next(message for message in sent if message["type"] == "http.response.start")
    return (b"connection", b"close") in start["headers"]


def test_a_declared_length_over_the_limit_is_refused_unread_and_closed() -> None:
    sent, received = _answer({"content-length": str(300 * MIB)})
    assert received == 0
    assert sent[0]["status"] == 413 and _closes(sent)


def test_a_large_body_refused_before_it_is_read_closes_the_connection() -> None:
    sent, received = _answer({"content-length": str(DRAIN_BYTES + 1)})
    assert received == 0
    assert sent[0]["status"] == 503 and _closes(sent)


def test_a_large_body_refused_half_read_closes_the_connection() -> None:
    sent, received = _answer({"content-length": str(8 * MIB)}, read=1, parts=4)
    assert received == 1 and _closes(sent)


@pytest.mark.parametrize(
    ("headers", "read", "parts"),
    [
        ({"content-length": str(DRAIN_BYTES)}, 0, 1),  # a small rest: read, kept alive
        ({"content-length": str(8 * MIB)}, 4, 4),  # read whole before the answer
        ({"transfer-encoding": "chunked"}, 1, 4),  # the rest is unknown: read as it comes
        ({}, 0, 1),  # no body
    ],
    ids=["small", "read", "chunked", "no-body"],
)
def test_other_answers_keep_the_connection(headers: dict[str, str], read: int, parts: int) -> None:
    sent, _ = _answer(headers, read, parts)
    assert not _closes(sent)


@contextmanager
def _server(budget: int) -> Iterator[tuple[str, int]]:
    evaluator = Evaluator(1, budget=MemoryBudget(budget))
    app = create_app(Settings(), evaluator, prometheus_client.CollectorRegistry())
    try:
        with serving(app) as url:
            host, port = url.removeprefix("http://").split(":")
            yield host, int(port)
    finally:
        evaluator.close()


def _exchange(address: tuple[str, int], head: bytes, sent: int) -> tuple[bytes, bool]:
    """Send ``head`` and ``sent`` bytes of its body, then read, as httpx does when its write
    fails: the answer, and whether the server closed the connection after it (without waiting
    for the rest of the body)."""
    with socket.create_connection(address, timeout=10) as sock:
        with suppress(ConnectionResetError, BrokenPipeError):
            sock.sendall(head + b" " * sent)
        answer = b""
        try:
            while part := sock.recv(65536):
                answer += part
        except ConnectionResetError:  # closed with our bytes unread: a reset, after the answer
            return answer, True
        except TimeoutError:
            return answer, False
        return answer, True


@pytest.mark.parametrize(
    ("declared", "limit"),
    [(300 * MIB, "body limit"), (40 * MIB, "memory budget")],
    ids=["body-limit", "budget"],
)
def test_the_server_answers_413_and_closes_without_reading_the_body(
    declared: int, limit: str
) -> None:
    head = (
        b"POST /v1/evaluate HTTP/1.1\r\nhost: x\r\ncontent-type: application/x-protobuf\r\n"
        b"content-length: %d\r\n\r\n" % declared
    )
    with _server(budget=64 * MIB) as address:  # 40 MiB: 88 MiB to read, over the budget
        answer, closed = _exchange(address, head, 64 << 10)
    status, _, rest = answer.partition(b"\r\n")
    assert status.startswith(b"HTTP/1.1 413"), (limit, answer[:300])
    assert b"connection: close" in rest.lower()
    assert closed
