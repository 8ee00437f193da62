"""Benchmark: the service under sustained and hostile load, on loopback, bounded in time.

The service runs in its own process as the shipped pod runs it (``--workers 2`` and the pod's
memory budget, 70% of 4 GiB); the load comes from this process's threads, each with its own
connection, standing for many clients on other machines: they run at nice 15, below the
server, and one address may hold every admission place (``--max-inflight-per-client 16``).
Four parts:

1. **Capacity.** Small requests (1,000 binary rows, the full default suite) on each door: REST
   JSON, REST protobuf, gRPC. Closed loop at 2, 4, 8 and 16 concurrent clients for
   ``--capacity-seconds`` each; a door's capacity is its best requests/s with no failed call.
2. **Hold.** Open loop at 80% of the slowest door's capacity for ``--hold-seconds`` (10
   minutes), the requests going to the three doors in turn, each timed from when it was due
   (no coordinated omission). Latency p50/p99 per minute and the server's resident size every
   5 s. Targets: RSS growth under 5% from the end of the first minute to the end, and no error
   other than admission refusals (503 / UNAVAILABLE), which are sent again after their hint.
3. **Hostile mix.** For ``--hostile-seconds``, with the hold's load at half its rate, every
   kind of hostile or careless request, each in a loop on its own thread: 5M-row requests on
   REST JSON and over a gRPC stream, a body that stops arriving, an NDJSON stream trickling a
   byte a second, a gRPC stream that sends its header and nothing more, a 20,000-character
   label among 1M, a 10,000 x 10,000-box detection image, 100,000 bootstrap replicates on 1M
   rows, 200,000 blank stream lines, 1,000 class names of 20,000 characters. Health probes
   (``/healthz``, ``/readyz``, gRPC health) from a process of their own, every 50 ms. Targets:
   probes' p99 under 100 ms, the server's peak resident size (VmHWM) within its baseline plus
   the budget, every hostile request answered with the 4xx/503 it deserves, no 500.

4. **Health behind large bodies** (``bench/health_scenarios.py``), on a fresh server with the
   pod's budget and default timeouts, each scenario for ``--health-seconds`` (20 s) with the
   probes of part 3: one 10M-row REST protobuf request at a time; 8 and 24 concurrent 5M-row
   ones; a 33M-row and a 50M-row body over the body limit (413); 16 concurrent 5M-row gRPC
   messages over the message cap. Target: every probe's p99 under 100 ms in each scenario.
   ``--health-only`` runs this part alone and rewrites only its subsection.

The read and idle timeouts of parts 1-3 are set to 5 s (30 s by default) so that the slow
clients are cut off inside the phase. The script prints its tables and rewrites its section of
``bench/RESULTS.md``; exit status 1 when a target fails, unless ``--no-fail``.

    python bench/load.py [--quick] [--hold-seconds 600] [--capacity-seconds 10]
        [--hostile-seconds 60] [--health-seconds 20] [--health-only] [--no-fail]
        [--results PATH]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import contextlib
import datetime as dt
import http.client
import json
import shlex
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import grpc
import httpx
import numpy as np
import orjson
from health_scenarios import (
    HEALTH_TARGET,
    below_the_server,
    health_server_flags,
    probe_summary,
    render_health,
    run_scenarios,
    scenarios,
    start_probes,
)
from machine import machine_description  # bench/ is on sys.path when run as a script
from results_md import RESULTS_PATH, read_section, write_section
from service_bench import ServerProcess, start_service
from timing import load_average, progress

from evalserve.v1 import evaluation_pb2 as pb

SECTION_TITLE = "the service under load (bench/load.py)"
SCRIPT = "bench/load.py"
POD_BUDGET = int(0.7 * (4 << 30))
SMALL_ROWS = 1_000
LARGE_ROWS = 5_000_000
CONCURRENCY = (2, 4, 8, 16)
DOORS = ("rest-json", "rest-protobuf", "grpc")
SERVICE = "evalserve.v1.EvaluationService"
BUSY = {503, "UNAVAILABLE", "RESOURCE_EXHAUSTED"}
P99_TARGET = HEALTH_TARGET  # the probes' p99, in every part
RSS_GROWTH_TARGET = 0.05
SLOW_TIMEOUT = 5.0


# --- requests -------------------------------------------------------------------------------


def _binary(rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, rows)
    return labels, rng.random(rows) * 0.7 + labels * 0.3


def small_bodies() -> dict[str, bytes]:
    labels, scores = _binary(SMALL_ROWS, 1)
    json_body = orjson.dumps(
        {"task": "binary", "labels": labels, "scores": scores}, option=orjson.OPT_SERIALIZE_NUMPY
    )
    message = pb.EvaluateRequest(task=pb.TASK_BINARY, labels=labels.astype(float), scores=scores)
    return {"json": json_body, "protobuf": message.SerializeToString()}


# Errors of a kept-alive connection the server closed: the request never reached it.
STALE = (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected)


class Door:
    """One connection to one door: ``call()`` sends the small request once and returns 200 or
    the refusal (an HTTP status or a gRPC code name)."""

    def __init__(self, server: ServerProcess, door: str, bodies: dict[str, bytes]) -> None:
        self.door = door
        if door == "grpc":
            self.channel = grpc.insecure_channel(server.grpc_target)
            self.method: grpc.UnaryUnaryMultiCallable[bytes, bytes]
            self.method = self.channel.unary_unary(f"/{SERVICE}/Evaluate")
            self.body = bodies["protobuf"]
        else:
            self.address = (server.host, server.rest_port)
            self.connection = http.client.HTTPConnection(*self.address, timeout=60)
            self.used = False  # whether the connection carried a call (kept alive since)
            protobuf = door == "rest-protobuf"
            self.body = bodies["protobuf" if protobuf else "json"]
            self.type = "application/x-protobuf" if protobuf else "application/json"

    def call(self) -> object:
        if self.door == "grpc":
            try:
                self.method(self.body, timeout=60)
            except grpc.RpcError as error:
                return error.code().name
            return 200
        for attempt in range(2):
            try:
                return self._post()
            except STALE as error:
                # The server closed the kept-alive connection while it sat idle (uvicorn's
                # keep-alive timeout): send again on a new one, as urllib3 and httpx do.
                reused = self.used
                self._reconnect()
                if attempt or not reused:
                    return type(error).__name__
            except (OSError, http.client.HTTPException) as error:
                self._reconnect()
                return type(error).__name__
        raise AssertionError("unreachable")

    def _post(self) -> int:
        self.connection.request("POST", "/v1/evaluate", self.body, {"content-type": self.type})
        response = self.connection.getresponse()
        response.read()
        self.used = True
        return response.status

    def _reconnect(self) -> None:
        self.connection.close()
        self.connection = http.client.HTTPConnection(*self.address, timeout=60)
        self.used = False

    def close(self) -> None:
        if self.door == "grpc":
            self.channel.close()
        else:
            self.connection.close()


# --- capacity --------------------------------------------------------------------------------


@dataclass
class Capacity:
    door: str
    clients: int
    rate: float
    p50: float
    p99: float
    failed: int


def closed_loop(
    server: ServerProcess, door: str, clients: int, seconds: float, bodies: dict[str, bytes]
) -> Capacity:
    latencies: list[float] = []
    outcomes: list[object] = []
    barrier = threading.Barrier(clients + 1)
    end = [0.0]

    def worker() -> None:
        below_the_server()
        connection = Door(server, door, bodies)
        try:
            connection.call()  # warm the connection
            barrier.wait()
            while time.perf_counter() < end[0]:
                started = time.perf_counter()
                outcomes.append(connection.call())
                latencies.append(time.perf_counter() - started)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(clients)]
    for thread in threads:
        thread.start()
    end[0] = time.perf_counter() + 3600
    barrier.wait()
    started = time.perf_counter()
    end[0] = started + seconds
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    ok = sum(1 for outcome in outcomes if outcome == 200)
    values = np.asarray(latencies) if latencies else np.asarray([np.nan])
    return Capacity(
        door,
        clients,
        ok / elapsed,
        float(np.quantile(values, 0.5)),
        float(np.quantile(values, 0.99)),
        len(outcomes) - ok,
    )


# --- the open-loop hold ---------------------------------------------------------------------


@dataclass
class Hold:
    rate: float
    seconds: float
    minutes: list[tuple[int, int, float, float]] = field(default_factory=list)  # n, busy, p50, p99
    rss: list[tuple[float, int]] = field(default_factory=list)  # (s, bytes)
    errors: dict[str, int] = field(default_factory=dict)
    busy: int = 0
    sent: int = 0

    @property
    def growth(self) -> float:
        after_first = [rss for at, rss in self.rss if at >= min(60.0, self.seconds / 4)]
        return after_first[-1] / after_first[0] - 1 if len(after_first) > 1 else float("nan")


def open_loop(
    server: ServerProcess,
    rate: float,
    seconds: float,
    bodies: dict[str, bytes],
    stop: threading.Event | None = None,
) -> Hold:
    """``rate`` requests/s for ``seconds``, each door in turn; a refusal with a hint is sent
    again after it (1 s), as the clients do, and counted as busy."""
    hold = Hold(rate, seconds)
    local = threading.local()
    records: list[tuple[float, float, bool]] = []  # (due, latency, refused first)
    lock = threading.Lock()

    def send(index: int, due: float) -> None:
        door = DOORS[index % len(DOORS)]
        connections = getattr(local, "doors", None)
        if connections is None:
            below_the_server()
            connections = local.doors = {d: Door(server, d, bodies) for d in DOORS}
        refused = False
        for _attempt in range(5):
            outcome = connections[door].call()
            if outcome == 200:
                break
            if outcome in BUSY:
                refused = True
                time.sleep(1.0)
                continue
            with lock:
                hold.errors[str(outcome)] = hold.errors.get(str(outcome), 0) + 1
            return
        with lock:
            records.append((due, time.perf_counter() - due, refused))

    started = time.perf_counter()
    interval = 1.0 / rate
    sampler_done = threading.Event()

    def sample() -> None:
        while not sampler_done.wait(5.0):
            hold.rss.append((time.perf_counter() - started, server.status_kib("VmRSS") << 10))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    with ThreadPoolExecutor(64) as pool:
        index = 0
        while True:
            due = started + index * interval
            if due - started >= seconds or (stop is not None and stop.is_set()):
                break
            pause = due - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
            pool.submit(send, index, due)
            index += 1
        hold.sent = index
    sampler_done.set()
    sampler.join()
    hold.busy = sum(1 for _, _, refused in records if refused)
    for minute in range(max(1, int(np.ceil(seconds / 60)))):
        inside = [
            latency
            for due, latency, _ in records
            if minute * 60 <= due - started < (minute + 1) * 60
        ]
        busy = sum(
            1 for due, _, r in records if r and minute * 60 <= due - started < (minute + 1) * 60
        )
        if inside:
            hold.minutes.append(
                (
                    len(inside),
                    busy,
                    float(np.quantile(inside, 0.5)),
                    float(np.quantile(inside, 0.99)),
                )
            )
    return hold


# --- the hostile mix --------------------------------------------------------------------------


def _post(server: ServerProcess, path: str, body: bytes, content_type: str) -> object:
    # httpx reads the answer even when the server closes the connection while the body is
    # still being sent (as it does after refusing a large body before reading it)
    url = f"http://{server.host}:{server.rest_port}{path}"
    try:
        headers = {"content-type": content_type}
        return httpx.post(url, content=body, headers=headers, timeout=120).status_code
    except httpx.HTTPError as error:
        return type(error).__name__


def _raw_http(server: ServerProcess, head: bytes, trickle: bytes, every: float) -> object:
    """Send ``head``, then ``trickle`` a byte at a time every ``every`` s until the server
    answers or closes; the status line's code, or "closed"."""
    with socket.create_connection((server.host, server.rest_port), timeout=60) as sock:
        sock.sendall(head)
        sock.settimeout(every)
        for byte in trickle:
            try:
                answer = sock.recv(4096)
            except TimeoutError:
                with contextlib.suppress(OSError):
                    sock.sendall(bytes([byte]))
                continue
            return int(answer.split()[1]) if answer.startswith(b"HTTP/") else "closed"
        sock.settimeout(60)
        answer = sock.recv(4096)
        return int(answer.split()[1]) if answer.startswith(b"HTTP/") else "closed"


