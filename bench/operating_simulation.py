"""Simulation check of the bootstrap intervals of the binary operating points.

The operating points (``tpr_at_fpr_{f}``, ``specificity_at_sensitivity_{s}``,
``precision_at_recall_{r}``, ``recall_at_precision_{p}``) and the equal error rate carry a 95%
stratified percentile bootstrap interval (``core/binary/_bootstrap.py``) when
``bootstrap_replicates`` > 0. This script measures how often that interval covers the TRUE
population value, and compares it, for ``tpr_at_fpr_0.1``, with the naive Wilson interval of
the TPR at the estimated threshold (which treats the threshold as known).

Model: binormal scores, negatives ~ N(0, 1) and positives ~ N(mu, 1), mu = sqrt(2) Phi^-1(0.85)
= 1.4657 for a true AUC of 0.85. Every sample is stratified: exactly round(n * pi) positives,
the rest negatives, for n in {2 000, 20 000} and prevalence pi in {0.2, 0.05}.

True values. A row is flagged when score >= t. With Phi and phi the standard normal
distribution and density, at a threshold t

    FPR(t) = P(N(0, 1) >= t)  = 1 - Phi(t)          f0(t) = phi(t)        (its -derivative)
    TPR(t) = P(N(mu, 1) >= t) = 1 - Phi(t - mu) = Phi(mu - t)      f1(t) = phi(t - mu)

Both fall continuously and strictly with t, and the likelihood ratio f1 / f0 = exp(mu t - mu^2
/ 2) grows with t (equal variances), so the ROC curve is concave and precision falls as recall
rises. Hence each "best threshold that meets the target" of the population sits exactly where
the target is met with equality:

* ``tpr_at_fpr_{f}``: FPR(t) = f gives t = Phi^-1(1 - f), and
  TPR = 1 - Phi(Phi^-1(1 - f) - mu) = Phi(mu + Phi^-1(f)).
* ``specificity_at_sensitivity_{s}``: TPR(t) = s gives mu - t = Phi^-1(s), t = mu - Phi^-1(s),
  and specificity = Phi(t) = Phi(mu - Phi^-1(s)) = Phi(mu + Phi^-1(1 - s)).
* ``precision_at_recall_{r}``: the highest precision of a threshold with recall >= r is the
  precision at recall r (precision falls with recall): t = mu - Phi^-1(r), FPR = Phi(Phi^-1(r)
  - mu), and precision = pi r / (pi r + (1 - pi) Phi(Phi^-1(r) - mu)). The sample prevalence is
  pi exactly (stratified), so this is also the population value of the sample's statistic.
* ``recall_at_precision_{p}``: precision(t) = pi TPR(t) / (pi TPR(t) + (1 - pi) FPR(t)) rises
  strictly from pi (t -> -inf) to 1 (t -> +inf), so every p in (pi, 1) is met; the highest
  recall of a threshold with precision >= p is TPR(t_p) where precision(t_p) = p, solved by
  bisection on t. p is the population precision at recall 0.5 rounded to 2 decimals (0.64 at
  pi = 0.2, 0.27 at pi = 0.05), so the true recall at p is about 0.5 (0.495, 0.499): a point
  the model reaches comfortably at that prevalence.
* ``equal_error_rate``: FPR(t) = FNR(t) means 1 - Phi(t) = Phi(t - mu), i.e. Phi(-t) =
  Phi(t - mu), t = mu / 2, and EER = Phi(-mu / 2).

Asymptotic standard deviations (delta method; the empirical FPR^ and TPR^ at a fixed t are
independent binomial proportions over the N negatives and the P positives; the estimated
threshold t^ moves them both):

* TPR at FPR f: FPR^(t^) = f gives t^ - t = (FPR^(t) - f) / f0, so TPR^(t^) = TPR^(t) - (f1 / f0)
  (FPR^(t) - f) and Var = TPR (1 - TPR) / P + (f1 / f0)^2 f (1 - f) / N. The naive Wilson
  interval at the estimated threshold uses only the first term: its coverage tends to
  2 Phi(z sqrt(first / Var)) - 1 (the "predicted" column of the Wilson table).
* specificity at sensitivity s: the same with the classes swapped,
  Var = FPR (1 - FPR) / N + (f0 / f1)^2 s (1 - s) / P.
* precision at recall r: precision = r P / (r P + N X) with X = FPR^(t^),
  Var X = FPR (1 - FPR) / N + (f0 / f1)^2 r (1 - r) / P, and
  Var = (r P N / (r P + N FPR)^2)^2 Var X.
* recall at precision p: t^ solves g^(t) = (1 - p) P TPR^(t) - p N FPR^(t) = 0; with
  g' = p N f0 - (1 - p) P f1 (> 0 where the local precision is below p) and Dg = g^(t) - g(t),
  recall^ = TPR^(t) + (f1 / g') Dg, Var Dg = (1 - p)^2 P TPR (1 - TPR) + p^2 N FPR (1 - FPR),
  Cov(TPR^(t), Dg) = (1 - p) TPR (1 - TPR), and
  Var = TPR (1 - TPR) / P + (f1 / g')^2 Var Dg + 2 (f1 / g') (1 - p) TPR (1 - TPR).
* equal error rate: FPR + FNR has zero derivative at t = mu / 2 (f0 = f1 there), so to first
  order EER^ = (FPR^(t) + FNR^(t)) / 2 and Var = E (1 - E) (1 / N + 1 / P) / 4.

``tests/bench/test_operating_simulation.py`` checks the true values and these standard
deviations numerically: two million rows, point estimates within a few standard deviations.

Effective size. The percentile bootstrap of a quantile-like statistic (an operating point is
one: its threshold is a sample quantile) has a coverage error of order m^-1/2, where m is the
number of rows that decide the point (Falk & Kaufmann 1991, Ann. Statist. 19, 485-495, for
quantiles; Hall 1988, Ann. Statist. 16, 927-953, shows the percentile interval is first-order
correct only, even for smooth statistics; Efron & Tibshirani 1993, ch. 13 and 19; Pepe 2003,
ch. 5, for ROC points at estimated thresholds). m is reported per row as the smallest of the
four expected counts at the true threshold: positives above and below it, negatives above and
below it. The target, coverage within 93.5-96.5% over all replicates (as the AUC simulation),
is stated, and gated, only where m >= 100; the other rows are reported, marked "(info)".
The rule was fixed before any full run and is not tuned to the results.

Each replicate has its own seed, derived from ``--seed``, n, the prevalence and the replicate's
index (the bootstrap's own seed is drawn from it too), so the numbers do not depend on
``--jobs`` and a shorter run is a prefix of a longer one.

    python bench/operating_simulation.py [--replicates 2000] [--bootstrap-replicates 500]
                                         [--seed 0] [--jobs 1] [--quick] [--no-fail]
                                         [--results PATH]

The script prints its tables and rewrites its own section of ``bench/RESULTS.md`` (or of
``--results``). It exits with status 1 when a gated row fails, unless ``--no-fail`` or
``--quick``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# The checkout this script belongs to goes first on sys.path, so it checks this tree's core
# even where another copy is installed.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
# One BLAS thread per process, set before numpy loads OpenBLAS (as bench/auc_simulation.py):
# the simulation measures statistics, not speed; ``--jobs`` uses the cores instead.
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
from auc_simulation import Config, Rate, binormal_shift, replicate_rng
from auc_simulation import draw_sample as binormal_sample
from machine import machine_description  # bench/ on sys.path
from numpy.typing import NDArray
from results_md import RESULTS_PATH, write_section
from timing import load_average, progress

from evalserve.core import EvaluationResult, Interval, evaluate, target_label
from evalserve.core.binary._intervals import wilson_interval

SECTION_TITLE = "Operating-point intervals, simulation (bench/operating_simulation.py)"
SCRIPT = "bench/operating_simulation.py"

SIZES = (2_000, 20_000)
PREVALENCES = (0.20, 0.05)
TRUE_AUC = 0.85
LEVEL = 0.95
FPR_BOUNDS = (0.1, 0.01)
SENSITIVITY = 0.8
RECALL = 0.5
WILSON_POINT = "tpr_at_fpr_0.1"  # the naive Wilson interval is compared on this point
COVERAGE_LOW, COVERAGE_HIGH = 0.935, 0.965
COVERAGE_TARGET = f"{100 * COVERAGE_LOW:.1f}-{100 * COVERAGE_HIGH:.1f}"
MIN_EFFECTIVE = 100  # the target is stated (and gated) where m >= this
DEFAULT_REPLICATES = 2_000
DEFAULT_BOOTSTRAP = 500
QUICK_REPLICATES = 8
CHUNK = 50  # replicates per task handed to a worker process

NORMAL = statistics.NormalDist()
Z = NORMAL.inv_cdf(0.5 + LEVEL / 2.0)

Labels = NDArray[np.int64]
Floats = NDArray[np.float64]


# --- the model and its true values -------------------------------------------------------------


MU = binormal_shift(TRUE_AUC)


def fpr(t: float) -> float:
    return NORMAL.cdf(-t)


def tpr(t: float) -> float:
    return NORMAL.cdf(MU - t)


def negative_density(t: float) -> float:
    return NORMAL.pdf(t)


def positive_density(t: float) -> float:
    return NORMAL.pdf(t - MU)


def precision(t: float, prevalence: float) -> float:
    hits = prevalence * tpr(t)
    return hits / (hits + (1.0 - prevalence) * fpr(t))


def threshold_at_precision(p: float, prevalence: float) -> float:
    """The t where the population precision is p (it rises strictly with t), by bisection."""
    if not prevalence < p < 1.0:
        raise ValueError(f"precision {p} is not reachable at prevalence {prevalence}")
    low, high = -8.0, 8.0  # precision is defined (0 < FPR, TPR) all along
    for _ in range(200):
        middle = (low + high) / 2.0
        if precision(middle, prevalence) >= p:
            high = middle
        else:
            low = middle
    return high


def precision_target(prevalence: float) -> float:
    """The precision asked of recall_at_precision: the population precision at recall 0.5,
    rounded to 2 decimals, so the true recall there is about 0.5."""
    return round(precision(MU - NORMAL.inv_cdf(RECALL), prevalence), 2)


@dataclass(frozen=True, slots=True)
class Truth:
    """One operating point of one cell: its metric name, true value, the true threshold, and
    the asymptotic standard deviation of its estimate (see the module docstring)."""

    name: str
    value: float
    threshold: float
    sd: float

    def effective(self, config: Config) -> float:
        """m: the smallest expected count of either class on either side of the threshold."""
        up_pos, up_neg = tpr(self.threshold), fpr(self.threshold)
        return min(
            config.positives * up_pos,
            config.positives * (1.0 - up_pos),
            config.negatives * up_neg,
            config.negatives * (1.0 - up_neg),
        )

    def gated(self, config: Config) -> bool:
        return self.effective(config) >= MIN_EFFECTIVE


def truths(config: Config) -> list[Truth]:
    """The true value and asymptotic SD of every operating point, in the table's order."""
    positives, negatives = float(config.positives), float(config.negatives)
    found: list[Truth] = []
    for f in FPR_BOUNDS:
        t = NORMAL.inv_cdf(1.0 - f)
        value = tpr(t)
        slope = positive_density(t) / negative_density(t)
        variance = value * (1.0 - value) / positives + slope**2 * f * (1.0 - f) / negatives
        found.append(Truth(f"tpr_at_fpr_{target_label(f)}", value, t, math.sqrt(variance)))
    s = SENSITIVITY
    t = MU - NORMAL.inv_cdf(s)
    false_rate = fpr(t)
    slope = negative_density(t) / positive_density(t)
    variance = false_rate * (1.0 - false_rate) / negatives + slope**2 * s * (1.0 - s) / positives
    name = f"specificity_at_sensitivity_{target_label(s)}"
    found.append(Truth(name, 1.0 - false_rate, t, math.sqrt(variance)))
    r = RECALL
    t = MU - NORMAL.inv_cdf(r)
    false_rate = fpr(t)
    slope = negative_density(t) / positive_density(t)
    variance_x = false_rate * (1.0 - false_rate) / negatives + slope**2 * r * (1.0 - r) / positives
    gradient = r * positives * negatives / (r * positives + negatives * false_rate) ** 2
    found.append(
        Truth(
            f"precision_at_recall_{target_label(r)}",
            precision(t, config.prevalence),
            t,
            gradient * math.sqrt(variance_x),
        )
    )
    p = precision_target(config.prevalence)
    t = threshold_at_precision(p, config.prevalence)
    hit, false_rate = tpr(t), fpr(t)
    g_slope = p * negatives * negative_density(t) - (1.0 - p) * positives * positive_density(t)
    ratio = positive_density(t) / g_slope
    binomial = hit * (1.0 - hit)
    variance_g = (1.0 - p) ** 2 * positives * binomial + p**2 * negatives * false_rate * (
        1.0 - false_rate
    )
    variance = binomial / positives + ratio**2 * variance_g + 2.0 * ratio * (1.0 - p) * binomial
    found.append(Truth(f"recall_at_precision_{target_label(p)}", hit, t, math.sqrt(variance)))
    t = MU / 2.0
    eer = NORMAL.cdf(-MU / 2.0)
    variance = eer * (1.0 - eer) * (1.0 / negatives + 1.0 / positives) / 4.0
    found.append(Truth("equal_error_rate", eer, t, math.sqrt(variance)))
    return found


