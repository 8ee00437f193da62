"""The REST server's drain: uvicorn, stopped so that no client sees a reset.

uvicorn's own shutdown closes the listening socket and every idle keep-alive connection at
once. Both race with clients: a connection the kernel has completed (the client's connect has
returned) but the event loop has not yet accepted is reset when the listening socket closes,
and an idle connection closed just as its client sends the next request meets that request
with a reset. ``RestServer``:

1. stops accepting at the start of the drain (``stop_accepting``): it lets the event loop
   accept what the kernel has queued (for at most ``ACCEPT_PENDING_SECONDS``), then closes the
   listening socket. Meanwhile the answers of the draining server are held
   (``service.rest_drain``, ``service.hold``): each asks to close its connection, and its client
   would reconnect at once, into the close. A connection that arrives later is refused (the
   client's connect fails); one accepted is served;
2. keeps its open connections until ``drained`` is set (the evaluator has drained): a request
   sent on one meanwhile gets 503 + Retry-After and ``Connection: close``;
3. then waits ``quiet`` seconds (less once every client has closed its connection) before it
   closes what is still open. Every answer that leaves after the drain begins asks to close
   its connection, so what is still open by then was last answered before the drain and has
   been idle at least that long. A client that had an answer just before the drain and sent
   its next request at once has that request answered instead of reset.

What stays is the race every HTTP/1.1 server has at its keep-alive timeout (a client that
reuses a connection exactly as it is closed), and a new client connecting at the very moment
the listening socket closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import select
import socket
from collections.abc import Generator

import uvicorn

__all__ = ["ACCEPT_PENDING_SECONDS", "IDLE_QUIET_SECONDS", "RestServer"]

# Seconds the event loop may take to accept the connections the kernel has queued.
ACCEPT_PENDING_SECONDS = 0.5
# Seconds after the drain before idle keep-alive connections are closed (fewer when every
# client closes its own first).
IDLE_QUIET_SECONDS = 1.0
_POLL_SECONDS = 0.005


class RestServer(uvicorn.Server):
    """uvicorn without its own signal handlers (the caller decides when to stop) and with the
    drain of the module's docstring."""

    def __init__(self, config: uvicorn.Config, quiet: float = IDLE_QUIET_SECONDS) -> None:
        super().__init__(config)
        self.drained = asyncio.Event()
        self.quiet = quiet

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield

    async def stop_accepting(self) -> None:
        """Accept what the kernel has queued, then close the listening sockets (again: a no-op)."""
        listeners = [sock for server in self.servers for sock in server.sockets]
        loop = asyncio.get_running_loop()
        until = loop.time() + ACCEPT_PENDING_SECONDS
        while listeners and loop.time() < until and select.select(listeners, [], [], 0)[0]:
            await asyncio.sleep(_POLL_SECONDS)
        for server in self.servers:
            server.close()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await self.stop_accepting()
        await self.drained.wait()
        loop = asyncio.get_running_loop()
        until = loop.time() + self.quiet
        while self.server_state.connections and loop.time() < until:
            await asyncio.sleep(_POLL_SECONDS)
        await super().shutdown(sockets)