def _grpc_stream(server: ServerProcess, messages: Iterator[pb.EvaluateStreamRequest]) -> object:
    with grpc.insecure_channel(
        server.grpc_target, options=[("grpc.max_send_message_length", -1)]
    ) as channel:
        stream: grpc.StreamUnaryMultiCallable[pb.EvaluateStreamRequest, bytes]
        stream = channel.stream_unary(
            f"/{SERVICE}/EvaluateStream",
            request_serializer=pb.EvaluateStreamRequest.SerializeToString,
        )
        try:
            stream(messages, timeout=120)
        except grpc.RpcError as error:
            return error.code().name
        return 200


def hostile_cases(server: ServerProcess, stop: threading.Event) -> dict[str, Callable[[], object]]:
    labels, scores = _binary(LARGE_ROWS, 3)
    big_json = orjson.dumps(
        {"task": "binary", "labels": labels, "scores": scores}, option=orjson.OPT_SERIALIZE_NUMPY
    )
    parts = np.array_split(np.arange(LARGE_ROWS), 10)
    batches = [
        pb.EvaluateStreamRequest(
            labels_f64=labels[p].astype("<f8").tobytes(), scores_f64=scores[p].tobytes()
        )
        for p in parts
    ]
    header = pb.EvaluateStreamRequest(header=pb.StreamHeader(task=pb.TASK_BINARY))
    long_label = orjson.dumps(
        {
            "task": "multiclass",
            "labels": ["a"] * 999_999 + ["b" * 20_000],
            "scores": [0.5] * 1_000_000,
        }
    )
    boxes = (np.random.default_rng(4).random((10_000, 4)) * 50).tolist()
    boxes = [[x, y, x + 5 + w, y + 5 + h] for x, y, w, h in boxes]
    detection = orjson.dumps(
        {
            "task": "detection",
            "images": [
                {
                    "gt_boxes": boxes,
                    "gt_classes": [0] * 10_000,
                    "pred_boxes": boxes,
                    "pred_classes": [0] * 10_000,
                    "pred_scores": [0.5] * 10_000,
                }
            ],
        }
    )
    one_m_labels, one_m_scores = _binary(1_000_000, 5)
    bootstrap = orjson.dumps(
        {
            "task": "binary",
            "labels": one_m_labels,
            "scores": one_m_scores,
            "options": {"bootstrap_replicates": 100_000},
        },
        option=orjson.OPT_SERIALIZE_NUMPY,
    )
    blank = (
        b'{"task": "binary"}\n' + b"\n" * 200_000 + b'{"labels": [0, 1], "scores": [0.1, 0.9]}\n'
    )
    names = [f"{i:05d}" + "x" * 19_995 for i in range(1_000)]
    class_names = orjson.dumps(
        {
            "task": "multiclass",
            "classes": names,
            "labels": names[:2],
            "scores": [[1.0] + [0.0] * 999, [0.0, 1.0] + [0.0] * 998],
            "model": {"name": "hostile"},
        }
    )
    json_type, ndjson = "application/json", "application/x-ndjson"

    def idle_grpc_stream() -> Iterator[pb.EvaluateStreamRequest]:
        yield header
        time.sleep(SLOW_TIMEOUT * 3)  # past the idle timeout, even when the phase ends

    return {
        "5M rows, REST JSON": lambda: _post(server, "/v1/evaluate", big_json, json_type),
        "5M rows, gRPC stream": lambda: _grpc_stream(server, iter([header, *batches])),
        "body stops arriving": lambda: _raw_http(
            server,
            b"POST /v1/evaluate HTTP/1.1\r\nhost: x\r\ncontent-type: application/json"
            b"\r\ncontent-length: 1000\r\n\r\n" + b'{"task": "binary", "labels"',
            b"",
            1.0,
        ),
        "NDJSON, a byte a second": lambda: _raw_http(
            server,
            b"POST /v1/evaluate/stream HTTP/1.1\r\nhost: x\r\ncontent-type: "
            b"application/x-ndjson\r\ntransfer-encoding: chunked\r\n\r\n",
            b"1\r\n \r\n" * 30,
            1.0,
        ),
        "gRPC stream, header then nothing": lambda: _grpc_stream(server, idle_grpc_stream()),
        "20,000-character label among 1M": lambda: _post(
            server, "/v1/evaluate", long_label, json_type
        ),
        "10,000 x 10,000 boxes": lambda: _post(server, "/v1/evaluate", detection, json_type),
        "100,000 bootstrap replicates, 1M rows": lambda: _post(
            server, "/v1/evaluate", bootstrap, json_type
        ),
        "200,000 blank stream lines": lambda: _post(server, "/v1/evaluate/stream", blank, ndjson),
        "1,000 class names of 20,000 chars": lambda: _post(
            server, "/v1/evaluate", class_names, json_type
        ),
    }


