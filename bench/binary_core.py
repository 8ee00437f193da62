"""Benchmark of the binary core: the whole suite at the speed of a sort.

The suite is ``evaluate("binary", labels, scores[, sample_weight], options=SUITE_OPTIONS)``:
every metric, DeLong and Wilson intervals, ROC and PR curves thinned to 1000 points, two
``head_k`` values and ``max_fpr``. The data: 10% positives, float64 scores practically all
distinct, weights uniform on [0.1, 10). Targets, for the plain library call in a plain process
(as a data job or a Dask worker calls it):

* 10 million rows: the unweighted suite in at most 2.5x the sort floor and at least 10x faster
  than scikit-learn's ``roc_auc_score`` alone on the same rows; the weighted suite in at most
  1.5x the argsort floor.
* On every CPU the process may run on (``evaluate``'s threads, by default all of them), the
  10-million-row unweighted suite in at most 1.6x the single-threaded sort floor (on a
  2-CPU machine; gated where there are at least two CPUs). The rows above are the suites on
  one thread (``threads=1``); the threaded ones are also reported against them.
* 1 million rows, where per-call costs weigh more: at most 5x the sort floor and at least 8x
  faster than ``roc_auc_score`` alone; weighted at most 3x the argsort floor.
* The suite's extra peak memory (tracemalloc, in a fresh process, inputs excluded) at most 40
  bytes per row.
* Operating points: the unweighted suite with four of them (recall at precision 0.5, precision
  at recall 0.5, TPR at FPR 0.01, specificity at sensitivity 0.9) at most 1.05x the suite
  without them, gated at 10 million rows; the equal error rate and the DET curve, which every
  result carries, timed alone at most 1% of the suite (3% at 1 million rows).

The sort floor is the faster of numpy's default sort and its AVX2 path: on some CPUs (AMD Zen 4)
numpy's AVX-512 sort is several times slower than its AVX2 sort, and a ratio against a slow
floor hides the cost of everything after the sort. So ``np.sort`` and ``np.argsort`` of the same
scores are timed in this process and in a worker process started with
``NPY_DISABLE_CPU_FEATURES`` naming numpy's AVX-512 dispatch targets (the worker checks that they
are off, from what ``np.show_runtime()`` reports); each floor is the faster of the two. On a CPU
without AVX-512 there is nothing to disable and the default path is the floor. The same worker
also times the unweighted suite, reported beside the plain process's: the suite with and without
numpy's AVX-512 targets on this CPU (on AMD Zen 4 the ``evalserve`` command runs the AVX2 path,
``evalserve.cpu_dispatch``).

The same suites also run in a second worker process with the ``evalserve`` server's allocator
setting (``service.memory.retain_freed_memory``), reported beside the plain process.

Timing: the tasks of one size (in this process and in the workers) run once to warm up, then
in interleaved rounds (the order rotated each round); each keeps its best time. The warm-up
results are checked: every suite computed everything, our ROC AUC equals scikit-learn's to
1e-9, and the workers' sorts and suites agree with this process's (same rows).

    python bench/binary_core.py [--rows 10000000] [--repeats 3] [--repeats-small 10]
        [--quick] [--no-fail] [--results PATH]
    python bench/binary_core.py --profile [--allocator server]   # where the time goes

``--rows`` is held to the 10-million-row limits, and 1 million rows to theirs (``--quick``: 1
million rows only, one round). The script prints its tables and rewrites its own section of
``bench/RESULTS.md``; it exits with status 1 when a gated target fails, unless ``--no-fail``.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import gc
import math
import shlex
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from functools import partial
from pathlib import Path

# This checkout's package goes first on sys.path, so the script measures this tree's core even
# where another copy is installed.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import numpy as np
from binary_worker import Worker, extra_peak_bytes  # bench/ is on sys.path as a script
from binary_workload import (
    SUITE_OPTIONS,
    THREADED,
    WEIGHTED_THREADED,
    WITH_OPERATING,
    Data,
    check_suite,
    make_data,
    same_summary,
    suite,
    summary,
    tasks,
)
from machine import avx512_dispatch_targets, cpu_description, machine_description, numpy_simd
from results_md import RESULTS_PATH, write_section
from sklearn.metrics import roc_auc_score
from timing import (
    Row,
    Task,
    Timed,
    Usage,
    best_runs,
    load_average,
    measured,
    progress,
    render_table,
    render_usage,
    verdict,
    warn_if_busy,
)

from evalserve.core import available_cpus
from evalserve.core.binary._operating import Classes, eer_point, eer_sides
from evalserve.core.binary._points import curve_points
from evalserve.core.binary._suite import curves_of_points
from evalserve.core.binary._sweep import sweep_of_rows
from evalserve.service.memory import retain_freed_memory

SECTION_TITLE = "binary core (bench/binary_core.py)"
SCRIPT = "bench/binary_core.py"
REPO = Path(__file__).resolve().parent.parent

# The four operating points and their searches cost at most 5% of the suite; the EER and the
# DET curve, which every result has, are timed alone and held to 1% of it (3% at 1 million
# rows, where the suite takes a tenth as long and the searches as long as ever).
OPERATING_LIMIT = 1.05
EER_DET_LIMITS = {10_000_000: 0.01, 1_000_000: 0.03}
SUITE_CURVE_POINTS = 1000  # max_curve_points' default, as the suites run
DEFAULT_ROWS = 10_000_000
SMALL_ROWS = 1_000_000
MEMORY_LIMIT = 40.0  # extra peak bytes per row of the unweighted suite
SKLEARN = "sklearn roc_auc_score"
AVX2 = "AVX2 path"
SERVER = "server allocator"


@dataclass(frozen=True, slots=True)
class Limits:
    """The targets at one size: suite / sort floor, scikit-learn's AUC / suite, weighted suite /
    argsort floor."""

    suite_vs_sort: float
    sklearn_speedup: float
    weighted_vs_argsort: float
    threaded_vs_sort: float | None = None


LIMITS = {
    DEFAULT_ROWS: Limits(
        suite_vs_sort=2.5, sklearn_speedup=10.0, weighted_vs_argsort=1.5, threaded_vs_sort=1.6
    ),
    SMALL_ROWS: Limits(suite_vs_sort=5.0, sklearn_speedup=8.0, weighted_vs_argsort=3.0),
}


def limits_for(rows: int) -> Limits:
    """1 million rows has its own limits; any other size is held to the 10-million-row ones."""
    return LIMITS.get(rows, LIMITS[DEFAULT_ROWS])


# --- the sort floor ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Floor:
    """``np.sort`` / ``np.argsort`` (one of them) by numpy's default path in this process and,
    where the CPU has AVX-512, by its AVX2 path in the sort-floor worker."""

    default: float
    avx2: float | None

    @property
    def best(self) -> float:
        return self.default if self.avx2 is None else min(self.default, self.avx2)

    @property
    def path(self) -> str:
        return "default path" if self.avx2 is None or self.default <= self.avx2 else AVX2


@dataclass(frozen=True, slots=True)
class SizeResult:
    rows: list[Row]
    usage: dict[str, Usage]
    sort: Floor
    argsort: Floor
    n: int
    floor_hello: dict[str, object] | None


def sort_floor_note(disabled: Sequence[str], worker_hello: Mapping[str, object] | None) -> str:
    """How the floors were taken, for the results."""
    here = numpy_simd()
    if not disabled:
        return (
            f"numpy runs no AVX-512 dispatch target here (found: {' '.join(here.found) or '-'}), "
            "so there was nothing to disable: numpy's default sort is its AVX2 (or narrower) "
            "path, and the floors are the default path's times in this process."
        )
    simd = worker_hello.get("simd", {}) if worker_hello else {}
    found = " ".join(simd.get("found", ())) if isinstance(simd, dict) else "?"
    return (
        f"default path: this process (numpy found {' '.join(here.found)}); AVX2 path: a worker "
        f'process started with `NPY_DISABLE_CPU_FEATURES="{" ".join(disabled)}"`, which checked '
        f"that each of them is off (numpy found {found or '-'} there). Each floor is the faster "
        "of the two."
    )


# --- the benchmark ----------------------------------------------------------------------------


REMOTE_TASKS = {
    f"np.sort, {AVX2}": "np.sort",
    f"np.argsort, {AVX2}": "np.argsort",
    f"our suite, {AVX2}": "our suite",
    f"our suite, {SERVER}": "our suite",
    f"our weighted suite, {SERVER}": "our weighted suite",
}


def checker(data: Data) -> Callable[[Mapping[str, object]], None]:
    """The check of the warm-up results: every suite computed everything, our ROC AUC is
    scikit-learn's, and each worker's call computed what this process's did (same rows)."""

    def check(first: Mapping[str, object]) -> None:
        ours = check_suite(first["our suite"], weighted=False).metrics
        check_suite(first["our weighted suite"], weighted=True)
        auc, expected = ours["roc_auc"], first[SKLEARN]
        if not isinstance(expected, float) or not math.isclose(
            auc or math.nan, expected, rel_tol=1e-9
        ):
            raise AssertionError(f"roc_auc: ours {auc!r} but scikit-learn {expected!r}")
        for threaded, name in ((THREADED, "our suite"), (WEIGHTED_THREADED, "our weighted suite")):
            same_summary(
                name,
                summary(name, first[name], data),
                summary(threaded, first[threaded], data),
                "(threaded)",
            )
        for remote, name in REMOTE_TASKS.items():
            if remote in first:
                theirs = first[remote]
                if not isinstance(theirs, dict):
                    raise TypeError(f"{remote} answered {theirs!r}")
                same_summary(name, summary(name, first[name], data), theirs, f"({remote})")

    return check


