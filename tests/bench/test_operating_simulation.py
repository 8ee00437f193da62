"""The true values ``bench/operating_simulation.py`` measures coverage against, checked
numerically: on two million binormal rows the core's point estimate of each operating point
lies within a few of the script's asymptotic standard deviations of the true value. Also its
Wilson interval against the core's, its seeding (a shorter run is a prefix of a longer one) and
its ``--quick`` path end to end."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from evalserve.core import evaluate
from tests.bench.scripts import bench_modules

HUGE = 2_000_000
NORMAL = statistics.NormalDist()


@pytest.fixture(scope="module")
def sim() -> Iterator[ModuleType]:
    """The script as a module."""
    with bench_modules("operating_simulation") as modules:
        yield modules["operating_simulation"]


def test_the_closed_forms_are_the_curves_read_at_their_thresholds(sim: ModuleType) -> None:
    mu = sim.MU
    assert NORMAL.cdf(mu / math.sqrt(2.0)) == pytest.approx(0.85, abs=1e-12)
    for prevalence in sim.PREVALENCES:
        found = {truth.name: truth for truth in sim.truths(sim.Config(2_000, prevalence))}
        for f in sim.FPR_BOUNDS:
            truth = found[f"tpr_at_fpr_{f}"]
            assert sim.fpr(truth.threshold) == pytest.approx(f, rel=1e-9)
            assert truth.value == pytest.approx(1.0 - NORMAL.cdf(NORMAL.inv_cdf(1 - f) - mu))
        truth = found["specificity_at_sensitivity_0.8"]
        assert sim.tpr(truth.threshold) == pytest.approx(0.8, rel=1e-9)
        assert truth.value == pytest.approx(NORMAL.cdf(mu + NORMAL.inv_cdf(0.2)))
        truth = found["precision_at_recall_0.5"]
        assert sim.tpr(truth.threshold) == pytest.approx(0.5, rel=1e-9)
        p = sim.precision_target(prevalence)
        truth = found[f"recall_at_precision_{p}"]
        assert sim.precision(truth.threshold, prevalence) == pytest.approx(p, rel=1e-9)
        assert 0.45 < truth.value < 0.55  # the precision asked is met at recall about 0.5
        truth = found["equal_error_rate"]
        assert sim.fpr(truth.threshold) == pytest.approx(1.0 - sim.tpr(truth.threshold))
        assert truth.value == pytest.approx(NORMAL.cdf(-mu / 2.0))
    assert (sim.precision_target(0.2), sim.precision_target(0.05)) == (0.64, 0.27)


@pytest.mark.parametrize("prevalence", [0.2, 0.05])
def test_two_million_rows_estimate_the_true_values(sim: ModuleType, prevalence: float) -> None:
    config = sim.Config(HUGE, prevalence)
    labels, scores = sim.draw_sample(np.random.default_rng(20), config)
    result = evaluate("binary", labels, scores, options=sim.evaluate_options(config, 0))
    for truth in sim.truths(config):
        estimate = result.metrics[truth.name]
        assert estimate is not None, truth.name
        # Standard deviations of 1e-4 to 1e-3 here; the estimates' bias is O(1 / n).
        assert abs(estimate - truth.value) < 4.0 * truth.sd, (truth.name, estimate, truth)


def test_its_wilson_interval_is_the_cores(sim: ModuleType) -> None:
    config = sim.Config(2_000, 0.2)
    labels, scores = sim.draw_sample(np.random.default_rng(3), config)
    result = evaluate("binary", labels, scores, options={"max_curve_points": 0})
    recall = result.metrics["recall"]
    assert recall is not None
    lower, upper = sim.wilson(round(recall * config.positives), config.positives)
    core = result.intervals["recall"]
    assert (lower, upper) == pytest.approx((core.lower, core.upper), abs=1e-12)


def test_a_shorter_run_is_a_prefix_of_a_longer_one(sim: ModuleType) -> None:
    config = sim.Config(2_000, 0.05)
    whole = sim.simulate(config, 0, 4, 7, 50)
    parts = sim.simulate(config, 0, 3, 7, 50)
    parts.merge(sim.simulate(config, 3, 4, 7, 50))
    assert parts.points.keys() == whole.points.keys()
    for name, tally in whole.points.items():
        joined = parts.points[name]
        assert (joined.replicates, joined.defined, joined.covered) == (
            tally.replicates, tally.defined, tally.covered,
        )  # fmt: skip
        assert joined.width_sum == pytest.approx(tally.width_sum, rel=1e-12)
        assert joined.estimate_sum == pytest.approx(tally.estimate_sum, rel=1e-12, abs=1e-15)
    assert whole.count_mismatches == 0


@pytest.mark.slow
def test_the_quick_run_writes_its_section(sim: ModuleType, tmp_path: Path) -> None:
    results = tmp_path / "RESULTS.md"
    assert sim.main(["--quick", "--jobs", "1", "--results", str(results)]) == 0
    text = results.read_text(encoding="utf-8")
    assert f"## {sim.SECTION_TITLE}" in text
    section = text.split(sim.SECTION_TITLE)[1]
    assert "| 20,000 | 5% | 1,000 | equal_error_rate |" in section
    assert "Wilson coverage" in section
