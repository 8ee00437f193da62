"""Benchmark of the binary core against its performance target.

Target: on 10 million rows (10% positives, float64 scores) the whole unweighted suite,
``evaluate("binary", ...)`` with the default options plus ``head_k=[100, 10000]`` and
``max_fpr=0.1``, curves included, runs in at most 2.5x the time of a bare ``np.sort`` of the same
scores; weighted (random positive float weights), in at most 1.5x a bare ``np.argsort``. The
speed-up over scikit-learn's ``roc_auc_score`` and ``average_precision_score`` is reported too.

Every timing of one table row comes from the same data, in the same process and run: each task
is called once to warm up, then the tasks of a group run in interleaved rounds (every task once
per round, so clock or memory drift hits them alike; the order rotates from round to round) and
each keeps its best (minimum) time.

    python bench/binary_core.py [--rows 10000000] [--repeats 3] [--quick] [--no-fail]
    python bench/binary_core.py --profile      # where the suite's time goes; writes nothing

The benchmark prints its table and rewrites its own section of ``bench/RESULTS.md``. It exits
with status 1 when a gated target fails (the suite rows at ``--rows``), unless ``--no-fail``.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import gc
import math
import os
import platform
import resource
import shlex
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The checkout this script belongs to goes first on sys.path, so it measures this tree's core
# and service even where another copy is installed.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import sklearn
from numpy.typing import NDArray
from results_md import RESULTS_PATH, write_section  # bench/ is on sys.path when run as a script
from sklearn.metrics import average_precision_score, roc_auc_score

from evalserve.core import BinaryStats, EvaluationResult, evaluate, parse_options
from evalserve.core._validation import binary_labels, finite_floats, same_length, sample_weights
from evalserve.core.binary._delong import placements
from evalserve.core.binary._intervals import auc_interval
from evalserve.core.binary._ranked import hits, rank
from evalserve.core.binary._ranking import roc_auc
from evalserve.core.binary._suite import compute
from evalserve.service.memory import retain_freed_memory

SECTION_TITLE = "binary core (bench/binary_core.py)"
DEFAULT_ALLOCATOR_TITLE = (
    "binary core, glibc's default allocator (bench/binary_core.py --allocator default)"
)
SCRIPT = "bench/binary_core.py"
REPO = Path(__file__).resolve().parent.parent

DEFAULT_ROWS = 10_000_000
SMALL_ROWS = 1_000_000
POSITIVE_RATE = 0.1
TIE_DECIMALS = 3
SUITE_OPTIONS: dict[str, Any] = {"head_k": [100, 10000], "max_fpr": 0.1}
UNWEIGHTED_LIMIT = 2.5  # x np.sort
WEIGHTED_LIMIT = 1.5  # x np.argsort
DELONG_LIMIT = 1.3  # AUC with its DeLong interval x the AUC alone
# sklearn time / np.sort time as measured when the targets were set (reported, not gated).
LEAD_SKLEARN_VS_SORT = {"roc_auc_score": 60, "average_precision_score": 45}
# Metrics that must come out as numbers, so that the timed call really computed "everything".
EXPECTED_METRICS = (
    "roc_auc",
    "roc_auc_partial",
    "average_precision",
    "ap_11_point",
    "ks_statistic",
    "precision_at_100",
    "recall_at_10000",
    "log_loss",
    "expected_calibration_error",
    "mcc",
)

# Above this 1-minute load average before a run, other processes are competing for the CPUs.
BUSY_LOAD = 0.5
# Environment variables that change the timings (recorded with the results): numpy's SIMD
# dispatch (its sort kernels), numpy's hugepage advice, and glibc's allocator, which decides
# whether freed memory goes back to the system (to be faulted in afresh by the next call).
TUNING_VARIABLES = (
    "NPY_DISABLE_CPU_FEATURES",
    "NUMPY_MADVISE_HUGEPAGE",
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_MMAP_MAX_",
    "MALLOC_TRIM_THRESHOLD_",
)

Floats = NDArray[np.float64]
Task = Callable[[], object]


@dataclass(frozen=True, slots=True)
class Data:
    """One benchmark data set: int64 0/1 labels, float64 probability scores, float weights."""

    labels: NDArray[np.int64]
    scores: Floats
    weights: Floats

    @property
    def rows(self) -> int:
        return int(self.labels.size)

    def with_ties(self) -> Data:
        """The same rows with scores rounded to ``TIE_DECIMALS`` decimals (<= 1001 distinct)."""
        return Data(self.labels, np.round(self.scores, TIE_DECIMALS), self.weights)


def make_data(rows: int, seed: int) -> Data:
    """Exactly 10% positives at random rows; scores are the logistic of a unit normal shifted by
    1.5 for positives (in (0, 1), so the calibration metrics run too; practically all distinct);
    weights uniform on [0.1, 10)."""
    rng = np.random.default_rng(seed)
    labels = np.zeros(rows, dtype=np.int64)
    labels[: round(rows * POSITIVE_RATE)] = 1
    rng.shuffle(labels)
    logits = rng.standard_normal(rows) + 1.5 * labels
    scores = 1.0 / (1.0 + np.exp(-logits))
    weights = rng.uniform(0.1, 10.0, rows)
    return Data(labels, scores, weights)


def suite(data: Data, *, weighted: bool) -> EvaluationResult:
    """The timed call: everything the core computes for a binary task."""
    weights = data.weights if weighted else None
    return evaluate(
        "binary", data.labels, data.scores, sample_weight=weights, options=SUITE_OPTIONS
    )


def auc_alone(data: Data) -> float:
    """The ROC AUC by itself, the way the core computes it: check the rows, build the
    statistic, rank it, sum the pairs."""
    stats = BinaryStats.from_arrays(
        binary_labels("labels", data.labels), finite_floats("scores", data.scores)
    )
    ranked = rank(stats)
    return roc_auc(ranked, hits(ranked))


def auc_with_delong(data: Data) -> tuple[float, object]:
    """The same AUC and its DeLong interval (placement values and variance) from the same
    statistic."""
    stats = BinaryStats.from_arrays(
        binary_labels("labels", data.labels), finite_floats("scores", data.scores)
    )
    ranked = rank(stats)
    return roc_auc(ranked, hits(ranked)), auc_interval(placements(stats), 0.95, "wald")


def _check_delong(first: Mapping[str, object]) -> None:
    with_interval, alone = first["our AUC + DeLong CI"], first["our AUC alone"]
    if not isinstance(with_interval, tuple) or not isinstance(alone, float):
        raise AssertionError(f"unexpected AUC results {with_interval!r} and {alone!r}")
    auc, interval = with_interval
    if not isinstance(interval, dict) or not interval["lower"] < auc < interval["upper"]:
        raise AssertionError(f"DeLong interval {interval} does not contain the AUC {auc}")
    if abs(auc - alone) > 1e-12:
        raise AssertionError("the two AUC calls disagree")


# --- timing -----------------------------------------------------------------------------------


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


def best_runs(
    tasks: Mapping[str, Task],
    repeats: int,
    check: Callable[[Mapping[str, object]], None] | None = None,
) -> dict[str, Usage]:
    """The best (least wall time) of ``repeats`` interleaved rounds of each task (every task
    once per round, in an order rotated from round to round).

    Every task runs once first to warm up; ``check`` sees those first results (to verify that
    the timed calls compute what they should) before the timed rounds start.
    """
    first = {name: task() for name, task in tasks.items()}
    if check is not None:
        check(first)
    del first
    best: dict[str, Usage] = {}
    names = list(tasks)
    for round_ in range(repeats):
        # Rotated every round, so no task always follows the same one: a task's cost can depend
        # on what the one before it left behind (freed memory, the allocator's state).
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            used = measured(tasks[name])
            if name not in best or used.wall < best[name].wall:
                best[name] = used
    return {name: best[name] for name in names}


def progress(message: str) -> None:
    """A line of progress on stderr (the table goes to stdout); every bench script uses it."""
    print(message, file=sys.stderr, flush=True)


# --- the benchmark ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Row:
    scenario: str
    rows: int
    ours: float | None
    reference: float
    ratio: float
    target: str
    status: str
    gate: bool = False

    @property
    def failed(self) -> bool:
        return self.gate and self.status == "FAIL"


def _target_row(
    scenario: str, rows: int, ours: float, reference: float, limit: float, *, gate: bool
) -> Row:
    ratio = ours / reference
    if gate:
        status = "pass" if ratio <= limit else "FAIL"
    else:
        status = "pass (info)" if ratio <= limit else "fail (info)"
    return Row(scenario, rows, ours, reference, ratio, f"<= {limit:g}x", status, gate)


def _check_suite(result: object, *, weighted: bool) -> EvaluationResult:
    if not isinstance(result, EvaluationResult):
        raise TypeError(f"evaluate returned {type(result).__name__}")
    missing = [name for name in EXPECTED_METRICS if result.metrics.get(name) is None]
    if missing or set(result.curves) != {"roc", "pr"}:
        kind = "weighted" if weighted else "unweighted"
        raise AssertionError(f"the {kind} suite skipped {missing} or curves {set(result.curves)}")
    return result


def _check_against_sklearn(first: Mapping[str, object]) -> None:
    ours = _check_suite(first["our suite"], weighted=False).metrics
    _check_suite(first["our weighted suite"], weighted=True)
    for metric, task in (
        ("roc_auc", "sklearn roc_auc_score"),
        ("average_precision", "sklearn average_precision_score"),
    ):
        value, expected = ours[metric], first[task]
        if not (isinstance(value, float) and isinstance(expected, float)) or not math.isclose(
            value, expected, rel_tol=1e-9
        ):
            raise AssertionError(f"{metric}: ours {value!r} but scikit-learn {expected!r}")


def _check_ties(first: Mapping[str, object]) -> None:
    _check_suite(first["our suite"], weighted=False)
    _check_suite(first["our weighted suite"], weighted=True)


def bench_size(data: Data, repeats: int, *, gate: bool) -> tuple[list[Row], dict[str, Usage]]:
    """The target rows and the scikit-learn rows for one data set (continuous scores), and
    what the best run of each task used."""
    progress(f"timing {data.rows:,} rows (best of {repeats}) ...")
    labels, scores = data.labels, data.scores
    usage = best_runs(
        {
            "np.sort": lambda: np.sort(scores),
            "np.argsort": lambda: np.argsort(scores),
            "our suite": lambda: suite(data, weighted=False),
            "our weighted suite": lambda: suite(data, weighted=True),
            "sklearn roc_auc_score": lambda: float(roc_auc_score(labels, scores)),
            "sklearn average_precision_score": lambda: float(
                average_precision_score(labels, scores)
            ),
        },
        repeats,
        check=_check_against_sklearn,
    )
    times = {name: used.wall for name, used in usage.items()}
    n, ours, sort = data.rows, times["our suite"], times["np.sort"]
    rows = [
        _target_row("unweighted suite vs np.sort", n, ours, sort, UNWEIGHTED_LIMIT, gate=gate),
        _target_row(
            "weighted suite vs np.argsort",
            n,
            times["our weighted suite"],
            times["np.argsort"],
            WEIGHTED_LIMIT,
            gate=gate,
        ),
    ]
    delong = best_runs(
        {
            "our AUC alone": lambda: auc_alone(data),
            "our AUC + DeLong CI": lambda: auc_with_delong(data),
        },
        repeats,
        check=_check_delong,
    )
    usage.update(delong)
    rows.append(
        _target_row(
            "ROC AUC + DeLong CI vs the AUC alone",
            n,
            delong["our AUC + DeLong CI"].wall,
            delong["our AUC alone"].wall,
            DELONG_LIMIT,
            gate=gate,
        )
    )
    for function, lead in LEAD_SKLEARN_VS_SORT.items():
        theirs = times[f"sklearn {function}"]
        rows += [
            Row(f"sklearn {function} / our unweighted suite", n, ours, theirs, theirs / ours,
                "report (speed-up)", "info"),
            Row(f"sklearn {function} / np.sort", n, None, theirs, theirs / sort,
                f"report (lead: ~{lead}x)", "info"),
        ]  # fmt: skip
    return rows, usage


def bench_ties(data: Data, repeats: int) -> list[Row]:
    """The suite rows again with many ties (informational: the target is for float64 scores)."""
    tied = data.with_ties()
    progress(f"timing {tied.rows:,} rows with scores rounded to {TIE_DECIMALS} decimals ...")
    scores = tied.scores
    usage = best_runs(
        {
            "np.sort": lambda: np.sort(scores),
            "np.argsort": lambda: np.argsort(scores),
            "our suite": lambda: suite(tied, weighted=False),
            "our weighted suite": lambda: suite(tied, weighted=True),
        },
        repeats,
        check=_check_ties,
    )
    times = {name: used.wall for name, used in usage.items()}
    label = f"many ties ({TIE_DECIMALS} decimals)"
    return [
        _target_row(
            f"unweighted suite vs np.sort, {label}",
            tied.rows,
            times["our suite"],
            times["np.sort"],
            UNWEIGHTED_LIMIT,
            gate=False,
        ),
        _target_row(
            f"weighted suite vs np.argsort, {label}",
            tied.rows,
            times["our weighted suite"],
            times["np.argsort"],
            WEIGHTED_LIMIT,
            gate=False,
        ),
    ]


def run_benchmark(rows: int, repeats: int, seed: int) -> tuple[list[Row], dict[str, Usage]]:
    """Every row of the table, and what the best runs of the gated data set used."""
    progress(f"generating {rows:,} rows ...")
    data = make_data(rows, seed)
    results, usage = bench_size(data, repeats, gate=True)
    results += bench_ties(data, repeats)
    del data
    if rows != SMALL_ROWS:
        results += bench_size(make_data(SMALL_ROWS, seed), repeats, gate=False)[0]
    return results, usage


# --- report -----------------------------------------------------------------------------------


def _cpuinfo() -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo (empty where there is none)."""
    fields: dict[str, str] = {}
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return fields
    for line in text.splitlines():
        if not line.strip():
            break
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    return fields


