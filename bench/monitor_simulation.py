"""Simulation check of the AUC monitor's promise, with the real code.

The monitor (``core/binary/_monitor.py``) tests H0: AUC >= baseline - delta in every window. Per
window it turns the DeLong statistic (DeLong, DeLong & Clarke-Pearson 1988) against the null's
boundary into e-values, one per effect size, feeds them to Shiryaev-Roberts detectors (Shiryaev
1963; Roberts 1966) and alarms when their average reaches ``monitor_arl_windows``; by Ville's
inequality (Ville 1939) and optional stopping, the e-detector of Shin, Ramdas & Rinaldo (2024)
holds the expected number of windows to a false alarm at or above that threshold. This script
measures that promise, its power, and what it changes against today's per-window page:

1. False alarms. True AUC exactly at baseline - delta (the null's worst case), delta 0.01,
   ``monitor_arl_windows`` = 200 so the run length can be measured: the mean run length to a
   false alarm is at least 200 and its one-sided 95% lower confidence bound at least 180, at
   1 000, 10 000 and 100 000 rows per window, 10% and 1% positives, with a known baseline and
   with baselines estimated from 5 000 and 100 000 rows (one fresh baseline sample per run,
   true AUC 0.85). Runs stop at a horizon (2 000 windows): the mean of truncated run lengths
   is a lower bound of the true mean. Windows with fewer than ``drift_min_samples`` positives
   add no evidence and are reported as such. Also: AUC 0.002 below the baseline, 1 000 000
   rows per window: no alarm in 2 000 windows.
2. Detection. Baseline 0.85 known, AUC 0.85 for windows 1-99, then 0.83, 0.82 or 0.80 from
   window 100; delay = alarm window - 99. Gate: at 5 000 rows and a fall to 0.80, with the
   default ``monitor_arl_windows``, median delay <= 5 windows and within 1.5x the median delay
   of the CUSUM (Page 1954) that knows the shift, fed the same windows, its threshold
   calibrated by simulation to the same in-control run length at the null's boundary.
3. Before/after: today's per-window rule (page when the drift test's p < 0.01 and z < 0) and
   the monitor on the same simulated weeks of 168 hourly windows.

Model: binormal scores, negatives ~ N(0, 1), positives ~ N(mu, 1), true AUC Phi(mu / sqrt(2));
each window holds exactly round(n x prevalence) positives. Windows of up to 50 000 rows are
drawn row by row and go through ``core.evaluate("binary", ...)``. Windows of 100 000 rows or
more are drawn binned: scores are floored to a grid of step 0.01 (mu chosen so the floored
scores' AUC, ties counting half, is exactly the target), the count of each class in each bin
is a multinomial draw, and the window goes through the same ``evaluate`` as distinct scores with
the counts as sample weights (a weight is a multiplicity in the core, so this is the DeLong
statistic of those rows, exactly). ``tests/bench/test_monitor_simulation.py`` checks that the
monitor's z of binned windows has the mean and spread of row-level windows at 100 000 rows.

Every run, week chain or path has its own seed, derived from ``--seed`` and its cell, so the
figures do not depend on ``--jobs``.

    python bench/monitor_simulation.py [--seed 0] [--jobs 2] [--quick] [--no-fail]
                                       [--results PATH]

The script prints its tables, rewrites its own section of ``bench/RESULTS.md`` (or of
``--results``) and exits with status 1 when a gated target fails, unless ``--no-fail`` or
``--quick``.

References: E. S. Page (1954), Continuous inspection schemes, Biometrika 41; A. N. Shiryaev
(1963), On optimum methods in quickest detection problems, Theory Probab. Appl. 8; S. W. Roberts
(1966), A comparison of some control chart procedures, Technometrics 8; J. Ville (1939), Etude
critique de la notion de collectif; J. Shin, A. Ramdas & A. Rinaldo (2024), E-detectors: a
nonparametric framework for sequential change detection, New England J. Stat. Data Sci.;
E. R. DeLong, D. M. DeLong & D. L. Clarke-Pearson (1988), Comparing the areas under two or more
correlated receiver operating characteristic curves, Biometrics 44; D. Siegmund (1985),
Sequential Analysis (the CUSUM run-length approximation, reported beside the simulation).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# This checkout's core first, and one BLAS thread per process (see bench/auc_simulation.py).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import contextlib
import datetime as dt
import functools
import math
import shlex
import statistics
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from machine import machine_description  # bench/ on sys.path
from numpy.typing import NDArray
from results_md import RESULTS_PATH, write_section
from timing import load_average, progress

from evalserve.core import Options, evaluate
from evalserve.core.binary._monitor_format import decode

SECTION_TITLE = "AUC monitor, simulation (bench/monitor_simulation.py)"
SCRIPT = "bench/monitor_simulation.py"

DEFAULTS = Options()
BASELINE_AUC = 0.85
TOLERANCE = DEFAULTS.drift_tolerance  # 0.01
DEFAULT_ARL = DEFAULTS.monitor_arl_windows  # 8760
MIN_SAMPLES = DEFAULTS.drift_min_samples  # 20
BOUNDARY = BASELINE_AUC - TOLERANCE  # the null's worst case with a known baseline
KNOWN_BASELINE: dict[str, float] = {"roc_auc": BASELINE_AUC, "roc_auc_variance": 0.0}
NULL_ARL = 200.0
NULL_LCB = 180.0
LCB_Z = statistics.NormalDist().inv_cdf(0.95)  # one-sided 95%
PAGE_P = 0.01  # today's per-window rule: p < 0.01 and z < 0
WEEK = 168
CHANGE_AT = 100  # the first window at the lower AUC
BINNED_FROM = 100_000  # windows of this many rows or more are drawn binned
GRID_STEP = 0.01
GRID_LOW, GRID_HIGH = -8.0, 12.0

NULL_SIZES = (1_000, 10_000, 100_000)
NULL_PREVALENCES = (0.10, 0.01)
BASELINE_SIZES: tuple[int | None, ...] = (None, 5_000, 100_000)  # None: known
SMALL_DROP_ROWS = 1_000_000
SMALL_DROP = 0.002
DETECTION_SIZES = (1_000, 5_000, 50_000)
FALLS = (0.83, 0.82, 0.80)
GATED_DETECTION = (5_000, 0.80)
DETECTION_MEDIAN_LIMIT = 5.0
CUSUM_RATIO_LIMIT = 1.5
PREVALENCE = 0.10  # detection, weeks and the cross-check

Labels = NDArray[np.int64]
Floats = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Budget:
    """How much to simulate (the full run, or ``--quick``)."""

    known_runs: int = 200  # target 1, known baseline
    estimated_runs: int = 40  # target 1, estimated baseline (runs mostly reach the horizon)
    silent_runs: int = 10  # target 1, windows with too few positives: no evidence at all
    small_drop_runs: int = 20
    horizon: int = 2_000
    detection_runs: int = 150
    post_horizon: int = 1_000  # windows after the change before a run is censored
    week_chains: int = 6
    weeks_per_chain: int = 40
    cusum_paths: int = 1_000  # per step of the calibration
    cusum_check_paths: int = 4_000  # the final check of the calibrated threshold
    cross_check_windows: int = 300
    chunk: int = 20  # runs per task


QUICK = Budget(
    known_runs=6,
    estimated_runs=2,
    silent_runs=1,
    small_drop_runs=1,
    horizon=300,
    detection_runs=6,
    post_horizon=200,
    week_chains=2,
    weeks_per_chain=1,
    cusum_paths=100,
    cusum_check_paths=200,
    cross_check_windows=20,
    chunk=3,
)


# --- windows ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Window:
    """One window's rows: labels, scores and (binned windows) the weight of each row."""

    labels: Labels
    scores: Floats
    weights: Floats | None = None


