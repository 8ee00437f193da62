"""Simulation check of the ROC AUC confidence intervals and of the AUC drift test.

Targets: for n = 200, 2 000 and 20 000 rows and prevalence 1% and 20%, the
95% DeLong interval of ROC AUC covers the true AUC in 93.5-96.5% of at least 2 000 replicates;
the drift test raises a false alarm, with no drift, in at most alpha + 1 point of them; its power
at a true AUC drop of 0.03 is reported.

Model: binormal scores, negatives ~ N(0, 1) and positives ~ N(mu, 1), whose true AUC is
Phi(mu / sqrt(2)); mu is chosen for a true AUC of 0.85 (the baseline) or 0.82 (the drift).
Every sample is stratified: it holds exactly round(n * prevalence) positives and the rest
negatives (at n = 200 and 1% that is 2 positives, reported as it comes out).

One replicate of a configuration (n, prevalence) draws three independent samples of n rows: a
baseline reference and a current sample at AUC 0.85, and a drifted sample at AUC 0.82. Then,
all through the public ``core.evaluate("binary", ...)`` with curves and bootstrap off:

* current vs baseline, ``auc_interval="wald"``: the Wald interval of the current AUC (covers
  0.85?) and the drift test with no drift (a significant verdict is a false alarm);
* current alone, ``auc_interval="logit"``: the logit interval of the same sample;
* drifted vs baseline: the drift test at a true AUC drop of 0.03 (significant = detected).

Each replicate has its own seed, derived from ``--seed``, n, the prevalence and the replicate's
index, so the numbers do not depend on ``--jobs`` and a shorter run is a prefix of a longer one.

    python bench/auc_simulation.py [--replicates 2000] [--seed 0] [--jobs 1] [--quick]
                                   [--no-fail] [--results PATH]

The script prints its tables and rewrites its own section of ``bench/RESULTS.md`` (or of
``--results``). It exits with status 1 when a gated target fails (coverage of the default
interval method outside [93.5%, 96.5%] over all replicates; false-alarm rate over the
replicates with a verdict above alpha + 1 point), unless ``--no-fail`` or ``--quick``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# The checkout this script belongs to goes first on sys.path, so it checks this tree's core
# even where another copy is installed.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
# One BLAS thread per process, set before numpy loads OpenBLAS: the DeLong sums are dot products
# of one entry per distinct score, which OpenBLAS splits across threads above a few thousand
# entries; with the other core busy that made an n = 20 000 evaluation 4-5x slower here. The
# simulation measures statistics, not speed; ``--jobs`` uses the cores instead.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import contextlib
import datetime as dt
import math
import shlex
import statistics
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from machine import machine_description  # bench/ on sys.path
from numpy.typing import NDArray
from results_md import RESULTS_PATH, write_section
from timing import load_average, progress

from evalserve.core import DriftTest, EvaluationResult, Interval, Options, evaluate

SECTION_TITLE = "AUC intervals and drift test, simulation (bench/auc_simulation.py)"
SCRIPT = "bench/auc_simulation.py"

SIZES = (200, 2_000, 20_000)
PREVALENCES = (0.01, 0.20)
BASELINE_AUC = 0.85
AUC_DROP = 0.03
LEVEL = 0.95
ALPHA = 0.05
DRIFT_MIN_SAMPLES = Options().drift_min_samples  # the service's default
METHODS = ("wald", "logit")
COVERAGE_LOW, COVERAGE_HIGH = 0.935, 0.965
FALSE_ALARM_LIMIT = ALPHA + 0.01
COVERAGE_TARGET = f"{100 * COVERAGE_LOW:.1f}-{100 * COVERAGE_HIGH:.1f}"
DEFAULT_REPLICATES = 2_000
QUICK_REPLICATES = 200
CHUNK = 100  # replicates per task handed to a worker process

Labels = NDArray[np.int64]
Floats = NDArray[np.float64]


# --- the model --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Config:
    """One cell of the grid: rows per sample and share of positives."""

    n: int
    prevalence: float

    @property
    def positives(self) -> int:
        return round(self.n * self.prevalence)

    @property
    def negatives(self) -> int:
        return self.n - self.positives

    @property
    def key(self) -> tuple[int, int]:
        """Integers that name the cell in the seed (prevalence in basis points)."""
        return self.n, round(self.prevalence * 10_000)


def binormal_shift(auc: float) -> float:
    """mu such that P(N(mu, 1) > N(0, 1)) = Phi(mu / sqrt(2)) = auc."""
    return math.sqrt(2.0) * statistics.NormalDist().inv_cdf(auc)


def draw_sample(rng: np.random.Generator, config: Config, shift: float) -> tuple[Labels, Floats]:
    """Exactly ``config.positives`` positives then the negatives (row order does not matter to
    any AUC statistic: the core works on the sorted scores)."""
    labels = np.zeros(config.n, dtype=np.int64)
    labels[: config.positives] = 1
    scores = rng.standard_normal(config.n)
    scores[: config.positives] += shift
    return labels, scores


def replicate_rng(seed: int, config: Config, index: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(*config.key, index)))


def evaluate_options(method: str) -> dict[str, Any]:
    return {
        "confidence_level": LEVEL,
        "alpha": ALPHA,
        "auc_interval": method,
        "drift_min_samples": DRIFT_MIN_SAMPLES,
        "bootstrap_replicates": 0,
        "max_curve_points": 0,
    }


# --- tallies ----------------------------------------------------------------------------------


@dataclass(slots=True)
class IntervalTally:
    """Coverage counts of one interval method in one cell."""

    replicates: int = 0
    defined: int = 0
    covered: int = 0
    below: int = 0  # upper bound below the true AUC
    above: int = 0  # lower bound above the true AUC
    width_sum: float = 0.0

    def add(self, interval: Interval | None, truth: float) -> None:
        self.replicates += 1
        if interval is None:
            return
        lower, upper = interval.lower, interval.upper
        self.defined += 1
        self.width_sum += upper - lower
        if upper < truth:
            self.below += 1
        elif lower > truth:
            self.above += 1
        else:
            self.covered += 1

    def merge(self, other: IntervalTally) -> None:
        self.replicates += other.replicates
        self.defined += other.defined
        self.covered += other.covered
        self.below += other.below
        self.above += other.above
        self.width_sum += other.width_sum


@dataclass(slots=True)
class DriftTally:
    """Verdict counts of the drift test in one cell, under one truth (drift or none)."""

    replicates: int = 0
    verdicts: int = 0
    significant: int = 0
    insufficient: int = 0

    def add(self, drift: DriftTest | None) -> None:
        self.replicates += 1
        if drift is None:
            return
        if drift.status == "insufficient_data":
            self.insufficient += 1
        verdict = drift.significant
        if verdict is not None:
            self.verdicts += 1
            self.significant += bool(verdict)

    def merge(self, other: DriftTally) -> None:
        self.replicates += other.replicates
        self.verdicts += other.verdicts
        self.significant += other.significant
        self.insufficient += other.insufficient


@dataclass(slots=True)
class CellTally:
    """Everything counted for one cell; chunks of replicates merge into one."""

    intervals: dict[str, IntervalTally] = field(
        default_factory=lambda: {method: IntervalTally() for method in METHODS}
    )
    no_drift: DriftTally = field(default_factory=DriftTally)
    drift: DriftTally = field(default_factory=DriftTally)
    # Reported std_error / an independent DeLong standard error, on the first replicate.
    se_ratio: float | None = None

    def merge(self, other: CellTally) -> None:
        for method, tally in other.intervals.items():
            self.intervals[method].merge(tally)
        self.no_drift.merge(other.no_drift)
        self.drift.merge(other.drift)
        if self.se_ratio is None:
            self.se_ratio = other.se_ratio


# --- one replicate ----------------------------------------------------------------------------


def delong_std_error(labels: Labels, scores: Floats) -> float:
    """DeLong's standard error of the Mann-Whitney AUC (ties count one half), computed here
    independently of the core, as a cross-check of the reported ``std_error``."""
    positives, negatives = np.sort(scores[labels == 1]), np.sort(scores[labels == 0])
    below = np.searchsorted(negatives, positives, side="left")
    not_above = np.searchsorted(negatives, positives, side="right")
    v10 = (below + not_above) / (2.0 * negatives.size)
    above = positives.size - np.searchsorted(positives, negatives, side="right")
    not_below = positives.size - np.searchsorted(positives, negatives, side="left")
    v01 = (above + not_below) / (2.0 * positives.size)
    variance = v10.var(ddof=1) / positives.size + v01.var(ddof=1) / negatives.size
    return math.sqrt(variance)


def std_error_ratio(interval: Interval | None, labels: Labels, scores: Floats) -> float:
    reported = None if interval is None else interval.std_error
    expected = delong_std_error(labels, scores)
    if reported is None or expected == 0:
        return math.nan
    return float(reported) / expected


def simulate(config: Config, start: int, stop: int, seed: int) -> CellTally:
    """Replicates ``start`` to ``stop - 1`` of one cell."""
    null_shift = binormal_shift(BASELINE_AUC)
    drift_shift = binormal_shift(BASELINE_AUC - AUC_DROP)
    tally = CellTally()
    for index in range(start, stop):
        rng = replicate_rng(seed, config, index)
        base_labels, base_scores = draw_sample(rng, config, null_shift)
        labels, scores = draw_sample(rng, config, null_shift)
        drifted_labels, drifted_scores = draw_sample(rng, config, drift_shift)
        baseline = {"labels": base_labels, "scores": base_scores}

        wald = _evaluate(labels, scores, "wald", baseline)
        logit = _evaluate(labels, scores, "logit", None)
        drifted = _evaluate(drifted_labels, drifted_scores, "wald", baseline)

        tally.intervals["wald"].add(wald.intervals.get("roc_auc"), BASELINE_AUC)
        tally.intervals["logit"].add(logit.intervals.get("roc_auc"), BASELINE_AUC)
        tally.no_drift.add(wald.drift.get("roc_auc"))
        tally.drift.add(drifted.drift.get("roc_auc"))
        if index == 0:
            tally.se_ratio = std_error_ratio(wald.intervals.get("roc_auc"), labels, scores)
    return tally


def _evaluate(
    labels: Labels, scores: Floats, method: str, baseline: Mapping[str, Any] | None
) -> EvaluationResult:
    return evaluate("binary", labels, scores, options=evaluate_options(method), baseline=baseline)


def _simulate_task(task: tuple[Config, int, int, int]) -> tuple[Config, CellTally]:
    config, start, stop, seed = task
    return config, simulate(config, start, stop, seed)


def tasks(
    configs: Sequence[Config], replicates: int, seed: int
) -> list[tuple[Config, int, int, int]]:
    """Chunks of replicates, the largest samples first (they take longest)."""
    ordered = sorted(configs, key=lambda config: -config.n)
    return [
        (config, start, min(start + CHUNK, replicates), seed)
        for config in ordered
        for start in range(0, replicates, CHUNK)
    ]


def run_simulation(
    configs: Sequence[Config], replicates: int, seed: int, jobs: int
) -> dict[Config, CellTally]:
    """Every cell's tally; with ``jobs`` > 1 the chunks run in that many worker processes."""
    totals = {config: CellTally() for config in configs}
    work = tasks(configs, replicates, seed)
    with contextlib.ExitStack() as stack:
        results: Iterable[tuple[Config, CellTally]] = map(_simulate_task, work)
        if jobs > 1:
            pool = stack.enter_context(ProcessPoolExecutor(max_workers=jobs))
            results = pool.map(_simulate_task, work)
        for done, (config, tally) in enumerate(results, start=1):
            totals[config].merge(tally)
            progress(f"  {done}/{len(work)} chunks (n={config.n:,}, {config.prevalence:.0%})")
    return totals


