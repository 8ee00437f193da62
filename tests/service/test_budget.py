"""The memory budget: reservations, the cost model, and both doors refusing what does not fit
(503 + Retry-After / RESOURCE_EXHAUSTED with a retry hint when it does not fit now, 413 /
RESOURCE_EXHAUSTED when it never would) before the body is read or decoded."""

from __future__ import annotations

import asyncio
import json
import select
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import grpc
import httpx
import numpy as np
import orjson
import pytest

from evalserve.service.budget import (
    COST_MODEL,
    GRPC_MESSAGE_CAP,
    MemoryBudget,
    grpc_message_limit,
    input_bytes,
    json_counts,
    receive_share,
)
from evalserve.service.config import Settings
from evalserve.service.errors import MemoryBusyError, OverBudgetError, describe
from evalserve.service.evaluator import Evaluator
from evalserve.service.records import Batch
from evalserve.v1 import evaluation_pb2 as pb
from tests.service import test_grpc, test_rest

MIB = 1 << 20
BUDGET = 96 * MIB


# --- the budget itself --------------------------------------------------------------------


def test_reservations_share_the_budget_and_give_it_back() -> None:
    idle: list[int] = []
    budget = MemoryBudget(100, on_idle=lambda: idle.append(budget.reserved))
    first, second = budget.reservation(), budget.reservation()
    first.resize(60)
    second.resize(40)
    assert budget.free == 0
    with pytest.raises(MemoryBusyError, match=r"memory_budget_bytes") as busy:
        first.resize(61, "line 3")
    assert busy.value.field == "line 3"
    assert (first.nbytes, budget.reserved) == (60, 100)  # a refused resize changes nothing
    first.resize(10)  # shrinking always fits
    assert budget.free == 50
    first.release()
    assert idle == []  # the second still holds memory
    second.release()
    assert idle == [0] and budget.reserved == 0


def test_a_request_past_its_first_step_waits_for_room() -> None:
    budget = MemoryBudget(100)
    holder, waiter = budget.reservation(), budget.reservation()
    holder.resize(60)
    waiter.resize(30)
    grown = threading.Event()

    def grow() -> None:
        waiter.resize(70, wait=10.0)  # 60 + 70 > 100: waits until the holder gives back
        grown.set()

    thread = threading.Thread(target=grow)
    thread.start()
    assert not grown.wait(0.2)
    holder.release()
    thread.join(timeout=10)
    assert grown.is_set() and budget.reserved == 70
    with pytest.raises(MemoryBusyError):  # holding nothing yet: refused at once, no wait
        budget.reservation().resize(50, wait=10.0)


