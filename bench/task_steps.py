"""Where a Dask ranges evaluation spends its time: each step's span in a run, from the
scheduler's task stream (``distributed.get_task_stream``).

The steps are those of ``evalserve.dask``'s ranges path, known by the names of their tasks'
keys: the read and check of each partition (``map_partitions`` of ``_range_batch``), the
sample for the cuts (``_sample``), the split of each run of partitions into every range and
each worker's pieces of a range, the join of each range with its totals, the pass with the
maxima taken from every pass (``range-bests``), and the finish. A step's span is from its
first task's start to its last task's stop; its busy time, the sum of its tasks' compute
times (transfers not counted). What a run spends outside every step (the client's round
trips, the scheduler's latency between steps, the gathering of the answers) is its wall time
less the steps' spans.

The 2-worker rows say how close each step comes to halving the 1-worker one, and how much
of the two workers' time in a step was spent computing (busy / (span x threads)): the rest
is one worker waiting for the other (an uneven share of the work, or a late transfer). A
task's compute time is wall time: when it grows on 2 workers while the CPU time the workers
use does not, the tasks were waiting for a core. So each run also reads the processes' own
counts (``getrusage``): the CPU time of the workers and of the scheduler's process (on a
``LocalCluster``, also the client's and the nannies'), and the times the kernel took a worker
off its core for another process (involuntary context switches).
"""

from __future__ import annotations

import resource
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Step names and the key-name fragments of their tasks, in the order the steps run (the read
# of a Parquet file as its own task too, should Dask stop fusing it with the check).
STEPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("read and check", ("_range_batch", "read_parquet-")),
    ("cut sample", ("_sample-",)),
    ("split", ("range-split-", "range-pieces-", "range-rows-")),
    ("join", ("range-join-", "range-totals-")),
    ("pass", ("range-pass-", "range-bests-")),
    ("finish", ("range-finish-",)),
)
BETWEEN = "between steps"


def key_name(key: Any) -> str:
    """A task key's name: the first item of a tuple key, the key itself otherwise."""
    return str(key[0] if isinstance(key, tuple) and key else key)


def step_of(key: Any) -> str | None:
    """The step a task belongs to, by its key; None for a task of no step."""
    name = key_name(key)
    for step, fragments in STEPS:
        if any(fragment in name for fragment in fragments):
            return step
    return None


@dataclass(frozen=True)
class Span:
    start: float
    stop: float
    busy: float  # the sum of the step's tasks' compute times

    @property
    def seconds(self) -> float:
        return self.stop - self.start


def step_spans(records: Iterable[Mapping[str, Any]]) -> dict[str, Span]:
    """Each step's span in one run, from its task stream's records (each with a ``key`` and
    its ``startstops``: ``action``, ``start``, ``stop``); steps with no task are left out.
    A task of no step raises ``ValueError``: a renamed task would drop out of every step."""
    found: dict[str, Span] = {}
    for record in records:
        step = step_of(record["key"])
        if step is None:
            raise ValueError(f"a task of no step: {key_name(record['key'])}")
        for part in record["startstops"]:
            if part["action"] != "compute":
                continue
            start, stop = float(part["start"]), float(part["stop"])
            span = found.get(step)
            found[step] = (
                Span(start, stop, stop - start)
                if span is None
                else Span(min(span.start, start), max(span.stop, stop), span.busy + stop - start)
            )
    return found


@dataclass(frozen=True)
class Usage:
    """What processes used in a run: CPU seconds (user and system) and involuntary context
    switches."""

    cpu: float = 0.0
    switches: int = 0


@dataclass(frozen=True)
class Run:
    wall: float
    spans: Mapping[str, Span]
    workers: Usage = Usage()  # all workers together
    scheduler: Usage = Usage()


@dataclass(frozen=True)
class StepTimes:
    """Medians over runs: each step's span and busy time, the time between steps, the run,
    the workers' and the scheduler process's usage."""

    spans: dict[str, float]
    busy: dict[str, float]
    between: float
    wall: float
    walls: tuple[float, ...]
    workers: Usage = Usage()
    scheduler: Usage = Usage()


