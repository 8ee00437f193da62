"""The REST server's drain, in process on a loopback port: a connection the kernel had queued
when the server stopped accepting is served, a draining server's answers wait while they are
held, a request sent on an idle keep-alive connection just after the drain is answered, and
idle connections close once the quiet period is over."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest
import uvicorn
from starlette.types import ASGIApp, Receive, Scope, Send

from evalserve.service.hold import Hold
from evalserve.service.rest_drain import DrainMiddleware
from evalserve.service.rest_server import IDLE_QUIET_SECONDS, RestServer

REQUEST = b"GET / HTTP/1.1\r\nhost: x\r\n\r\n"
CLOSING_REQUEST = b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"


async def _ok(scope: Scope, receive: Receive, send: Send) -> None:
    assert scope["type"] == "http"
    while (await receive()).get("more_body", False):
        pass
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-length", b"2")]})  # fmt: skip
    await send({"type": "http.response.body", "body": b"ok"})


async def _started(quiet: float = IDLE_QUIET_SECONDS, app: ASGIApp = _ok) -> tuple[RestServer, int]:
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off")
    config.load()
    server = RestServer(config, quiet=quiet)
    server.lifespan = config.lifespan_class(config)
    await server.startup()
    return server, int(server.servers[0].sockets[0].getsockname()[1])


def _answer(client: socket.socket) -> bytes:
    """One response (this app's always ends in its body ``ok``), or what the socket ended with."""
    data = b""
    while not data.endswith(b"ok"):
        chunk = client.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


async def _kept(port: int) -> socket.socket:
    """A keep-alive connection that has had one answer and is now idle."""
    client = socket.create_connection(("127.0.0.1", port), timeout=10)
    client.sendall(REQUEST)
    first = await asyncio.to_thread(_answer, client)
    assert first.startswith(b"HTTP/1.1 200"), first
    return client


def test_a_connection_queued_when_the_server_stops_accepting_is_served() -> None:
    async def main() -> None:
        server, port = await _started()
        # The kernel completes the handshake; the event loop has not run since, so the
        # connection waits in the listening socket's queue, its request unread.
        client = socket.create_connection(("127.0.0.1", port), timeout=10)
        client.sendall(CLOSING_REQUEST)
        server.drained.set()
        await server.shutdown()
        answer = await asyncio.to_thread(_answer, client)
        client.close()
        assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"ok"), answer
        refused = socket.socket()
        assert refused.connect_ex(("127.0.0.1", port)) != 0  # the listener is closed
        refused.close()

    asyncio.run(main())


def test_a_request_on_an_idle_connection_just_after_the_drain_is_answered() -> None:
    async def main() -> None:
        server, port = await _started()
        client = await _kept(port)
        server.drained.set()
        stopping = asyncio.create_task(server.shutdown())
        await asyncio.sleep(0.1)  # the listener is closed, the connection idle and kept
        assert not stopping.done()
        client.sendall(REQUEST)  # a keep-alive client's next request, sent at once
        second = await asyncio.to_thread(_answer, client)
        assert second.startswith(b"HTTP/1.1 200") and second.endswith(b"ok"), second
        await stopping
        assert await asyncio.to_thread(client.recv, 1) == b""  # then closed, not reset
        client.close()

    asyncio.run(main())


def test_idle_connections_close_after_the_quiet_period_and_not_before() -> None:
    quiet = 0.3

    async def main() -> None:
        server, port = await _started(quiet)
        client = await _kept(port)
        server.drained.set()
        began = time.monotonic()
        await server.shutdown()
        assert time.monotonic() - began >= quiet
        assert await asyncio.to_thread(client.recv, 1) == b""
        client.close()

    asyncio.run(main())


def test_the_shutdown_does_not_wait_once_every_client_has_left() -> None:
    async def main() -> None:
        server, port = await _started(quiet=30.0)
        client = socket.create_connection(("127.0.0.1", port), timeout=10)
        client.sendall(CLOSING_REQUEST)
        assert (await asyncio.to_thread(_answer, client)).startswith(b"HTTP/1.1 200")
        client.close()
        server.drained.set()
        await asyncio.wait_for(server.shutdown(), timeout=5)

    asyncio.run(main())


def test_open_connections_stay_until_the_evaluator_has_drained() -> None:
    async def main() -> None:
        server, port = await _started(quiet=0.0)
        client = await _kept(port)
        stopping = asyncio.create_task(server.shutdown())
        await asyncio.sleep(0.3)
        assert not stopping.done()
        client.sendall(REQUEST)
        assert (await asyncio.to_thread(_answer, client)).startswith(b"HTTP/1.1 200")
        server.drained.set()
        await asyncio.wait_for(stopping, timeout=5)
        client.close()

    asyncio.run(main())


def test_a_draining_answer_waits_while_held_then_asks_to_close() -> None:
    async def main() -> None:
        hold = Hold()
        hold.hold()
        server, port = await _started(app=DrainMiddleware(_ok, draining=lambda: True, hold=hold))
        client = socket.create_connection(("127.0.0.1", port), timeout=10)
        client.sendall(REQUEST)
        await asyncio.sleep(0.2)
        client.setblocking(False)
        with pytest.raises(BlockingIOError):  # nothing has come back yet
            client.recv(1)
        client.setblocking(True)
        hold.release()
        answer = await asyncio.to_thread(_answer, client)
        assert answer.startswith(b"HTTP/1.1 200") and b"connection: close" in answer.lower()
        client.close()
        server.drained.set()
        await server.shutdown()

    asyncio.run(main())
