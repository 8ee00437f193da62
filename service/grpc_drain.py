"""How the gRPC server stops without a call being cancelled under its client.

gRPC core's server shutdown (``grpc.aio.Server.stop``) ends a call that reaches the server
at that moment, before its handler, with CANCELLED: a status that says the client cancelled,
which no client retries (grpc/grpc#41785, open at grpcio 1.85). Stopped at SIGTERM under load,
about one shutdown in fifteen caught the next call of a client that had just had its answer.
So the server is stopped only once nothing should be arriving:

1. At SIGTERM the gRPC server keeps running: health turns NOT_SERVING, every new call is
   refused UNAVAILABLE by the service itself (the evaluator drains), and the calls in flight
   finish.
2. Once the evaluator has drained, refusals are held (``service.hold``) for ``quiet`` seconds
   (none when no call has started or ended for that long): a client that retries after a
   shorter pause is by then waiting for its answer, not sending.
3. Then core's shutdown begins, and ``GOAWAY_SECONDS`` later, once the clients have heard that
   the connection is going away (a new call then fails UNAVAILABLE on the client), the held
   refusals leave.

What stays is a client that sends its first call in a while at the very moment of step 3: the
gRPC counterpart of the keep-alive race every HTTP/1.1 server has.
"""

from __future__ import annotations

import asyncio
import math

import grpc

from evalserve.service.hold import Hold

__all__ = ["GOAWAY_SECONDS", "GrpcDrain"]

# Seconds the held refusals wait once core's shutdown has begun. Core sends a first GOAWAY
# that tells clients to start no new call on the connection, and accepts new calls (which it
# then cancels, as above) until a ping's round trip later (RFC 9113, section 6.8); a refusal
# that left at once could bring its client's next call into that window.
GOAWAY_SECONDS = 0.25
_POLL_SECONDS = 0.01


class GrpcDrain:
    """The servicer reports each call's start and end (``touch``) and awaits ``refusal``
    before it answers UNAVAILABLE while the server drains; ``stop`` stops the server as the
    module's docstring says."""

    def __init__(self) -> None:
        self._hold = Hold()
        self._last = -math.inf

    def touch(self) -> None:
        """A call has started or ended now."""
        self._last = asyncio.get_running_loop().time()

    async def refusal(self) -> None:
        """Return when a refusal may leave: at once, unless it is held (step 2)."""
        await self._hold.until_released()

    async def stop(self, server: grpc.aio.Server, quiet: float, grace: float) -> None:
        """Steps 2 and 3, once the evaluator has drained: the quiet lasts until no call has
        started or ended for ``quiet`` seconds, or ``quiet`` seconds (none at all when the
        server has been idle that long). Returns when the server has stopped (calls still
        running ``grace`` seconds after its shutdown began are cancelled)."""
        self._hold.hold()
        loop = asyncio.get_running_loop()
        until = loop.time() + quiet
        while loop.time() < min(until, self._last + quiet):
            await asyncio.sleep(_POLL_SECONDS)
        stopping = asyncio.create_task(server.stop(grace))
        await asyncio.sleep(GOAWAY_SECONDS)
        self._hold.release()
        await stopping