def summarize(runs: Sequence[Run]) -> StepTimes:
    """Per-run figures to medians (a step missing from a run counts 0 there)."""
    names = [step for step, _ in STEPS if any(step in run.spans for run in runs)]

    def median(values: Iterable[float]) -> float:
        return float(statistics.median(values))

    def usage(of: Callable[[Run], Usage]) -> Usage:
        return Usage(
            median(of(run).cpu for run in runs), round(median(of(run).switches for run in runs))
        )

    return StepTimes(
        spans={n: median(r.spans[n].seconds if n in r.spans else 0.0 for r in runs) for n in names},
        busy={n: median(r.spans[n].busy if n in r.spans else 0.0 for r in runs) for n in names},
        between=median(r.wall - sum(span.seconds for span in r.spans.values()) for r in runs),
        wall=median(run.wall for run in runs),
        walls=tuple(run.wall for run in runs),
        workers=usage(lambda run: run.workers),
        scheduler=usage(lambda run: run.scheduler),
    )


def own_usage() -> tuple[float, int]:
    """This process's CPU seconds (user and system) and involuntary context switches so far."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime, used.ru_nivcsw


def used_between(
    before: Mapping[str, tuple[float, int]], after: Mapping[str, tuple[float, int]]
) -> Usage:
    """The usage of the processes (by name) from ``before`` to ``after``, added up."""
    return Usage(
        sum(after[name][0] - before[name][0] for name in after),
        sum(after[name][1] - before[name][1] for name in after),
    )


def record_steps(client: Any, run: Callable[[], Any], runs: int, warm_ups: int = 1) -> StepTimes:
    """``runs`` runs of ``run`` on ``client``'s cluster, each with the task stream recorded
    (after ``warm_ups`` unrecorded runs): the steps' median times."""
    from distributed import get_task_stream

    for _ in range(warm_ups):
        run()
    measured = []
    for _ in range(runs):
        workers, scheduler = client.run(own_usage), {"": client.run_on_scheduler(own_usage)}
        with get_task_stream(client) as stream:
            started = time.perf_counter()
            run()
            wall = time.perf_counter() - started
        measured.append(
            Run(
                wall,
                step_spans(stream.data),
                used_between(workers, client.run(own_usage)),
                used_between(scheduler, {"": client.run_on_scheduler(own_usage)}),
            )
        )
    return summarize(measured)


def render_steps(one: StepTimes, two: StepTimes, threads: int = 2) -> list[str]:
    """The table of the steps on 1 worker and on 2 (``threads`` in all): median seconds, the
    ratio, and the share of the 2 workers' time in the step spent computing."""
    lines = [
        "| step (median of the recorded runs) | 1 worker, s | 2 workers, s | 1 / 2 "
        "| 2 workers busy |",
        "|---|---:|---:|---:|---:|",
    ]
    for step, _ in STEPS:
        if step not in one.spans or step not in two.spans:
            continue
        span, other = one.spans[step], two.spans[step]
        busy = two.busy[step] / (other * threads) if other > 0 else 0.0
        ratio = f"{span / other:.2f}x" if other > 0 else "-"
        lines.append(f"| {step} | {span:.3f} | {other:.3f} | {ratio} | {busy:.0%} |")
    lines.append(
        f"| {BETWEEN} | {one.between:.3f} | {two.between:.3f} "
        f"| {one.between / two.between:.2f}x | - |"
        if two.between > 0
        else f"| {BETWEEN} | {one.between:.3f} | {two.between:.3f} | - | - |"
    )
    lines.append(f"| run | {one.wall:.3f} | {two.wall:.3f} | {one.wall / two.wall:.2f}x | - |")
    lines += [
        "",
        "| per run (median) | 1 worker | 2 workers |",
        "|---|---:|---:|",
        f"| the workers' CPU, s | {one.workers.cpu:.3f} | {two.workers.cpu:.3f} |",
        f"| the steps' compute time, s | {sum(one.busy.values()):.3f} "
        f"| {sum(two.busy.values()):.3f} |",
        f"| the scheduler's process, CPU s | {one.scheduler.cpu:.3f} | {two.scheduler.cpu:.3f} |",
        "| the workers taken off their core (involuntary switches) "
        f"| {one.workers.switches} | {two.workers.switches} |",
    ]
    return lines
