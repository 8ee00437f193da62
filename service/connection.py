"""Whether a REST client has closed its connection, seen from the socket rather than the bytes.

A client that sends a long NDJSON body and leaves has its close queued behind the bytes the
server has not read yet (uvicorn reads a body only as fast as the stream merges it): read in
order, the close would be seen only after every buffered batch had been merged. The kernel
knows sooner: its TCP state leaves ESTABLISHED as soon as the client's FIN arrives, whatever
is still unread. The server's
HTTP protocol (``PeerAwareH11Protocol``) puts a check of that state in each request's scope,
under ``PEER_CLOSED``; the stream route polls it while the body is still arriving.

TCP sends the FIN after every byte the client had queued: a body that still sits in the
client's own send buffer (megabytes that the server has had no window for) is seen leaving only
once it has arrived here. A client that half-closes its side after sending the body and still
waits for the answer looks gone too. HTTP/1.1 clients do not do that (Go's HTTP server, for
one, also cancels a request whose client has sent FIN).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import Any, Final, TypeVar

from starlette.requests import ClientDisconnect, Request
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["PEER_CLOSED", "PeerAwareH11Protocol", "peer_closed", "unless_gone"]

T = TypeVar("T")

PEER_CLOSED: Final = "evalserve.peer_closed"
# Linux's TCP states once the peer has sent FIN (include/net/tcp_states.h): CLOSE, CLOSE_WAIT,
# LAST_ACK, CLOSING.
_PEER_DONE: Final = frozenset({7, 8, 9, 11})
_TCP_INFO: Final[int | None] = getattr(socket, "TCP_INFO", None)


def peer_closed(sock: Any) -> bool:
    """Whether the peer of ``sock`` has closed (or half-closed) its side; False where the
    platform does not tell."""
    if _TCP_INFO is None or sock is None:
        return False
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, _TCP_INFO, 1)
    except (OSError, AttributeError):
        return False
    return bool(info) and info[0] in _PEER_DONE


def _with_peer_check(app: ASGIApp, check: Callable[[], bool]) -> ASGIApp:
    async def app_with_check(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope.setdefault("extensions", {})[PEER_CLOSED] = check
        await app(scope, receive, send)

    return app_with_check


class PeerAwareH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, with ``PEER_CLOSED`` in every request's scope."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        sock = transport.get_extra_info("socket")
        self.app = _with_peer_check(self.app, lambda: peer_closed(sock))


# How often a stream whose body is still arriving checks whether its client has closed.
PEER_POLL_SECONDS = 0.1


async def _disconnected(request: Request, body_read: asyncio.Event | None = None) -> None:
    """Returns when the client has gone. Listens to the connection once the body has been read
    whole (at once, or when ``body_read`` is set); before that, polls the socket's state where
    the server tells it (``PEER_CLOSED``): the client's close waits behind the unread
    bytes of its body, which may take long to read."""
    if body_read is not None:
        peer_closed = request.scope.get("extensions", {}).get(PEER_CLOSED)
        while not body_read.is_set():
            if peer_closed is not None and peer_closed():
                return
            with suppress(TimeoutError):
                async with asyncio.timeout(PEER_POLL_SECONDS):
                    await body_read.wait()
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def unless_gone(
    request: Request, work: Awaitable[T], body_read: asyncio.Event | None = None
) -> T:
    """``work``'s result, or ``ClientDisconnect`` as soon as the client goes: the call is then
    cancelled (dropped if no worker has started it yet). ``body_read``: ``work`` reads the
    body itself, and sets it once the body has arrived whole."""
    task = asyncio.ensure_future(work)
    gone = asyncio.ensure_future(_disconnected(request, body_read))
    try:
        await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not task.done():
            task.cancel()
        gone.cancel()
    if task.done() and not task.cancelled():
        return task.result()
    raise ClientDisconnect()
