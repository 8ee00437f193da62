"""Health behind large bodies: the part of ``bench/load.py`` that ``--health-only`` runs alone.

Each scenario keeps sending one kind of large request for ``seconds`` from threads of this
process (at nice 15, standing for clients on other machines) while health probes run in a
process of their own (``bench/health_probe.py``: ``/healthz``, ``/readyz`` and gRPC health every
50 ms). Its verdict: every probe's p99 under 100 ms. The server is a fresh one with the pod's
budget (``--workers 2``, 70% of 4 GiB) and default timeouts.

1. one 10M-row REST protobuf request at a time (160 MB of packed labels and scores);
2. 8, then 24, concurrent 5M-row REST protobuf requests (80 MB each; past 16 they are
   refused busy, before their body is read);
3. a 33M-row and a 50M-row REST protobuf body (528 MB, 800 MB), over the 256 MiB body limit:
   refused with 413 on their Content-Length;
4. 16 concurrent 5M-row gRPC messages (80 MB), over the 32 MiB message cap: refused by gRPC;
5. a proxied fleet: 32 callers behind one address (this process), half on REST and half on
   gRPC, each sending 1,000-row requests in a closed loop with its own ``X-Forwarded-For`` (gRPC:
   ``x-forwarded-for`` metadata), as an ingress forwards them; the server knows clients by that
   header (``--client-identity header:x-forwarded-for``), so none is refused by a client limit.

Bodies are encoded by hand (a packed field is a tag, a length and little-endian doubles: the
bytes protobuf writes, a test checks), without a trip of every value through protobuf's
repeated fields.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import httpx
import numpy as np
from service_bench import ServerProcess

from evalserve.service.proto_parse import encode_varint
from evalserve.v1 import evaluation_pb2 as pb

__all__ = [
    "HEALTH_TARGET",
    "Scenario",
    "ScenarioResult",
    "below_the_server",
    "health_server_flags",
    "probe_summary",
    "protobuf_body",
    "render_health",
    "run_scenarios",
    "scenarios",
    "start_probes",
]

HEALTH_TARGET = 0.100  # seconds: every probe's p99
PROBE = str(Path(__file__).with_name("health_probe.py"))
SERVICE = "evalserve.v1.EvaluationService"
# Refusals any large request may get when the server is full: admission (503 / UNAVAILABLE)
# or memory (503 / RESOURCE_EXHAUSTED with a retry hint), and 408 for an upload slower than
# the read timeout on a saturated machine.
BUSY = {"503", "408", "UNAVAILABLE", "RESOURCE_EXHAUSTED"}


def below_the_server() -> None:
    """The calling thread's CPU priority below the server's: the clients stand for other
    machines, and on this one they must not take the cores from the service under test (its
    event loop, which answers the probes)."""
    os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 15)


def _packed(number: int, values: np.ndarray) -> bytes:
    """A packed ``repeated double`` field: its tag (wire type 2), length and values."""
    data = values.astype("<f8").tobytes()
    return encode_varint(number << 3 | 2) + encode_varint(len(data)) + data


def protobuf_body(rows: int, seed: int) -> bytes:
    """A binary ``EvaluateRequest`` of ``rows`` rows in packed ``labels`` and ``scores``."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, rows)
    scores = rng.random(rows) * 0.7 + labels * 0.3
    fields = pb.EvaluateRequest.DESCRIPTOR.fields_by_name
    head = pb.EvaluateRequest(task=pb.TASK_BINARY).SerializeToString()
    return b"".join(
        (
            head,
            _packed(fields["labels"].number, labels),
            _packed(fields["scores"].number, scores),
        )
    )


@dataclass(frozen=True)
class Scenario:
    door: str  # "rest", "grpc", or "fleet" (small requests on both, one address)
    rows: int
    clients: int
    expected: frozenset[str]
    refused: str = ""  # what the server refuses it for, if it does

    @property
    def name(self) -> str:
        if self.door == "fleet":
            return f"proxied fleet: {self.clients} callers behind one address, REST and gRPC"
        clients = f"{self.clients} x " if self.clients > 1 else ""
        door = "gRPC" if self.door == "grpc" else "REST protobuf"
        refused = f", over the {self.refused}" if self.refused else ""
        return f"{clients}{self.rows / 1e6:g}M rows, {door}{refused}"