# What each hostile request deserves. Every one may also find the server full (503 / gRPC
# UNAVAILABLE, or RESOURCE_EXHAUSTED with a retry hint when its memory is taken): an admission
# refusal, sent before the request is read.
EXPECTED: dict[str, set[object]] = {
    # 408: a 100 MB body still arriving after the read timeout (5 s here) on a saturated machine
    "5M rows, REST JSON": {200, 408},
    "5M rows, gRPC stream": {200},
    "body stops arriving": {408, "closed"},
    "NDJSON, a byte a second": {408, "closed"},
    "gRPC stream, header then nothing": {"DEADLINE_EXCEEDED"},
    "20,000-character label among 1M": {413, 422},
    "10,000 x 10,000 boxes": {413},
    "100,000 bootstrap replicates, 1M rows": {413},
    "200,000 blank stream lines": {200},
    "1,000 class names of 20,000 chars": {413, 422},
}
BUSY_ANSWERS = {"503", "UNAVAILABLE", "RESOURCE_EXHAUSTED"}


@dataclass
class Hostile:
    outcomes: dict[str, dict[str, int]]
    probes: dict[str, tuple[int, float, float]]  # count, p99, max
    baseline: int
    peak: int
    background: Hold | None = None

    def unexpected(self) -> list[str]:
        return [
            f"{case}: {outcome}"
            for case, seen in self.outcomes.items()
            for outcome in seen
            if outcome not in {str(e) for e in EXPECTED[case]} | BUSY_ANSWERS
        ]


