"""Benchmark of the running service against its performance targets.

The service runs as users start it, in its own process on loopback:
``python -m evalserve.service --rest-port 0 --grpc-port 0 --workers 2`` (the ports are read from its
``evalserve: REST on http://HOST:PORT, gRPC on HOST:PORT`` line; SIGTERM stops it at the end).
Every ratio compares timings of the same run, on the same data:

1. One request of 1 million binary rows (10% positives, float64 scores), end to end (client
   encode, loopback, server, client decode of the response), against the in-process
   ``core.evaluate`` on the same rows: gRPC ``Evaluate`` with raw ``labels_f64``/``scores_f64``
   bytes and with packed repeated fields, and ``POST /v1/evaluate`` with a protobuf body, each at
   most 1.5x the core; ``POST /v1/evaluate`` with a JSON body at most core + 1.5x
   ``orjson.loads`` of that body. Best of ``--repeats`` interleaved rounds after a warm-up, as in
   ``bench/binary_core.py``; the server's own stages are then timed in this process
   (decode, core, encode) to show where the time goes.
2. ``--stream-rows`` rows (100 million) streamed over gRPC ``EvaluateStream`` in batches of 1
   million rows (raw bytes, generated on the fly by the client), once with practically all
   scores distinct and once rounded to 4 decimals: total time, rows/s, the server's resident
   memory before the stream and its peak (``VmHWM``) after. Each stream gets a fresh server
   process, so its peak is its own.
3. Small requests (1 000 rows, the full default suite): requests/s and p50/p99 latency of
   ``--clients`` concurrent clients (threads of this process, each with its own connection;
   the same pre-encoded payload in every request) over gRPC and over REST with JSON, against a
   naive FastAPI endpoint that calls scikit-learn's metric functions for the same suite (served
   from this script, in another process, by uvicorn on loopback), in its two usual spellings:
   a ``def`` endpoint (FastAPI's thread pool) and an ``async def`` one. Ours at least 5x the
   requests/s of the faster of the two, on both transports.

    python bench/service_bench.py                       # the full run (several minutes)
    python bench/service_bench.py --quick               # smoke test: small sizes, writes nothing
    python bench/service_bench.py --stream-rows 10000000 --part stream
    python bench/service_bench.py --clients 16 --small-seconds 10 --part small

Options: ``--rows`` (1M), ``--repeats`` (5), ``--stream-rows`` (100M), ``--clients`` (8),
``--small-seconds`` (5) x ``--small-rounds`` (2), ``--part {evaluate,stream,small}`` (repeat it;
default all), ``--no-fail``, ``--results PATH``.

The script prints its tables and, after a full run of every part, rewrites its own section of
``bench/RESULTS.md`` (``--results PATH`` writes elsewhere, also after ``--quick`` or
``--part``). It exits with status 1 when a target fails, unless ``--no-fail``; ``--quick``
never fails (its sizes are too small for the targets to mean anything).
"""

from __future__ import annotations

import sys
from pathlib import Path

# The checkout this script belongs to goes first on sys.path, so it measures this tree's core
# and service even where another copy is installed.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import base64
import datetime as dt
import http.client
import math
import os
import re
import resource
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import fastapi
import grpc
import numpy as np
import orjson
import pydantic
import uvicorn
from google.protobuf import __version__ as protobuf_version
from machine import machine_description
from numpy.typing import NDArray
from results_md import RESULTS_PATH, write_section
from sklearn import metrics as sk_metrics
from timing import Usage, best_runs, load_average, progress, warn_if_busy

from evalserve.core import EvaluationResult, evaluate
from evalserve.service.budget import MemoryBudget
from evalserve.service.config import Settings
from evalserve.service.encode import result_to_proto
from evalserve.service.json_codec import request_from_json
from evalserve.service.json_parse import parse_json
from evalserve.service.memory import retain_freed_memory
from evalserve.service.proto_codec import request_from_proto
from evalserve.service.rest import payload_codec
from evalserve.service.usecase import evaluate_payload, evaluate_request
from evalserve.v1 import evaluation_pb2 as pb

SECTION_TITLE = "service (bench/service_bench.py)"
SCRIPT = "bench/service_bench.py"
REPO = Path(__file__).resolve().parent.parent

DEFAULT_ROWS = 1_000_000
DEFAULT_STREAM_ROWS = 100_000_000
STREAM_BATCH_ROWS = 1_000_000
SMALL_ROWS = 1_000
POSITIVE_RATE = 0.1
STREAM_DECIMALS = 4
SERVER_WORKERS = 2

UNARY_LIMIT = 1.5  # x core.evaluate
JSON_LOADS_FACTOR = 1.5  # the JSON budget: core + 1.5x orjson.loads of the body
SMALL_SPEEDUP = 5.0  # x the naive endpoint's requests/s
ROUNDED_PEAK_INFO_MIB = 512  # "memory stays small": peak - before, reported only

