"""The stream doors' cost per batch, and a stream's state size, for bench/stream_cost.py.

Two measurements of the service's own stream handling (the core's is the other part of
bench/stream_cost.py):

1. **Cost per batch.** A real server (``python -m evalserve.service`` on loopback, default
   settings) takes a header and then ``n`` one-row binary batches (labels 0/1, 97 distinct
   scores) on each stream door: REST NDJSON (one body, every batch a line) and a gRPC
   ``EvaluateStream`` call (every batch a message). Target: the cost per batch of 20,000
   batches at most 1.3 times that of 500 batches (best of ``repeats`` runs each, the two sizes
   interleaved, one server): a stream's cost must not grow with the batches already taken.
2. **State size.** 1,000,000 rows of 100 distinct scores in 10,000 batches, through the use
   case's ``StreamAccumulator`` with the server's default settings (the object both doors feed,
   in this process, so that its state can be read after every batch): the largest state
   (``state_bytes``, which the stream's memory reservation keeps between batches) must stay
   under 1 MiB, and the result must equal ``evaluate`` on all the rows.
"""

from __future__ import annotations

import functools
import http.client
import time
from collections.abc import Callable, Iterator

import grpc
import numpy as np
import orjson
from service_bench import ServerProcess, start_service
from timing import Row, progress

from evalserve.core import evaluate
from evalserve.service.config import Settings
from evalserve.service.json_codec import stream_line_from_json
from evalserve.service.json_parse import parse_json
from evalserve.service.streams import StreamAccumulator
from evalserve.v1 import evaluation_pb2 as pb

SHORT, LONG = 500, 20_000
PER_BATCH_TARGET = 1.3
STATE_ROWS, STATE_BATCHES, STATE_DISTINCT = 1_000_000, 10_000, 100
STATE_TARGET = 1 << 20
SCORES = [round(index / 96, 6) for index in range(97)]
STREAM_METHOD = "/evalserve.v1.EvaluationService/EvaluateStream"
CALL_TIMEOUT = 600.0


def ndjson_body(batches: int) -> bytes:
    lines = [orjson.dumps({"task": "binary"})]
    lines += [
        orjson.dumps({"labels": [index % 2], "scores": [SCORES[index % 97]]})
        for index in range(batches)
    ]
    return b"\n".join(lines) + b"\n"


def grpc_messages(batches: int) -> Iterator[bytes]:
    yield pb.EvaluateStreamRequest(header=pb.StreamHeader(task=pb.TASK_BINARY)).SerializeToString()
    for index in range(batches):
        message = pb.EvaluateStreamRequest(labels=[index % 2], scores=[SCORES[index % 97]])
        yield message.SerializeToString()


def _ndjson(server: ServerProcess, body: bytes) -> float:
    connection = http.client.HTTPConnection(server.host, server.rest_port, timeout=CALL_TIMEOUT)
    try:
        start = time.perf_counter()
        connection.request(
            "POST", "/v1/evaluate/stream", body=body,
            headers={"Content-Type": "application/x-ndjson"},
        )  # fmt: skip
        response = connection.getresponse()
        content = response.read()
        elapsed = time.perf_counter() - start
    finally:
        connection.close()
    if response.status != 200:
        raise RuntimeError(f"NDJSON stream: HTTP {response.status}: {content[:300]!r}")
    return elapsed


def _grpc(server: ServerProcess, messages: list[bytes]) -> float:
    with grpc.insecure_channel(f"{server.host}:{server.grpc_port}") as channel:
        call: grpc.StreamUnaryMultiCallable[bytes, pb.EvaluateResponse] = channel.stream_unary(
            STREAM_METHOD,
            request_serializer=None,
            response_deserializer=pb.EvaluateResponse.FromString,
        )
        start = time.perf_counter()
        call(iter(messages), timeout=CALL_TIMEOUT)
        return time.perf_counter() - start


def _best(calls: dict[int, Callable[[], float]], repeats: int) -> dict[int, float]:
    """Each call's best time over ``repeats`` rounds, the calls interleaved."""
    best = dict.fromkeys(calls, float("inf"))
    for _ in range(repeats):
        for size, call in calls.items():
            best[size] = min(best[size], call())
    return best


def per_batch_rows(repeats: int, quick: bool) -> list[Row]:
    long = LONG // 10 if quick else LONG
    server = start_service(2)
    rows: list[Row] = []
    try:
        for door in ("REST NDJSON", "gRPC stream"):
            progress(f"{door}: {SHORT:,} and {long:,} one-row batches ...")
            calls: dict[int, Callable[[], float]] = {}
            for size in (SHORT, long):
                if door == "REST NDJSON":
                    calls[size] = functools.partial(_ndjson, server, ndjson_body(size))
                else:
                    calls[size] = functools.partial(_grpc, server, list(grpc_messages(size)))
            best = _best(calls, repeats)
            short, longer = best[SHORT] / SHORT, best[long] / long
            rows.append(
                Row(
                    f"{door}: cost per batch, {long:,} / {SHORT:,} one-row batches",
                    long,
                    best[long],
                    f"{SHORT:,} batches",
                    best[SHORT],
                    longer / short,
                    PER_BATCH_TARGET,
                    gate=True,
                )
            )
    finally:
        server.stop()
    return rows


def state_rows(seed: int) -> tuple[Row, str]:
    """The largest state of a stream of repeated scores, and a line on its answer."""
    rng = np.random.default_rng(seed)
    labels = (rng.random(STATE_ROWS) < 0.3).astype(np.int64)
    scores = rng.integers(0, STATE_DISTINCT, STATE_ROWS) / STATE_DISTINCT
    settings = Settings()
    progress(f"state of {STATE_ROWS:,} rows in {STATE_BATCHES:,} batches ...")
    header, _ = stream_line_from_json({"task": "binary"}, settings)
    assert header is not None
    stream = StreamAccumulator(header, settings)
    largest = 0
    size = STATE_ROWS // STATE_BATCHES
    start = time.perf_counter()
    for first in range(0, STATE_ROWS, size):
        line = orjson.dumps(
            {"labels": labels[first : first + size], "scores": scores[first : first + size]},
            option=orjson.OPT_SERIALIZE_NUMPY,
        )
        _, batch = stream_line_from_json(parse_json(line), settings)
        stream.add(batch, held_bytes=len(line))
        largest = max(largest, stream.state_bytes)
    result = stream.finish()
    elapsed = time.perf_counter() - start
    whole = evaluate("binary", labels, scores)
    same = all(
        value == result.metrics[name] or (value is None and result.metrics[name] is None)
        for name, value in whole.metrics.items()
    )
    row = Row(
        f"stream state: {STATE_ROWS:,} rows, {STATE_DISTINCT} distinct scores, "
        f"{STATE_BATCHES:,} batches (largest state, MiB)",
        STATE_ROWS,
        elapsed,
        "limit 1 MiB",
        None,
        largest / STATE_TARGET,
        1.0,
        gate=True,
    )
    note = (
        f"largest state {largest:,} bytes ({largest / STATE_TARGET:.3f} MiB) over the stream; "
        f"its metrics {'equal' if same else 'DIFFER FROM'} `evaluate` on all the rows"
    )
    if not same:
        raise AssertionError(note)
    return row, note