def hostile_mix(
    server: ServerProcess, seconds: float, rate: float, bodies: dict[str, bytes]
) -> Hostile:
    stop = threading.Event()
    cases = hostile_cases(server, stop)
    baseline = server.status_kib("VmRSS") << 10
    Path(f"/proc/{server.pid}/clear_refs").write_text("5")  # peak from here
    outcomes: dict[str, dict[str, int]] = {case: {} for case in cases}
    probe = start_probes(server, seconds)

    def keep(case: str, run: Callable[[], object]) -> None:
        below_the_server()
        while not stop.is_set():
            outcome = str(run())
            outcomes[case][outcome] = outcomes[case].get(outcome, 0) + 1

    threads = [threading.Thread(target=keep, args=item, daemon=True) for item in cases.items()]
    for thread in threads:
        thread.start()
    background = open_loop(server, rate, seconds, bodies)
    output, _ = probe.communicate(timeout=seconds + 120)
    stop.set()
    for thread in threads:
        thread.join(timeout=180)
    peak = server.status_kib("VmHWM") << 10
    if probe.returncode != 0 or not output.strip():
        raise RuntimeError(f"the health probe failed (exit {probe.returncode}); see its stderr")
    probes = probe_summary(json.loads(output))
    return Hostile(outcomes, probes, baseline, peak, background)