# --- report -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Rate:
    """successes / trials, with its Monte Carlo standard error sqrt(p (1 - p) / trials)."""

    successes: int
    trials: int

    @property
    def value(self) -> float | None:
        return self.successes / self.trials if self.trials else None

    @property
    def std_error(self) -> float | None:
        p = self.value
        return None if p is None else math.sqrt(p * (1.0 - p) / self.trials)

    def show(self) -> str:
        p, se = self.value, self.std_error
        if p is None or se is None:
            return "-"
        return f"{100 * p:.1f} ± {100 * se:.1f}"


GATED_METHOD = Options().auc_interval  # the interval users get by default


def coverage_status(rate: Rate, method: str) -> str:
    """pass/FAIL for the default interval; the other one is reported, "(info)"."""
    p = rate.value
    ok = p is not None and COVERAGE_LOW <= p <= COVERAGE_HIGH
    if method == GATED_METHOD:
        return "pass" if ok else "FAIL"
    return "pass (info)" if ok else "fail (info)"


def false_alarm_status(rate: Rate) -> str:
    p = rate.value
    if p is None:
        return "no verdict"
    return "pass" if p <= FALSE_ALARM_LIMIT else "FAIL"


def _cell(config: Config) -> str:
    return f"| {config.n:,} | {config.prevalence:.0%} | {config.positives:,} "


