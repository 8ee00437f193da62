"""Worker processes of ``bench/binary_core.py``: the calls that must not run in the benchmark's
own process.

* ``serve``: a process that loads the benchmark's rows from .npy files and times the calls of
  ``binary_workload.tasks`` on request, one line of JSON per request, so that its timings join
  the interleaved rounds of the main process (which waits, idle, while it runs). Two settings:
  ``sort-floor``, started with ``NPY_DISABLE_CPU_FEATURES`` naming numpy's AVX-512 dispatch
  targets (it checks, from what ``np.show_runtime()`` reports, that every one of them is off,
  so its ``np.sort``/``np.argsort`` and its suites take numpy's AVX2 path);
  ``server-allocator``, which first keeps freed memory in the heap as the ``evalserve`` server
  does at start-up (``service.memory.retain_freed_memory``).
* ``memory``: a fresh process that measures the extra peak memory of one suite call with
  tracemalloc (numpy reports its array allocations to it): the inputs are loaded and a small
  warm-up call has run (imports, first-call caches) before tracing starts, so the peak is the
  call's own allocations above its inputs.

The main process drives both through ``Worker`` and ``extra_peak_bytes``.

    python bench/binary_worker.py serve FOLDER --setting {sort-floor,server-allocator,plain}
    python bench/binary_worker.py memory FOLDER {unweighted,weighted}
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tracemalloc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any

# This checkout's package first, so a worker measures the same core as the main process.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from binary_workload import Data, check_suite, suite, summary, tasks
from machine import avx512_dispatch_targets, numpy_simd
from timing import Usage, measured

__all__ = ["SETTINGS", "RemoteTask", "Worker", "WorkerError", "extra_peak_bytes"]

SCRIPT = Path(__file__).resolve()
SETTINGS = ("sort-floor", "server-allocator", "plain")
DISABLE_VARIABLE = "NPY_DISABLE_CPU_FEATURES"
WARM_UP_ROWS = 10_000


class WorkerError(RuntimeError):
    """A worker process failed, or could not set itself up as asked."""


# --- the worker's side ------------------------------------------------------------------------


def _disabled_features() -> tuple[str, ...]:
    return tuple(os.environ.get(DISABLE_VARIABLE, "").replace(",", " ").split())


def _set_up(setting: str) -> dict[str, Any]:
    """Apply and verify ``setting``; what the main process records about this process."""
    simd = numpy_simd()
    if setting == "sort-floor":
        asked = _disabled_features()
        if not asked:
            raise WorkerError(f"the sort-floor worker needs {DISABLE_VARIABLE}")
        # numpy only warns about a name it cannot disable; a name still "found" would mean the
        # sorts still take that path.
        still_on = [name for name in asked if name not in simd.not_found]
        if still_on:
            raise WorkerError(
                f"{DISABLE_VARIABLE}={' '.join(asked)} left {still_on} on ({simd.describe()})"
            )
        if avx512_dispatch_targets():
            raise WorkerError(f"AVX-512 dispatch targets left on: {simd.describe()}")
    elif setting == "server-allocator":
        from evalserve.service.memory import retain_freed_memory

        if not retain_freed_memory():
            raise WorkerError("retain_freed_memory() could not change the allocator here")
    return {
        "setting": setting,
        "disabled": list(_disabled_features()),
        "simd": {"baseline": simd.baseline, "found": simd.found, "not_found": simd.not_found},
    }


def _reply(out: IO[str], message: Mapping[str, Any]) -> None:
    out.write(json.dumps(message) + "\n")
    out.flush()


def serve(folder: Path, setting: str) -> int:
    """Answer ``warm NAME`` (one untimed call: its summary) and ``time NAME`` (one timed call:
    its usage) until ``quit`` or the end of input."""
    out = sys.stdout
    try:
        hello = _set_up(setting)
        data = Data.load(folder)
        calls = tasks(data)
    except WorkerError as error:
        _reply(out, {"error": str(error)})
        return 1
    _reply(out, {"ready": True, "rows": data.rows, **hello})
    for line in sys.stdin:
        command, _, name = line.strip().partition(" ")
        if command == "quit":
            break
        if name not in calls:
            _reply(out, {"error": f"unknown task {name!r}"})
        elif command == "warm":
            _reply(out, {"summary": summary(name, calls[name](), data)})
        elif command == "time":
            _reply(out, {"usage": measured(calls[name]).to_json()})
        else:
            _reply(out, {"error": f"unknown command {command!r}"})
    return 0


def measure_memory(folder: Path, *, weighted: bool) -> int:
    """Print the tracemalloc peak (bytes) of one suite call, inputs excluded."""
    data = Data.load(folder)
    suite(data.head(WARM_UP_ROWS), weighted=weighted)
    tracemalloc.start()
    result = suite(data, weighted=weighted)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    check_suite(result, weighted=weighted)
    _reply(sys.stdout, {"peak": peak, "rows": data.rows})
    return 0


# --- the main process's side ------------------------------------------------------------------


class Worker:
    """A ``serve`` worker process on the rows saved in ``folder``; close it (or use it as a
    context manager) when done."""

    def __init__(
        self, folder: Path, setting: str, environment: Mapping[str, str] | None = None
    ) -> None:
        env = dict(os.environ)
        env.update(environment or {})
        self.setting = setting
        self._process = subprocess.Popen(
            [sys.executable, str(SCRIPT), "serve", str(folder), "--setting", setting],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.hello = self._answer()

    def _answer(self) -> dict[str, Any]:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            code = self._process.wait()
            raise WorkerError(f"the {self.setting} worker exited with status {code}")
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            self.close()
            raise WorkerError(f"{self.setting} worker: {answer['error']}")
        return answer

    def _ask(self, command: str, name: str) -> dict[str, Any]:
        assert self._process.stdin is not None
        self._process.stdin.write(f"{command} {name}\n")
        self._process.stdin.flush()
        return self._answer()

    def warm(self, name: str) -> dict[str, float]:
        summary_: dict[str, float] = self._ask("warm", name)["summary"]
        return summary_

    def time(self, name: str) -> Usage:
        return Usage.from_json(self._ask("time", name)["usage"])

    def task(self, name: str) -> RemoteTask:
        return RemoteTask(self, name)

    def close(self) -> None:
        if self._process.poll() is None:
            assert self._process.stdin is not None
            try:
                self._process.stdin.write("quit\n")
                self._process.stdin.close()
            except BrokenPipeError:
                pass
            self._process.wait(timeout=60)
        if self._process.stdout is not None:
            self._process.stdout.close()

    def __enter__(self) -> Worker:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


@dataclass(frozen=True, slots=True)
class RemoteTask:
    """One of ``binary_workload.tasks`` run in a worker: a ``timing.Timed`` task."""

    worker: Worker
    name: str

    def warm_up(self) -> dict[str, float]:
        return self.worker.warm(self.name)

    def run(self) -> Usage:
        return self.worker.time(self.name)


def extra_peak_bytes(folder: Path, *, weighted: bool) -> int:
    """The extra peak memory of one suite call on the rows in ``folder``, measured in a fresh
    plain process."""
    kind = "weighted" if weighted else "unweighted"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "memory", str(folder), kind],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise WorkerError(f"the memory probe ({kind}) failed: {done.stderr[-2000:]}")
    peak: int = json.loads(done.stdout.strip().splitlines()[-1])["peak"]
    return peak


# --- command line -----------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python bench/binary_worker.py")
    commands = parser.add_subparsers(dest="command", required=True)
    serving = commands.add_parser("serve", help="time tasks on request (JSON lines)")
    serving.add_argument("folder", type=Path)
    serving.add_argument("--setting", choices=SETTINGS, required=True)
    probing = commands.add_parser("memory", help="extra peak memory of one suite call")
    probing.add_argument("folder", type=Path)
    probing.add_argument("kind", choices=("unweighted", "weighted"))
    args = parser.parse_args(argv)
    if args.command == "serve":
        return serve(args.folder, args.setting)
    return measure_memory(args.folder, weighted=args.kind == "weighted")


if __name__ == "__main__":
    sys.exit(main())