# --- the report -------------------------------------------------------------------------------


def render(
    capacities: list[Capacity],
    hold: Hold,
    hostile: Hostile,
    command: str,
    load: tuple[float, float],
) -> tuple[str, list[str]]:
    failures: list[str] = []
    best = {
        door: max(
            (c for c in capacities if c.door == door and c.failed == 0),
            key=lambda c: c.rate,
            default=None,
        )
        for door in DOORS
    }
    if hold.growth >= RSS_GROWTH_TARGET:
        failures.append(f"RSS grew {hold.growth:.1%} during the hold")
    if hold.errors:
        failures.append(f"errors during the hold: {hold.errors}")
    slow = [k for k, (_, p99, _) in hostile.probes.items() if p99 >= P99_TARGET]
    if slow:
        failures.append(f"probe p99 over {P99_TARGET * 1000:.0f} ms: {', '.join(slow)}")
    if hostile.peak - hostile.baseline > POD_BUDGET:
        failures.append("peak RSS past baseline + budget")
    if hostile.unexpected():
        failures.append("unexpected answers: " + "; ".join(hostile.unexpected()))
    lines = [
        f"* Command: `{command}`",
        f"* Date: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC",
        f"* Machine: {machine_description()}",
        f"* Server: `python -m evalserve.service --workers 2 --memory-budget-bytes {POD_BUDGET}"
        f" --max-inflight-per-client 16 --request-read-timeout-seconds {SLOW_TIMEOUT:g}"
        f" --stream-idle-timeout-seconds {SLOW_TIMEOUT:g}` (the pod's budget, 70% of 4 GiB); "
        "the load from this script's threads at nice 15, on the same 2 cores. 1-minute load "
        f"average {load[0]:.2f} before, {load[1]:.2f} after.",
        "",
        "**All targets met.**" if not failures else "**FAIL: " + "; ".join(failures) + ".**",
        "",
        f"Capacity, {SMALL_ROWS:,}-row binary requests (closed loop, requests/s with no failed "
        "call; p50/p99 in ms):",
        "",
        "| door | clients | requests/s | p50 | p99 | failed |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for c in capacities:
        mark = " (best)" if best[c.door] is c else ""
        lines.append(
            f"| {c.door}{mark} | {c.clients} | {c.rate:,.0f} | {c.p50 * 1000:.1f} "
            f"| {c.p99 * 1000:.1f} | {c.failed} |"
        )
    first = hold.rss[0][1] if hold.rss else 0
    lines += [
        "",
        f"Hold: {hold.rate:,.0f} requests/s (80% of the slowest door's capacity) for "
        f"{hold.seconds:,.0f} s, the doors in turn; {hold.sent:,} sent, {hold.busy:,} refused "
        f"busy once or more and sent again, errors: {hold.errors or 'none'}. RSS growth from the "
        f"first minute to the end: {hold.growth:+.2%} (target < {RSS_GROWTH_TARGET:.0%}); RSS "
        f"{first / 2**20:,.1f} MiB at 5 s, {max(r for _, r in hold.rss) / 2**20:,.1f} MiB at "
        "most."
        if hold.rss
        else "",
        "",
        "| minute | requests | busy | p50 (ms) | p99 (ms) |",
        "|---:|---:|---:|---:|---:|",
    ]
    for minute, (count, busy, p50, p99) in enumerate(hold.minutes, 1):
        lines.append(f"| {minute} | {count:,} | {busy} | {p50 * 1000:.1f} | {p99 * 1000:.1f} |")
    lines += [
        "",
        f"Hostile mix for {hostile.background.seconds if hostile.background else 0:,.0f} s, with "
        f"{hostile.background.rate if hostile.background else 0:,.0f} small requests/s beside: "
        f"peak RSS {hostile.peak / 2**20:,.0f} MiB, "
        f"{(hostile.peak - hostile.baseline) / 2**20:,.0f} MiB over the "
        f"{hostile.baseline / 2**20:,.0f} MiB before (budget "
        f"{POD_BUDGET / 2**20:,.0f} MiB).",
        "",
        "| request | answers (count) | expected |",
        "|---|---|---|",
    ]
    for case, seen in hostile.outcomes.items():
        answers = ", ".join(f"{k} ({v})" for k, v in sorted(seen.items()))
        expected = ", ".join(sorted(map(str, EXPECTED[case])))
        lines.append(f"| {case} | {answers} | {expected} |")
    lines += ["", "| probe | count | p99 (ms) | max (ms) |", "|---|---:|---:|---:|"]
    for kind, (count, p99, most) in hostile.probes.items():
        lines.append(f"| {kind} | {count} | {p99 * 1000:.1f} | {most * 1000:.1f} |")
    return "\n".join(lines) + "\n", failures


HEALTH_HEADING = "### Health behind large bodies"


def health_part(args: argparse.Namespace, command: str) -> tuple[str, list[str]]:
    """Part 4 on a fresh server: its subsection of the results and its failures."""
    before = load_average()
    flags = health_server_flags(POD_BUDGET, args.quick)
    server = start_service(2, *flags)
    try:
        results = run_scenarios(server, scenarios(args.quick), args.health_seconds, progress)
    finally:
        server.stop()
    failures = [
        f"probe p99 over {P99_TARGET * 1000:.0f} ms behind {r.scenario.name}"
        for r in results
        if not r.met
    ]
    failures += [
        f"unexpected answers to {r.scenario.name}: {', '.join(r.unexpected())}"
        for r in results
        if r.unexpected()
    ]
    lines = [
        HEALTH_HEADING,
        "",
        f"* Command: `{command}`",
        f"* Date: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC",
        f"* Machine: {machine_description()}",
        f"* Server: `python -m evalserve.service --workers 2 {shlex.join(flags)}` (the pod's "
        "budget, default timeouts); the load from this script's threads at nice 15, on the "
        f"same 2 cores. 1-minute load average {before:.2f} before, {load_average():.2f} after.",
        "",
        "**All targets met.**" if not failures else "**FAIL: " + "; ".join(failures) + ".**",
        "",
        *render_health(results, args.health_seconds),
    ]
    return "\n".join(lines) + "\n", failures


def _with_health(section: str | None, health: str) -> str:
    """``section`` with its health subsection (everything from ``HEALTH_HEADING``) replaced."""
    rest = (section or "").split(HEALTH_HEADING)[0].strip("\n")
    return f"{rest}\n\n{health}" if rest else health


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="seconds, not minutes")
    parser.add_argument("--capacity-seconds", type=float, default=10.0)
    parser.add_argument("--hold-seconds", type=float, default=600.0)
    parser.add_argument("--hostile-seconds", type=float, default=60.0)
    parser.add_argument("--health-seconds", type=float, default=20.0)
    parser.add_argument(
        "--health-only", action="store_true", help="only part 4, health behind large bodies"
    )
    parser.add_argument("--no-fail", action="store_true")
    parser.add_argument("--results", type=Path, default=RESULTS_PATH)
    args = parser.parse_args(argv)
    if args.quick:
        args.capacity_seconds, args.hold_seconds, args.hostile_seconds = 2.0, 10.0, 12.0
        args.health_seconds = 3.0
    command = shlex.join(["python", SCRIPT, *(argv if argv is not None else sys.argv[1:])])
    failures: list[str] = []
    section = read_section(SECTION_TITLE, args.results)
    if not args.health_only:
        section, failures = load_parts(args, command)
        print(section)
    health, health_failures = health_part(args, command)
    print(health)
    write_section(SECTION_TITLE, _with_health(section, health), args.results)
    failures += health_failures
    return 0 if not failures or args.no_fail else 1