def positives_of(n: int, prevalence: float) -> int:
    return round(n * prevalence)


def binormal_shift(auc: float) -> float:
    """mu such that P(N(mu, 1) > N(0, 1)) = Phi(mu / sqrt(2)) = auc."""
    return math.sqrt(2.0) * statistics.NormalDist().inv_cdf(auc)


def row_window(rng: np.random.Generator, n: int, prevalence: float, auc: float) -> Window:
    """n rows, exactly round(n x prevalence) of them positive, at true AUC ``auc``."""
    positives = positives_of(n, prevalence)
    labels = np.zeros(n, dtype=np.int64)
    labels[:positives] = 1
    scores = rng.standard_normal(n)
    scores[:positives] += binormal_shift(auc)
    return Window(labels, scores)


_EDGES = np.arange(GRID_LOW, GRID_HIGH, GRID_STEP)  # the left edge of each bin: its score


def _bin_masses(shift: float) -> Floats:
    """P(floor of N(shift, 1) to the grid = each edge); the tails go to the end bins."""
    cdf = np.array([0.5 * math.erfc(-(edge - shift) / math.sqrt(2.0)) for edge in _EDGES[1:]])
    return np.diff(np.concatenate(([0.0], cdf, [1.0])))


def binned_auc(positive: Floats, negative: Floats) -> float:
    """The AUC of binned scores (ties count half): sum over bins of P(positive in the bin) x
    (P(negative in a lower bin) + P(negative in the same bin) / 2)."""
    below = np.cumsum(negative) - negative
    return float(np.sum(positive * (below + 0.5 * negative)))


@dataclass(frozen=True, slots=True)
class BinnedModel:
    """The binormal model with scores floored to the grid, at an exact binned AUC."""

    auc: float
    shift: float
    positive: Floats
    negative: Floats


@functools.cache
def binned_model(auc: float) -> BinnedModel:
    """The shift whose floored scores have AUC exactly ``auc`` (bisection to 1e-12)."""
    negative = _bin_masses(0.0)
    low, high = 0.0, 2.0 * binormal_shift(auc) + 1.0
    while high - low > 1e-12:
        middle = 0.5 * (low + high)
        if binned_auc(_bin_masses(middle), negative) < auc:
            low = middle
        else:
            high = middle
    shift = 0.5 * (low + high)
    return BinnedModel(auc, shift, _bin_masses(shift), negative)


def binned_window(rng: np.random.Generator, n: int, prevalence: float, auc: float) -> Window:
    """n rows with floored scores, as the occupied bins of each class weighted by their count."""
    model = binned_model(auc)
    positives = positives_of(n, prevalence)
    counts_pos = rng.multinomial(positives, model.positive)
    counts_neg = rng.multinomial(n - positives, model.negative)
    pos, neg = counts_pos > 0, counts_neg > 0
    labels = np.concatenate(
        (np.ones(int(pos.sum()), dtype=np.int64), np.zeros(int(neg.sum()), dtype=np.int64))
    )
    scores = np.concatenate((_EDGES[pos], _EDGES[neg]))
    weights = np.concatenate((counts_pos[pos], counts_neg[neg])).astype(np.float64)
    return Window(labels, scores, weights)


def draw_window(rng: np.random.Generator, n: int, prevalence: float, auc: float) -> Window:
    if n >= BINNED_FROM:
        return binned_window(rng, n, prevalence, auc)
    return row_window(rng, n, prevalence, auc)


def cell_rng(seed: int, *key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))


def basis_points(value: float) -> int:
    return round(value * 10_000)


# --- one window through the real code ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Step:
    """One window's outcome: the monitor's next state and alarm, whether the window added
    evidence, the monitor's z against its boundary, and whether today's rule pages."""

    state: bytes
    alarm: bool
    evidence: bool
    z: float | None
    page: bool