def evaluate_options(config: Config, bootstrap: int, bootstrap_seed: int = 0) -> dict[str, Any]:
    return {
        "confidence_level": LEVEL,
        "bootstrap_replicates": bootstrap,
        "bootstrap_seed": bootstrap_seed,
        "max_curve_points": 0,
        "tpr_at_fpr": FPR_BOUNDS,
        "specificity_at_sensitivity": (SENSITIVITY,),
        "precision_at_recall": (RECALL,),
        "recall_at_precision": (precision_target(config.prevalence),),
    }


def draw_sample(rng: np.random.Generator, config: Config) -> tuple[Labels, Floats]:
    """A stratified binormal sample of the cell at AUC ``TRUE_AUC`` (the AUC simulation's)."""
    return binormal_sample(rng, config, MU)


def wilson(successes: int, trials: int) -> tuple[float, float]:
    """Wilson's score interval of successes / trials at ``LEVEL``: the core's."""
    interval = wilson_interval(successes, trials, LEVEL)
    assert interval is not None, "a cell has positives"
    return interval.lower, interval.upper


# --- tallies ----------------------------------------------------------------------------------


@dataclass(slots=True)
class Tally:
    """Coverage counts of one interval of one point in one cell, with the estimates' moments."""

    replicates: int = 0
    defined: int = 0  # replicates with an interval
    covered: int = 0
    below: int = 0  # upper bound below the true value
    above: int = 0  # lower bound above the true value
    width_sum: float = 0.0
    spread_sum: float = 0.0  # the interval's std_error (the bootstrap's spread)
    estimates: int = 0
    estimate_sum: float = 0.0  # of (estimate - truth)
    estimate_squares: float = 0.0

    def add(self, lower: float | None, upper: float | None, estimate: float | None, truth: float,
            spread: float | None = None) -> None:  # fmt: skip
        self.replicates += 1
        if estimate is not None:
            self.estimates += 1
            self.estimate_sum += estimate - truth
            self.estimate_squares += (estimate - truth) ** 2
        if lower is None or upper is None:
            return
        self.defined += 1
        self.width_sum += upper - lower
        if spread is not None and math.isfinite(spread):
            self.spread_sum += spread
        if upper < truth:
            self.below += 1
        elif lower > truth:
            self.above += 1
        else:
            self.covered += 1

    def merge(self, other: Tally) -> None:
        for name in self.__slots__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @property
    def bias(self) -> float | None:
        return self.estimate_sum / self.estimates if self.estimates else None

    @property
    def empirical_sd(self) -> float | None:
        if self.estimates < 2:
            return None
        mean = self.estimate_sum / self.estimates
        variance = (self.estimate_squares - self.estimates * mean**2) / (self.estimates - 1)
        return math.sqrt(max(variance, 0.0))

    @property
    def mean_width(self) -> float | None:
        return self.width_sum / self.defined if self.defined else None

    @property
    def mean_spread(self) -> float | None:
        return self.spread_sum / self.defined if self.defined else None