def load_parts(args: argparse.Namespace, command: str) -> tuple[str, list[str]]:
    """Parts 1 to 3: their text and their failures."""
    before = load_average()
    server = start_service(
        2,
        "--memory-budget-bytes",
        str(POD_BUDGET),
        "--max-inflight-per-client",
        "16",
        "--request-read-timeout-seconds",
        str(SLOW_TIMEOUT),
        "--stream-idle-timeout-seconds",
        str(SLOW_TIMEOUT),
    )
    try:
        bodies = small_bodies()
        capacities = []
        for door in DOORS:
            for clients in CONCURRENCY:
                progress(f"capacity: {door}, {clients} clients ...")
                capacities.append(closed_loop(server, door, clients, args.capacity_seconds, bodies))
        slowest = min(max(c.rate for c in capacities if c.door == door) for door in DOORS)
        progress(f"hold: {0.8 * slowest:,.0f} requests/s for {args.hold_seconds:,.0f} s ...")
        hold = open_loop(server, 0.8 * slowest, args.hold_seconds, bodies)
        progress(f"hostile mix for {args.hostile_seconds:,.0f} s ...")
        hostile = hostile_mix(server, args.hostile_seconds, 0.4 * slowest, bodies)
    finally:
        server.stop()
    return render(capacities, hold, hostile, command, (before, load_average()))


if __name__ == "__main__":
    raise SystemExit(main())