def evaluate_options(arl: float) -> dict[str, Any]:
    return {
        "max_curve_points": 0,
        "bootstrap_replicates": 0,
        "drift_tolerance": TOLERANCE,
        "monitor_arl_windows": arl,
    }


def step(window: Window, baseline: Mapping[str, Any], state: bytes | None, arl: float) -> Step:
    """``core.evaluate`` on one window, with the monitor's state of the last one."""
    result = evaluate(
        "binary",
        window.labels,
        window.scores,
        sample_weight=window.weights,
        options=evaluate_options(arl),
        baseline=baseline,
        monitor_state=state,
    )
    verdict, drift, new = result.monitor["roc_auc"], result.drift["roc_auc"], result.monitor_state
    if new is None:
        raise RuntimeError("evaluate returned no monitor state")
    evidence = verdict.status == "ok" and verdict.evalue is not None
    z = decode(new).last_z if evidence else None
    page = (
        drift.p_value is not None and drift.z is not None and drift.p_value < PAGE_P and drift.z < 0
    )
    return Step(new, bool(verdict.alarm), evidence, z, page)


def estimated_baseline(rng: np.random.Generator, rows: int, prevalence: float) -> dict[str, float]:
    """A fresh baseline sample at the true AUC, as the summary of its DeLong AUC and variance
    (what the core computes from the payload; the monitor then need not recompute it)."""
    sample = row_window(rng, rows, prevalence, BASELINE_AUC)
    result = evaluate("binary", sample.labels, sample.scores, options=evaluate_options(NULL_ARL))
    auc, interval = result.metrics["roc_auc"], result.intervals["roc_auc"]
    if auc is None:
        raise RuntimeError("the baseline sample has no AUC")
    return {"roc_auc": float(auc), "roc_auc_variance": interval.std_error**2}


# --- target 1: run length to a false alarm ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class Run:
    """A run of the monitor: windows until its alarm (or the horizon), whether it alarmed,
    and how many of its windows added evidence."""

    length: int
    alarmed: bool
    evidence: int


def run_until_alarm(next_step: Callable[[bytes | None], Step], horizon: int) -> Run:
    """Windows 1, 2, ... until the first alarm, or ``horizon`` windows without one."""
    state: bytes | None = None
    evidence = 0
    for window in range(1, horizon + 1):
        outcome = next_step(state)
        state = outcome.state
        evidence += outcome.evidence
        if outcome.alarm:
            return Run(window, True, evidence)
    return Run(horizon, False, evidence)


@dataclass(frozen=True, slots=True)
class NullCell:
    """Target 1's cell: rows per window, positives, baseline (None: known; else the rows it
    is estimated from), the true AUC and the monitor's ARL."""

    n: int
    prevalence: float
    baseline_rows: int | None
    auc: float = BOUNDARY
    arl: float = NULL_ARL

    @property
    def key(self) -> tuple[int, ...]:
        return (1, self.n, basis_points(self.prevalence), self.baseline_rows or 0,
                basis_points(self.auc), round(self.arl))  # fmt: skip

    @property
    def baseline_name(self) -> str:
        return "known" if self.baseline_rows is None else f"estimated, {self.baseline_rows:,} rows"

    @property
    def silent(self) -> bool:
        """Its windows have too few positives to add evidence."""
        return positives_of(self.n, self.prevalence) < MIN_SAMPLES


@dataclass(slots=True)
class RunTally:
    runs: list[Run] = field(default_factory=list)

    def merge(self, other: RunTally) -> None:
        self.runs.extend(other.runs)


def null_runs(cell: NullCell, start: int, stop: int, seed: int, horizon: int) -> RunTally:
    tally = RunTally()
    for index in range(start, stop):
        rng = cell_rng(seed, *cell.key, index)
        baseline: Mapping[str, float] = KNOWN_BASELINE
        if cell.baseline_rows is not None:
            baseline = estimated_baseline(rng, cell.baseline_rows, cell.prevalence)

        def next_step(
            state: bytes | None,
            baseline: Mapping[str, float] = baseline,
            rng: np.random.Generator = rng,
        ) -> Step:
            window = draw_window(rng, cell.n, cell.prevalence, cell.auc)
            return step(window, baseline, state, cell.arl)

        tally.runs.append(run_until_alarm(next_step, horizon))
    return tally


@dataclass(frozen=True, slots=True)
class RunLengths:
    """The mean of (truncated) run lengths, its standard error and lower confidence bound."""

    runs: int
    mean: float
    std_error: float
    truncated: int

    @property
    def lower_bound(self) -> float:
        return self.mean - LCB_Z * self.std_error


def run_lengths(runs: Sequence[Run]) -> RunLengths:
    lengths = [run.length for run in runs]
    spread = statistics.stdev(lengths) if len(lengths) > 1 else math.nan
    return RunLengths(
        len(lengths),
        statistics.fmean(lengths),
        spread / math.sqrt(len(lengths)),
        sum(not run.alarmed for run in runs),
    )


def null_status(cell: NullCell, runs: Sequence[Run]) -> str:
    """pass/FAIL: the gate of target 1's cell."""
    alarms = sum(run.alarmed for run in runs)
    if cell.silent:
        evidence = sum(run.evidence for run in runs)
        return "pass" if evidence == 0 and alarms == 0 else "FAIL"
    if cell.auc > BOUNDARY:  # inside the null, within delta: no alarm at all
        return "pass" if alarms == 0 else "FAIL"
    figures = run_lengths(runs)
    ok = figures.mean >= cell.arl and figures.lower_bound >= NULL_LCB * cell.arl / NULL_ARL
    return "pass" if ok else "FAIL"


# --- target 2: detection delay against the CUSUM ----------------------------------------------