def bench_size(data: Data, repeats: int, folder: Path, disabled: Sequence[str]) -> SizeResult:
    """Every timed row at one size: the floors (both paths), the suites in this process and with
    the server's allocator setting, and scikit-learn's AUC."""
    n = data.rows
    progress(f"timing {n:,} rows (best of {repeats}) ...")
    data.save(folder)
    local = tasks(data)
    labels, scores = data.labels, data.scores
    timed: dict[str, Task | Timed] = {
        **local,
        SKLEARN: lambda: float(roc_auc_score(labels, scores)),
    }
    with ExitStack() as workers:
        server = workers.enter_context(Worker(folder, "server-allocator"))
        timed[f"our suite, {SERVER}"] = server.task("our suite")
        timed[f"our weighted suite, {SERVER}"] = server.task("our weighted suite")
        floor_hello: dict[str, object] | None = None
        if disabled:
            floor = workers.enter_context(
                Worker(folder, "sort-floor", {"NPY_DISABLE_CPU_FEATURES": " ".join(disabled)})
            )
            floor_hello = dict(floor.hello)
            timed[f"np.sort, {AVX2}"] = floor.task("np.sort")
            timed[f"np.argsort, {AVX2}"] = floor.task("np.argsort")
            timed[f"our suite, {AVX2}"] = floor.task("our suite")
        usage = best_runs(timed, repeats, check=checker(data))
    wall = {name: used.wall for name, used in usage.items()}
    sort = Floor(wall["np.sort"], wall.get(f"np.sort, {AVX2}"))
    argsort = Floor(wall["np.argsort"], wall.get(f"np.argsort, {AVX2}"))
    limits = limits_for(n)
    ours, weighted = wall["our suite"], wall["our weighted suite"]
    alone = eer_and_det(data)
    sort_name, argsort_name = f"sort floor ({sort.path})", f"argsort floor ({argsort.path})"
    rows = [
        Row("unweighted suite / sort floor", n, ours, sort_name, sort.best, ours / sort.best,
            limits.suite_vs_sort, gate=True),
        Row("scikit-learn roc_auc_score alone / unweighted suite (speed-up)", n, ours,
            SKLEARN, wall[SKLEARN], wall[SKLEARN] / ours, limits.sklearn_speedup,
            at_least=True, gate=True),
        Row("weighted suite / argsort floor", n, weighted, argsort_name, argsort.best,
            weighted / argsort.best, limits.weighted_vs_argsort, gate=True),
        Row(f"unweighted suite, {SERVER} / sort floor", n, wall[f"our suite, {SERVER}"],
            sort_name, sort.best, wall[f"our suite, {SERVER}"] / sort.best,
            limits.suite_vs_sort),
        Row(f"weighted suite, {SERVER} / argsort floor", n, wall[f"our weighted suite, {SERVER}"],
            argsort_name, argsort.best, wall[f"our weighted suite, {SERVER}"] / argsort.best,
            limits.weighted_vs_argsort),
        Row("unweighted suite with four operating points / unweighted suite", n,
            wall[WITH_OPERATING], "our suite", ours, wall[WITH_OPERATING] / ours,
            OPERATING_LIMIT, gate=n == DEFAULT_ROWS),
        Row("equal error rate and DET curve, timed alone / unweighted suite", n,
            alone, "our suite", ours, alone / ours, EER_DET_LIMITS.get(n, 0.01)),
    ]  # fmt: skip
    rows += threaded_rows(n, wall, (sort_name, sort.best), (argsort_name, argsort.best))
    if f"our suite, {AVX2}" in wall:
        rows += avx2_suite_rows(n, wall[f"our suite, {AVX2}"], ours, sort_name, sort.best)
    return SizeResult(rows, usage, sort, argsort, n, floor_hello)


