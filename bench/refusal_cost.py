"""Benchmark: what refusing a request costs the server, against what evaluating one costs; and
many callers behind one proxy address.

The service runs in its own process as users start it (``python -m evalserve.service``, 2
workers), on loopback. The callers are threads of this process at nice 15 (below the server:
they stand for other machines), each with its own connection, sending a 1,000-row binary
request (the full default suite) in a closed loop and sending it again at once when refused:
the worst caller, which ignores the retry hint. Server CPU is user + system time of the server
process (every thread: the event loop, gRPC's and the workers) from ``/proc/<pid>/stat``.

1. **A refusal against an evaluation**, on REST (JSON body) and on gRPC ``Evaluate``, with
   ``--max-inflight-requests 1``. With the place free, one caller: the server's CPU seconds per
   evaluation. Then an NDJSON stream holds the place (its header sent, its rows held back) and
   ``--callers`` callers are all refused (503 / UNAVAILABLE): the server's CPU seconds per
   refusal, the refusals one server core answers per second, and the ratio of the two costs.
   Then ``--callers`` callers of the cheapest call of each door, a health check: what any
   answer costs the transport, which is most of what a refusal costs. Target: a refusal costs
   at most 15% of an evaluation.
2. **A crowd from one address**: the default limits (16 in flight; per client, half of them),
   ``--callers`` gRPC callers on loopback, so from one address: answers and refusals per second
   with ``client_identity peer`` (by address, the behaviour before the setting existed) and
   ``off`` (the default: no per-client limit).
3. **A proxied fleet**: ``--fleet`` callers from one address, half on REST and half on gRPC, as
   an ingress forwards them, with ``--max-inflight-requests 64 --max-inflight-per-client 2``.
   Each sends ``X-Forwarded-For: 198.51.100.7, 10.1.0.<n>`` (the same address its client wrote,
   then its own as the proxy appended it; gRPC: the ``x-forwarded-for`` metadata). With
   ``client_identity header:x-forwarded-for`` each is a client of its own (the rightmost entry)
   and none is refused by client; with ``peer`` they all share two places; with ``off`` none
   is refused by client. Target: no refusal by client with the header, nor with ``off``.

The script prints its tables and rewrites its section of ``bench/RESULTS.md``; exit status 1
when a target fails, unless ``--no-fail``.

    python bench/refusal_cost.py [--quick] [--seconds 5] [--callers 16] [--fleet 32]
        [--no-fail] [--results PATH]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import datetime as dt
import functools
import http.client
import os
import shlex
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import grpc
import orjson
from load import small_bodies  # bench/ is on sys.path when run as a script
from machine import machine_description
from results_md import RESULTS_PATH, write_section
from service_bench import ServerProcess, start_service
from timing import load_average, progress, warn_if_busy

SECTION_TITLE = "what a refusal costs (bench/refusal_cost.py)"
SCRIPT = "bench/refusal_cost.py"
SERVICE = "evalserve.v1.EvaluationService"
EVALUATE = f"/{SERVICE}/Evaluate"
WORKERS = 2
REFUSAL_TARGET = 0.15  # a refusal's server CPU, at most this share of an evaluation's
FLEET_LIMIT = 2  # --max-inflight-per-client of part 3
FLEET_INFLIGHT = 64  # --max-inflight-requests of part 3: over the fleet, never the limit hit
SPOOFED = "198.51.100.7"  # what every fleet caller's own client wrote in X-Forwarded-For
HOLD_SECONDS = 600  # how long the held stream may stay idle
# A refusal's answer: a refusal by client names its limit, any other (global) does not.
CLIENT_LIMIT = "max_inflight_per_client"
DOORS = ("rest", "grpc")


def _below_the_server() -> None:
    os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 15)


# --- callers ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """What a caller sends: over gRPC a method and its message, over REST a method, a path and
    a body (None: none)."""

    grpc_method: str
    grpc_body: bytes
    http_method: str
    path: str
    http_body: bytes | None


def evaluation(bodies: dict[str, bytes]) -> Call:
    """The small request: 1,000 binary rows, protobuf over gRPC, JSON over REST."""
    return Call(EVALUATE, bodies["protobuf"], "POST", "/v1/evaluate", bodies["json"])


# The cheapest answer of each door: what any call costs the transport.
HEALTH = Call("/grpc.health.v1.Health/Check", b"", "GET", "/healthz", None)


class Caller:
    """One connection to one door that sends ``call`` and says how it was answered: "ok",
    "client" (refused by ``max_inflight_per_client``), "busy" (refused otherwise) or the
    unexpected status. ``forwarded``: the X-Forwarded-For value (header or metadata) to send."""

    def __init__(
        self, server: ServerProcess, door: str, call: Call, forwarded: str | None = None
    ) -> None:
        self.door = door
        self.what = call
        if door == "grpc":
            # A connection of its own (by default channels to one target share one).
            self.channel = grpc.insecure_channel(
                server.grpc_target, options=[("grpc.use_local_subchannel_pool", 1)]
            )
            self.method: grpc.UnaryUnaryMultiCallable[bytes, bytes]
            self.method = self.channel.unary_unary(call.grpc_method)
            self.metadata = (("x-forwarded-for", forwarded),) if forwarded else ()
        else:
            self.address = (server.host, server.rest_port)
            self.connection = http.client.HTTPConnection(*self.address, timeout=60)
            self.headers = {"content-type": "application/json"} if call.http_body else {}
            if forwarded:
                self.headers["x-forwarded-for"] = forwarded

    def call(self) -> str:
        return self._grpc() if self.door == "grpc" else self._rest()

    def _grpc(self) -> str:
        try:
            self.method(self.what.grpc_body, timeout=60, metadata=self.metadata)
        except grpc.RpcError as error:
            code = error.code()
            if code is grpc.StatusCode.UNAVAILABLE:
                return "client" if CLIENT_LIMIT in (error.details() or "") else "busy"
            return str(code.name)
        return "ok"

    def _rest(self) -> str:
        try:
            what = self.what
            self.connection.request(what.http_method, what.path, what.http_body, self.headers)
            response = self.connection.getresponse()
            content = response.read()
        except (OSError, http.client.HTTPException):
            # The server closed the connection (a refusal with the body unread may): again.
            self.connection.close()
            self.connection = http.client.HTTPConnection(*self.address, timeout=60)
            return "reconnected"
        if response.will_close:
            self.connection.close()
            self.connection = http.client.HTTPConnection(*self.address, timeout=60)
        if response.status == 200:
            return "ok"
        if response.status == 503:
            message = orjson.loads(content)["error"]["message"]
            return "client" if CLIENT_LIMIT in message else "busy"
        return str(response.status)

    def close(self) -> None:
        if self.door == "grpc":
            self.channel.close()
        else:
            self.connection.close()


@dataclass
class Window:
    """What a closed loop of callers got in ``seconds``, and the server CPU it took."""

    seconds: float
    server_cpu: float
    answers: Counter[str]

    def rate(self, answer: str) -> float:
        return self.answers[answer] / self.seconds

    def cpu_per(self, answer: str) -> float:
        count = self.answers[answer]
        return self.server_cpu / count if count else float("nan")


def closed_loop(
    server: ServerProcess, make: Sequence[Callable[[], Caller]], seconds: float
) -> Window:
    """Each of ``make`` builds a caller; all call in a loop for ``seconds`` after one call
    each to warm up, which is not counted. A caller that fails stops the loop with its error."""
    answers: Counter[str] = Counter()
    failures: list[BaseException] = []
    lock = threading.Lock()
    barrier = threading.Barrier(len(make) + 1)
    end = [time.perf_counter() + 3600.0]

    def loop(build: Callable[[], Caller]) -> None:
        _below_the_server()
        mine: Counter[str] = Counter()
        try:
            caller = build()
            try:
                caller.call()
                barrier.wait()
                while time.perf_counter() < end[0]:
                    mine[caller.call()] += 1
            finally:
                caller.close()
        except BaseException as error:  # reported by the waiting thread, not lost in this one
            failures.append(error)
            barrier.abort()
        with lock:
            answers.update(mine)

    threads = [threading.Thread(target=loop, args=(build,), daemon=True) for build in make]
    for thread in threads:
        thread.start()
    try:
        barrier.wait(timeout=120)
    except threading.BrokenBarrierError:
        for thread in threads:
            thread.join(timeout=60)
        raise RuntimeError(f"a caller failed: {failures[:1]!r}") from None
    cpu, started = server.cpu_seconds(), time.perf_counter()
    end[0] = started + seconds
    for thread in threads:
        thread.join()
    if failures:
        raise RuntimeError(f"a caller failed: {failures[0]!r}") from failures[0]
    # The CPU of the calls that ended after the window is counted, and so are those calls.
    return Window(time.perf_counter() - started, server.cpu_seconds() - cpu, answers)


def callers(
    server: ServerProcess,
    doors: Sequence[str],
    call: Call,
    forwarded: Callable[[int], str] | None = None,
) -> list[Callable[[], Caller]]:
    """A caller of ``call`` per door of ``doors``; the n-th sends ``forwarded(n)`` as
    X-Forwarded-For."""
    return [
        functools.partial(Caller, server, door, call, forwarded and forwarded(n))
        for n, door in enumerate(doors)
    ]


# --- part 1: a refusal against an evaluation ------------------------------------------------


def _inflight(server: ServerProcess) -> float:
    connection = http.client.HTTPConnection(server.host, server.rest_port, timeout=10)
    try:
        connection.request("GET", "/metrics")
        text = connection.getresponse().read().decode()
    finally:
        connection.close()
    for line in text.splitlines():
        if line.startswith("evalserve_inflight_requests "):
            return float(line.split()[1])
    raise RuntimeError("evalserve_inflight_requests is not exported")


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


@contextmanager
def held_place(server: ServerProcess) -> Iterator[None]:
    """An NDJSON stream that has sent its header and holds its admission place."""
    with socket.create_connection((server.host, server.rest_port), timeout=60) as sock:
        header = b'{"task": "binary"}\n'
        sock.sendall(
            b"POST /v1/evaluate/stream HTTP/1.1\r\nhost: bench\r\n"
            b"content-type: application/x-ndjson\r\ntransfer-encoding: chunked\r\n\r\n"
            + _chunk(header)
        )
        deadline = time.monotonic() + 30
        while _inflight(server) != 1:
            if time.monotonic() > deadline:
                raise RuntimeError("the stream never took the place")
            time.sleep(0.02)
        yield


@dataclass
class Cost:
    door: str
    evaluation: Window
    refusal: Window
    health: Window

    @property
    def ratio(self) -> float:
        return self.refusal.cpu_per("busy") / self.evaluation.cpu_per("ok")


def refusal_cost(
    seconds: float, n_callers: int, bodies: dict[str, bytes]
) -> tuple[list[Cost], str]:
    flags = ("--max-inflight-requests", "1", "--stream-idle-timeout-seconds", str(HOLD_SECONDS))
    server = start_service(WORKERS, *flags)
    small = evaluation(bodies)
    try:
        costs = []
        for door in DOORS:
            progress(f"1: {door}, evaluations, one caller ...")
            evaluated = closed_loop(server, callers(server, [door], small), seconds)
            progress(f"1: {door}, refusals, {n_callers} callers ...")
            with held_place(server):
                refused = closed_loop(server, callers(server, [door] * n_callers, small), seconds)
            progress(f"1: {door}, health checks, {n_callers} callers ...")
            health = closed_loop(server, callers(server, [door] * n_callers, HEALTH), seconds)
            costs.append(Cost(door, evaluated, refused, health))
    finally:
        server.stop()
    command = ["python", "-m", "evalserve.service", "--workers", str(WORKERS), *flags]
    return costs, shlex.join(command)


# --- parts 2 and 3: many callers from one address --------------------------------------------


@dataclass
class Crowd:
    identity: str
    door: str
    callers: int
    window: Window


def crowd(seconds: float, n_callers: int, bodies: dict[str, bytes]) -> list[Crowd]:
    rows = []
    for identity in ("peer", "off"):
        server = start_service(WORKERS, "--client-identity", identity)
        try:
            progress(f"2: {n_callers} gRPC callers, client identity {identity} ...")
            makers = callers(server, ["grpc"] * n_callers, evaluation(bodies))
            window = closed_loop(server, makers, seconds)
            rows.append(Crowd(identity, "grpc", n_callers, window))
        finally:
            server.stop()
    return rows


def fleet(seconds: float, size: int, bodies: dict[str, bytes]) -> list[Crowd]:
    rows = []
    doors = [DOORS[i % 2] for i in range(size)]
    for identity in ("header:x-forwarded-for", "peer", "off"):
        server = start_service(
            WORKERS,
            "--client-identity", identity,
            "--max-inflight-requests", str(FLEET_INFLIGHT),
            "--max-inflight-per-client", str(FLEET_LIMIT),
        )  # fmt: skip
        try:
            progress(f"3: a fleet of {size} behind one address, client identity {identity} ...")
            makers = callers(server, doors, evaluation(bodies), lambda n: f"{SPOOFED}, 10.1.0.{n}")
            window = closed_loop(server, makers, seconds)
        finally:
            server.stop()
        # both doors in one window: a fleet's callers use them at once
        rows.append(Crowd(identity, "rest + grpc", size, window))
    return rows


# --- report ----------------------------------------------------------------------------------


def render_costs(costs: Sequence[Cost], callers_: int) -> str:
    lines = [
        f"| door | evaluations/s (1 caller) | server CPU / evaluation (ms) "
        f"| refusals/s ({callers_} callers) | server CPU / refusal (ms) "
        "| refusals / s of one server core | refusal / evaluation | target | result "
        f"| health checks/s ({callers_} callers) | server CPU / health check (ms) |",
        "|---|---:|---:|---:|---:|---:|---:|---|---|---:|---:|",
    ]
    for cost in costs:
        per_refusal = cost.refusal.cpu_per("busy")
        lines.append(
            f"| {cost.door} | {cost.evaluation.rate('ok'):,.0f} "
            f"| {1e3 * cost.evaluation.cpu_per('ok'):.3f} | {cost.refusal.rate('busy'):,.0f} "
            f"| {1e3 * per_refusal:.3f} | {1 / per_refusal:,.0f} | {cost.ratio:.3f} "
            f"| <= {REFUSAL_TARGET:g} | {'PASS' if cost.ratio <= REFUSAL_TARGET else 'FAIL'} "
            f"| {cost.health.rate('ok'):,.0f} | {1e3 * cost.health.cpu_per('ok'):.3f} |"
        )
    return "\n".join(lines)


def _others(window: Window) -> str:
    other = {k: v for k, v in window.answers.items() if k not in ("ok", "client", "busy")}
    return ", ".join(f"{k} ({v})" for k, v in sorted(other.items())) or "none"


def render_crowd(rows: Sequence[Crowd], target: bool) -> str:
    lines = [
        "| client identity | door | callers | answered/s | refused by client/s "
        "| refused busy/s | other answers | server CPU (cores) |"
        + (" target: no refusal by client |" if target else ""),
        "|---|---|---:|---:|---:|---:|---|---:|" + ("---|" if target else ""),
    ]
    for row in rows:
        window = row.window
        line = (
            f"| `{row.identity}` | {row.door} | {row.callers} | {window.rate('ok'):,.0f} "
            f"| {window.rate('client'):,.0f} | {window.rate('busy'):,.0f} | {_others(window)} "
            f"| {window.server_cpu / window.seconds:.2f} |"
        )
        if target:
            line += f" {_fleet_verdict(row)} |"
        lines.append(line)
    return "\n".join(lines)


def _fleet_verdict(row: Crowd) -> str:
    if row.identity == "peer":
        return "- (one client)"
    return "PASS" if row.window.answers["client"] == 0 else "FAIL"


def failures(costs: Sequence[Cost], fleet_rows: Sequence[Crowd]) -> list[str]:
    found = [
        f"a {cost.door} refusal costs {cost.ratio:.3f} of an evaluation"
        for cost in costs
        if not cost.ratio <= REFUSAL_TARGET
    ]
    found += [
        f"the fleet was refused by client with client identity {row.identity}"
        for row in fleet_rows
        if _fleet_verdict(row) == "FAIL"
    ]
    return found


def render(
    costs: Sequence[Cost],
    server_command: str,
    crowd_rows: Sequence[Crowd],
    fleet_rows: Sequence[Crowd],
    args: argparse.Namespace,
    command: str,
    load: tuple[float, float],
) -> tuple[str, list[str]]:
    failed = failures(costs, fleet_rows)
    lines = [
        f"* Command: `{command}`",
        f"* Date: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC",
        f"* Machine: {machine_description()}",
        "* Callers: threads of this script at nice 15 on the same cores, each with its own "
        "connection, a 1,000-row binary request (the default suite) in a closed loop, sent "
        f"again at once when refused; {args.seconds:g} s per row. 1-minute load average "
        f"{load[0]:.2f} before, {load[1]:.2f} after.",
        "",
        "**All targets met.**" if not failed else "**FAIL: " + "; ".join(failed) + ".**",
        "",
        f"1. A refusal against an evaluation (`{server_command}`; the refusals while an NDJSON "
        "stream holds the one place), and the cheapest answer of each door, a health check "
        "(REST `GET /healthz`, gRPC `grpc.health.v1.Health/Check`), for what any answer costs "
        "the transport. Server CPU per answer from `/proc/<pid>/stat`:",
        "",
        render_costs(costs, args.callers),
        "",
        f"2. A crowd from one address: {args.callers} gRPC callers on loopback, the default "
        "limits (16 in flight; per client, half of them when the client identity is not off):",
        "",
        render_crowd(crowd_rows, target=False),
        "",
        "Callers that send again at once fill whatever CPU a refusal leaves: the cheaper the "
        "refusal, the more of them a second. The clients of this project wait as `Retry-After` "
        "asks (1 s, with jittered backoff).",
        "",
        f"3. A proxied fleet: {args.fleet} callers from one address, half REST, half gRPC, "
        f"each sending `X-Forwarded-For: {SPOOFED}, 10.1.0.<n>` (header / metadata); "
        f"`--max-inflight-requests {FLEET_INFLIGHT} --max-inflight-per-client {FLEET_LIMIT}`:",
        "",
        render_crowd(fleet_rows, target=True),
    ]
    return "\n".join(lines) + "\n", failed


# --- command line ----------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(prog=f"python {SCRIPT}", description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="of each measurement (5)")
    parser.add_argument("--callers", type=int, default=16, help="refused callers (16)")
    parser.add_argument("--fleet", type=int, default=32, help="callers behind one proxy (32)")
    parser.add_argument("--quick", action="store_true", help="smoke test: 1 s windows")
    parser.add_argument("--no-fail", action="store_true")
    parser.add_argument("--results", type=Path, default=RESULTS_PATH)
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds, args.callers, args.fleet = 1.0, 4, 8
    before = load_average()
    warn_if_busy(before)
    bodies = small_bodies()
    costs, server_command = refusal_cost(args.seconds, args.callers, bodies)
    crowd_rows = crowd(args.seconds, args.callers, bodies)
    fleet_rows = fleet(args.seconds, args.fleet, bodies)
    command = shlex.join(["python", SCRIPT, *argv])
    body, failed = render(
        costs, server_command, crowd_rows, fleet_rows, args, command, (before, load_average())
    )
    print(body)
    write_section(SECTION_TITLE, body, args.results)
    if failed and not args.no_fail:
        print("targets failed: " + "; ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