READY_LINE = re.compile(
    r"REST on http://(?P<host>[^\s:]+):(?P<rest>\d+), gRPC on \S+:(?P<grpc>\d+)"
)
NAIVE_READY_LINE = re.compile(r"naive: REST on http://(?P<host>[^\s:]+):(?P<rest>\d+)")
START_TIMEOUT = 60.0
STOP_TIMEOUT = 60.0
CALL_TIMEOUT = 600.0  # seconds: one unary call; a stream gets this per million rows
PARTS = ("evaluate", "stream", "small")

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["EvaluationService"].full_name
EVALUATE_METHOD = f"/{SERVICE_NAME}/Evaluate"
EVALUATE_PATH = "/v1/evaluate"
NAIVE_INLINE_PATH = "/v1/evaluate-inline"  # the naive endpoint as `async def`
NAIVE_NAMES = (
    "naive FastAPI + scikit-learn (def, thread pool), REST JSON",
    "naive FastAPI + scikit-learn (async def, on the loop), REST JSON",
)
JSON = "application/json"
PROTOBUF = "application/x-protobuf"
# The client accepts any message size (a 1M-row request is 16 MB; the default cap is 4 MiB).
CHANNEL_OPTIONS = (("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1))

Floats = NDArray[np.float64]
Task = Callable[[], object]


# --- data and wire formats ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Rows:
    """Binary rows as the service receives them: float64 0/1 labels, float64 scores."""

    labels: Floats
    scores: Floats

    @property
    def n(self) -> int:
        return int(self.labels.size)


def make_rows(n: int, seed: int) -> Rows:
    """Exactly 10% positives at random rows; scores are the logistic of a unit normal shifted
    by 1.5 for positives (as bench/binary_core.py: in (0, 1), practically all distinct)."""
    rng = np.random.default_rng(seed)
    labels = np.zeros(n, dtype=np.float64)
    labels[: round(n * POSITIVE_RATE)] = 1.0
    rng.shuffle(labels)
    return Rows(labels, _logistic_scores(rng, labels))


def _logistic_scores(rng: np.random.Generator, labels: Floats) -> Floats:
    logits = rng.standard_normal(labels.size)
    logits += 1.5 * labels
    np.negative(logits, out=logits)
    np.exp(logits, out=logits)
    logits += 1.0
    return np.reciprocal(logits, out=logits)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _packed_doubles(message: type[Any], name: str, values: Floats) -> bytes:
    """A packed ``repeated double`` field on the wire: tag, length, the little-endian values."""
    number = message.DESCRIPTOR.fields_by_name[name].number
    payload = values.astype("<f8", copy=False).tobytes()
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def raw_request(rows: Rows) -> pb.EvaluateRequest:
    """The fast form: raw little-endian float64 bytes (``labels_f64``, ``scores_f64``)."""
    return pb.EvaluateRequest(
        task=pb.TASK_BINARY,
        labels_f64=rows.labels.astype("<f8", copy=False).tobytes(),
        scores_f64=rows.scores.astype("<f8", copy=False).tobytes(),
    )


def packed_request_bytes(rows: Rows) -> bytes:
    """The packed repeated fields ``labels`` and ``scores``, encoded at the wire level: the
    numpy bytes spliced in after the message's other fields. The bytes parse to the same
    message as ``packed_request_api`` builds (checked), at the cost of one copy."""
    head = pb.EvaluateRequest(task=pb.TASK_BINARY).SerializeToString()
    return b"".join(
        (
            head,
            _packed_doubles(pb.EvaluateRequest, "labels", rows.labels),
            _packed_doubles(pb.EvaluateRequest, "scores", rows.scores),
        )
    )


def packed_request_api(rows: Rows) -> pb.EvaluateRequest:
    """The packed repeated fields filled through the protobuf API (its fastest way found:
    the constructor with Python lists; ``extend`` with the numpy array is slower)."""
    return pb.EvaluateRequest(
        task=pb.TASK_BINARY, labels=rows.labels.tolist(), scores=rows.scores.tolist()
    )


def json_body(rows: Rows) -> bytes:
    """The JSON body: labels as integers 0/1, scores as shortest round-trip decimals."""
    document = {"task": "binary", "labels": rows.labels.astype(np.int64), "scores": rows.scores}
    return orjson.dumps(document, option=orjson.OPT_SERIALIZE_NUMPY)


def json_base64_body(rows: Rows) -> bytes:
    """The JSON body with the columns as base64 of the raw float64 bytes (``labels_f64``,
    ``scores_f64``): the API's fast form inside JSON."""
    document = {"task": "binary"}
    for name, column in (("labels_f64", rows.labels), ("scores_f64", rows.scores)):
        raw = column.astype("<f8", copy=False).tobytes()
        document[name] = base64.b64encode(raw).decode("ascii")
    return orjson.dumps(document)


def _loads_and_free(body: bytes) -> None:
    """``orjson.loads`` and then the freeing of its millions of Python objects, which the
    server pays within the request (``measured`` frees results after the clock stopped)."""
    document = orjson.loads(body)
    del document


def decode_response(response: pb.EvaluateResponse) -> dict[str, Any]:
    """What a client does with the answer: the metrics as a dict, the curves as arrays."""
    roc, pr = response.curves.roc, response.curves.pr
    return {
        "n_samples": response.n_samples,
        "metrics": dict(response.metrics),
        "undefined": dict(response.undefined),
        "curves": {
            "roc": [np.asarray(v, dtype=np.float64) for v in (roc.fpr, roc.tpr, roc.thresholds)],
            "pr": [
                np.asarray(v, dtype=np.float64) for v in (pr.precision, pr.recall, pr.thresholds)
            ],
        },
    }


# --- processes --------------------------------------------------------------------------------


@dataclass
class ServerProcess:
    """A server in a child process of this script: its ports, memory and CPU time."""

    name: str
    process: subprocess.Popen[str]
    host: str
    rest_port: int
    grpc_port: int | None
    log: list[str] = field(default_factory=list)
    # Exit statuses after SIGTERM that mean a graceful stop: uvicorn on its own re-raises the
    # signal once it has shut down, so the naive endpoint ends with -SIGTERM.
    clean_exits: tuple[int, ...] = (0,)

    @staticmethod
    def start(name: str, command: Sequence[str], ready: re.Pattern[str]) -> ServerProcess:
        """Start ``command`` and wait, bounded, for its ready line on stderr."""
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        process = subprocess.Popen(
            list(command),
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert process.stderr is not None
        lines: list[str] = []
        found: re.Match[str] | None = None
        timer = threading.Timer(START_TIMEOUT, process.kill)  # unblocks readline
        timer.start()
        try:
            for line in process.stderr:
                lines.append(line)
                found = ready.search(line)
                if found:
                    break
        finally:
            timer.cancel()
        if found is None:
            process.kill()
            process.wait()
            raise RuntimeError(f"{name} did not start: {''.join(lines)[-2000:]}")
        server = ServerProcess(
            name,
            process,
            found["host"],
            int(found["rest"]),
            int(found["grpc"]) if "grpc" in found.groupdict() else None,
            lines,
        )
        threading.Thread(target=server._drain, daemon=True).start()
        return server

    def _drain(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.log.append(line)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def grpc_target(self) -> str:
        return f"{self.host}:{self.grpc_port}"

    def status_kib(self, key: str) -> int:
        """A ``kB`` field of /proc/<pid>/status (VmRSS, VmHWM)."""
        for line in Path(f"/proc/{self.pid}/status").read_text(encoding="utf-8").splitlines():
            if line.startswith(f"{key}:"):
                return int(line.split()[1])
        raise KeyError(key)

    def cpu_seconds(self) -> float:
        """User + system CPU time of the server process so far."""
        text = Path(f"/proc/{self.pid}/stat").read_text(encoding="utf-8")
        fields = text.rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> bool:
        """SIGTERM, then wait (bounded); SIGKILL if it did not exit. Whether it stopped
        cleanly (a clean exit status; else the status and its last lines are printed)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                progress(f"{self.name} did not stop within {STOP_TIMEOUT:.0f} s; killing it")
                self.process.kill()
                self.process.wait()
        status = self.process.returncode
        if status in self.clean_exits:
            return True
        progress(f"{self.name} exited with status {status}: {''.join(self.log[-10:])}")
        return False


def start_service(workers: int, *flags: str) -> ServerProcess:
    command = [sys.executable, "-m", "evalserve.service", "--host", "127.0.0.1", "--rest-port", "0",
               "--grpc-port", "0", "--workers", str(workers), *flags]  # fmt: skip
    return ServerProcess.start("evalserve", command, READY_LINE)


def start_naive() -> ServerProcess:
    command = [sys.executable, str(Path(__file__).resolve()), "--serve-naive"]
    server = ServerProcess.start("the naive endpoint", command, NAIVE_READY_LINE)
    server.clean_exits = (0, -signal.SIGTERM)
    return server


def process_cpu() -> float:
    """User + system CPU time of this (the client) process so far, all threads."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# --- clients ------------------------------------------------------------------------------------


class RestClient:
    """One keep-alive HTTP/1.1 connection (http.client: little client overhead)."""

    def __init__(self, host: str, port: int) -> None:
        self.connection = http.client.HTTPConnection(host, port, timeout=CALL_TIMEOUT)

    def post(self, body: bytes, content_type: str, path: str = EVALUATE_PATH) -> bytes:
        self.connection.request("POST", path, body=body, headers={"Content-Type": content_type})
        response = self.connection.getresponse()
        content = response.read()
        if response.status != 200:
            raise RuntimeError(f"POST {path}: HTTP {response.status}: {content[:500]!r}")
        return content

    def close(self) -> None:
        self.connection.close()


class GrpcClient:
    """One channel to the service; ``evaluate_bytes`` sends a request already serialized."""

    def __init__(self, target: str) -> None:
        self.channel = grpc.insecure_channel(target, options=CHANNEL_OPTIONS)
        grpc.channel_ready_future(self.channel).result(timeout=START_TIMEOUT)
        self.evaluate = self.channel.unary_unary(
            EVALUATE_METHOD,
            request_serializer=pb.EvaluateRequest.SerializeToString,
            response_deserializer=pb.EvaluateResponse.FromString,
        )
        self.evaluate_bytes: grpc.UnaryUnaryMultiCallable[bytes, pb.EvaluateResponse]
        self.evaluate_bytes = self.channel.unary_unary(
            EVALUATE_METHOD,
            request_serializer=None,  # bytes as they are
            response_deserializer=pb.EvaluateResponse.FromString,
        )
        self.evaluate_stream = self.channel.stream_unary(
            f"/{SERVICE_NAME}/EvaluateStream",
            request_serializer=pb.EvaluateStreamRequest.SerializeToString,
            response_deserializer=pb.EvaluateResponse.FromString,
        )

    def close(self) -> None:
        self.channel.close()


# --- the results tables -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Verdict:
    """One target: what was measured against what, and whether it passed."""

    target: str
    measured: str
    passed: bool
    gate: bool

    @property
    def status(self) -> str:
        if self.gate:
            return "pass" if self.passed else "FAIL"
        return "pass (info)" if self.passed else "fail (info)"

    @property
    def failed(self) -> bool:
        return self.gate and not self.passed


@dataclass(frozen=True, slots=True)
class TimeRow:
    scenario: str
    ours: float
    reference: float
    limit: float | None  # None: reported only
    gate: bool = False

    @property
    def ratio(self) -> float:
        return self.ours / self.reference

    @property
    def verdict(self) -> Verdict | None:
        if self.limit is None:
            return None
        passed = self.ratio <= self.limit
        return Verdict(self.scenario, f"{self.ratio:.2f}x <= {self.limit:g}x", passed, self.gate)


@dataclass(frozen=True, slots=True)
class StreamRow:
    variant: str
    rows: int
    batches: int
    seconds: float
    rss_before_kib: int
    hwm_kib: int
    server_cpu: float
    client_cpu: float
    n_samples: int
    completed: bool
    gate: bool
    peak_limit_mib: float | None = None  # "stays small": reported only

    @property
    def growth_mib(self) -> float:
        return (self.hwm_kib - self.rss_before_kib) / 1024

    @property
    def verdicts(self) -> list[Verdict]:
        done = Verdict(
            f"stream {self.rows:,} rows, {self.variant}: completes",
            f"{self.n_samples:,} rows evaluated",
            self.completed,
            self.gate,
        )
        if self.peak_limit_mib is None:
            return [done]
        small = Verdict(
            f"stream, {self.variant}: peak - before <= {self.peak_limit_mib:g} MiB",
            f"{self.growth_mib:,.0f} MiB",
            self.growth_mib <= self.peak_limit_mib,
            gate=False,
        )
        return [done, small]


@dataclass(frozen=True, slots=True)
class LoadResult:
    requests: int
    seconds: float
    latencies: Floats  # seconds
    server_cpu: float
    client_cpu: float

    @property
    def throughput(self) -> float:
        return self.requests / self.seconds

    def percentile(self, q: float) -> float:
        return float(np.percentile(self.latencies, q))


@dataclass(frozen=True, slots=True)
class LoadRow:
    name: str
    result: LoadResult
    naive: float | None  # the naive endpoint's requests/s, for ours
    gate: bool

    @property
    def verdict(self) -> Verdict | None:
        if self.naive is None:
            return None
        speedup = self.result.throughput / self.naive
        return Verdict(
            f"small requests, {self.name} vs the faster naive: requests/s >= {SMALL_SPEEDUP:g}x",
            f"{speedup:.2f}x",
            speedup >= SMALL_SPEEDUP,
            self.gate,
        )


# --- 1. one request of a million rows --------------------------------------------------------


def _check_same(
    name: str, metrics: Mapping[str, Any], n_samples: int, core: EvaluationResult
) -> None:
    if n_samples != core.n_samples:
        raise AssertionError(f"{name}: n_samples {n_samples} but the core says {core.n_samples}")
    for metric in ("roc_auc", "average_precision", "log_loss", "mcc"):
        ours, expected = metrics.get(metric), core.metrics.get(metric)
        if expected is None or ours is None or not math.isclose(ours, expected, rel_tol=1e-12):
            raise AssertionError(f"{name}: {metric} {ours!r} but the core says {expected!r}")


def bench_evaluate(
    server: ServerProcess, rows: Rows, repeats: int, *, gate: bool
) -> tuple[list[TimeRow], dict[str, Usage], str]:
    """The rows of the table, the in-process stage timings and where the JSON request's time
    goes."""
    client = GrpcClient(server.grpc_target)
    rest = RestClient(server.host, server.rest_port)
    body = json_body(rows)
    labels, scores = rows.labels, rows.scores
    names = {
        "core": "core.evaluate (in-process)",
        "grpc raw": "gRPC Evaluate, raw bytes",
        "grpc packed": "gRPC Evaluate, packed (wire-level encode)",
        "grpc packed api": "gRPC Evaluate, packed (protobuf API encode)",
        "rest proto": "REST protobuf, raw bytes",
        "rest proto packed": "REST protobuf, packed (wire-level encode)",
        "rest json": "REST JSON",
        "rest json b64": "REST JSON, base64 labels_f64/scores_f64",
        "loads": "orjson.loads of the JSON body",
    }
    tasks: dict[str, Task] = {
        names["core"]: lambda: evaluate("binary", labels, scores),
        names["grpc raw"]: lambda: decode_response(client.evaluate(raw_request(rows))),
        names["grpc packed"]: lambda: decode_response(
            client.evaluate_bytes(packed_request_bytes(rows))
        ),
        names["grpc packed api"]: lambda: decode_response(
            client.evaluate(packed_request_api(rows))
        ),
        names["rest proto"]: lambda: decode_response(
            pb.EvaluateResponse.FromString(
                rest.post(raw_request(rows).SerializeToString(), PROTOBUF)
            )
        ),
        names["rest proto packed"]: lambda: decode_response(
            pb.EvaluateResponse.FromString(rest.post(packed_request_bytes(rows), PROTOBUF))
        ),
        names["rest json"]: lambda: orjson.loads(rest.post(json_body(rows), JSON)),
        names["rest json b64"]: lambda: orjson.loads(rest.post(json_base64_body(rows), JSON)),
        names["loads"]: lambda: orjson.loads(body),
    }

    def check(first: Mapping[str, object]) -> None:
        core = first[names["core"]]
        assert isinstance(core, EvaluationResult)
        for name in tasks:
            if name not in (names["core"], names["loads"]):
                answer = first[name]  # decode_response's dict, or the JSON response body
                assert isinstance(answer, dict)
                _check_same(name, answer["metrics"], answer["n_samples"], core)
        spliced = pb.EvaluateRequest.FromString(packed_request_bytes(rows))
        if spliced != packed_request_api(rows):
            raise AssertionError("the wire-level packed encoding is not the protobuf message")

    progress(f"1. one request of {rows.n:,} rows, end to end (best of {repeats}) ...")
    usage = best_runs(tasks, repeats, check=check)
    client.close()
    rest.close()
    times = {key: usage[name].wall for key, name in names.items()}
    core, loads = times["core"], times["loads"]
    budget = core + JSON_LOADS_FACTOR * loads
    json_budget = f"(core {core:.3f} + {JSON_LOADS_FACTOR:g}x orjson.loads {loads:.3f})"
    results = [
        TimeRow(f"{names['grpc raw']} / core", times["grpc raw"], core, UNARY_LIMIT, gate),
        TimeRow(f"{names['grpc packed']} / core", times["grpc packed"], core, UNARY_LIMIT, gate),
        TimeRow(f"{names['grpc packed api']} / core", times["grpc packed api"], core, UNARY_LIMIT),
        TimeRow(f"{names['rest proto']} / core", times["rest proto"], core, UNARY_LIMIT, gate),
        TimeRow(
            f"{names['rest proto packed']} / core", times["rest proto packed"], core, UNARY_LIMIT
        ),
        TimeRow(
            f"{names['rest json']} / {json_budget}",
            times["rest json"],
            budget,
            1.0,
            gate,
        ),
        TimeRow(
            f"{names['rest json b64']} / {json_budget}",
            times["rest json b64"],
            budget,
            1.0,
        ),
        TimeRow(f"{names['loads']} ({len(body) / 1e6:.1f} MB) / core", loads, core, None),
    ]
    stages = bench_stages(rows, repeats)
    client_side = stages[STAGE_JSON_ENCODE].wall + stages[STAGE_JSON_DECODE].wall
    results.insert(
        6,
        TimeRow(
            f"{names['rest json']} less the client's encode and decode (derived) / {json_budget}",
            times["rest json"] - client_side,
            budget,
            1.0,
        ),
    )
    breakdown = json_breakdown(times["rest json"], loads, stages, len(body))
    return results, stages, breakdown


class _NoObserver:
    """The requests of this benchmark name no model: the service's observer records nothing
    for them beyond request counters, which the in-process stages leave out."""

    def evaluated(self, model: object, result: object) -> None:
        return None


NO_OBSERVER = _NoObserver()
# The stages are timed without a memory budget (nothing else runs).
UNBUDGETED = MemoryBudget(1 << 62)
STAGE_LOADS_FREE = "server: orjson.loads + freeing the parsed document"
STAGE_FROM_JSON = "server: request_from_json (lists to numpy)"
STAGE_PARSE_JSON = "server: parse_json (simdjson columns, the server's path)"
STAGE_REST_JSON = "server: REST off-loop work (usecase.evaluate_payload), JSON"
STAGE_CORE = "server: usecase.evaluate_request (the core)"
STAGE_RESULT_JSON = "server: orjson.dumps(result.to_dict())"
STAGE_JSON_ENCODE = "client: JSON body encode (orjson.dumps)"
STAGE_JSON_DECODE = "client: JSON response decode (orjson.loads)"


def json_breakdown(
    end_to_end: float, loads: float, stages: Mapping[str, Usage], body_bytes: int
) -> str:
    """One sentence: the JSON request's end-to-end time as the sum of its stages."""
    off_loop = stages[STAGE_REST_JSON].wall  # parse_json + request_from_json + core + encode
    parts = {
        "the client's encode": stages[STAGE_JSON_ENCODE].wall,
        "the server's parse, decode and response encode": off_loop - stages[STAGE_CORE].wall,
        "the core": stages[STAGE_CORE].wall,
        "the client's decode": stages[STAGE_JSON_DECODE].wall,
    }
    rest = end_to_end - sum(parts.values())
    terms = " + ".join(f"{name} {seconds:.3f}" for name, seconds in parts.items())
    return (
        f"REST JSON, {end_to_end:.3f} s end to end = {terms} + the rest {rest:.3f} (HTTP: "
        f"sending and parsing the {body_bytes / 1e6:.1f} MB body, the event loop, the thread "
        f"hop). Outside the core the request takes {end_to_end - stages[STAGE_CORE].wall:.3f}"
        f" s; the budget allows {JSON_LOADS_FACTOR:g}x orjson.loads = "
        f"{JSON_LOADS_FACTOR * loads:.3f} s."
    )


def bench_stages(rows: Rows, repeats: int) -> dict[str, Usage]:
    """The server's work on one request, stage by stage, timed in this process (a separate
    in-process instance: the same functions the server calls), and the client's encoding."""
    settings = Settings()
    protobuf_codec = payload_codec("protobuf", "protobuf", settings)
    json_codec = payload_codec("json", "json", settings)
    raw_body = raw_request(rows).SerializeToString()
    packed_body = packed_request_bytes(rows)
    body = json_body(rows)
    raw_message = pb.EvaluateRequest.FromString(raw_body)
    packed_message = pb.EvaluateRequest.FromString(packed_body)
    loaded = orjson.loads(body)
    decoded = request_from_proto(raw_message, settings)
    result = evaluate_request(decoded)
    response_proto = result_to_proto(result).SerializeToString()
    response_json = orjson.dumps(result.to_dict(), option=orjson.OPT_SERIALIZE_NUMPY)
    tasks: dict[str, Task] = {
        "server: protobuf parse (FromString), raw bytes": lambda: pb.EvaluateRequest.FromString(
            raw_body
        ),
        "server: protobuf parse (FromString), packed": lambda: pb.EvaluateRequest.FromString(
            packed_body
        ),
        "server: request_from_proto, raw bytes": lambda: request_from_proto(raw_message, settings),
        "server: request_from_proto, packed": lambda: request_from_proto(packed_message, settings),
        "server: orjson.loads (JSON body)": lambda: orjson.loads(body),
        STAGE_LOADS_FREE: lambda: _loads_and_free(body),
        STAGE_FROM_JSON: lambda: request_from_json(loaded, settings),
        STAGE_PARSE_JSON: lambda: parse_json(body),
        STAGE_CORE: lambda: evaluate_request(decoded),
        "server: encode.result_to_proto + SerializeToString": lambda: result_to_proto(
            result
        ).SerializeToString(),
        STAGE_RESULT_JSON: lambda: orjson.dumps(
            result.to_dict(), option=orjson.OPT_SERIALIZE_NUMPY
        ),
        "server: REST off-loop work (usecase.evaluate_payload), protobuf": lambda: evaluate_payload(
            raw_body, protobuf_codec, settings, NO_OBSERVER, UNBUDGETED.reservation()
        ),
        STAGE_REST_JSON: lambda: evaluate_payload(
            body, json_codec, settings, NO_OBSERVER, UNBUDGETED.reservation()
        ),
        "client: raw request encode (SerializeToString)": lambda: raw_request(
            rows
        ).SerializeToString(),
        "client: packed, wire-level encode": lambda: packed_request_bytes(rows),
        "client: packed, protobuf API encode": lambda: packed_request_api(rows).SerializeToString(),
        STAGE_JSON_ENCODE: lambda: json_body(rows),
        "client: protobuf response decode": lambda: decode_response(
            pb.EvaluateResponse.FromString(response_proto)
        ),
        STAGE_JSON_DECODE: lambda: orjson.loads(response_json),
    }
    progress(f"   the server's stages in this process (best of {repeats}) ...")
    return best_runs(tasks, repeats)


# --- 2. a long stream -------------------------------------------------------------------------


def stream_messages(
    rows: int, batch_rows: int, seed: int, decimals: int | None, sent: list[int]
) -> Iterator[pb.EvaluateStreamRequest]:
    """The header, then batches of ``batch_rows`` generated on the fly (about 10% positives);
    ``sent`` counts the rows handed to gRPC."""
    rng = np.random.default_rng(seed)
    for start in range(0, rows, batch_rows):
        n = min(batch_rows, rows - start)
        labels = (rng.random(n) < POSITIVE_RATE).astype(np.float64)
        scores = _logistic_scores(rng, labels)
        if decimals is not None:
            scores = np.round(scores, decimals, out=scores)
        message = pb.EvaluateStreamRequest(labels_f64=labels.tobytes(), scores_f64=scores.tobytes())
        if start == 0:
            message.header.task = pb.TASK_BINARY
        sent[0] += n
        yield message


def bench_stream(
    workers: int, rows: int, seed: int, decimals: int | None, *, gate: bool
) -> StreamRow:
    """One stream against a fresh server, so that the peak is this stream's."""
    variant = (
        "all scores distinct" if decimals is None else f"scores rounded to {decimals} decimals"
    )
    # All-distinct scores need the cap on a stream's state raised to 24 bytes a row.
    flags = () if decimals is not None else ("--max-stream-state-bytes", str(24 * rows))
    server = start_service(workers, *flags)
    try:
        client = GrpcClient(server.grpc_target)
        # One small call first, so the connection and the server's lazy imports are warm.
        client.evaluate(raw_request(make_rows(1000, seed)))
        time.sleep(0.5)
        rss_before = server.status_kib("VmRSS")
        sent = [0]
        batches = math.ceil(rows / STREAM_BATCH_ROWS)
        progress(f"2. streaming {rows:,} rows in {batches} batches, {variant} ...")
        server_cpu, client_cpu = server.cpu_seconds(), process_cpu()
        start = time.perf_counter()
        response = client.evaluate_stream(
            stream_messages(rows, STREAM_BATCH_ROWS, seed, decimals, sent),
            timeout=CALL_TIMEOUT * max(1.0, rows / 1e6),
        )
        seconds = time.perf_counter() - start
        server_cpu, client_cpu = server.cpu_seconds() - server_cpu, process_cpu() - client_cpu
        hwm = server.status_kib("VmHWM")
        client.close()
    finally:
        stopped = server.stop()
    return StreamRow(
        variant=variant,
        rows=rows,
        batches=batches,
        seconds=seconds,
        rss_before_kib=rss_before,
        hwm_kib=hwm,
        server_cpu=server_cpu,
        client_cpu=client_cpu,
        n_samples=response.n_samples,
        completed=stopped
        and response.n_samples == rows == sent[0]
        and "roc_auc" in response.metrics,
        gate=gate,
        peak_limit_mib=None if decimals is None else ROUNDED_PEAK_INFO_MIB,
    )


def stream_generation_seconds(batch_rows: int, seed: int) -> float:
    """The client's cost of generating and encoding one batch (best of 3), for context."""
    best = math.inf
    for attempt in range(3):
        sent = [0]
        start = time.perf_counter()
        for message in stream_messages(batch_rows, batch_rows, seed + attempt, None, sent):
            message.SerializeToString()
        best = min(best, time.perf_counter() - start)
    return best


# --- 3. small requests -----------------------------------------------------------------------


Call = Callable[[], object]


def load_run(make_call: Callable[[], tuple[Call, Callable[[], None]]], clients: int,
             seconds: float, server: ServerProcess) -> LoadResult:  # fmt: skip
    """``clients`` threads, each with its own connection (``make_call`` gives a call and a
    close), call as fast as they can for ``seconds`` (at most 1e6 calls each)."""
    barrier = threading.Barrier(clients + 1)
    deadline = [math.inf]
    latencies: list[list[float]] = [[] for _ in range(clients)]
    finished = [0.0] * clients
    errors: list[BaseException] = []

    def worker(index: int) -> None:
        call, close = make_call()
        own = latencies[index]
        try:
            barrier.wait()
            while len(own) < 1_000_000:
                begin = time.perf_counter()
                if begin >= deadline[0]:
                    break
                call()
                own.append(time.perf_counter() - begin)
        except BaseException as error:
            errors.append(error)
            raise
        finally:
            finished[index] = time.perf_counter()
            close()

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(clients)]
    for thread in threads:
        thread.start()
    server_cpu, client_cpu = server.cpu_seconds(), process_cpu()
    start = time.perf_counter()
    deadline[0] = start + seconds
    barrier.wait()
    for thread in threads:
        thread.join(timeout=seconds + CALL_TIMEOUT)
    if errors:
        raise RuntimeError(f"a client failed: {errors[0]!r}") from errors[0]
    elapsed = max(finished) - start
    return LoadResult(
        requests=sum(len(own) for own in latencies),
        seconds=elapsed,
        latencies=np.concatenate([np.asarray(own) for own in latencies]),
        server_cpu=server.cpu_seconds() - server_cpu,
        client_cpu=process_cpu() - client_cpu,
    )


def _rest_call(
    server: ServerProcess, body: bytes, path: str = EVALUATE_PATH
) -> tuple[Call, Callable[[], None]]:
    client = RestClient(server.host, server.rest_port)
    return (lambda: orjson.loads(client.post(body, JSON, path))), client.close


def bench_small(
    ours: ServerProcess,
    naive: ServerProcess,
    n: int,
    clients: int,
    seconds: float,
    rounds: int,
    seed: int,
    *,
    gate: bool,
) -> list[LoadRow]:
    """Requests/s and latency of ours (gRPC, REST JSON) and of the naive endpoint (REST JSON,
    both of its variants; ours is compared with the faster): the same pre-encoded rows in every
    request; rounds interleaved, the best round of each kept."""
    rows = make_rows(n, seed)
    body = json_body(rows)
    grpc_body = packed_request_bytes(rows)
    channel_client = GrpcClient(ours.grpc_target)  # one HTTP/2 connection shared by the threads
    targets: dict[str, tuple[ServerProcess, Callable[[], tuple[Call, Callable[[], None]]]]] = {
        "ours, gRPC": (ours, lambda: (lambda: channel_client.evaluate_bytes(grpc_body), _no_op)),
        "ours, REST JSON": (ours, lambda: _rest_call(ours, body)),
        NAIVE_NAMES[0]: (naive, lambda: _rest_call(naive, body)),
        NAIVE_NAMES[1]: (naive, lambda: _rest_call(naive, body, NAIVE_INLINE_PATH)),
    }
    # The answers agree before anything is timed.
    core = evaluate("binary", rows.labels, rows.scores)
    _check_same("small, gRPC", dict(channel_client.evaluate_bytes(grpc_body).metrics), n, core)
    rest = RestClient(ours.host, ours.rest_port)
    answer = orjson.loads(rest.post(body, JSON))
    _check_same("small, REST", answer["metrics"], answer["n_samples"], core)
    rest.close()
    rest = RestClient(naive.host, naive.rest_port)
    for path in (EVALUATE_PATH, NAIVE_INLINE_PATH):
        theirs = orjson.loads(rest.post(body, JSON, path))["metrics"]
        for metric in ("roc_auc", "average_precision", "log_loss", "mcc"):
            if not math.isclose(theirs[metric], answer["metrics"][metric], rel_tol=1e-9):
                raise AssertionError(f"naive {path} {metric} {theirs[metric]} but ours differs")
    rest.close()

    progress(
        f"3. small requests ({n:,} rows), {clients} clients, {rounds} x {seconds:g} s each ..."
    )
    warm_up = min(1.0, seconds)
    for server, make_call in targets.values():
        load_run(make_call, clients, warm_up, server)
    best: dict[str, LoadResult] = {}
    names = list(targets)
    for round_ in range(rounds):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            server, make_call = targets[name]
            result = load_run(make_call, clients, seconds, server)
            progress(f"   {name}: {result.throughput:,.0f} requests/s")
            if name not in best or result.throughput > best[name].throughput:
                best[name] = result
    channel_client.close()
    naive_rate = max(best[name].throughput for name in NAIVE_NAMES)
    return [
        LoadRow(names[0], best[names[0]], naive_rate, gate),
        LoadRow(names[1], best[names[1]], naive_rate, gate),
        *(LoadRow(name, best[name], None, gate) for name in NAIVE_NAMES),
    ]


def _no_op() -> None:
    return None


# --- the naive endpoint (runs in its own process: --serve-naive) -------------------------------


class NaiveRequest(pydantic.BaseModel):
    task: str = "binary"
    labels: list[float]
    scores: list[float]


def evaluate_naive(request: NaiveRequest) -> dict[str, Any]:
    """What a first version of such a service often looks like: a pydantic model of lists,
    then one scikit-learn call per metric."""
    y_true = np.asarray(request.labels, dtype=np.int64)
    y_score = np.asarray(request.scores, dtype=np.float64)
    y_pred = (y_score >= 0.5).astype(np.int64)
    fpr, tpr, roc_thresholds = sk_metrics.roc_curve(y_true, y_score)
    precision, recall, pr_thresholds = sk_metrics.precision_recall_curve(y_true, y_score)
    values = {
        "roc_auc": sk_metrics.roc_auc_score(y_true, y_score),
        "average_precision": sk_metrics.average_precision_score(y_true, y_score),
        "precision": sk_metrics.precision_score(y_true, y_pred, zero_division=0),
        "recall": sk_metrics.recall_score(y_true, y_pred, zero_division=0),
        "f1": sk_metrics.f1_score(y_true, y_pred, zero_division=0),
        "accuracy": sk_metrics.accuracy_score(y_true, y_pred),
        "balanced_accuracy": sk_metrics.balanced_accuracy_score(y_true, y_pred),
        "mcc": sk_metrics.matthews_corrcoef(y_true, y_pred),
        "cohen_kappa": sk_metrics.cohen_kappa_score(y_true, y_pred),
        "log_loss": sk_metrics.log_loss(y_true, y_score),
        "brier_score": sk_metrics.brier_score_loss(y_true, y_score),
    }
    roc_thresholds[~np.isfinite(roc_thresholds)] = 1.0  # JSON has no infinity
    return {
        "task": request.task,
        "n_samples": int(y_true.size),
        "metrics": {name: float(value) for name, value in values.items()},
        "confusion_matrix": sk_metrics.confusion_matrix(y_true, y_pred).tolist(),
        "curves": {
            "roc": {"fpr": fpr.tolist(), "tpr": tpr.tolist(),
                    "thresholds": roc_thresholds.tolist()},
            "pr": {"precision": precision.tolist(), "recall": recall.tolist(),
                   "thresholds": pr_thresholds.tolist()},
        },
    }  # fmt: skip


async def evaluate_naive_inline(request: NaiveRequest) -> dict[str, Any]:
    """The same, as ``async def``: it runs on the event loop, no thread pool."""
    return evaluate_naive(request)


def naive_app() -> fastapi.FastAPI:
    """The naive endpoint in its two usual spellings: FastAPI parses the body into
    ``NaiveRequest`` and serializes the returned dict; a plain ``def`` runs in FastAPI's thread
    pool (concurrent requests contend for the GIL), an ``async def`` on the event loop."""
    app = fastapi.FastAPI()
    app.add_api_route(EVALUATE_PATH, evaluate_naive, methods=["POST"])
    app.add_api_route(NAIVE_INLINE_PATH, evaluate_naive_inline, methods=["POST"])
    return app


def serve_naive() -> int:
    """Serve ``naive_app`` on a free loopback port until SIGTERM (uvicorn's own handlers)."""
    import asyncio

    server = uvicorn.Server(
        uvicorn.Config(naive_app(), host="127.0.0.1", port=0, log_level="warning")
    )

    async def main() -> None:
        task = asyncio.create_task(server.serve())
        while not server.started and not task.done():
            await asyncio.sleep(0.01)
        if server.started:
            port = server.servers[0].sockets[0].getsockname()[1]
            print(f"naive: REST on http://127.0.0.1:{port}", file=sys.stderr, flush=True)
        await task

    asyncio.run(main())
    return 0


# --- report ---------------------------------------------------------------------------------


def _mib(kib: int) -> str:
    return f"{kib / 1024:,.0f}"


def render_time_table(results: Sequence[TimeRow], rows: int) -> str:
    lines = [
        f"| scenario ({rows:,} rows) | ours (s) | reference (s) | ratio | target | pass/fail |",
        "|---|---:|---:|---:|---|---|",
    ]
    for row in results:
        verdict = row.verdict
        target = "report" if row.limit is None else f"<= {row.limit:g}x"
        status = "info" if verdict is None else verdict.status
        lines.append(
            f"| {row.scenario} | {row.ours:.3f} | {row.reference:.3f} | {row.ratio:.2f}x "
            f"| {target} | {status} |"
        )
    return "\n".join(lines)


def render_stage_table(stages: Mapping[str, Usage], core: float) -> str:
    lines = [
        "| stage (in-process, best run of each) | wall (s) | x core.evaluate | user (s) "
        "| system (s) |",
        "|---|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {name} | {used.wall:.4f} | {used.wall / core:.2f}x | {used.user:.3f} "
        f"| {used.system:.3f} |"
        for name, used in stages.items()
    ]
    return "\n".join(lines)


def render_stream_table(streams: Sequence[StreamRow], generation: float | None) -> str:
    lines = [
        "| stream (gRPC EvaluateStream, raw bytes) | rows | batches | time (s) | rows/s "
        "| server RSS before (MiB) | server peak VmHWM (MiB) | peak - before (MiB) "
        "| server CPU (s) | client CPU (s) | completes |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    lines += [
        f"| {row.variant} | {row.rows:,} | {row.batches} | {row.seconds:.1f} "
        f"| {row.rows / row.seconds:,.0f} | {_mib(row.rss_before_kib)} | {_mib(row.hwm_kib)} "
        f"| {row.growth_mib:,.0f} | {row.server_cpu:.1f} | {row.client_cpu:.1f} "
        f"| {row.verdicts[0].status} |"
        for row in streams
    ]
    if generation is not None:
        lines.append("")
        lines.append(
            f"The client generates and encodes a batch of {STREAM_BATCH_ROWS:,} rows in "
            f"{generation:.3f} s (in the same process, best of 3): part of its CPU time above."
        )
    return "\n".join(lines)


def render_load_table(loads: Sequence[LoadRow], clients: int, rows: int) -> str:
    lines = [
        f"| server, transport ({rows:,} rows, {clients} clients) | requests | requests/s "
        "| p50 (ms) | p99 (ms) | server CPU / request (ms) | client CPU / request (ms) "
        f"| x faster naive | target | pass/fail |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for row in loads:
        result, verdict = row.result, row.verdict
        ratio = "-" if row.naive is None else f"{result.throughput / row.naive:.2f}x"
        target = "-" if row.naive is None else f">= {SMALL_SPEEDUP:g}x"
        lines.append(
            f"| {row.name} | {result.requests:,} | {result.throughput:,.0f} "
            f"| {1e3 * result.percentile(50):.2f} | {1e3 * result.percentile(99):.2f} "
            f"| {1e3 * result.server_cpu / result.requests:.2f} "
            f"| {1e3 * result.client_cpu / result.requests:.2f} | {ratio} | {target} "
            f"| {'reference' if verdict is None else verdict.status} |"
        )
    return "\n".join(lines)


@dataclass
class Report:
    times: list[TimeRow] = field(default_factory=list)
    stages: dict[str, Usage] = field(default_factory=dict)
    json_breakdown: str = ""
    streams: list[StreamRow] = field(default_factory=list)
    generation: float | None = None
    loads: list[LoadRow] = field(default_factory=list)
    clean_stops: dict[str, bool] = field(default_factory=dict)

    def verdicts(self) -> list[Verdict]:
        found = [row.verdict for row in self.times] + [row.verdict for row in self.loads]
        found += [verdict for row in self.streams for verdict in row.verdicts]
        found += [
            Verdict(f"{name} stops cleanly on SIGTERM", "exit status", clean, gate=False)
            for name, clean in self.clean_stops.items()
        ]
        return [verdict for verdict in found if verdict is not None]

    def core_seconds(self) -> float:
        return next(row.reference for row in self.times if row.limit == UNARY_LIMIT)


def render_report(report: Report, args: argparse.Namespace) -> str:
    parts = []
    if report.times:
        parts.append(render_time_table(report.times, args.rows))
    if report.streams:
        parts.append(render_stream_table(report.streams, report.generation))
    if report.loads:
        parts.append(render_load_table(report.loads, args.clients, SMALL_ROWS))
    if report.stages:
        parts.append(
            f"Where the time of one {args.rows:,}-row request goes (the server's functions and "
            f"the client's encoding, timed in the benchmark's own process):\n\n"
            + render_stage_table(report.stages, report.core_seconds())
            + f"\n\n{report.json_breakdown}"
        )
    return "\n\n".join(parts)


def _versions() -> str:
    return (
        f"grpcio {grpc.__version__}, protobuf {protobuf_version}, fastapi {fastapi.__version__},"
        f" uvicorn {uvicorn.__version__}, orjson {orjson.__version__}"
    )


def render_section(
    report: Report, args: argparse.Namespace, command: str, load: tuple[float, float]
) -> str:
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    verdicts = "\n".join(f"  * {v.target}: {v.measured}, **{v.status}**" for v in report.verdicts())
    return f"""* Command: `{command}`
* Date: {now}
* Machine: {machine_description()}; {_versions()}
* Load: 1-minute load average {load[0]:.2f} before the run, {load[1]:.2f} after it (client and
  server share the machine's CPUs: the run itself adds about 2).
* Targets (pass/fail; "(info)" does not gate the exit status):
{verdicts}
* Setup: `python -m evalserve.service --host 127.0.0.1 --rest-port 0 --grpc-port 0 --workers
  {args.workers}` in its own process, on loopback; the naive endpoint is a FastAPI app of this
  script (a pydantic model of `list[float]`, one scikit-learn call per metric: `roc_auc_score`,
  `average_precision_score`, precision/recall/F1 at 0.5, `accuracy_score`,
  `balanced_accuracy_score`, `matthews_corrcoef`, `cohen_kappa_score`, `log_loss`,
  `brier_score_loss`, `roc_curve`, `precision_recall_curve`, `confusion_matrix`) on uvicorn, in
  another process, in its two usual spellings (a `def` endpoint, run in FastAPI's thread pool,
  and the same as `async def`, run on the event loop); ours is compared with the faster.
  Rows: float64 0/1 labels with 10% positives, float64 scores (logistic of a unit normal
  shifted by 1.5 for positives, practically all distinct). Ours evaluates the default suite
  (every binary metric, ROC and PR curves of at most 1000 points).
* 1 (one request): best of {args.repeats} after one warm-up call, the tasks interleaved round by
  round (order rotated); end to end = client encode + call + client decode of the answer (the
  metrics as a dict, the curves as numpy arrays). "Wire-level encode" writes the packed
  `repeated double` fields as tag + length + the numpy bytes (the same message, checked);
  "protobuf API encode" fills them through the generated class. The JSON body has labels as
  integers; its budget is core + {JSON_LOADS_FACTOR:g}x `orjson.loads` of it, so the ratio there
  is against that sum ("less the client's encode and decode" subtracts the in-process times of
  those two stages from the end-to-end time: the server's side and the transfer).
* 2 (stream): batches of {STREAM_BATCH_ROWS:,} rows (raw bytes, about 10% positives) generated
  while streaming; a fresh server per stream (for all-distinct scores started with
  `--max-stream-state-bytes` of 24 bytes a row: the default cap is
  {Settings().max_stream_state_bytes:,} bytes); RSS before = `VmRSS` after one small warm-up
  call, peak = `VmHWM` after the stream.
* 3 (small requests): {args.clients} client threads in this process, each with its own
  connection (REST: `http.client`, keep-alive; gRPC: one channel), the same pre-encoded body in
  every request (gRPC: packed fields), the answer decoded; {args.small_rounds} interleaved
  rounds of {args.small_seconds:g} s after a warm-up, the best round kept. CPU per request from
  `/proc/<pid>/stat` (server) and `getrusage` (client).

{render_report(report, args)}
"""


# --- command line -----------------------------------------------------------------------------


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=f"python {SCRIPT}", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    parser.add_argument("--rows", type=int, default=DEFAULT_ROWS, help="rows of part 1 (1M)")
    parser.add_argument("--repeats", type=int, default=5, help="timed rounds of part 1 (5)")
    parser.add_argument(
        "--stream-rows", type=int, default=DEFAULT_STREAM_ROWS, help="rows streamed (100M)"
    )
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients of part 3")
    parser.add_argument(
        "--small-seconds", type=float, default=5.0, help="seconds of each part-3 round (5)"
    )
    parser.add_argument("--small-rounds", type=int, default=2, help="part-3 rounds (2)")
    parser.add_argument(
        "--part", action="append", choices=PARTS, help="run only this part (repeatable)"
    )
    parser.add_argument("--workers", type=int, default=SERVER_WORKERS, help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="smoke test: small sizes")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated data")
    parser.add_argument("--no-fail", action="store_true", help="exit 0 even when a target fails")
    parser.add_argument(
        "--results", type=Path, default=None, help="the results file to update (RESULTS.md)"
    )
    parser.add_argument("--serve-naive", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.full = args.part is None and not args.quick
    args.part = args.part or list(PARTS)
    if args.quick:
        args.rows, args.repeats, args.stream_rows = 100_000, 2, 3_000_000
        args.small_seconds, args.small_rounds, args.no_fail = 1.0, 1, True
    if args.results is None and args.full:
        args.results = RESULTS_PATH
    if args.rows < 1000 or args.repeats < 1 or args.stream_rows < 1 or args.clients < 1:
        parser.error("--rows >= 1000, --repeats >= 1, --stream-rows >= 1, --clients >= 1")
    if args.small_seconds <= 0 or args.small_rounds < 1:
        parser.error("--small-seconds > 0 and --small-rounds >= 1")
    return args


def run(args: argparse.Namespace) -> Report:
    report = Report()
    gate = not args.quick
    if "evaluate" in args.part or "small" in args.part:
        server = start_service(args.workers)
        naive = start_naive() if "small" in args.part else None
        try:
            if "evaluate" in args.part:
                rows = make_rows(args.rows, args.seed)
                report.times, report.stages, report.json_breakdown = bench_evaluate(
                    server, rows, args.repeats, gate=gate
                )
                del rows
            if naive is not None:
                report.loads = bench_small(
                    server, naive, SMALL_ROWS, args.clients, args.small_seconds,
                    args.small_rounds, args.seed, gate=gate,
                )  # fmt: skip
        finally:
            for process in (server, naive):
                if process is not None:
                    report.clean_stops[process.name] = process.stop()
    if "stream" in args.part:
        report.streams = [
            bench_stream(args.workers, args.stream_rows, args.seed, decimals, gate=gate)
            for decimals in (STREAM_DECIMALS, None)
        ]
        report.generation = stream_generation_seconds(STREAM_BATCH_ROWS, args.seed)
    return report


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    if args.serve_naive:
        return serve_naive()
    retain_freed_memory()  # as the service does at start-up, for the in-process core timings
    before = load_average()
    warn_if_busy(before)
    report = run(args)
    load = (before, load_average())
    command = shlex.join(["python", SCRIPT, *argv])
    print(render_report(report, args))
    print()
    for verdict in report.verdicts():
        print(f"{verdict.status:>11}  {verdict.target}: {verdict.measured}")
    if args.results is not None:
        write_section(SECTION_TITLE, render_section(report, args, command, load), args.results)
        print(f"\nwrote section '{SECTION_TITLE}' of {args.results}")
    else:
        print(f"\n{SECTION_TITLE}: not written (--quick or --part; --results PATH writes it)")
    failed = [verdict.target for verdict in report.verdicts() if verdict.failed]
    if failed and not args.no_fail:
        print(f"targets failed: {'; '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