def threaded_rows(
    n: int, wall: Mapping[str, float], sort: tuple[str, float], argsort: tuple[str, float]
) -> list[Row]:
    """The suites on every CPU this process may run on (``evaluate``'s default threads)
    against the single-threaded floors; the unweighted one gated at 10 million rows when
    there are at least two CPUs (on one the threaded suite is the single-threaded one)."""
    cpus = available_cpus()
    threaded, weighted = wall[THREADED], wall[WEIGHTED_THREADED]
    return [
        Row(f"unweighted suite, {cpus} threads / sort floor", n, threaded, sort[0], sort[1],
            threaded / sort[1], limits_for(n).threaded_vs_sort,
            gate=cpus >= 2 and n == DEFAULT_ROWS),
        Row(f"weighted suite, {cpus} threads / argsort floor", n, weighted, argsort[0],
            argsort[1], weighted / argsort[1]),
        Row(f"unweighted suite, {cpus} threads / unweighted suite, 1 thread", n, threaded,
            "our suite", wall["our suite"], threaded / wall["our suite"]),
        Row(f"weighted suite, {cpus} threads / weighted suite, 1 thread", n, weighted,
            "our weighted suite", wall["our weighted suite"],
            weighted / wall["our weighted suite"]),
    ]  # fmt: skip


