"""Timing helpers shared by the benchmark scripts: resources used by one call, best of
interleaved rounds (in this process or in a worker process), the load-average warning, and the
target rows with their table.

Every ratio of a table comes from the same data in the same run: each task is called once to
warm up, then the tasks of a group run in interleaved rounds (every task once per round, so
clock or memory drift hits them alike; the order rotates from round to round) and each keeps
its best (least wall time) run.
"""

from __future__ import annotations

import gc
import math
import os
import resource
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = [
    "BUSY_LOAD",
    "Local",
    "Row",
    "Task",
    "Timed",
    "Usage",
    "best_runs",
    "load_average",
    "measured",
    "progress",
    "render_table",
    "render_usage",
    "verdict",
    "warn_if_busy",
]

# Above this 1-minute load average before a run, other processes are competing for the CPUs.
BUSY_LOAD = 0.5

Task = Callable[[], object]


@dataclass(frozen=True, slots=True)
class Usage:
    """Wall time, CPU time in user and kernel mode (seconds) and minor page faults."""

    wall: float
    user: float
    system: float
    faults: int

    @staticmethod
    def now() -> Usage:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return Usage(time.perf_counter(), usage.ru_utime, usage.ru_stime, usage.ru_minflt)

    @staticmethod
    def zero() -> Usage:
        return Usage(0.0, 0.0, 0.0, 0)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.wall + other.wall,
            self.user + other.user,
            self.system + other.system,
            self.faults + other.faults,
        )

    def __sub__(self, earlier: Usage) -> Usage:
        return Usage(
            self.wall - earlier.wall,
            self.user - earlier.user,
            self.system - earlier.system,
            self.faults - earlier.faults,
        )

    def to_json(self) -> dict[str, float]:
        return {"wall": self.wall, "user": self.user, "system": self.system, "faults": self.faults}

    @staticmethod
    def from_json(fields: Mapping[str, float]) -> Usage:
        return Usage(
            float(fields["wall"]),
            float(fields["user"]),
            float(fields["system"]),
            int(fields["faults"]),
        )


def measured(task: Task) -> Usage:
    """What one call of ``task`` used; its result is freed after the clock stopped."""
    gc.collect()
    gc.disable()
    try:
        start = Usage.now()
        result = task()
        used = Usage.now() - start
    finally:
        gc.enable()
    del result
    return used


@runtime_checkable
class Timed(Protocol):
    """A task that times itself: in this process (``Local``) or in a worker process."""

    def warm_up(self) -> object:
        """One untimed call; what it returns is what ``best_runs``' check sees."""
        ...

    def run(self) -> Usage:
        """One timed call."""
        ...


@dataclass(frozen=True, slots=True)
class Local:
    """A call in this process."""

    task: Task

    def warm_up(self) -> object:
        return self.task()

    def run(self) -> Usage:
        return measured(self.task)


def best_runs(
    tasks: Mapping[str, Task | Timed],
    repeats: int,
    check: Callable[[Mapping[str, object]], None] | None = None,
) -> dict[str, Usage]:
    """The best (least wall time) of ``repeats`` interleaved rounds of each task (every task
    once per round, in an order rotated from round to round).

    A task is a plain callable (timed in this process) or a ``Timed`` one (which may run in
    another process: this process then waits, idle, for its answer). Every task runs once
    first to warm up; ``check`` sees those first results (to verify that the timed calls
    compute what they should) before the timed rounds start.
    """
    timed = {name: _timed(task) for name, task in tasks.items()}
    first = {name: task.warm_up() for name, task in timed.items()}
    if check is not None:
        check(first)
    del first
    best: dict[str, Usage] = {}
    names = list(timed)
    for round_ in range(repeats):
        # Rotated every round, so no task always follows the same one: a task's cost can depend
        # on what the one before it left behind (freed memory, the allocator's state).
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            used = timed[name].run()
            if name not in best or used.wall < best[name].wall:
                best[name] = used
    return {name: best[name] for name in names}


def _timed(task: Task | Timed) -> Timed:
    return task if isinstance(task, Timed) else Local(task)


def progress(message: str) -> None:
    """A line of progress on stderr (the tables go to stdout); every bench script uses it."""
    print(message, file=sys.stderr, flush=True)


def load_average() -> float:
    """The 1-minute load average (runnable processes), NaN where the system has none."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return math.nan


def warn_if_busy(load: float) -> None:
    if load > BUSY_LOAD:
        progress(
            f"warning: the 1-minute load average is {load:.2f} before the run: other processes"
            " compete for the CPUs and the timings will be noisy"
        )


# --- target rows ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Row:
    """One line of a results table: a measured ratio against its limit.

    ``ratio`` is ``ours / reference`` for an upper limit (``at_least`` false: "at most ``limit``
    times the reference") and ``reference / ours`` for a lower one (``at_least``: "at least
    ``limit`` times faster"). ``limit`` None: reported only. Only ``gate`` rows decide the exit
    status; the others state pass or fail against their limit for information.
    """

    scenario: str
    rows: int
    ours: float | None
    reference_name: str
    reference: float | None
    ratio: float
    limit: float | None = None
    at_least: bool = False
    gate: bool = False
    unit: str = "x"

    @property
    def passed(self) -> bool | None:
        if self.limit is None:
            return None
        return self.ratio >= self.limit if self.at_least else self.ratio <= self.limit

    @property
    def failed(self) -> bool:
        return self.gate and self.passed is False

    @property
    def target(self) -> str:
        if self.limit is None:
            return "reported"
        return f"{'>=' if self.at_least else '<='} {self.limit:g}{self.unit}"

    @property
    def status(self) -> str:
        passed = self.passed
        if passed is None:
            return "-"
        word = "PASS" if passed else "FAIL"
        return word if self.gate else f"{word.lower()} (not gated)"


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _ratio(row: Row) -> str:
    return f"{row.ratio:.2f}x" if row.unit == "x" else f"{row.ratio:.1f}{row.unit}"


def render_table(results: Sequence[Row]) -> str:
    lines = [
        "| scenario | rows | ours (s) | reference | reference (s) | ratio | target | result |",
        "|---|---:|---:|---|---:|---:|---|---|",
    ]
    lines += [
        f"| {row.scenario} | {row.rows:,} | {_seconds(row.ours)} | {row.reference_name} "
        f"| {_seconds(row.reference)} | {_ratio(row)} | {row.target} | {row.status} |"
        for row in results
    ]
    return "\n".join(lines)


def render_usage(usage: Mapping[str, Usage]) -> str:
    lines = [
        "| task | wall (s) | user (s) | system (s) | page faults |",
        "|---|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {name} | {used.wall:.3f} | {used.user:.3f} | {used.system:.3f} | {used.faults:,} |"
        for name, used in usage.items()
    ]
    return "\n".join(lines)


def verdict(results: Sequence[Row]) -> str:
    """One sentence: how many gated targets pass, and which fail."""
    gated = [row for row in results if row.gate]
    failed = [row for row in gated if row.failed]
    if not failed:
        return f"All {len(gated)} gated targets pass."
    names = "; ".join(f"{row.scenario} at {row.rows:,} rows" for row in failed)
    return f"{len(gated) - len(failed)} of {len(gated)} gated targets pass; FAIL: {names}."