@dataclass(frozen=True, slots=True)
class Cusum:
    """Page's CUSUM of the windows' z against the boundary, for a known post-change mean
    ``mu`` (< 0) of z: W_t = max(0, W_{t-1} + mu z_t - mu^2 / 2), alarm when W_t > h."""

    mu: float
    h: float
    arl: float  # its in-control run length at z ~ N(0, 1), measured
    arl_std_error: float
    siegmund_h: float

    def step(self, w: float, z: float) -> float:
        return max(0.0, w + self.mu * z - 0.5 * self.mu * self.mu)


def cusum_run_lengths(
    mu: float, h: float, paths: int, rng: np.random.Generator, limit: int
) -> NDArray[np.int64]:
    """In-control run lengths (z ~ N(0, 1)) of ``paths`` CUSUMs, ``limit`` for those that do
    not alarm by then. Blocks of steps at once: within a block, W_t = S_t - min(-W_0, min_s
    S_s), S the partial sums of the increments (Lindley's recursion unrolled)."""
    lengths = np.full(paths, limit, dtype=np.int64)
    alive = np.arange(paths)
    w = np.zeros(paths)
    done = 0
    while alive.size and done < limit:
        block = min(256, limit - done)
        increments = mu * rng.standard_normal((block, alive.size)) - 0.5 * mu * mu
        sums = np.cumsum(increments, axis=0)
        floor = np.minimum(np.minimum.accumulate(sums, axis=0), -w[alive])
        path = sums - floor
        over = path > h
        hit = over.any(axis=0)
        lengths[alive[hit]] = done + over.argmax(axis=0)[hit] + 1
        w[alive] = path[-1]
        alive = alive[~hit]
        done += block
    return lengths


def siegmund_threshold(mu: float, arl: float) -> float:
    """h from Siegmund's approximation ARL = (e^a - a - 1) / (mu^2 / 2), a = h + 1.166 |mu|
    (Siegmund 1985, for the CUSUM of N(0, mu^2)-scaled log likelihood ratios); may be < 0 for
    large shifts, where the approximation does not hold."""
    target = arl * mu * mu / 2.0
    a = math.log(target) + 1.0
    for _ in range(100):
        a -= (math.exp(a) - a - 1.0 - target) / (math.exp(a) - 1.0)
    return a - 1.166 * abs(mu)


def calibrate_cusum(mu: float, arl: float, paths: int, check_paths: int, seed: int) -> Cusum:
    """The threshold h >= 0 whose in-control run length is ``arl``, by bisection on simulated
    run lengths, then measured once more on fresh paths. With a large shift even h = 0 holds
    more than ``arl`` (its run length is exactly 1 / Phi(-|mu| / 2)): then h = 0."""
    siegmund = siegmund_threshold(mu, arl)
    step_up = statistics.NormalDist().cdf(-abs(mu) / 2.0)  # P(an in-control step is > 0)
    at_zero = 1.0 / step_up if step_up > 0 else math.inf
    limit = int(60 * arl)

    def measured(h: float, count: int, index: int) -> tuple[float, float]:
        lengths = cusum_run_lengths(mu, h, count, cell_rng(seed, 2, index), limit)
        return float(lengths.mean()), float(lengths.std(ddof=1) / math.sqrt(count))

    if at_zero >= arl:
        return Cusum(mu, 0.0, at_zero, 0.0, siegmund)
    low, high = 0.0, max(2.0 * siegmund, 1.0)
    index = 0
    while measured(high, paths, index)[0] < arl:
        low, high, index = high, 2.0 * high, index + 1
    while high - low > 0.01 * max(1.0, high):
        index += 1
        middle = 0.5 * (low + high)
        if measured(middle, paths, index)[0] < arl:
            low = middle
        else:
            high = middle
    h = 0.5 * (low + high)
    mean, error = measured(h, check_paths, 10_000)
    return Cusum(mu, h, mean, error, siegmund)


def window_std_error(auc: float, n: int, prevalence: float) -> float:
    """The DeLong standard error of a window of n rows at true AUC ``auc``: that of one
    1 000 000-row sample (from the core), scaled by sqrt(1 000 000 / n)."""
    big = 1_000_000
    sample = row_window(cell_rng(0, 3, basis_points(auc), basis_points(prevalence)), big,
                        prevalence, auc)  # fmt: skip
    result = evaluate("binary", sample.labels, sample.scores, options=evaluate_options(NULL_ARL))
    return float(result.intervals["roc_auc"].std_error) * math.sqrt(big / n)


def cusum_shift(fall: float, n: int) -> float:
    """The post-change mean of the monitor's z: (AUC after - boundary) / SE at that AUC."""
    return (fall - BOUNDARY) / window_std_error(fall, n, PREVALENCE)


@dataclass(slots=True)
class Delays:
    """Detection delays (alarm window - 99) of the monitor and the CUSUM, per run; None for a
    run censored at the horizon; alarms before the change counted apart."""

    monitor: list[int | None] = field(default_factory=list)
    cusum: list[int | None] = field(default_factory=list)
    monitor_early: int = 0
    cusum_early: int = 0

    def merge(self, other: Delays) -> None:
        self.monitor.extend(other.monitor)
        self.cusum.extend(other.cusum)
        self.monitor_early += other.monitor_early
        self.cusum_early += other.cusum_early