def avx2_suite_rows(n: int, avx2: float, ours: float, sort_name: str, floor: float) -> list[Row]:
    """The unweighted suite with numpy's AVX-512 targets off (the sort-floor worker), reported:
    against the sort floor, and against the same suite on numpy's default path."""
    return [
        Row(f"unweighted suite, {AVX2} / sort floor", n, avx2, sort_name, floor, avx2 / floor,
            limits_for(n).suite_vs_sort),
        Row(f"unweighted suite, {AVX2} / unweighted suite, default path", n, avx2, "our suite",
            ours, avx2 / ours),
    ]  # fmt: skip


def eer_and_det(data: Data) -> float:
    """The best of 5 timings of what every binary result now computes beside the rest: the
    equal error rate's two searches and the DET curve from the thinned ROC curve (part of both
    suites, so the operating-points row cannot see it)."""
    sweep = sweep_of_rows(data.labels.astype(bool), data.scores, None)
    classes = Classes(sweep.positives, sweep.negatives)
    thresholds, tps, fps = curve_points(sweep, SUITE_CURVE_POINTS - 1)
    p, n = sweep.n_positive, sweep.n_negative
    best = math.inf
    for _ in range(5):
        start = time.perf_counter()
        eer_point(*eer_sides(classes, p, n), p, n)
        curves_of_points(thresholds, tps, fps, p, n)
        best = min(best, time.perf_counter() - start)
    return best


def bench_memory(folder: Path, rows: int) -> list[Row]:
    """Extra peak memory of the suite, unweighted (gated) and weighted (reported), in bytes per
    row, each in a fresh process on the rows saved in ``folder``."""
    progress(f"measuring the suite's extra peak memory at {rows:,} rows ...")
    result = []
    for weighted in (False, True):
        per_row = extra_peak_bytes(folder, weighted=weighted) / rows
        kind = "weighted" if weighted else "unweighted"
        result.append(
            Row(f"extra peak memory, {kind} suite", rows, None, "-", None, per_row,
                MEMORY_LIMIT, gate=not weighted, unit=" B/row")
        )  # fmt: skip
    return result


