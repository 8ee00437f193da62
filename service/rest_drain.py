"""What the REST server says while it drains (after SIGTERM): nothing in flight is dropped.

``DrainMiddleware`` does two things once the evaluator drains:

- every response carries ``Connection: close``, so no client sends another request on a
  connection that is about to close (the server keeps its open connections until the drain
  ends: a request that arrives on one meanwhile gets 503 + Retry-After, not a reset);
- while ``hold`` is held (the moment the server closes its listening socket, at the start of
  the drain), those answers wait: their clients would reconnect at once, and a connection the
  kernel completes just as the listening socket closes is reset (``service.rest_server``);
- before a 503 answers a request whose body has not arrived whole (a stream cut off at the end
  of the grace period, an upload refused during the drain), the rest of the body is read and
  dropped, for at most ``linger`` seconds: closing a connection with unread bytes makes the
  kernel reset it, and a client still sending would never read its 503 (the "lingering close"
  of HTTP servers such as nginx).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from evalserve.service.hold import Hold

__all__ = ["DrainMiddleware", "closing"]

# Seconds a refused request's unread body is read and dropped before its 503 leaves.
LINGER_SECONDS = 2.0


def closing(start: Message) -> Message:
    """A response's start message that asks to close the connection after the response."""
    headers = [(key, value) for key, value in start.get("headers", []) if key != b"connection"]
    return {**start, "headers": [*headers, (b"connection", b"close")]}


class DrainMiddleware:
    """See the module's docstring; ``draining()`` says whether the server drains."""

    def __init__(
        self,
        app: ASGIApp,
        draining: Callable[[], bool],
        linger: float = LINGER_SECONDS,
        hold: Hold | None = None,
    ) -> None:
        self.app = app
        self.draining = draining
        self.linger = linger
        self.hold = hold or Hold()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body_done = False

        async def tracking_receive() -> Message:
            nonlocal body_done
            message = await receive()
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_done = True
            return message

        async def closing_send(message: Message) -> None:
            if message["type"] == "http.response.start" and self.draining():
                await self.hold.until_released()
                if message["status"] == 503 and not body_done:
                    await self._drop_body(tracking_receive)
                message = closing(message)
            await send(message)

        await self.app(scope, tracking_receive, closing_send)

    async def _drop_body(self, receive: Receive) -> None:
        """Read and drop what is left of the body, for at most ``linger`` seconds."""
        try:
            async with asyncio.timeout(self.linger):
                while True:
                    message = await receive()
                    if message["type"] != "http.request" or not message.get("more_body", False):
                        return
        except TimeoutError:
            return