@dataclass(slots=True)
class CellTally:
    """Everything counted for one cell; chunks of replicates merge into one."""

    points: dict[str, Tally] = field(default_factory=dict)
    wilson: Tally = field(default_factory=Tally)
    # Replicates where the positives counted at the reported tpr_at_fpr_0.1 threshold did not
    # give the reported value, or its negatives broke the FPR bound (a cross-check: 0).
    count_mismatches: int = 0

    def merge(self, other: CellTally) -> None:
        for name, tally in other.points.items():
            self.points.setdefault(name, Tally()).merge(tally)
        self.wilson.merge(other.wilson)
        self.count_mismatches += other.count_mismatches


# --- one replicate ----------------------------------------------------------------------------


def interval_bounds(interval: Interval | None) -> tuple[float | None, float | None, float | None]:
    if interval is None:
        return None, None, None
    return interval.lower, interval.upper, interval.std_error


def naive_wilson(
    result: EvaluationResult, labels: Labels, scores: Floats, config: Config
) -> tuple[tuple[float, float] | None, bool]:
    """The Wilson interval of the TPR at the estimated ``tpr_at_fpr_0.1`` threshold, from the
    counts at that threshold; and whether those counts agree with the reported value and the
    FPR bound."""
    value = result.metrics.get(WILSON_POINT)
    if value is None:
        return None, False
    threshold = result.metrics.get(f"{WILSON_POINT}_threshold")
    tp = fp = 0  # no threshold: only flagging nothing keeps the FPR bound
    if threshold is not None:
        flagged = scores >= threshold
        tp = int(np.count_nonzero(flagged & (labels == 1)))
        fp = int(np.count_nonzero(flagged & (labels == 0)))
    agrees = tp == round(value * config.positives) and fp <= FPR_BOUNDS[0] * config.negatives
    return wilson(tp, config.positives), agrees