def detection_runs(
    n: int, cusums: Mapping[float, Cusum], start: int, stop: int, seed: int, post_horizon: int
) -> dict[float, Delays]:
    """Runs of windows 1-99 at the baseline's AUC, then, for each fall, windows from 100 at the
    lower AUC (the same windows 1-99 for every fall: the states are forked at 99)."""
    delays = {fall: Delays() for fall in cusums}
    for index in range(start, stop):
        rng = cell_rng(seed, 4, n, index)
        state: bytes | None = None
        monitor_early = False
        w = dict.fromkeys(cusums, 0.0)
        cusum_early = dict.fromkeys(cusums, False)
        for _ in range(1, CHANGE_AT):
            outcome = step(row_window(rng, n, PREVALENCE, BASELINE_AUC), KNOWN_BASELINE,
                           state, DEFAULT_ARL)  # fmt: skip
            state = outcome.state
            monitor_early |= outcome.alarm
            if outcome.z is not None:
                for fall, cusum in cusums.items():
                    w[fall] = cusum.step(w[fall], outcome.z)
                    cusum_early[fall] |= w[fall] > cusum.h
        for fall, cusum in cusums.items():
            tally = delays[fall]
            tally.monitor_early += monitor_early
            tally.cusum_early += cusum_early[fall]
            after = cell_rng(seed, 4, n, index, basis_points(fall))
            found = post_change(
                after, n, fall, state, cusum, w[fall], post_horizon,
                skip_monitor=monitor_early, skip_cusum=cusum_early[fall],
            )  # fmt: skip
            if not monitor_early:
                tally.monitor.append(found[0])
            if not cusum_early[fall]:
                tally.cusum.append(found[1])
    return delays


def post_change(
    rng: np.random.Generator, n: int, fall: float, state: bytes | None, cusum: Cusum, w: float,
    horizon: int, *, skip_monitor: bool, skip_cusum: bool,
) -> tuple[int | None, int | None]:  # fmt: skip
    """The delays (alarm window - 99) of the monitor and the CUSUM on the same windows from
    window 100 at AUC ``fall``; None when one has not alarmed ``horizon`` windows after."""
    monitor: int | None = None
    found: int | None = None
    for delay in range(1, horizon + 1):
        if (monitor is not None or skip_monitor) and (found is not None or skip_cusum):
            break
        outcome = step(row_window(rng, n, PREVALENCE, fall), KNOWN_BASELINE, state, DEFAULT_ARL)
        state = outcome.state
        if monitor is None and outcome.alarm:
            monitor = delay
        if outcome.z is not None:
            w = cusum.step(w, outcome.z)
        if found is None and w > cusum.h:
            found = delay
    return monitor, found


def quantile(values: Sequence[int | None], share: float, censor: int) -> float:
    """The ``share`` quantile (nearest rank) with censored runs at ``censor`` (a lower bound
    when it falls on them)."""
    if not values:
        return math.nan
    ordered = sorted(censor if value is None else value for value in values)
    return float(ordered[min(len(ordered) - 1, math.ceil(share * len(ordered)) - 1)])


# --- target 3: weeks of hourly windows --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WeekCell:
    name: str
    n: int
    auc: float

    @property
    def key(self) -> tuple[int, ...]:
        return (5, self.n, basis_points(self.auc))


@dataclass(slots=True)
class WeekTally:
    """Pages per week: the per-window rule's and the monitor's."""

    rule: list[int] = field(default_factory=list)
    monitor: list[int] = field(default_factory=list)

    def merge(self, other: WeekTally) -> None:
        self.rule.extend(other.rule)
        self.monitor.extend(other.monitor)


def count_week(steps: Iterable[Step]) -> tuple[int, int]:
    """(today's rule's pages, the monitor's pages) over one week's steps."""
    rule = monitor = 0
    for outcome in steps:
        rule += outcome.page
        monitor += outcome.alarm
    return rule, monitor


def week_chain(cell: WeekCell, chain: int, weeks: int, seed: int) -> WeekTally:
    """``weeks`` consecutive weeks with one monitor that continues from week to week; after a
    page the next window starts a fresh monitor."""
    tally = WeekTally()
    state: list[bytes | None] = [None]  # the state to send with the next window

    def steps(rng: np.random.Generator) -> Iterator[Step]:
        for _ in range(WEEK):
            window = draw_window(rng, cell.n, PREVALENCE, cell.auc)
            outcome = step(window, KNOWN_BASELINE, state[0], DEFAULT_ARL)
            state[0] = None if outcome.alarm else outcome.state
            yield outcome

    for week in range(weeks):
        rule, monitor = count_week(steps(cell_rng(seed, *cell.key, chain, week)))
        tally.rule.append(rule)
        tally.monitor.append(monitor)
    return tally


# --- the cross-check of binned windows --------------------------------------------------------


def monitor_zs(binned: bool, count: int, seed: int, n: int = BINNED_FROM) -> list[float]:
    """The monitor's z of ``count`` windows of n rows at the boundary AUC (known baseline),
    drawn row by row or binned."""
    rng = cell_rng(seed, 6, n, int(binned))
    draw = binned_window if binned else row_window
    zs: list[float] = []
    for _ in range(count):
        outcome = step(draw(rng, n, PREVALENCE, BOUNDARY), KNOWN_BASELINE, None, NULL_ARL)
        if outcome.z is None:
            raise RuntimeError("a cross-check window added no evidence")
        zs.append(outcome.z)
    return zs


# --- tasks for the process pool ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Task:
    """One piece of work for a worker process: ``kind`` names what, ``args`` the arguments."""

    kind: str
    key: Any
    args: tuple[Any, ...]
    cost: float  # rough, for the order (largest first)


def run_task(task: Task) -> tuple[Task, Any]:
    kinds: dict[str, Callable[..., Any]] = {
        "null": null_runs,
        "detection": detection_runs,
        "week": week_chain,
        "calibration": calibrate_cusum,
        "shift": cusum_shift,
        "zs": monitor_zs,
    }
    return task, kinds[task.kind](*task.args)


def run_tasks(tasks: Sequence[Task], jobs: int, label: str) -> list[tuple[Task, Any]]:
    ordered = sorted(tasks, key=lambda task: -task.cost)
    done: list[tuple[Task, Any]] = []
    with contextlib.ExitStack() as stack:
        results: Iterable[tuple[Task, Any]] = map(run_task, ordered)
        if jobs > 1:
            pool = stack.enter_context(ProcessPoolExecutor(max_workers=jobs))
            results = pool.map(run_task, ordered)
        for count, result in enumerate(results, start=1):
            done.append(result)
            progress(f"  {label}: {count}/{len(ordered)} tasks ({result[0].kind})")
    return done


