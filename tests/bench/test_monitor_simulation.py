"""The mechanics of ``bench/monitor_simulation.py``: its run-length and week bookkeeping, the
CUSUM it compares the monitor with and that CUSUM's calibration, the binned windows it uses for
100 000 rows and more (the same DeLong statistic as their rows; the monitor's z distributed as
that of row-level windows), and its ``--quick`` path end to end."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from evalserve.core import evaluate
from tests.bench.scripts import bench_modules


@pytest.fixture(scope="module")
def sim() -> Iterator[ModuleType]:
    """The script as a module."""
    with bench_modules("monitor_simulation") as modules:
        yield modules["monitor_simulation"]


def fake_steps(sim: ModuleType, alarms: set[int], evidence: bool = True) -> Any:
    """A step function that alarms on the given calls (1-based) and records the states sent."""
    sent: list[bytes | None] = []

    def next_step(state: bytes | None) -> Any:
        sent.append(state)
        call = len(sent)
        return sim.Step(f"state {call}".encode(), call in alarms, evidence, 0.0, call % 2 == 0)

    next_step.sent = sent  # type: ignore[attr-defined]
    return next_step


# --- run lengths ------------------------------------------------------------------------------


def test_a_run_stops_at_its_first_alarm_and_sends_each_state_on(sim: ModuleType) -> None:
    next_step = fake_steps(sim, {7, 9})
    assert sim.run_until_alarm(next_step, 100) == sim.Run(7, True, 7)
    assert next_step.sent == [None] + [f"state {k}".encode() for k in range(1, 7)]


def test_a_run_without_an_alarm_is_truncated_at_the_horizon(sim: ModuleType) -> None:
    assert sim.run_until_alarm(fake_steps(sim, set(), evidence=False), 50) == sim.Run(50, False, 0)


def test_run_length_figures(sim: ModuleType) -> None:
    runs = [sim.Run(100, True, 100), sim.Run(300, True, 300), sim.Run(2000, False, 2000)]
    figures = sim.run_lengths(runs)
    assert figures.runs == 3 and figures.truncated == 1
    assert figures.mean == pytest.approx(800.0)
    assert figures.std_error == pytest.approx(statistics.stdev([100, 300, 2000]) / math.sqrt(3))
    assert figures.lower_bound == pytest.approx(800.0 - 1.6448536 * figures.std_error)


def test_the_false_alarm_gates(sim: ModuleType) -> None:
    boundary = sim.NullCell(10_000, 0.10, None)
    long_runs = [sim.Run(400 + k, True, 400) for k in range(50)]
    short_runs = [sim.Run(150 + k, True, 150) for k in range(50)]
    assert sim.null_status(boundary, long_runs) == "pass"
    assert sim.null_status(boundary, short_runs) == "FAIL"
    silent = sim.NullCell(1_000, 0.01, None)  # 10 positives: below drift_min_samples
    assert silent.silent and not boundary.silent
    assert sim.null_status(silent, [sim.Run(2000, False, 0)]) == "pass"
    assert sim.null_status(silent, [sim.Run(2000, False, 3)]) == "FAIL"
    inside = sim.NullCell(1_000_000, 0.10, None, 0.848)
    assert sim.null_status(inside, [sim.Run(2000, False, 2000)]) == "pass"
    assert sim.null_status(inside, [sim.Run(1999, True, 1999)]) == "FAIL"


def test_a_window_with_too_few_positives_adds_no_evidence(sim: ModuleType) -> None:
    rng = np.random.default_rng(1)
    window = sim.row_window(rng, 1_000, 0.01, sim.BOUNDARY)
    outcome = sim.step(window, sim.KNOWN_BASELINE, None, sim.NULL_ARL)
    assert not outcome.evidence and outcome.z is None and not outcome.alarm


def test_an_estimated_baseline_is_the_payload_as_a_summary(sim: ModuleType) -> None:
    # The summary the script sends gives the monitor the same boundary as the payload itself.
    rng = np.random.default_rng(2)
    sample = sim.row_window(rng, 5_000, 0.10, sim.BASELINE_AUC)
    summary = sim.estimated_baseline(np.random.default_rng(2), 5_000, 0.10)
    window = sim.row_window(rng, 5_000, 0.10, sim.BOUNDARY)
    payload = {"labels": sample.labels, "scores": sample.scores}
    by_payload = sim.step(window, payload, None, sim.NULL_ARL)
    by_summary = sim.step(window, summary, None, sim.NULL_ARL)
    assert by_summary.z == pytest.approx(by_payload.z, rel=1e-9)


# --- the CUSUM --------------------------------------------------------------------------------


def test_the_block_cusum_is_pages_recursion(sim: ModuleType) -> None:
    mu, h = -1.5, 4.0
    lengths = sim.cusum_run_lengths(mu, h, 1, np.random.default_rng(3), 10_000)
    cusum = sim.Cusum(mu, h, 0.0, 0.0, 0.0)
    rng, w, t = np.random.default_rng(3), 0.0, 0
    while True:
        block = rng.standard_normal(256)  # the same draws, one block at a time
        for z in block:
            t += 1
            w = cusum.step(w, float(z))
            if w > h:
                break
        else:
            continue
        break
    assert lengths.tolist() == [t]


def test_the_cusum_at_h_zero_has_its_exact_run_length(sim: ModuleType) -> None:
    mu = -3.0
    exact = 1.0 / statistics.NormalDist().cdf(-1.5)  # 14.97: W > 0 on the first positive step
    lengths = sim.cusum_run_lengths(mu, 0.0, 20_000, np.random.default_rng(4), 10_000)
    error = lengths.std() / math.sqrt(lengths.size)
    assert abs(lengths.mean() - exact) < 4 * error
    assert sim.calibrate_cusum(-20.0, 100.0, 100, 100, 0).h == 0.0


def test_the_cusum_calibration_reaches_the_run_length_asked(sim: ModuleType) -> None:
    cusum = sim.calibrate_cusum(-1.0, 50.0, 2_000, 8_000, 5)
    assert abs(cusum.arl - 50.0) < 4 * cusum.arl_std_error + 0.02 * 50.0
    assert cusum.h > 0
    # Siegmund's approximation is close for a shift of one standard error.
    assert cusum.siegmund_h == pytest.approx(cusum.h, abs=0.3)


def test_cusum_quantiles_count_censored_runs_at_the_horizon(sim: ModuleType) -> None:
    assert sim.quantile([3, 1, 2, None], 0.5, 1_000) == 2.0
    assert sim.quantile([3, 1, 2, None], 0.9, 1_000) == 1_000.0
    assert math.isnan(sim.quantile([], 0.5, 1_000))


# --- weeks ------------------------------------------------------------------------------------


def test_a_week_counts_both_rules_pages(sim: ModuleType) -> None:
    next_step = fake_steps(sim, {5, 100})
    steps = [next_step(None) for _ in range(sim.WEEK)]
    assert sim.count_week(steps) == (sim.WEEK // 2, 2)


def test_a_chain_continues_its_monitor_across_weeks_and_restarts_it_after_a_page(
    sim: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    next_step = fake_steps(sim, {10, 200})
    monkeypatch.setattr(sim, "draw_window", lambda *args: None)
    monkeypatch.setattr(sim, "step", lambda window, baseline, state, arl: next_step(state))
    tally = sim.week_chain(sim.WeekCell("test", 1_000, 0.85), 0, 2, 0)
    assert tally.monitor == [1, 1] and tally.rule == [sim.WEEK // 2] * 2
    sent = next_step.sent
    assert sent[0] is None and sent[10] is None and sent[200] is None
    assert sent[sim.WEEK] == f"state {sim.WEEK}".encode()  # week 2 goes on with week 1's state
    assert sum(state is None for state in sent) == 3


# --- binned windows ---------------------------------------------------------------------------


def test_a_binned_model_has_the_exact_auc_asked(sim: ModuleType) -> None:
    for auc in (sim.BOUNDARY, sim.BASELINE_AUC - sim.SMALL_DROP, 0.80):
        model = sim.binned_model(auc)
        assert sim.binned_auc(model.positive, model.negative) == pytest.approx(auc, abs=1e-10)
        assert model.positive.sum() == pytest.approx(1.0) == model.negative.sum()
        assert abs(model.shift - sim.binormal_shift(auc)) < 1e-3


def test_a_binned_window_is_its_rows(sim: ModuleType) -> None:
    # Weights are multiplicities: the binned window's AUC and DeLong variance are its rows'.
    window = sim.binned_window(np.random.default_rng(6), 20_000, 0.10, sim.BOUNDARY)
    assert window.weights is not None and window.weights.sum() == 20_000
    assert window.weights[window.labels == 1].sum() == 2_000
    counts = window.weights.astype(np.int64)
    options = sim.evaluate_options(sim.NULL_ARL)
    binned = evaluate("binary", window.labels, window.scores, sample_weight=window.weights,
                      options=options)  # fmt: skip
    rows = evaluate("binary", np.repeat(window.labels, counts), np.repeat(window.scores, counts),
                    options=options)  # fmt: skip
    assert binned.metrics["roc_auc"] == pytest.approx(rows.metrics["roc_auc"], abs=1e-12)
    assert binned.intervals["roc_auc"].std_error == pytest.approx(
        rows.intervals["roc_auc"].std_error, rel=1e-9
    )


@pytest.mark.slow
def test_binned_windows_give_the_monitor_the_z_of_row_level_windows(sim: ModuleType) -> None:
    # At 100 000 rows and the boundary AUC: the monitor's z of row-level windows and of binned
    # ones have the same mean and spread (within Monte Carlo error), both near N(0, 1).
    count = 200
    rows = sim.monitor_zs(False, count, 7)
    binned = sim.monitor_zs(True, count, 7)
    means = statistics.fmean(rows), statistics.fmean(binned)
    sds = statistics.stdev(rows), statistics.stdev(binned)
    mean_error = math.sqrt((sds[0] ** 2 + sds[1] ** 2) / count)
    sd_error = math.sqrt((sds[0] ** 2 + sds[1] ** 2) / (2 * (count - 1)))
    assert abs(means[0] - means[1]) < 4 * mean_error
    assert abs(sds[0] - sds[1]) < 4 * sd_error
    for mean, sd in zip(means, sds, strict=True):
        assert abs(mean) < 4 / math.sqrt(count)
        assert abs(sd - 1.0) < 4 / math.sqrt(2 * (count - 1))


# --- end to end -------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_quick_run_writes_its_section(sim: ModuleType, tmp_path: Path) -> None:
    results = tmp_path / "RESULTS.md"
    assert sim.main(["--quick", "--jobs", "1", "--results", str(results)]) == 0
    text = results.read_text(encoding="utf-8")
    section = text.split(f"## {sim.SECTION_TITLE}")[1]
    for heading in ("1. False alarms", "2. Detection", "3. Before/after", "Cross-check"):
        assert heading in section
    assert section.count("| pass") + section.count("| FAIL") >= len(sim.null_cells()) + 1
