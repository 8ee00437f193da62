"""Answers that wait a moment during a shutdown, so that their clients do not send while a
listener closes (``service.rest_server``, ``service.grpc_drain``).

A client that has its answer sends its next request at once; one whose answer is held is
waiting, not sending. Holding the answers of a draining server while it closes a listening
socket (or begins gRPC core's shutdown) keeps such clients from meeting the close in the middle
of a connect or a call: they get their answer just after, and their next attempt is refused
cleanly (connection refused, UNAVAILABLE) and goes elsewhere.
"""

from __future__ import annotations

import asyncio
import contextlib

__all__ = ["HOLD_LIMIT_SECONDS", "Hold"]

# The longest an answer is held: a release that never comes must not keep a client forever.
HOLD_LIMIT_SECONDS = 10.0


class Hold:
    """While held (``hold`` until ``release``), ``until_released`` waits; else it returns at
    once. Held once, released once: a hold is not taken again."""

    def __init__(self) -> None:
        self._holding = False
        self._released = asyncio.Event()

    def hold(self) -> None:
        self._holding = True

    def release(self) -> None:
        self._released.set()

    async def until_released(self) -> None:
        """Wait until released (at most ``HOLD_LIMIT_SECONDS``) when held, else return."""
        if self._holding and not self._released.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(HOLD_LIMIT_SECONDS):
                    await self._released.wait()