def simulate(config: Config, start: int, stop: int, seed: int, bootstrap: int) -> CellTally:
    """Replicates ``start`` to ``stop - 1`` of one cell."""
    points = truths(config)
    tally = CellTally(points={truth.name: Tally() for truth in points})
    for index in range(start, stop):
        rng = replicate_rng(seed, config, index)
        labels, scores = draw_sample(rng, config)
        bootstrap_seed = int(rng.integers(0, 2**62))
        options = evaluate_options(config, bootstrap, bootstrap_seed)
        result = evaluate("binary", labels, scores, options=options)
        for truth in points:
            lower, upper, spread = interval_bounds(result.intervals.get(truth.name))
            estimate = result.metrics.get(truth.name)
            tally.points[truth.name].add(lower, upper, estimate, truth.value, spread)
        interval, agrees = naive_wilson(result, labels, scores, config)
        reference = points[0]
        assert reference.name == WILSON_POINT
        lower, upper = (None, None) if interval is None else interval
        tally.wilson.add(lower, upper, result.metrics.get(WILSON_POINT), reference.value)
        tally.count_mismatches += not agrees
    return tally


def _simulate_task(task: tuple[Config, int, int, int, int]) -> tuple[Config, CellTally]:
    config, start, stop, seed, bootstrap = task
    return config, simulate(config, start, stop, seed, bootstrap)


