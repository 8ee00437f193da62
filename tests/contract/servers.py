"""Both doors of one real service for the contract tests: ``service.server.run`` (the function
``evalserve serve`` runs: REST, gRPC and ``/metrics`` in one event loop over one evaluator) in a
background thread, on 127.0.0.1 with free ports, called with real clients (httpx, grpc).

Three services live for the whole session (each started by the first test that asks for it):
one with the default settings, one with small limits (64 KiB bodies and messages, 2 000 rows a
request, 3 000 rows a stream, a stream state of 60 000 bytes: 3 750 distinct binary scores, 3
classes, 3 segments) for the size cases, and one whose stream state is capped at 4 800 bytes
(300 distinct binary scores) for the cap of every task's state.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import grpc
import httpx

from evalserve.service.config import Settings
from evalserve.service.server import Ports, run
from evalserve.v1 import evaluation_pb2_grpc as pb_grpc

# Over the answer of ``assert_still_serving`` (about 4 300 bytes: no curves), under that of 200
# rows with curves of 50 points (about 7 200).
RESPONSE_LIMIT = 5000
# Small row limits: what the clients' tests need to see requests over them stream.
ROW_LIMITED = Settings(
    host="127.0.0.1",
    rest_port=0,
    grpc_port=0,
    max_request_bytes=64 * 1024,
    max_rows=2000,
    max_stream_rows=3000,
    max_stream_state_bytes=60_000,
    max_classes=3,
)
# The same, with the caps against amplification each far below its default, so that a small
# case of the bad-input table hits it.
LIMITED = ROW_LIMITED.model_copy(
    update=dict(
        max_label_chars=8,
        max_label_array_bytes=1024,
        max_boxes_per_image=3,
        max_detection_pairs=8,
        max_bootstrap_work=100_000,
        max_curve_points=50,
        max_response_bytes=RESPONSE_LIMIT,
        max_segments=3,
    )
)
CAPPED = Settings(host="127.0.0.1", rest_port=0, grpc_port=0, max_stream_state_bytes=4_800)


@dataclass
class Service:
    """A running service: its settings and a client for each door."""

    settings: Settings
    url: str
    grpc_target: str
    rest: httpx.Client
    channel: grpc.Channel
    stub: pb_grpc.EvaluationServiceStub


@contextmanager
def running(settings: Settings) -> Iterator[Service]:
    """``service.server.run(settings)`` in a thread of its own until the block ends; the stop
    event is the one SIGTERM would set, so shutdown is the graceful one."""
    started: dict[str, Ports] = {}
    ready = threading.Event()
    holder: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Event]] = {}
    failure: list[BaseException] = []

    async def main() -> None:
        stop = asyncio.Event()
        holder["stop"] = (asyncio.get_running_loop(), stop)

        def on_started(ports: Ports) -> None:
            started["ports"] = ports
            ready.set()

        await run(settings, stop=stop, on_started=on_started)

    def thread_main() -> None:
        try:
            asyncio.run(main())
        except BaseException as error:  # reported by the waiting test, not lost in the thread
            failure.append(error)
        finally:
            ready.set()

    thread = threading.Thread(target=thread_main, name="evalserve", daemon=True)
    thread.start()
    assert ready.wait(timeout=60), "the service did not start in 60 s"
    if failure or "ports" not in started:
        raise AssertionError(f"the service did not start: {failure!r}")
    ports = started["ports"]
    url = f"http://127.0.0.1:{ports.rest}"
    grpc_target = f"127.0.0.1:{ports.grpc}"
    channel = grpc.insecure_channel(grpc_target)
    try:
        with httpx.Client(base_url=url, timeout=120) as rest:
            yield Service(
                settings, url, grpc_target, rest, channel, pb_grpc.EvaluationServiceStub(channel)
            )
    finally:
        channel.close()
        loop, stop = holder["stop"]
        loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=60)
        assert not thread.is_alive(), "the service did not stop in 60 s"