@dataclass(frozen=True, slots=True)
class Benchmark:
    sizes: list[SizeResult]
    memory: list[Row]
    disabled: tuple[str, ...]

    @property
    def rows(self) -> list[Row]:
        return [row for size in self.sizes for row in size.rows] + self.memory


def run_benchmark(rows: int, repeats: int, repeats_small: int, seed: int) -> Benchmark:
    disabled = avx512_dispatch_targets()
    sizes: list[SizeResult] = []
    memory: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="binary-bench-") as scratch:
        folder = Path(scratch)
        for n in dict.fromkeys((rows, SMALL_ROWS)):
            progress(f"generating {n:,} rows ...")
            data = make_data(n, seed)
            sizes.append(
                bench_size(data, repeats if n == rows else repeats_small, folder, disabled)
            )
            if n == rows:
                memory = bench_memory(folder, n)
            del data
    return Benchmark(sizes, memory, disabled)


# --- report -----------------------------------------------------------------------------------


def _floor_cell(value: float | None) -> str:
    return "n/a (no AVX-512)" if value is None else f"{value:.3f}"


def render_floors(sizes: Sequence[SizeResult]) -> str:
    lines = [
        "| rows | np.sort, default path (s) | np.sort, AVX2 path (s) | sort floor (s) "
        "| np.argsort, default path (s) | np.argsort, AVX2 path (s) | argsort floor (s) |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {size.n:,} | {size.sort.default:.3f} | {_floor_cell(size.sort.avx2)} "
        f"| {size.sort.best:.3f} ({size.sort.path}) | {size.argsort.default:.3f} "
        f"| {_floor_cell(size.argsort.avx2)} | {size.argsort.best:.3f} ({size.argsort.path}) |"
        for size in sizes
    ]
    return "\n".join(lines)


def render_memory(rows: Sequence[Row]) -> str:
    lines = [
        "| scenario | rows | extra peak (MiB) | bytes per row | target | result |",
        "|---|---:|---:|---:|---|---|",
    ]
    lines += [
        f"| {row.scenario} | {row.rows:,} | {row.ratio * row.rows / 2**20:,.1f} "
        f"| {row.ratio:.1f} | {row.target} | {row.status} |"
        for row in rows
    ]
    return "\n".join(lines)


def render_section(
    bench: Benchmark, command: str, repeats: tuple[int, int], load: tuple[float, float]
) -> str:
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    options = ", ".join(f"{key}={value}" for key, value in SUITE_OPTIONS.items())
    timed = [row for size in bench.sizes for row in size.rows]
    largest = bench.sizes[0]
    rounds = f"best of {repeats[0]} at {largest.n:,} rows"
    if len(bench.sizes) > 1:
        rounds += f", of {repeats[1]} at {bench.sizes[1].n:,} rows"
    return f"""* Command: `{command}`
* Date: {now}
* CPU: {cpu_description()}; numpy SIMD: {numpy_simd().describe()}
* Machine: {machine_description(cpu=False)}
* Sort floor: {sort_floor_note(bench.disabled, bench.sizes[0].floor_hello)}
* Timing: {rounds}, after one warm-up call; tasks
  interleaved round by round (order rotated each round), those of the worker processes
  included; same data and same run for every ratio. 1-minute load average {load[0]:.2f} before
  the run, {load[1]:.2f} after it (this run itself adds about 1; more means other processes
  competed for the CPUs).

**{verdict(bench.rows)}**

{render_table(timed)}

{render_memory(bench.memory)}

Sort floors on this CPU, {cpu_description()} (the faster path of each is the reference
above):

{render_floors(bench.sizes)}

* The suite: `evaluate("binary", labels, scores[, sample_weight], options={{{options}}})`,
  every other option at its default (DeLong and Wilson intervals; curves thinned to 1000
  points). Labels are int64 0/1 with exactly 10% positives; scores are float64 in (0, 1)
  (logistic of a unit normal, shifted by 1.5 for positives), practically all distinct; weights
  are uniform on [0.1, 10). Before timing, every metric and interval is checked to be there and
  our ROC AUC against scikit-learn's `roc_auc_score` (to 1e-9).
* Rows: ratio = our time / the floor (at most the target), or scikit-learn's time / ours (at
  least the target). The plain process (this one, glibc as it comes) is the gated row; "server
  allocator" is the same suite in a worker process that first called
  `service.memory.retain_freed_memory()`, as the `evalserve` server does at start-up (freed
  arrays stay in the heap instead of being faulted in afresh by the next call); it is reported
  only. "AVX2 path" is the same suite in the sort-floor worker, numpy's AVX-512 targets off (as
  the `evalserve` command runs on AMD Zen 4), reported only; where the CPU has no AVX-512 there
  is no such worker and no such row.
* Extra peak memory: tracemalloc's peak (numpy reports its arrays to it) during one suite call
  in a fresh process, the inputs loaded and a {10_000:,}-row warm-up call made before tracing
  starts; bytes per row = peak / rows. The unweighted suite is gated.

Where the time of the best runs at {largest.n:,} rows went (CPU time in user mode and in the
kernel, page faults; a worker's figures are its own process's). Wall time far above user +
system time means the process waited for a CPU while other processes ran: the ratios of such a
run are noisy.

{render_usage(largest.usage)}
"""