def tasks(
    configs: Sequence[Config], replicates: int, seed: int, bootstrap: int
) -> list[tuple[Config, int, int, int, int]]:
    """Chunks of replicates, the largest samples first (they take longest)."""
    ordered = sorted(configs, key=lambda config: -config.n)
    return [
        (config, start, min(start + CHUNK, replicates), seed, bootstrap)
        for config in ordered
        for start in range(0, replicates, CHUNK)
    ]


def run_simulation(
    configs: Sequence[Config], replicates: int, seed: int, bootstrap: int, jobs: int
) -> dict[Config, CellTally]:
    """Every cell's tally; with ``jobs`` > 1 the chunks run in that many worker processes."""
    totals = {config: CellTally() for config in configs}
    work = tasks(configs, replicates, seed, bootstrap)
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


def within_target(tally: Tally) -> bool:
    p = Rate(tally.covered, tally.replicates).value
    return p is not None and COVERAGE_LOW <= p <= COVERAGE_HIGH


def status(tally: Tally, gated: bool) -> str:
    ok = within_target(tally)
    if gated:
        return "pass" if ok else "FAIL"
    return "pass (info)" if ok else "fail (info)"


def _number(value: float | None, digits: int = 4, signed: bool = False) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def _ratio(top: float | None, bottom: float | None) -> str:
    if top is None or bottom is None or bottom <= 0:
        return "-"
    return f"{top / bottom:.2f}"


