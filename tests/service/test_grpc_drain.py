"""The gRPC server's stop after a drain, in process on a loopback port: an idle server stops at
once, a recent call makes it wait its quiet, a refusal in the quiet leaves only once core's
shutdown has begun and its GOAWAY has had time to reach the client, and a client retrying
through the stop hears UNAVAILABLE, never CANCELLED. The answers held while the server closes
are ``service.hold``'s."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import grpc
import pytest

from evalserve.service import hold
from evalserve.service.config import Settings
from evalserve.service.evaluator import Evaluator
from evalserve.service.grpc_drain import GOAWAY_SECONDS, GrpcDrain
from evalserve.service.grpc_server import create_grpc_server
from evalserve.service.hold import Hold
from evalserve.v1 import evaluation_pb2 as pb

REQUEST = pb.EvaluateRequest(task=pb.TASK_BINARY, labels=[0, 1], scores=[0.2, 0.7])
EVALUATE = "/evalserve.v1.EvaluationService/Evaluate"
LIST_METRICS = "/evalserve.v1.EvaluationService/ListMetrics"


@dataclass
class Served:
    server: grpc.aio.Server
    drain: GrpcDrain
    evaluator: Evaluator
    channel: grpc.aio.Channel


Test = Callable[[Served], Awaitable[None]]


async def _evaluate(channel: grpc.aio.Channel) -> None:
    call: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(EVALUATE)
    await call(REQUEST.SerializeToString(), timeout=10)


async def _catalog(channel: grpc.aio.Channel) -> None:
    call: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(LIST_METRICS)
    await call(b"", timeout=10)


async def _serving(test: Test) -> None:
    evaluator = Evaluator(1)
    drain = GrpcDrain()
    server, port, _ = await create_grpc_server(
        Settings(host="127.0.0.1"), evaluator, port=0, drain=drain
    )
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            await test(Served(server, drain, evaluator, channel))
    finally:
        await server.stop(None)
        evaluator.close()


def test_an_idle_server_stops_without_its_quiet() -> None:
    async def test(served: Served) -> None:
        loop = asyncio.get_running_loop()
        began = loop.time()
        await served.drain.stop(served.server, quiet=30.0, grace=1.0)
        assert loop.time() - began < 5.0

    asyncio.run(_serving(test))


def test_a_call_just_answered_makes_the_stop_wait_its_quiet() -> None:
    async def test(served: Served) -> None:
        await _catalog(served.channel)
        loop = asyncio.get_running_loop()
        began = loop.time()
        await served.drain.stop(served.server, quiet=1.0, grace=1.0)
        assert loop.time() - began >= 0.5

    asyncio.run(_serving(test))


def test_a_refusal_in_the_quiet_leaves_once_the_shutdown_has_begun() -> None:
    async def test(served: Served) -> None:
        loop = asyncio.get_running_loop()
        stopped_at: list[float] = []
        stop = served.server.stop

        async def recorded_stop(grace: float | None) -> None:
            stopped_at.append(loop.time())
            await stop(grace)

        served.server.stop = recorded_stop  # type: ignore[method-assign]
        await _catalog(served.channel)  # a call just answered: the stop waits its quiet
        served.evaluator.draining = True
        stopping = asyncio.create_task(served.drain.stop(served.server, quiet=0.5, grace=1.0))
        await asyncio.sleep(0.1)  # held from here on
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await _evaluate(served.channel)
        answered_at = loop.time()
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        assert stopped_at and answered_at - stopped_at[0] >= 0.8 * GOAWAY_SECONDS
        await stopping

    asyncio.run(_serving(test))


def test_a_client_retrying_through_the_stop_hears_unavailable_only() -> None:
    async def test(served: Served) -> None:
        served.evaluator.draining = True
        codes: list[grpc.StatusCode] = []
        done = asyncio.Event()

        async def retrying() -> None:
            while not done.is_set():
                try:
                    await _evaluate(served.channel)
                    codes.append(grpc.StatusCode.OK)
                except grpc.aio.AioRpcError as error:
                    codes.append(error.code())
                await asyncio.sleep(0.005)

        client = asyncio.create_task(retrying())
        await asyncio.sleep(0.2)
        await served.drain.stop(served.server, quiet=0.3, grace=1.0)
        await asyncio.sleep(0.2)  # calls after the stop: the connection is gone
        done.set()
        await client
        assert len(codes) > 5
        assert set(codes) == {grpc.StatusCode.UNAVAILABLE}, codes

    asyncio.run(_serving(test))


def test_a_hold_waits_until_released_and_no_longer_than_its_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        free = Hold()
        await asyncio.wait_for(free.until_released(), timeout=1)  # not held: at once
        held = Hold()
        held.hold()
        waiting = asyncio.create_task(held.until_released())
        await asyncio.sleep(0.1)
        assert not waiting.done()
        held.release()
        await asyncio.wait_for(waiting, timeout=1)
        await asyncio.wait_for(held.until_released(), timeout=1)  # released: at once
        monkeypatch.setattr(hold, "HOLD_LIMIT_SECONDS", 0.2)
        forgotten = Hold()
        forgotten.hold()
        began = loop.time()
        await forgotten.until_released()
        assert 0.15 <= loop.time() - began < 2

    asyncio.run(main())