# --- profile ----------------------------------------------------------------------------------


def _location(filename: str, line: int, name: str) -> str:
    path = Path(filename)
    if path.is_relative_to(REPO) and ".venv" not in path.parts:
        shown = str(path.relative_to(REPO))
    elif "site-packages" in path.parts:
        shown = "/".join(path.parts[path.parts.index("site-packages") + 1 :])
    else:
        shown = path.name
    return f"{shown}:{line}({name})"


def _profiled(call: Task) -> tuple[float, cProfile.Profile]:
    profiler = cProfile.Profile()
    gc.collect()
    start = time.perf_counter()
    profiler.enable()
    result = call()
    profiler.disable()
    elapsed = time.perf_counter() - start
    del result
    return elapsed, profiler


def _summed(profiler: cProfile.Profile) -> dict[str, tuple[float, float, int]]:
    """{function: (cumulative, own, calls)}, summed by label: one C function can have several
    entries (one per bound object)."""
    summed: dict[str, tuple[float, float, int]] = {}
    for entry in profiler.getstats():
        code = entry.code
        if isinstance(code, str):  # a builtin or C method, "<method 'sort' of ...>"
            if "_lsprof.Profiler" in code:
                continue
            where = code
        elif code.co_filename == __file__:  # this script's lambdas
            continue
        else:
            where = _location(code.co_filename, code.co_firstlineno, code.co_name)
        cumulative, own, calls = summed.get(where, (0.0, 0.0, 0))
        summed[where] = (
            cumulative + entry.totaltime,
            own + entry.inlinetime,
            calls + entry.callcount,
        )
    return summed


def profile_top(call: Task, top: int, repeats: int) -> str:
    """cProfile of the fastest of ``repeats`` calls: the ``top`` functions by own time (where
    the time is spent: numpy's C functions are there by name) and by cumulative time (which
    Python function of the core spends it). Wall time, so page-fault time counts where it
    happens."""
    elapsed, profiler = min((_profiled(call) for _ in range(repeats)), key=lambda run: run[0])
    summed = _summed(profiler)
    header = f"    {'cumulative':>10} {'own':>8} {'share':>6} {'calls':>6}  function"
    parts = [f"  profiled call: {elapsed:.3f} s"]
    for title, key in (("by own time", 1), ("by cumulative time", 0)):
        entries = sorted(summed.items(), key=lambda item: item[1][key], reverse=True)
        lines = [f"\n  {title}:", header]
        lines += [
            f"    {cumulative:10.3f} {own:8.3f} {own / elapsed:6.1%} {calls:6d}  {where}"
            for where, (cumulative, own, calls) in entries[:top]
        ]
        parts.append("\n".join(lines))
    return "\n".join(parts)