def coverage_table(totals: Mapping[Config, CellTally]) -> str:
    lines = [
        "| n | prevalence | positives | interval | coverage, all replicates (%) "
        "| coverage, with an interval (%) | with an interval (%) | misses low / high "
        "| mean width | target | pass/fail |",
        "|---:|---:|---:|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for config, cell in totals.items():
        for method in METHODS:
            tally = cell.intervals[method]
            overall = Rate(tally.covered, tally.replicates)
            width = f"{tally.width_sum / tally.defined:.4f}" if tally.defined else "-"
            share = 100 * tally.defined / tally.replicates
            lines.append(
                _cell(config) + f"| {method} | {overall.show()} "
                f"| {Rate(tally.covered, tally.defined).show()} | {share:.1f} "
                f"| {tally.below} / {tally.above} | {width} "
                f"| {COVERAGE_TARGET} | {coverage_status(overall, method)} |"
            )
    return "\n".join(lines)


def drift_table(totals: Mapping[Config, CellTally]) -> str:
    lines = [
        "| n | prevalence | positives | verdicts (%) | insufficient_data (%) "
        "| false alarms, of verdicts (%) | false alarms, all replicates (%) | target "
        "| pass/fail | power, of verdicts (%) | power, all replicates (%) |",
        "|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|",
    ]
    for config, cell in totals.items():
        null, alt = cell.no_drift, cell.drift
        alarms = Rate(null.significant, null.verdicts)
        verdicts = 100 * null.verdicts / null.replicates
        insufficient = 100 * null.insufficient / null.replicates
        lines.append(
            _cell(config) + f"| {verdicts:.1f} | {insufficient:.1f} | {alarms.show()} "
            f"| {Rate(null.significant, null.replicates).show()} "
            f"| <= {100 * FALSE_ALARM_LIMIT:.0f} | {false_alarm_status(alarms)} "
            f"| {Rate(alt.significant, alt.verdicts).show()} "
            f"| {Rate(alt.significant, alt.replicates).show()} |"
        )
    return "\n".join(lines)


def failures(totals: Mapping[Config, CellTally]) -> list[str]:
    failed: list[str] = []
    for config, cell in totals.items():
        name = f"n={config.n}, prevalence {config.prevalence:.0%}"
        for method in METHODS:
            tally = cell.intervals[method]
            if coverage_status(Rate(tally.covered, tally.replicates), method) == "FAIL":
                failed.append(f"{name}: {method} coverage")
        alarms = Rate(cell.no_drift.significant, cell.no_drift.verdicts)
        if false_alarm_status(alarms) == "FAIL":
            failed.append(f"{name}: drift false alarms")
    return failed


def se_cross_check(totals: Mapping[Config, CellTally]) -> str:
    ratios = [cell.se_ratio for cell in totals.values() if cell.se_ratio is not None]
    finite = [ratio for ratio in ratios if math.isfinite(ratio)]
    if not finite:
        return "no reported std_error to compare"
    worst = max(abs(ratio - 1.0) for ratio in finite)
    missing = len(ratios) - len(finite)
    extra = f"; {missing} cell(s) reported no std_error" if missing else ""
    return f"largest |reported / independent - 1| = {worst:.2e} over {len(finite)} cells{extra}"


def render_section(
    totals: Mapping[Config, CellTally],
    command: str,
    replicates: int,
    seed: int,
    jobs: int,
    elapsed: float,
    load: tuple[float, float],
) -> str:
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    options = ", ".join(f"{key}={value}" for key, value in evaluate_options("wald").items())
    drifted = f"{BASELINE_AUC - AUC_DROP:.2f}"
    mu_null, mu_drift = binormal_shift(BASELINE_AUC), binormal_shift(BASELINE_AUC - AUC_DROP)
    return f"""* Command: `{command}`
* Date: {now}
* Machine: {machine_description()}
* Run: {replicates:,} replicates per cell, seed {seed}, {jobs} process(es),
  OPENBLAS_NUM_THREADS={os.environ.get("OPENBLAS_NUM_THREADS")}; {elapsed:.0f} s wall time; 1-minute
  load average {load[0]:.2f} before the run, {load[1]:.2f} after it.

Coverage of the {LEVEL:.0%} DeLong interval of ROC AUC (true AUC {BASELINE_AUC}), in % ± Monte
Carlo standard error:

{coverage_table(totals)}

Drift test of ROC AUC (`delong-unpaired`, alpha {ALPHA}, drift_min_samples {DRIFT_MIN_SAMPLES:g}):
a current sample against an independent baseline sample of the same n and prevalence. False
alarms with both at true AUC {BASELINE_AUC}, power with the current one at {drifted}; in % ±
Monte Carlo standard error:

{drift_table(totals)}

* Model: binormal scores, negatives ~ N(0, 1), positives ~ N(mu, 1), true AUC
  Phi(mu / sqrt(2)): mu = {mu_null:.4f} for AUC {BASELINE_AUC}, {mu_drift:.4f} for AUC {drifted}.
  Samples are stratified: exactly round(n x prevalence) positives ("positives" column), the
  rest negatives. Each replicate draws a baseline and a current sample at AUC {BASELINE_AUC} and a
  drifted sample at AUC {drifted}, all independent.
* Calls: `core.evaluate("binary", labels, scores, options=..., baseline={{"labels": ...,
  "scores": ...}})` with options `{{{options}}}`, for the Wald interval and the drift test with
  no drift; the same sample without a baseline and auc_interval=logit for the logit interval;
  the drifted sample against the same baseline for the power. drift_min_samples is
  {DRIFT_MIN_SAMPLES:g}, the core's default.
* Coverage: an interval covers when lower <= {BASELINE_AUC} <= upper. "All replicates" counts a
  missing interval (`intervals.roc_auc` absent or null) as a miss; "with an interval" leaves
  those replicates out. Misses low / high: replicates whose upper bound is below the true AUC /
  whose lower bound is above it. Mean width over the replicates with an interval.
* Drift: a verdict is `significant` true or false (null means no verdict, as with
  `status: insufficient_data` when the current or the baseline sample has fewer than
  {DRIFT_MIN_SAMPLES:g} positives or negatives). A false alarm is a significant verdict with no
  drift; power is the share of significant verdicts at the drop of {AUC_DROP}.
* Targets: coverage over all replicates within {COVERAGE_TARGET}% for the default interval
  (`auc_interval="{GATED_METHOD}"`; the other is reported, marked "(info)");
  false alarms over the replicates with a verdict at most alpha + 1 point =
  {100 * FALSE_ALARM_LIMIT:.0f}% ("no verdict" when the test never gave one: nothing to gate).
  Power is reported only. Every cell is shown, passing or failing.
* Monte Carlo standard error: sqrt(p (1 - p) / m) over the m replicates of the rate's
  denominator (0 when p is 0 or 1).
* Cross-check of the reported `std_error` against DeLong's variance computed independently in
  this script (first replicate of each cell): {se_cross_check(totals)}.
"""


# --- command line -----------------------------------------------------------------------------


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=f"python {SCRIPT}", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    parser.add_argument(
        "--replicates",
        type=int,
        default=DEFAULT_REPLICATES,
        help=f"replicates per cell (default {DEFAULT_REPLICATES})",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the simulation")
    parser.add_argument(
        "--jobs", type=int, default=1, help="worker processes (default 1; the grid is cheap)"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"smoke test: {QUICK_REPLICATES} replicates per cell; never fails",
    )
    parser.add_argument(
        "--no-fail", action="store_true", help="exit 0 even when a gated target fails"
    )
    parser.add_argument(
        "--results", type=Path, default=RESULTS_PATH, help="the results file to update"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.replicates, args.no_fail = QUICK_REPLICATES, True
    if args.replicates < 1 or args.jobs < 1:
        parser.error("--replicates and --jobs must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    configs = [Config(n, prevalence) for n in SIZES for prevalence in PREVALENCES]
    before = load_average()
    started = time.perf_counter()
    progress(f"simulating {len(configs)} cells x {args.replicates:,} replicates ...")
    totals = run_simulation(configs, args.replicates, args.seed, args.jobs)
    elapsed = time.perf_counter() - started
    load = (before, load_average())
    command = shlex.join(["python", SCRIPT, *argv])
    print(coverage_table(totals))
    print()
    print(drift_table(totals))
    print(f"\nDeLong std_error cross-check: {se_cross_check(totals)}")
    print(f"{elapsed:.0f} s wall time")
    section = render_section(totals, command, args.replicates, args.seed, args.jobs, elapsed, load)
    write_section(SECTION_TITLE, section, args.results)
    print(f"\nwrote section '{SECTION_TITLE}' of {args.results}")
    failed = failures(totals)
    if failed:
        print(f"targets failed: {'; '.join(failed)}", file=sys.stderr)
    return 1 if failed and not args.no_fail else 0


if __name__ == "__main__":
    sys.exit(main())