def null_cells() -> list[NullCell]:
    cells = [
        NullCell(n, prevalence, rows)
        for n in NULL_SIZES
        for prevalence in NULL_PREVALENCES
        for rows in BASELINE_SIZES
    ]
    small_drop = BASELINE_AUC - SMALL_DROP
    return [*cells, NullCell(SMALL_DROP_ROWS, PREVALENCE, None, small_drop, NULL_ARL)]


def week_cells() -> list[WeekCell]:
    return [
        WeekCell("nothing changed", 5_000, BASELINE_AUC),
        WeekCell("nothing changed", 100_000, BASELINE_AUC),
        WeekCell(f"AUC {SMALL_DROP} lower", SMALL_DROP_ROWS, BASELINE_AUC - SMALL_DROP),
    ]


def null_budget(cell: NullCell, budget: Budget) -> int:
    if cell.silent:
        return budget.silent_runs
    if cell.auc > BOUNDARY:
        return budget.small_drop_runs
    return budget.known_runs if cell.baseline_rows is None else budget.estimated_runs


def window_cost(n: int) -> float:
    return 1.0 if n >= BINNED_FROM else 0.5 + n / 10_000


@dataclass(slots=True)
class Results:
    null: dict[NullCell, RunTally]
    cusums: dict[tuple[int, float], Cusum]
    delays: dict[tuple[int, float], Delays]
    weeks: dict[WeekCell, WeekTally]
    zs: dict[bool, list[float]]


def chunks(runs: int, size: int) -> list[tuple[int, int]]:
    return [(start, min(runs, start + size)) for start in range(0, runs, size)]


def simulation_tasks(
    budget: Budget, seed: int, cusums: Mapping[tuple[int, float], Cusum]
) -> list[Task]:
    tasks: list[Task] = []
    for cell in null_cells():
        long = cell.baseline_rows is not None or cell.silent or cell.auc > BOUNDARY
        per_run = (budget.horizon if long else 2 * NULL_ARL) * window_cost(cell.n)
        tasks += [
            Task("null", cell, (cell, start, stop, seed, budget.horizon), per_run * (stop - start))
            for start, stop in chunks(null_budget(cell, budget), budget.chunk)
        ]
    for n in DETECTION_SIZES:
        by_fall = {fall: cusums[(n, fall)] for fall in FALLS}
        tasks += [
            Task(
                "detection",
                n,
                (n, by_fall, start, stop, seed, budget.post_horizon),
                150 * window_cost(n) * (stop - start),
            )
            for start, stop in chunks(budget.detection_runs, budget.chunk)
        ]
    week_cost = WEEK * budget.weeks_per_chain
    tasks += [
        Task(
            "week",
            cell,
            (cell, chain, budget.weeks_per_chain, seed),
            week_cost * window_cost(cell.n),
        )
        for cell in week_cells()
        for chain in range(budget.week_chains)
    ]
    count = budget.cross_check_windows
    tasks += [
        Task("zs", binned, (binned, count, seed), count * (1.0 if binned else 20.0))
        for binned in (False, True)
    ]
    return tasks


def simulate(budget: Budget, seed: int, jobs: int) -> Results:
    shift_tasks = [
        Task("shift", (n, fall), (fall, n), 1.0) for n in DETECTION_SIZES for fall in FALLS
    ]
    shifts = run_tasks(shift_tasks, jobs, "CUSUM shifts")
    paths = (budget.cusum_paths, budget.cusum_check_paths)
    calibrations = run_tasks(
        [
            Task("calibration", task.key, (mu, DEFAULT_ARL, *paths, seed), 1.0)
            for task, mu in shifts
        ],
        jobs,
        "CUSUM thresholds",
    )
    cusums: dict[tuple[int, float], Cusum] = {task.key: cusum for task, cusum in calibrations}
    cells = null_cells()
    tasks = simulation_tasks(budget, seed, cusums)
    results = Results({cell: RunTally() for cell in cells}, cusums, {}, {}, {})
    for task, value in run_tasks(tasks, jobs, "simulation"):
        if task.kind == "null":
            results.null[task.key].merge(value)
        elif task.kind == "detection":
            for fall, delays in value.items():
                results.delays.setdefault((task.key, fall), Delays()).merge(delays)
        elif task.kind == "week":
            results.weeks.setdefault(task.key, WeekTally()).merge(value)
        else:
            results.zs[task.key] = value
    return results


# --- report -----------------------------------------------------------------------------------