def test_requests_that_all_wait_for_each_other_let_the_last_one_go() -> None:
    # Eight requests each hold their body and all need more to decode: without a way out
    # they would wait for each other (or all be refused); the newest gives up, one by one,
    # and the others go on.
    budget = MemoryBudget(100)
    reservations = [budget.reservation() for _ in range(4)]
    for reservation in reservations:
        reservation.resize(20)
    outcomes: dict[int, str] = {}
    barrier = threading.Barrier(4)

    def step(index: int) -> None:
        barrier.wait()
        try:
            reservations[index].resize(50, wait=10.0)
        except MemoryBusyError:
            outcomes[index] = "busy"
            reservations[index].release()
            return
        outcomes[index] = "grew"
        reservations[index].release()

    threads = [threading.Thread(target=step, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)
    assert "grew" in outcomes.values(), outcomes
    assert len(outcomes) == 4 and budget.reserved == 0


def test_a_reservation_over_the_whole_budget_is_final_not_busy() -> None:
    budget = MemoryBudget(100)
    with pytest.raises(OverBudgetError, match="more than the server's whole memory budget"):
        budget.reservation().resize(101)
    info = describe(OverBudgetError.of("body", 101, 100))
    assert info is not None
    assert (info.http_status, info.grpc_status, info.retry_after) == (
        413,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        None,
    )
    busy = describe(MemoryBusyError.of("body", 60, 40, 100))
    assert busy is not None
    assert (busy.http_status, busy.grpc_status, busy.code) == (
        503,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        "unavailable",
    )
    assert busy.retry_after is not None and busy.retry_after > 0


def test_a_pinned_reservation_is_kept_until_its_work_ends() -> None:
    budget = MemoryBudget(100)
    reservation = budget.reservation()
    reservation.resize(70)
    reservation.pin()
    reservation.release()  # the request left, but its work still runs
    assert budget.reserved == 70
    reservation.unpin()
    assert budget.reserved == 0


def test_work_cancelled_while_it_runs_keeps_its_memory_until_it_ends() -> None:
    evaluator = Evaluator(1, budget=MemoryBudget(100))
    started, finish = threading.Event(), threading.Event()

    def work() -> None:
        started.set()
        finish.wait(10)

    async def request() -> None:
        with evaluator.admitted() as reservation:
            reservation.resize(80)
            await evaluator.run(work)

    async def main() -> None:
        task = asyncio.create_task(request())
        while not started.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert evaluator.inflight == 0  # its place is free at once ...
        assert evaluator.budget.reserved == 80  # ... its memory only when the work ends

    try:
        asyncio.run(main())
        finish.set()
        evaluator.close()  # waits for the worker
        assert evaluator.budget.reserved == 0
    finally:
        finish.set()


def test_input_bytes_counts_every_decoded_value() -> None:
    labels = np.zeros(1000, dtype=np.int8)
    scores = np.zeros(1000)
    assert input_bytes(Batch(labels=labels, scores=scores)) == 9000
    named = Batch(label_names=("cat", "dog"), scores=np.zeros((2, 2)))
    assert input_bytes(named) > 32 + 2 * len("cat")
    extra = {"scores": np.zeros(10), "name": "x"}
    assert input_bytes(Batch(), (extra,)) > 80


def test_the_cost_model_grows_with_the_body_and_the_input() -> None:
    assert COST_MODEL.read(2 * MIB) > COST_MODEL.read(MIB) > MIB
    for encoding in ("json", "protobuf"):
        assert COST_MODEL.decode(encoding, MIB) >= COST_MODEL.read(MIB)
    # JSON: the values count (a parser's tape, the arrays), not only the bytes
    assert COST_MODEL.decode("json", MIB, values=MIB // 2) > COST_MODEL.decode("json", MIB)
    assert json_counts(b'{"scores": [0.1, 0.2, 0.3]}') == (3, 1)
    assert COST_MODEL.decode("json", MIB, 10, strings=MIB // 4) > COST_MODEL.decode("json", MIB, 10)
    for task in ("binary", "multiclass", "multilabel", "regression", "detection"):
        assert COST_MODEL.evaluation(task, MIB, held_bytes=MIB) > 2 * MIB
        assert COST_MODEL.result(task, MIB) > MIB


# --- both doors ---------------------------------------------------------------------------


class _Budgeted(Evaluator):
    """An evaluator with a small budget; the test reaches it through ``last``."""

    last: ClassVar[_Budgeted]

    def __init__(self, workers: int) -> None:
        super().__init__(workers, budget=MemoryBudget(BUDGET))
        _Budgeted.last = self


@pytest.fixture(scope="module")
def rest() -> Iterator[tuple[httpx.Client, Evaluator]]:
    with test_rest.served_app(Settings(), _Budgeted) as served:
        yield served.client, _Budgeted.last


@pytest.fixture(scope="module")
def grpc_served() -> Iterator[tuple[test_grpc.Served, Evaluator]]:
    with test_grpc.serving(Settings(host="127.0.0.1"), _Budgeted) as served:
        yield served, _Budgeted.last


def _binary(rows: int) -> dict[str, Any]:
    rng = np.random.default_rng(rows)
    return {
        "task": "binary",
        "labels": rng.integers(0, 2, rows).tolist(),
        "scores": rng.random(rows).round(6).tolist(),
    }


def _refused(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert "memory_budget_bytes" in error["message"]
    return error


def test_rest_refuses_a_body_that_could_never_fit_before_reading_it(
    rest: tuple[httpx.Client, Evaluator],
) -> None:
    client, evaluator = rest
    body = orjson.dumps(_binary(10))
    # A declared length whose read cost is over the budget: refused on the headers alone.
    declared = BUDGET // 2 + MIB
    assert COST_MODEL.read(declared) > BUDGET
    response = client.post(
        "/v1/evaluate",
        content=body + b" " * (declared - len(body)),
        headers={"content-type": "application/json"},
    )
    error = _refused(response, 413)
    assert (error["code"], error["field"]) == ("too_large", "body")
    assert evaluator.budget.reserved == 0


def test_rest_answers_busy_with_retry_after_while_the_budget_is_taken(
    rest: tuple[httpx.Client, Evaluator],
) -> None:
    client, evaluator = rest
    body = _binary(1000)
    with evaluator.budget.reservation() as taken:
        taken.resize(BUDGET - COST_MODEL.read(10))
        busy = client.post("/v1/evaluate", json=body)
        error = _refused(busy, 503)
        assert error["code"] == "unavailable"
        assert busy.headers["retry-after"] == "1"
        stream = client.post(
            "/v1/evaluate/stream",
            content=b'{"task": "binary"}\n{"labels": [0, 1], "scores": [0.2, 0.8]}\n',
            headers={"content-type": "application/x-ndjson"},
        )
        assert _refused(stream, 503)["field"] == "line 1"
    answered = client.post("/v1/evaluate", json=body)  # once the memory is free again
    assert answered.status_code == 200
    assert evaluator.budget.reserved == 0


def test_rest_reserves_a_chunked_body_as_it_arrives(
    rest: tuple[httpx.Client, Evaluator],
) -> None:
    client, evaluator = rest
    host, port = str(client.base_url.host), int(client.base_url.port or 80)
    chunk = b" " * MIB
    sent = 0
    with socket.create_connection((host, port), timeout=30) as connection:
        connection.sendall(
            b"POST /v1/evaluate HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            b"transfer-encoding: chunked\r\n\r\n"
        )
        # White space without end, until the server answers (no Content-Length: it reserves
        # as the body arrives, and refuses once the read cost passes the budget).
        while not select.select([connection], [], [], 0)[0]:
            connection.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            sent += len(chunk)
            assert sent < 4 * BUDGET, "the server read on past its budget"
        answer = b""
        while b"memory_budget_bytes" not in answer and (part := connection.recv(65536)):
            answer += part
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"memory_budget_bytes" in answer
    # the read cost of what it received passed the budget (give or take socket buffers)
    assert COST_MODEL.read(sent - 16 * MIB) < 2 * BUDGET
    assert evaluator.budget.reserved == 0


def test_a_stream_whose_state_outgrows_the_budget_is_refused_at_its_batch(
    rest: tuple[httpx.Client, Evaluator],
) -> None:
    client, evaluator = rest
    rng = np.random.default_rng(7)
    lines = [orjson.dumps({"task": "binary"})]
    rows = 400_000  # 16 bytes of state a distinct score: 6.4 MB a batch
    for _ in range(BUDGET // (16 * rows) + 2):
        batch = {"labels": rng.integers(0, 2, rows).tolist(), "scores": rng.random(rows).tolist()}
        lines.append(orjson.dumps(batch))
    response = client.post(
        "/v1/evaluate/stream",
        content=b"\n".join(lines),
        headers={"content-type": "application/x-ndjson"},
    )
    error = _refused(response, 413)
    assert error["field"].startswith("line ")
    assert int(error["field"].split()[1]) > 2  # the early batches fitted
    assert evaluator.budget.reserved == 0


def test_grpc_caps_messages_to_their_share_and_answers_busy_with_a_hint(
    grpc_served: tuple[test_grpc.Served, Evaluator],
) -> None:
    served, evaluator = grpc_served
    # No message is larger than half the share of the budget its call reserves first.
    limit = grpc_message_limit(Settings().max_request_bytes, BUDGET, evaluator.max_inflight)
    assert limit == receive_share(BUDGET, evaluator.max_inflight) // 2 < BUDGET
    rows = limit // 8
    big = pb.EvaluateRequest(task=pb.TASK_BINARY, labels=[0, 1] * (rows // 2), scores=[0.5] * rows)
    assert big.ByteSize() > limit
    with pytest.raises(grpc.RpcError) as never:
        served.stub.Evaluate(big, timeout=60)
    assert never.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert f"vs. {limit})" in (never.value.details() or "")
    # and none over GRPC_MESSAGE_CAP, whatever the budget: grpcio copies a message holding
    # the interpreter lock
    assert grpc_message_limit(1 << 40, 1 << 40, 1) == GRPC_MESSAGE_CAP
    small = pb.EvaluateRequest(task=pb.TASK_BINARY, labels=[0, 1], scores=[0.2, 0.7])
    with evaluator.budget.reservation() as taken:
        taken.resize(BUDGET - MIB)
        with pytest.raises(grpc.RpcError) as busy:
            served.stub.Evaluate(small, timeout=60)
        assert busy.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "retry later" in (busy.value.details() or "")
        # when: a RetryInfo detail and gRFC A6's pushback trailer, as REST's Retry-After
        assert test_grpc.retry_hint(busy.value) == (1.0, "1000")
        with pytest.raises(grpc.RpcError) as busy_stream:
            served.stub.EvaluateStream(
                iter([pb.EvaluateStreamRequest(header=pb.StreamHeader(task=pb.TASK_BINARY))]),
                timeout=60,
            )
        assert busy_stream.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert test_grpc.retry_hint(busy_stream.value) == (1.0, "1000")
    assert served.stub.Evaluate(small, timeout=60).metrics["roc_auc"] == 1.0
    assert evaluator.budget.reserved == 0


# --- the cost model against bench/memory_cost.py's measurements ---------------------------------

MEASURED = json.loads(
    (Path(__file__).resolve().parents[2] / "bench" / "memory_cost.json").read_text("utf-8")
)


@pytest.mark.parametrize("figure", MEASURED, ids=[f"{f['task']}-{f['encoding']}" for f in MEASURED])
def test_the_cost_model_covers_every_measured_peak(figure: dict[str, Any]) -> None:
    """Every step's reservation, by today's COST_MODEL for the inputs the bench measured, is at
    least the peak it measured there: lowering a factor below a measurement fails here."""
    task, encoding = figure["task"], figure["encoding"]
    if encoding == "ndjson":
        assert COST_MODEL.result(task, figure["state_bytes"]) >= figure["result_peak"]
        return
    body = figure["body_bytes"]
    decode = COST_MODEL.decode(encoding, body, figure["values"], figure["strings"])
    assert decode >= figure["decode_peak"]
    assert COST_MODEL.evaluation(task, figure["input_bytes"], body) >= figure["eval_peak"]


def test_the_measurements_cover_every_task_and_encoding() -> None:
    from evalserve.core import TASKS

    measured = {(f["task"], f["encoding"]) for f in MEASURED}
    assert measured == {(t, e) for t in TASKS for e in ("json", "protobuf", "ndjson")}
    assert min(f["input_bytes"] for f in MEASURED) > 16 * MIB  # not a quick run's
