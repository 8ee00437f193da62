"""One process, three listeners: REST (FastAPI on uvicorn), gRPC (grpc.aio) and ``/metrics``.

Both servers share one event loop and one ``Evaluator`` (the bounded thread pool that keeps
numpy work off the loop). On SIGTERM or SIGINT: readiness and gRPC health turn NOT_SERVING, the
REST server stops accepting, in-flight requests get ``shutdown_grace_seconds`` to finish; those
still running are then cut off with 503 + Retry-After / UNAVAILABLE (never a 500); the gRPC
server, which refused new calls UNAVAILABLE meanwhile, stops once they are done
(``service.grpc_drain``), and the process exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import math
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass

import uvicorn
from prometheus_client import CollectorRegistry, GCCollector, PlatformCollector, ProcessCollector

from evalserve.service.budget import MemoryBudget
from evalserve.service.config import Settings
from evalserve.service.connection import PeerAwareH11Protocol
from evalserve.service.evaluator import Evaluator
from evalserve.service.grpc_drain import GrpcDrain
from evalserve.service.grpc_server import create_grpc_server
from evalserve.service.hold import Hold
from evalserve.service.listen import check_ports, listen_error
from evalserve.service.memory import (
    Trimmer,
    limit_blas_threads,
    resident_bytes,
    retain_freed_memory,
)
from evalserve.service.metrics import ServiceMetrics
from evalserve.service.rest import Readiness, create_app
from evalserve.service.rest_server import IDLE_QUIET_SECONDS, RestServer

__all__ = ["Ports", "run", "serve"]

log = logging.getLogger("evalserve")

# Seconds between the interpreter's GIL hand-overs (sys.setswitchinterval).
SWITCH_INTERVAL = 0.001

# Seconds both servers wait past shutdown_grace_seconds for the 503 / UNAVAILABLE answers of
# the requests the evaluator cut off to leave.
CUT_OFF_MARGIN = 3


# Seconds the tasks still running once both servers have stopped get to end.
STRAGGLER_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class Ports:
    rest: int
    grpc: int


def default_registry() -> CollectorRegistry:
    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    return registry


async def run(
    settings: Settings,
    *,
    stop: asyncio.Event | None = None,
    on_started: Callable[[Ports], None] | None = None,
) -> None:
    """Serve until ``stop`` is set (or SIGTERM/SIGINT arrive), then shut down gracefully."""
    # A port in use (or the same port twice) is one line before anything starts.
    check_ports(settings.host, settings.rest_port, settings.grpc_port)
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
    trimmer = Trimmer()  # asked at a resize, which may be on the event loop: never waited for
    budget = MemoryBudget(
        settings.budget_bytes,
        on_idle=trimmer.release,
        resident=resident_bytes,
        trim=trimmer.trim,
    )
    evaluator = Evaluator(
        settings.workers,
        settings.max_inflight_requests,
        settings.per_client_limit,
        budget,
        threads=settings.evaluation_threads,
    )
    readiness = Readiness()
    registry = default_registry()
    # one for both transports
    metrics = ServiceMetrics(settings, registry, inflight=lambda: evaluator.inflight)
    # answers held for a moment of the shutdown (service.hold)
    rest_hold, grpc_drain = Hold(), GrpcDrain()
    app = create_app(settings, evaluator, registry, readiness, metrics, hold=rest_hold)
    grpc_server, grpc_port, health = await create_grpc_server(
        settings, evaluator, metrics=metrics, drain=grpc_drain
    )
    await grpc_server.start()
    rest = RestServer(
        uvicorn.Config(
            app,
            host=settings.host,
            port=settings.rest_port,
            log_level="warning",
            lifespan="off",
            # Past the grace the evaluator cuts requests off with 503; uvicorn waits a little
            # longer for those answers to leave (its own cut-off would answer 500).
            timeout_graceful_shutdown=math.ceil(settings.shutdown_grace_seconds) + CUT_OFF_MARGIN,
            h11_max_incomplete_event_size=1 << 20,
            # A client is known as client_identity says, on both transports alike: uvicorn must not
            # put an X-Forwarded-For address in place of a loopback peer's (a sidecar's).
            proxy_headers=False,
            # The level is "warning": no access line is ever written, so none is formatted
            # either (uvicorn formats each before the logger drops it).
            access_log=False,
            ssl_certfile=settings.tls_cert_file,
            http=PeerAwareH11Protocol,  # a stream sees its client leave (service.connection)
            ssl_keyfile=settings.tls_key_file,
        )
    )
    rest_task = asyncio.create_task(rest.serve())
    while not rest.started and not rest_task.done():
        await asyncio.sleep(0.01)
    if rest_task.done():  # could not bind, for example
        rest.drained.set()
        await grpc_server.stop(None)
        evaluator.close()
        with contextlib.suppress(SystemExit):  # uvicorn's startup failure; it logged why
            await rest_task
        raise listen_error(settings.host, settings.rest_port, "REST", None)
    rest_port = int(rest.servers[0].sockets[0].getsockname()[1])
    ports = Ports(rest=rest_port, grpc=grpc_port)
    # What startup made lives as long as the process: out of every later cycle collection,
    # which holds the GIL (and so every endpoint) for as long as it scans.
    gc.freeze()
    # The event loop gives up the GIL at every system call and must win it back from the
    # evaluation threads; they hand it over at most every switch interval (5 ms by default),
    # so a probe answered in ten hand-overs waited up to 50 ms for them.
    sys.setswitchinterval(SWITCH_INTERVAL)
    scheme, grpc_scheme = ("https", "grpcs://") if settings.tls else ("http", "")
    print(
        f"evalserve: REST on {scheme}://{settings.host}:{ports.rest}, "
        f"gRPC on {grpc_scheme}{settings.host}:{ports.grpc}",
        file=sys.stderr,
        flush=True,
    )
    if on_started is not None:
        on_started(ports)
    stopper = asyncio.create_task(stop.wait())
    await asyncio.wait({stopper, rest_task}, return_when=asyncio.FIRST_COMPLETED)
    print("evalserve: shutting down, finishing in-flight requests", file=sys.stderr, flush=True)
    readiness.ready = False
    await health.enter_graceful_shutdown()

    async def drain() -> None:
        try:
            await evaluator.drain(settings.shutdown_grace_seconds)
        finally:
            rest.drained.set()

    async def stop_grpc() -> None:  # once drained, quietly (service.grpc_drain)
        await asyncio.wait({draining})
        await grpc_drain.stop(grpc_server, quiet=IDLE_QUIET_SECONDS, grace=CUT_OFF_MARGIN)

    # REST stops accepting now (service.rest_server); its answers wait until it has.
    rest_hold.hold()
    draining = asyncio.create_task(drain())
    await rest.stop_accepting()
    rest_hold.release()
    rest.should_exit = True
    await asyncio.gather(draining, stop_grpc(), rest_task)
    stopper.cancel()
    # A call answered as the gRPC server stopped may still be in its handler's last steps;
    # the event loop's end would cancel it, and grpc would log the CancelledError.
    others = asyncio.all_tasks() - {asyncio.current_task(), stopper}
    if others:
        await asyncio.wait(others, timeout=STRAGGLER_SECONDS)
    evaluator.close()
    print("evalserve: stopped", file=sys.stderr, flush=True)


def serve(settings: Settings) -> int:
    """Run the service in the foreground; the exit status."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    retain_freed_memory()
    limit_blas_threads()
    asyncio.run(run(settings))
    return 0