def run_profile(rows: int, repeats: int, seed: int, top: int, allocator: str) -> None:
    if allocator == "server":
        retain_freed_memory()
    progress(f"generating {rows:,} rows ...")
    data = make_data(rows, seed)
    scores = data.scores
    reference = best_runs(
        {"np.sort": lambda: np.sort(scores), "np.argsort": lambda: np.argsort(scores)}, repeats
    )
    print(f"Profile of the binary core: {rows:,} rows, best of {repeats}, {allocator} process")
    print(f"CPU: {cpu_description()}; numpy SIMD: {numpy_simd().describe()}")
    print("(default sort path only; the benchmark also times the AVX2 path where it differs)")
    for name, used in reference.items():
        print(
            f"{name}: wall {used.wall:.3f} s, user {used.user:.3f} s, system {used.system:.3f} s,"
            f" {used.faults:,} page faults"
        )
    for weighted in (False, True):
        kind = "weighted" if weighted else "unweighted"
        base_name = "np.argsort" if weighted else "np.sort"
        check_suite(suite(data, weighted=weighted), weighted=weighted)  # warm-up
        call = partial(suite, data, weighted=weighted)
        wholes = [measured(call) for _ in range(repeats)]
        best = min(wholes, key=lambda used: used.wall)
        print(f"\n== {kind} suite, {rows:,} rows ==")
        times_base = best.wall / reference[base_name].wall
        print(
            f"best of {repeats}: wall {best.wall:.3f} s = {times_base:.2f}x"
            f" {base_name} (default path); user {best.user:.3f} s, system {best.system:.3f} s,"
            f" {best.faults:,} page faults"
        )
        walls = ", ".join(f"{used.wall:.2f}" for used in wholes)
        systems = ", ".join(f"{used.system:.2f}" for used in wholes)
        print(f"every run: wall {walls} s; of it in the kernel (page faults): {systems} s")
        print(f"\n  cProfile of evaluate('binary', ...), {kind}: fastest of {repeats} runs")
        print(profile_top(call, top, repeats))


# --- command line -----------------------------------------------------------------------------


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=f"python {SCRIPT}", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    parser.add_argument("--rows", type=int, default=DEFAULT_ROWS, help="rows (default 10M)")
    parser.add_argument(
        "--repeats", type=int, default=3, help="timed rounds at --rows; the best is kept"
    )
    parser.add_argument(
        "--repeats-small", type=int, default=10, help="timed rounds at 1M rows; the best is kept"
    )
    parser.add_argument("--quick", action="store_true", help="smoke test: 1M rows only, 1 round")
    parser.add_argument("--seed", type=int, default=0, help="random seed of the generated data")
    parser.add_argument(
        "--no-fail", action="store_true", help="exit 0 even when a gated target fails"
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="print where the suite's time goes (cProfile) instead of the benchmark",
    )
    parser.add_argument("--top", type=int, default=20, help="cProfile functions shown")
    parser.add_argument(
        "--allocator",
        choices=("plain", "server"),
        default="plain",
        help="--profile only: a plain process (default), or freed memory kept in the heap as "
        "the evalserve server does (the benchmark always times both)",
    )
    parser.add_argument(
        "--results", type=Path, default=RESULTS_PATH, help="the results file to update"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.repeats, args.repeats_small = SMALL_ROWS, 1, 1
    if args.rows < 100_000 or min(args.repeats, args.repeats_small) < 1:
        parser.error("--rows must be at least 100000 and the repeats at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    if args.profile:
        warn_if_busy(load_average())
        run_profile(args.rows, args.repeats, args.seed, args.top, args.allocator)
        return 0
    before = load_average()
    warn_if_busy(before)
    bench = run_benchmark(args.rows, args.repeats, args.repeats_small, args.seed)
    load = (before, load_average())
    command = shlex.join(["python", SCRIPT, *argv])
    print(render_table([row for size in bench.sizes for row in size.rows]))
    print()
    print(render_memory(bench.memory))
    print()
    print(render_floors(bench.sizes))
    print()
    print(render_usage(bench.sizes[0].usage))
    print(f"\n{verdict(bench.rows)}")
    section = render_section(bench, command, (args.repeats, args.repeats_small), load)
    write_section(SECTION_TITLE, section, args.results)
    print(f"\nwrote section '{SECTION_TITLE}' of {args.results}")
    if any(row.failed for row in bench.rows) and not args.no_fail:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