def _memory_gib() -> str:
    try:
        for line in Path("/proc/meminfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 2**20:.1f} GiB RAM"
    except OSError:
        pass
    return "RAM unknown"


def _transparent_hugepages() -> str:
    try:
        modes = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text(encoding="utf-8")
    except OSError:
        return "unknown"
    chosen = [mode[1:-1] for mode in modes.split() if mode.startswith("[")]
    return chosen[0] if chosen else modes.strip()


def machine_description() -> str:
    cpu = _cpuinfo()
    model = cpu.get("model name", platform.processor() or "unknown CPU")
    avx512 = "yes" if "avx512f" in cpu.get("flags", "").split() else "no"
    nproc = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (
        f"nproc {nproc}; CPU {model} (family {cpu.get('cpu family', '?')}, "
        f"model {cpu.get('model', '?')}, avx512f: {avx512}); {_memory_gib()}, "
        f"transparent hugepages: {_transparent_hugepages()}; "
        f"Python {platform.python_version()}, numpy {np.__version__}, "
        f"scikit-learn {sklearn.__version__}; environment: {_environment()}"
    )


def _environment() -> str:
    """The variables that change numpy's sort kernels or the allocator, as they were set."""
    return ", ".join(f"{name}={os.environ.get(name, 'unset')}" for name in TUNING_VARIABLES)


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def render_table(results: Sequence[Row]) -> str:
    lines = [
        "| scenario | rows | ours (s) | reference (s) | ratio | target | pass/fail |",
        "|---|---:|---:|---:|---:|---|---|",
    ]
    lines += [
        f"| {row.scenario} | {row.rows:,} | {_seconds(row.ours)} | {_seconds(row.reference)} "
        f"| {row.ratio:.2f}x | {row.target} | {row.status} |"
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


def render_section(
    results: Sequence[Row],
    usage: Mapping[str, Usage],
    command: str,
    repeats: int,
    load: tuple[float, float],
) -> str:
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    options = ", ".join(f"{key}={value}" for key, value in SUITE_OPTIONS.items())
    rows = results[0].rows
    return f"""* Command: `{command}`
* Date: {now}
* Machine: {machine_description()}
* Timing: best of {repeats} after one warm-up call, tasks interleaved round by round (order
  rotated each round); same data, same process, same run for every ratio. 1-minute load
  average {load[0]:.2f} before the run, {load[1]:.2f} after it (this run itself adds about 1;
  more means other processes competed for the CPUs).

{render_table(results)}

* The suite: `core.evaluate("binary", labels, scores[, sample_weight], options={{{options}}})`,
  every other option at its default (curves included, thinned to 1000 points). Labels are
  int64 0/1 with exactly 10% positives; scores are float64 in (0, 1) (logistic of a unit normal,
  shifted by 1.5 for positives), practically all distinct; weights are uniform on [0.1, 10).
  "Many ties" rounds the same scores to {TIE_DECIMALS} decimals.
* DeLong row: the ROC AUC alone (rows checked, statistic built, ranked, pairs summed) against
  the same plus its DeLong variance and Wald interval from the same statistic (target: at most
  30% more). The suite itself always includes the DeLong and Wilson intervals.
* Target rows: ratio = our time / reference time. Only the rows at the `--rows` size with
  continuous scores gate the exit status; the rows marked "(info)" are reported only.
* scikit-learn rows: "reference" is the scikit-learn call alone on the same unweighted data;
  ratio = its time / our whole suite (how many times faster the suite is) or / `np.sort`.
* `np.sort` itself depends on numpy's SIMD dispatch (x86-simd-sort): on AMD Zen 4 (family 25)
  its AVX-512 path is several times slower than the AVX2 one (numpy/x86-simd-sort#6), which
  makes every ratio against `np.sort`/`np.argsort` look better there than elsewhere.

Where the time of the best runs at {rows:,} rows went (CPU time in user mode and in the kernel;
user time above wall time means helper threads, such as OpenBLAS's):

{render_usage(usage)}

Our suite touches far more fresh memory than a sort (page faults), so its kernel time, and with
it the wall time, varies from run to run and with the allocator's state in the process (glibc
raises its mmap threshold after large frees); the environment line records the variables that
change this (`MALLOC_MMAP_THRESHOLD_`, `NUMPY_MADVISE_HUGEPAGE`).
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


def profile_top(call: Task, top: int, repeats: int) -> str:
    """cProfile of the fastest of ``repeats`` calls: the ``top`` functions by cumulative time
    (wall time, so the kernel's page-fault time counts where it happens)."""
    _, profiler = min((_profiled(call) for _ in range(repeats)), key=lambda run: run[0])
    # Summed by label: one C function can have several entries (one per bound object).
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
    entries = [
        (cumulative, own, calls, where) for where, (cumulative, own, calls) in summed.items()
    ]
    entries.sort(reverse=True)
    lines = [f"    {'cumulative':>10} {'own':>8} {'calls':>6}  function"]
    lines += [
        f"    {cumulative:10.3f} {own:8.3f} {calls:6d}  {where}"
        for cumulative, own, calls, where in entries[:top]
    ]
    return "\n".join(lines)


def staged_evaluate(data: Data, *, weighted: bool) -> dict[str, Usage]:
    """One ``evaluate("binary", ...)`` run stage by stage, in the order of
    ``core._evaluate.evaluate``, with the resources each stage used."""
    stages: dict[str, Usage] = {}
    gc.collect()
    gc.disable()
    try:
        start = Usage.now()
        options = parse_options(SUITE_OPTIONS)
        stages["core._options.parse_options"] = (mark := Usage.now()) - start
        labels = binary_labels("labels", data.labels)
        stages["core._validation.binary_labels (int64 0/1)"] = (start := Usage.now()) - mark
        scores = finite_floats("scores", data.scores)
        same_length("scores", scores.size, labels.size)
        stages["core._validation.finite_floats (scores)"] = (mark := Usage.now()) - start
        weights = sample_weights("weights", data.weights if weighted else None, labels.size)
        stages["core._validation.sample_weights"] = (start := Usage.now()) - mark
        stats = BinaryStats.from_arrays(labels, scores, weights)
        stages["BinaryStats.from_arrays"] = (mark := Usage.now()) - start
        sink, curves = compute(stats, options)
        stages["core.binary._suite.compute"] = (start := Usage.now()) - mark
        del sink, curves, stats, weights, scores, labels
        stages["freeing the intermediates"] = Usage.now() - start
    finally:
        gc.enable()
    return stages


def _usage_line(name: str, used: Usage, whole: float, base: float) -> str:
    return (
        f"{name:<46} {used.wall:8.3f} {used.wall / whole:6.1%} {used.wall / base:7.2f}x"
        f" {used.user:7.3f} {used.system:7.3f} {used.faults:8,d}"
    )


def profile_suite(
    data: Data, reference: Mapping[str, Usage], repeats: int, top: int, *, weighted: bool
) -> None:
    """Best time of each stage of ``evaluate`` (run in sequence, as ``evaluate`` runs them) and
    of the whole call, then cProfile of the two big stages."""
    reference_name = "np.argsort" if weighted else "np.sort"
    staged_evaluate(data, weighted=weighted)  # warm-up
    suite(data, weighted=weighted)
    best: dict[str, Usage] = {}
    passes: list[Usage] = []
    wholes: list[Usage] = []
    for _ in range(repeats):
        stages = staged_evaluate(data, weighted=weighted)
        for name, used in stages.items():
            if name not in best or used.wall < best[name].wall:
                best[name] = used
        passes.append(sum(stages.values(), start=Usage(0.0, 0.0, 0.0, 0)))
        wholes.append(measured(lambda: suite(data, weighted=weighted)))

    labels = binary_labels("labels", data.labels)
    scores = finite_floats("scores", data.scores)
    weights = data.weights if weighted else None
    stats = BinaryStats.from_arrays(labels, scores, weights)
    options = parse_options(SUITE_OPTIONS)
    kind = "weighted" if weighted else "unweighted"
    base = reference[reference_name].wall
    whole = min(wholes, key=lambda used: used.wall)
    print(f"\n== {kind} suite, {data.rows:,} rows, {stats.n_distinct:,} distinct scores ==")
    print(
        f"{'stage (in sequence; best run of each)':<46} {'wall (s)':>8} {'share':>6} "
        f"{'x ' + reference_name[3:]:>8} {'user':>7} {'system':>7} {'faults':>8}"
    )
    rows = [
        *best.items(),
        ("best staged run (sum of its stages)", min(passes, key=lambda used: used.wall)),
        ("whole evaluate('binary', ...), timed alone", whole),
    ]
    for name, used in rows:
        print(_usage_line(name, used, whole.wall, base))
    walls = ", ".join(f"{used.wall:.2f}" for used in wholes)
    systems = ", ".join(f"{used.system:.2f}" for used in wholes)
    print(f"every whole run: wall {walls} s; of it in the kernel (page faults): {systems} s")
    print(f"\n  cProfile: the fastest of {repeats} profiled runs, wall time (page faults included)")
    print(f"\n  cProfile, BinaryStats.from_arrays ({kind}):")
    print(profile_top(lambda: BinaryStats.from_arrays(labels, scores, weights), top, repeats))
    print(f"\n  cProfile, core.binary._suite.compute ({kind}):")
    print(profile_top(lambda: compute(stats, options), top, repeats))


def run_profile(rows: int, repeats: int, seed: int, top: int) -> None:
    progress(f"generating {rows:,} rows ...")
    data = make_data(rows, seed)
    scores = data.scores
    reference = best_runs(
        {"np.sort": lambda: np.sort(scores), "np.argsort": lambda: np.argsort(scores)}, repeats
    )
    print(f"Profile of the binary core: {rows:,} rows, best of {repeats}")
    print(f"Machine: {machine_description()}")
    for name, used in reference.items():
        print(
            f"{name}: wall {used.wall:.3f} s, user {used.user:.3f} s, system {used.system:.3f} s,"
            f" {used.faults:,} page faults"
        )
    profile_suite(data, reference, repeats, top, weighted=False)
    profile_suite(data, reference, repeats, top, weighted=True)


# --- command line -----------------------------------------------------------------------------


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=f"python {SCRIPT}", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    parser.add_argument("--rows", type=int, default=DEFAULT_ROWS, help="rows (default 10M)")
    parser.add_argument("--repeats", type=int, default=3, help="timed rounds; best is kept")
    parser.add_argument("--quick", action="store_true", help="smoke test: 1M rows, 1 repeat")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated data")
    parser.add_argument(
        "--no-fail", action="store_true", help="exit 0 even when a gated target fails"
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="print where the suite's time goes (stages, cProfile) instead of the benchmark",
    )
    parser.add_argument("--top", type=int, default=15, help="cProfile functions shown")
    parser.add_argument(
        "--allocator",
        choices=("service", "default"),
        default="service",
        help="service: keep freed arrays in the heap as `evalserve` does at start-up "
        "(service.memory); default: glibc as it comes (reported, never gating)",
    )
    parser.add_argument(
        "--results", type=Path, default=RESULTS_PATH, help="the results file to update"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.repeats = SMALL_ROWS, 1
    if args.rows < 100 or args.repeats < 1:
        parser.error("--rows must be at least 100 and --repeats at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    title = SECTION_TITLE
    if args.allocator == "service":
        retain_freed_memory()
    else:
        title = DEFAULT_ALLOCATOR_TITLE
        args.no_fail = True
    if args.profile:
        warn_if_busy(load_average())
        run_profile(args.rows, args.repeats, args.seed, args.top)
        return 0
    before = load_average()
    warn_if_busy(before)
    results, usage = run_benchmark(args.rows, args.repeats, args.seed)
    load = (before, load_average())
    command = shlex.join(["python", SCRIPT, *argv])
    print(render_table(results))
    print()
    print(render_usage(usage))
    section = render_section(results, usage, command, args.repeats, load)
    write_section(title, section, args.results)
    print(f"\nwrote section '{title}' of {args.results}")
    failed = [row.scenario for row in results if row.failed]
    if failed and not args.no_fail:
        print(f"targets failed: {'; '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