def null_table(results: Results, horizon: int) -> str:
    lines = [
        "| rows per window | positives per window | baseline | true AUC | ARL asked | runs "
        "| mean run length | 95% lower bound | runs at the horizon | alarms "
        "| windows with evidence (%) | target | pass/fail |",
        "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for cell, tally in results.null.items():
        runs = tally.runs
        if not runs:
            continue
        figures = run_lengths(runs)
        windows = sum(run.length for run in runs)
        evidence = 100 * sum(run.evidence for run in runs) / windows
        alarms = sum(run.alarmed for run in runs)
        if cell.silent:
            target = "no evidence, no alarm"
        elif cell.auc > BOUNDARY:
            target = f"no alarm in {horizon:,} windows"
        else:
            target = f">= {cell.arl:g}, bound >= {NULL_LCB * cell.arl / NULL_ARL:g}"
        mean = f"{figures.mean:,.0f}" + (" (lower bound)" if figures.truncated else "")
        bound = "-" if math.isnan(figures.lower_bound) else f"{figures.lower_bound:,.0f}"
        lines.append(
            f"| {cell.n:,} | {positives_of(cell.n, cell.prevalence):,} ({cell.prevalence:.0%}) "
            f"| {cell.baseline_name} | {cell.auc:.3f} | {cell.arl:g} | {figures.runs} | {mean} "
            f"| {bound} | {figures.truncated} | {alarms} | {evidence:.0f} | {target} "
            f"| {null_status(cell, runs)} |"
        )
    return "\n".join(lines)


def detection_table(results: Results, post_horizon: int) -> str:
    lines = [
        "| rows per window | AUC after | z after (mean) | runs | monitor: median / 90th pct "
        "delay | CUSUM: median / 90th pct delay | mean delay, monitor / CUSUM | CUSUM h "
        "| censored (monitor / CUSUM) | alarms before the change (monitor / CUSUM) | target "
        "| pass/fail |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for (n, fall), delays in sorted(results.delays.items()):
        cusum = results.cusums[(n, fall)]
        gated = (n, fall) == GATED_DETECTION
        target = (
            f"median <= {DETECTION_MEDIAN_LIMIT:g} and <= {CUSUM_RATIO_LIMIT:g}x CUSUM's"
            if gated
            else "reported"
        )
        status = detection_status(delays, post_horizon) if gated else "(info)"
        monitor_median = quantile(delays.monitor, 0.5, post_horizon)
        monitor_p90 = quantile(delays.monitor, 0.9, post_horizon)
        cusum_median = quantile(delays.cusum, 0.5, post_horizon)
        cusum_p90 = quantile(delays.cusum, 0.9, post_horizon)
        censored = (
            f"{sum(d is None for d in delays.monitor)} / {sum(d is None for d in delays.cusum)}"
        )
        lines.append(
            f"| {n:,} | {fall:.2f} | {cusum.mu:.2f} | {len(delays.monitor)} "
            f"| {monitor_median:g} / {monitor_p90:g} | {cusum_median:g} / {cusum_p90:g} "
            f"| {mean_delay(delays.monitor, post_horizon)} / "
            f"{mean_delay(delays.cusum, post_horizon)} | {cusum.h:.3f} | {censored} "
            f"| {delays.monitor_early} / {delays.cusum_early} "
            f"| {target} | {status} |"
        )
    return "\n".join(lines)


def mean_delay(values: Sequence[int | None], censor: int) -> str:
    """The mean delay ± its standard error, censored runs at ``censor`` (then a lower bound)."""
    if len(values) < 2:
        return "-"
    delays = [censor if value is None else value for value in values]
    error = statistics.stdev(delays) / math.sqrt(len(delays))
    return f"{statistics.fmean(delays):.2f} ± {error:.2f}"


def detection_status(delays: Delays, post_horizon: int) -> str:
    monitor = quantile(delays.monitor, 0.5, post_horizon)
    cusum = quantile(delays.cusum, 0.5, post_horizon)
    ok = monitor <= DETECTION_MEDIAN_LIMIT and monitor <= CUSUM_RATIO_LIMIT * cusum
    return "pass" if ok else "FAIL"


def cusum_table(results: Results) -> str:
    lines = [
        "| rows per window | AUC after | mu (z after) | h, calibrated | in-control ARL at h "
        "(simulated) | h, Siegmund |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for (n, fall), cusum in sorted(results.cusums.items()):
        arl = f"{cusum.arl:,.0f} ± {cusum.arl_std_error:,.0f}"
        if cusum.h == 0.0:
            arl = f"{cusum.arl:.3g} (exact, at h = 0)"
        lines.append(
            f"| {n:,} | {fall:.2f} | {cusum.mu:.3f} | {cusum.h:.3f} | {arl} "
            f"| {cusum.siegmund_h:.3f} |"
        )
    return "\n".join(lines)


def week_table(results: Results) -> str:
    lines = [
        "| scenario | rows per window | weeks | rule: weeks with a page (%) | rule: pages per "
        "week | monitor: weeks with a page (%) | monitor: pages per week |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for cell, tally in results.weeks.items():
        weeks = len(tally.rule)
        rule_share = 100 * sum(pages > 0 for pages in tally.rule) / weeks
        monitor_share = 100 * sum(pages > 0 for pages in tally.monitor) / weeks
        lines.append(
            f"| {cell.name} (AUC {cell.auc:.3f}) | {cell.n:,} | {weeks} | {rule_share:.1f} "
            f"| {statistics.fmean(tally.rule):.2f} | {monitor_share:.1f} "
            f"| {statistics.fmean(tally.monitor):.3f} |"
        )
    return "\n".join(lines)


def describe(zs: Sequence[float]) -> str:
    mean, spread = statistics.fmean(zs), statistics.stdev(zs)
    return (
        f"mean {mean:+.3f} ± {spread / math.sqrt(len(zs)):.3f}, sd {spread:.3f} "
        f"± {spread / math.sqrt(2 * (len(zs) - 1)):.3f} ({len(zs)} windows)"
    )


def failures(results: Results, post_horizon: int) -> list[str]:
    failed = [
        f"false alarms: {cell.n:,} rows, {cell.prevalence:.0%}, {cell.baseline_name}, AUC "
        f"{cell.auc:.3f}"
        for cell, tally in results.null.items()
        if tally.runs and null_status(cell, tally.runs) == "FAIL"
    ]
    delays = results.delays.get(GATED_DETECTION)
    if delays is not None and detection_status(delays, post_horizon) == "FAIL":
        failed.append(f"detection: {GATED_DETECTION[0]:,} rows, AUC to {GATED_DETECTION[1]}")
    return failed


def render_section(
    results: Results, budget: Budget, command: str, seed: int, jobs: int, elapsed: float,
    load: tuple[float, float],
) -> str:  # fmt: skip
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    options = ", ".join(f"{k}={v}" for k, v in evaluate_options(DEFAULT_ARL).items())
    return f"""* Command: `{command}`
* Date: {now}
* Machine: {machine_description()}
* Run: seed {seed}, {jobs} process(es), OPENBLAS_NUM_THREADS=
  {os.environ.get("OPENBLAS_NUM_THREADS")}; {elapsed:.0f} s wall time; 1-minute load average
  {load[0]:.2f} before the run, {load[1]:.2f} after it.

**1. False alarms.** The monitor at the null's worst case: true AUC {BOUNDARY:.2f} = baseline
{BASELINE_AUC} - delta {TOLERANCE}, `monitor_arl_windows` = {NULL_ARL:g}. Runs stop at
{budget.horizon:,} windows: a mean over runs that reached it is a lower bound of the true mean
(marked). Known baseline: `baseline={{"roc_auc": {BASELINE_AUC}, "roc_auc_variance": 0.0}}`;
estimated: a fresh baseline sample per run (true AUC {BASELINE_AUC}, the window's prevalence),
sent as the summary of its DeLong AUC and variance as the core computes them (its 99% lower
bound is then the monitor's baseline, and the threshold {NULL_ARL:g} / 0.99). The last row: AUC
{SMALL_DROP} below a known baseline, inside the null. Lower bound: mean - {LCB_Z:.3f} standard
errors (one-sided 95%).

{null_table(results, budget.horizon)}

**2. Detection.** Baseline {BASELINE_AUC} known, delta {TOLERANCE}, default
`monitor_arl_windows` = {DEFAULT_ARL:g}, {PREVALENCE:.0%} positives; AUC {BASELINE_AUC} for
windows 1-{CHANGE_AT - 1}, the lower AUC from window {CHANGE_AT}; delay = alarm window -
{CHANGE_AT - 1} (1: the first window after the change; the gate compares medians, the means
are shown beside them). Runs still silent {budget.post_horizon:,}
windows after the change are censored (counted at {budget.post_horizon:,}); runs that alarmed
before the change are left out of the delays. The CUSUM (Page 1954) sees the same windows' z
against the boundary (the monitor's own, read from its state) and knows the shift: mu is the
mean of z after the change, (AUC after - {BOUNDARY:.2f}) / SE, with SE the DeLong standard error
of a 1 000 000-row sample at that AUC scaled to the window. Its threshold h is calibrated **by
simulation** (bisection on the mean in-control run length of {budget.cusum_paths:,} simulated
CUSUMs with z ~ N(0, 1), then checked on {budget.cusum_check_paths:,} fresh ones) to
{DEFAULT_ARL:g}; Siegmund's approximation is shown beside it. Where even h = 0 holds more than
{DEFAULT_ARL:g} windows (a shift of several standard errors: one window's z decides), h = 0.

{detection_table(results, budget.post_horizon)}

{cusum_table(results)}

**3. Before/after.** Weeks of {WEEK} hourly windows, known baseline {BASELINE_AUC},
{PREVALENCE:.0%} positives. Today's rule pages on every window whose drift test
(`result.drift["roc_auc"]`) has p < {PAGE_P} and z < 0. The monitor (default
`monitor_arl_windows` = {DEFAULT_ARL:g}) continues from week to week in {budget.week_chains}
chains of {budget.weeks_per_chain} weeks; after a page it starts afresh, as after an
investigation.

{week_table(results)}

* Calls: `core.evaluate("binary", labels, scores, sample_weight=..., options=..., baseline=...,
  monitor_state=...)` with options `{{{options}}}` (`monitor_arl_windows` {NULL_ARL:g} in part
  1), the state of each window sent with the next.
* Windows of up to 50 000 rows are drawn row by row; of 100 000 and 1 000 000 rows, binned
  (scores floored to a {GRID_STEP} grid, shift chosen for the exact binned AUC, class counts per
  bin drawn from the multinomial and sent as weights: the DeLong statistic of those rows,
  exactly). Cross-check, the monitor's z at {BINNED_FROM:,} rows and AUC {BOUNDARY:.2f} (known
  baseline): row by row {describe(results.zs[False])}; binned {describe(results.zs[True])}.
* Model: binormal scores, negatives ~ N(0, 1), positives ~ N(mu, 1), true AUC
  Phi(mu / sqrt(2)); exactly round(n x prevalence) positives per window.
"""


# --- command line -----------------------------------------------------------------------------


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=f"python {SCRIPT}", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the simulation")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument(
        "--quick", action="store_true", help="smoke test: a few short runs; never fails"
    )
    parser.add_argument(
        "--no-fail", action="store_true", help="exit 0 even when a gated target fails"
    )
    parser.add_argument(
        "--results", type=Path, default=RESULTS_PATH, help="the results file to update"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.no_fail = True
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    budget = QUICK if args.quick else Budget()
    before = load_average()
    started = time.perf_counter()
    results = simulate(budget, args.seed, args.jobs)
    elapsed = time.perf_counter() - started
    load = (before, load_average())
    command = shlex.join(["python", SCRIPT, *argv])
    print(null_table(results, budget.horizon), end="\n\n")
    print(detection_table(results, budget.post_horizon), end="\n\n")
    print(cusum_table(results), end="\n\n")
    print(week_table(results), end="\n\n")
    print(f"z at {BINNED_FROM:,} rows: rows {describe(results.zs[False])}")
    print(f"z at {BINNED_FROM:,} rows: binned {describe(results.zs[True])}")
    print(f"{elapsed:.0f} s wall time")
    section = render_section(results, budget, command, args.seed, args.jobs, elapsed, load)
    write_section(SECTION_TITLE, section, args.results)
    print(f"\nwrote section '{SECTION_TITLE}' of {args.results}")
    failed = failures(results, budget.post_horizon)
    if failed:
        print(f"targets failed: {'; '.join(failed)}", file=sys.stderr)
    return 1 if failed and not args.no_fail else 0


if __name__ == "__main__":
    sys.exit(main())