def _cell(config: Config) -> str:
    return f"| {config.n:,} | {config.prevalence:.0%} | {config.positives:,} "


def coverage_table(totals: Mapping[Config, CellTally]) -> str:
    lines = [
        "| n | prevalence | positives | point | true value | m | coverage (%) "
        "| coverage, with an interval (%) | with an interval (%) | misses low / high "
        "| mean width | bias of the estimate "
        "| SD: empirical / asymptotic | bootstrap SE / empirical SD | target (%) | pass/fail |",
        "|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for config, cell in totals.items():
        for truth in truths(config):
            tally = cell.points[truth.name]
            gated = truth.gated(config)
            share = 100 * tally.defined / tally.replicates if tally.replicates else math.nan
            lines.append(
                _cell(config) + f"| {truth.name} | {truth.value:.4f} "
                f"| {truth.effective(config):.0f} "
                f"| {Rate(tally.covered, tally.replicates).show()} "
                f"| {Rate(tally.covered, tally.defined).show()} | {share:.1f} "
                f"| {tally.below} / {tally.above} | {_number(tally.mean_width)} "
                f"| {_number(tally.bias, signed=True)} "
                f"| {_ratio(tally.empirical_sd, truth.sd)} "
                f"| {_ratio(tally.mean_spread, tally.empirical_sd)} "
                f"| {COVERAGE_TARGET if gated else '-'} | {status(tally, gated)} |"
            )
    return "\n".join(lines)


def predicted_wilson_coverage(config: Config) -> float:
    """The Wilson interval's limiting coverage at the estimated threshold: it has the binomial
    part of the variance only (module docstring)."""
    f = FPR_BOUNDS[0]
    t = NORMAL.inv_cdf(1.0 - f)
    value = tpr(t)
    binomial = value * (1.0 - value) / config.positives
    slope = positive_density(t) / negative_density(t)
    total = binomial + slope**2 * f * (1.0 - f) / config.negatives
    return 2.0 * NORMAL.cdf(Z * math.sqrt(binomial / total)) - 1.0


def wilson_table(totals: Mapping[Config, CellTally]) -> str:
    lines = [
        "| n | prevalence | positives | bootstrap coverage (%) | Wilson coverage (%) "
        "| Wilson coverage, predicted (%) | Wilson misses low / high "
        "| bootstrap mean width | Wilson mean width |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for config, cell in totals.items():
        boot, naive = cell.points[WILSON_POINT], cell.wilson
        lines.append(
            _cell(config) + f"| {Rate(boot.covered, boot.replicates).show()} "
            f"| {Rate(naive.covered, naive.replicates).show()} "
            f"| {100 * predicted_wilson_coverage(config):.1f} "
            f"| {naive.below} / {naive.above} "
            f"| {_number(boot.mean_width)} | {_number(naive.mean_width)} |"
        )
    return "\n".join(lines)


def failures(totals: Mapping[Config, CellTally]) -> list[str]:
    return [
        f"n={config.n}, prevalence {config.prevalence:.0%}: {truth.name}"
        for config, cell in totals.items()
        for truth in truths(config)
        if status(cell.points[truth.name], truth.gated(config)) == "FAIL"
    ]


def summary(totals: Mapping[Config, CellTally]) -> str:
    """One line per verdict kind: how many rows pass of those gated, and of the others."""
    gated = [
        within_target(cell.points[truth.name])
        for config, cell in totals.items()
        for truth in truths(config)
        if truth.gated(config)
    ]
    info = [
        within_target(cell.points[truth.name])
        for config, cell in totals.items()
        for truth in truths(config)
        if not truth.gated(config)
    ]
    return (
        f"{sum(gated)} of {len(gated)} gated rows (m >= {MIN_EFFECTIVE}) within {COVERAGE_TARGET}%;"
        f" {sum(info)} of {len(info)} other rows within it"
    )


def render_section(
    totals: Mapping[Config, CellTally],
    command: str,
    replicates: int,
    bootstrap: int,
    seed: int,
    jobs: int,
    elapsed: float,
    load: tuple[float, float],
) -> str:
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    example = Config(SIZES[0], PREVALENCES[0])
    options = ", ".join(
        f"{key}={value}"
        for key, value in evaluate_options(example, bootstrap).items()
        if key not in ("bootstrap_seed", "recall_at_precision")
    )
    targets = ", ".join(
        f"{precision_target(config.prevalence):g} at {config.prevalence:.0%}"
        for config in totals
        if config.n == SIZES[0]
    )
    mismatches = sum(cell.count_mismatches for cell in totals.values())
    return f"""* Command: `{command}`
* Date: {now}
* Machine: {machine_description()}
* Run: {replicates:,} replicates per cell, {bootstrap} bootstrap replicates per evaluation,
  seed {seed}, {jobs} process(es), OPENBLAS_NUM_THREADS={os.environ.get("OPENBLAS_NUM_THREADS")};
  {elapsed:.0f} s wall time; 1-minute load average {load[0]:.2f} before the run,
  {load[1]:.2f} after.

Coverage of the {LEVEL:.0%} stratified percentile bootstrap interval of each operating point,
in % ± Monte Carlo standard error; {summary(totals)}:

{coverage_table(totals)}

The threshold is estimated: the naive {LEVEL:.0%} Wilson interval of the TPR at the estimated
`{WILSON_POINT}` threshold (TP of the P positives counted there), against the same true value:

{wilson_table(totals)}

* Model: binormal scores, negatives ~ N(0, 1), positives ~ N(mu, 1), mu = {MU:.4f} (true AUC
  {TRUE_AUC}). Samples are stratified: exactly round(n x prevalence) positives ("positives"),
  the rest negatives.
* True values (derivations in the script's docstring, checked on two million rows by
  `tests/bench/test_operating_simulation.py`): TPR at FPR f = Phi(mu + Phi^-1(f)); specificity
  at sensitivity s = Phi(mu + Phi^-1(1 - s)); precision at recall r = pi r / (pi r + (1 - pi)
  Phi(Phi^-1(r) - mu)); recall at precision p = TPR where the population precision is p (by
  bisection), with p the precision at recall 0.5 rounded to 2 decimals ({targets});
  equal error rate = Phi(-mu / 2).
* Calls: `core.evaluate("binary", labels, scores, options=...)` with options
  `{{{options}, recall_at_precision=(p,)}}` and a bootstrap_seed drawn from the replicate's
  seed.
* Coverage: an interval covers when lower <= true value <= upper. "Coverage" counts all
  replicates, a replicate without an interval as a miss; "with an interval" leaves those out
  (the core gives a point no interval when some bootstrap replicate reaches no threshold that
  meets its target, as can happen to recall_at_precision with few positives).
  Misses low / high: upper bound below the true value / lower bound above it. Mean width over
  the replicates with an interval. Bias: mean of estimate - true value. "SD: empirical /
  asymptotic": the spread of the estimates over the replicates against the delta-method SD of
  the docstring. "Bootstrap SE / empirical SD": the interval's mean `std_error` (the spread of
  its bootstrap replicates) against the spread of the estimates.
* m: the smallest expected count, at the true threshold, of positives above and below it and
  of negatives above and below it: the rows that decide the point. The percentile bootstrap of
  a quantile-like statistic has a coverage error of order m^-1/2 (Falk & Kaufmann 1991 for
  quantiles; Hall 1988: the percentile interval is only first-order correct; Efron &
  Tibshirani 1993; Pepe 2003, ch. 5, for ROC points at estimated thresholds).
* Target: coverage within {COVERAGE_TARGET}% (as the AUC simulation), stated and gated where
  m >= {MIN_EFFECTIVE}; the other rows are reported against the same band, marked "(info)".
  The rule was fixed before the first full run. Every row is shown, passing or failing.
* Wilson, predicted: its limiting coverage 2 Phi(z sqrt(V_binomial / V)) - 1, where V adds the
  threshold's own variance (f1 / f0)^2 f (1 - f) / N to the binomial TPR (1 - TPR) / P.
* Cross-check: the TP and FP counted at the reported `{WILSON_POINT}` threshold disagree with
  the reported value, or break FPR <= {FPR_BOUNDS[0]}, in {mismatches} replicate(s).
* Monte Carlo standard error: sqrt(p (1 - p) / R) over the R replicates of the rate's
  denominator (0 when p is 0 or 1).
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
    parser.add_argument(
        "--bootstrap-replicates",
        type=int,
        default=DEFAULT_BOOTSTRAP,
        help=f"bootstrap replicates of each evaluation (default {DEFAULT_BOOTSTRAP})",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the simulation")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
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
    if args.replicates < 1 or args.jobs < 1 or args.bootstrap_replicates < 2:
        parser.error("--replicates and --jobs must be at least 1, --bootstrap-replicates 2")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    configs = [Config(n, prevalence) for n in SIZES for prevalence in PREVALENCES]
    before = load_average()
    started = time.perf_counter()
    progress(f"simulating {len(configs)} cells x {args.replicates:,} replicates ...")
    totals = run_simulation(
        configs, args.replicates, args.seed, args.bootstrap_replicates, args.jobs
    )
    elapsed = time.perf_counter() - started
    load = (before, load_average())
    command = shlex.join(["python", SCRIPT, *argv])
    print(coverage_table(totals))
    print()
    print(wilson_table(totals))
    print(f"\n{summary(totals)}; {elapsed:.0f} s wall time")
    section = render_section(
        totals, command, args.replicates, args.bootstrap_replicates, args.seed, args.jobs,
        elapsed, load,
    )  # fmt: skip
    write_section(SECTION_TITLE, section, args.results)
    print(f"\nwrote section '{SECTION_TITLE}' of {args.results}")
    failed = failures(totals)
    if failed:
        print(f"targets failed: {'; '.join(failed)}", file=sys.stderr)
    return 1 if failed and not args.no_fail else 0


if __name__ == "__main__":
    sys.exit(main())