def scenarios(quick: bool) -> list[Scenario]:
    """The scenarios; ``quick``: a tenth of the REST rows (with a tenth of the body limit:
    ``health_server_flags``) and at most 2 clients."""
    scale, most = (10, 2) if quick else (1, 64)

    def rest(rows: int, clients: int, answer: str, refused: str = "") -> Scenario:
        return Scenario("rest", rows // scale, min(clients, most), frozenset({answer}), refused)

    return [
        rest(10_000_000, 1, "200"),
        rest(5_000_000, 8, "200"),
        rest(5_000_000, 24, "200"),
        rest(33_000_000, 1, "413", "body limit"),
        rest(50_000_000, 1, "413", "body limit"),
        # over the 32 MiB cap whatever the scale: refused by gRPC before it reaches Python
        Scenario(
            "grpc", 5_000_000, min(16, most), frozenset({"RESOURCE_EXHAUSTED"}), "message cap"
        ),
        Scenario("fleet", FLEET_ROWS, 32 if not quick else 8, frozenset({"200"})),
    ]


def health_server_flags(pod_budget: int, quick: bool) -> list[str]:
    # Clients are known by X-Forwarded-For (the fleet's); a request without it, by its address.
    flags = ["--memory-budget-bytes", str(pod_budget), "--max-inflight-per-client", "16",
             "--client-identity", "header:x-forwarded-for"]  # fmt: skip
    if quick:  # a tenth of the default limit, for a tenth of the rows
        flags += ["--max-request-bytes", str((256 << 20) // 10)]
    return flags


def _rest_sender(server: ServerProcess, body: bytes) -> Callable[[], str]:
    url = f"http://{server.host}:{server.rest_port}/v1/evaluate"
    headers = {"content-type": "application/x-protobuf"}

    def send() -> str:
        # httpx reads the answer even when the server closes the connection while the body
        # is still being sent (as it does after a refusal)
        try:
            return str(httpx.post(url, content=body, headers=headers, timeout=300).status_code)
        except httpx.HTTPError as error:
            return type(error).__name__

    return send


def _grpc_sender(server: ServerProcess, body: bytes) -> Callable[[], str]:
    def send() -> str:
        options = [("grpc.max_send_message_length", -1)]
        with grpc.insecure_channel(server.grpc_target, options=options) as channel:
            call: grpc.UnaryUnaryMultiCallable[bytes, bytes]
            call = channel.unary_unary(f"/{SERVICE}/Evaluate")
            try:
                call(body, timeout=300)
            except grpc.RpcError as error:
                return str(error.code().name)
            return "200"

    return send


FLEET_ROWS = 1_000


def _fleet_sender(server: ServerProcess, body: bytes) -> Callable[[], str]:
    """Each calling thread is a caller of its own: even ones on REST, odd ones on gRPC, each
    with the X-Forwarded-For an ingress would send (its client, then itself)."""
    count = iter(range(1_000_000))
    lock = threading.Lock()
    mine = threading.local()
    url = f"http://{server.host}:{server.rest_port}/v1/evaluate"

    def send() -> str:
        if not hasattr(mine, "index"):
            with lock:
                mine.index = next(count)
            mine.forwarded = f"198.51.100.7, 10.1.{mine.index // 250}.{mine.index % 250}"
            mine.channel = grpc.insecure_channel(server.grpc_target)
            mine.client = httpx.Client(timeout=60)
        if mine.index % 2 == 0:
            headers = {"content-type": "application/x-protobuf", "x-forwarded-for": mine.forwarded}
            try:
                return str(mine.client.post(url, content=body, headers=headers).status_code)
            except httpx.HTTPError as error:
                return type(error).__name__
        call: grpc.UnaryUnaryMultiCallable[bytes, bytes]
        call = mine.channel.unary_unary(f"/{SERVICE}/Evaluate")
        try:
            call(body, timeout=60, metadata=(("x-forwarded-for", mine.forwarded),))
        except grpc.RpcError as error:
            return str(error.code().name)
        return "200"

    return send


@dataclass
class ScenarioResult:
    scenario: Scenario
    answers: dict[str, int] = field(default_factory=dict)
    probes: dict[str, tuple[int, float, float]] = field(default_factory=dict)  # n, p99, max

    @property
    def met(self) -> bool:
        return bool(self.probes) and all(p99 < HEALTH_TARGET for _, p99, _ in self.probes.values())

    def unexpected(self) -> list[str]:
        allowed = self.scenario.expected | BUSY
        return [answer for answer in self.answers if answer not in allowed]


def probe_summary(latencies: dict[str, list[float]]) -> dict[str, tuple[int, float, float]]:
    """Per probe: count, p99 and max in seconds (``bench/health_probe.py``'s output); a
    failed probe (-1) makes both infinite."""
    summary = {}
    for kind, values in latencies.items():
        array = np.asarray([v if v >= 0 else np.inf for v in values] or [np.inf])
        p99 = float(np.quantile(array, 0.99)) if np.isfinite(array).all() else np.inf
        summary[kind] = (len(values), p99, float(array.max()))
    return summary


def start_probes(server: ServerProcess, seconds: float) -> subprocess.Popen[str]:
    """``bench/health_probe.py`` against ``server`` for ``seconds``, in a process of its own."""
    rest = f"http://{server.host}:{server.rest_port}"
    command = [sys.executable, PROBE, rest, server.grpc_target, str(seconds)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, text=True)


def run_scenario(
    server: ServerProcess, scenario: Scenario, body: bytes, seconds: float
) -> ScenarioResult:
    """Keep ``scenario.clients`` senders busy while the probes run for ``seconds``."""
    senders = {"grpc": _grpc_sender, "rest": _rest_sender, "fleet": _fleet_sender}
    send = senders[scenario.door](server, body)
    result = ScenarioResult(scenario)
    stop = threading.Event()
    lock = threading.Lock()

    def keep_sending() -> None:
        below_the_server()
        while not stop.is_set():
            answer = send()
            with lock:
                result.answers[answer] = result.answers.get(answer, 0) + 1

    probe = start_probes(server, seconds)
    with ThreadPoolExecutor(scenario.clients) as pool:
        for _ in range(scenario.clients):
            pool.submit(keep_sending)
        try:
            output, _ = probe.communicate(timeout=seconds + 120)
        finally:
            stop.set()
    if probe.returncode != 0 or not output.strip():
        raise RuntimeError(f"the health probe failed (exit {probe.returncode}); see its stderr")
    result.probes = probe_summary(json.loads(output))
    return result


def run_scenarios(
    server: ServerProcess,
    chosen: list[Scenario],
    seconds: float,
    progress: Callable[[str], None],
) -> list[ScenarioResult]:
    results = []
    bodies: dict[int, bytes] = {}
    for index, scenario in enumerate(chosen):
        progress(f"health: {scenario.name} for {seconds:g} s ...")
        if scenario.rows not in bodies:
            bodies = {scenario.rows: protobuf_body(scenario.rows, index)}  # one body at a time
        results.append(run_scenario(server, scenario, bodies[scenario.rows], seconds))
    return results


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}" if np.isfinite(seconds) else "failed"


def render_health(results: list[ScenarioResult], seconds: float) -> list[str]:
    """The table of the scenarios, one row each: answers, each probe's p99 and max (ms), and
    the verdict against the p99 target."""
    target = f"{HEALTH_TARGET * 1000:.0f} ms"
    lines = [
        f"Health behind large bodies: each scenario for {seconds:g} s, probes every 50 ms from "
        f"a process of their own (p99 / max in ms; target: every p99 under {target}).",
        "",
        "| scenario | answers (count) | /healthz | /readyz | gRPC health | p99 < " + target + " |",
        "|---|---|---:|---:|---:|---|",
    ]
    for result in results:
        answers = ", ".join(f"{k} ({v})" for k, v in sorted(result.answers.items()))
        probes = [
            f"{_ms(p99)} / {_ms(most)}"
            for _, p99, most in (
                result.probes.get(kind, (0, np.inf, np.inf))
                for kind in ("healthz", "readyz", "grpc health")
            )
        ]
        verdict = "met" if result.met else "**missed**"
        lines.append(f"| {result.scenario.name} | {answers} | {' | '.join(probes)} | {verdict} |")
    return lines
