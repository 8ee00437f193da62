"""``bench/task_steps.py``, the table of where a Dask ranges evaluation spends its time:
the spans and busy times from hand-made task-stream records, the medians, and on a real
``LocalCluster`` that every task of a real ranges run belongs to a step (a task renamed in
``evalserve.dask`` would otherwise drop out of the table unseen)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tests.bench.scripts import bench_modules


@pytest.fixture(scope="module")
def steps() -> Iterator[ModuleType]:
    """The module."""
    with bench_modules("task_steps") as modules:
        yield modules["task_steps"]


def record(key: Any, *parts: tuple[str, float, float]) -> dict[str, Any]:
    return {
        "key": key,
        "startstops": [{"action": a, "start": start, "stop": stop} for a, start, stop in parts],
    }


def test_a_step_spans_its_tasks_and_sums_their_compute_time(steps: ModuleType) -> None:
    records = [
        record(("read_parquet-_range_batch-ab12", 0), ("compute", 10.0, 10.2)),
        record(("read_parquet-_range_batch-ab12", 1), ("compute", 10.1, 10.4)),
        record(("read_parquet-ab12", 2), ("compute", 10.2, 10.3)),  # not fused: still a read
        record("_sample-9f", ("compute", 10.5, 10.51)),
        record(("range-split-77", 0, 0), ("compute", 10.6, 10.8)),
        record(("range-pieces-77", 0, 1), ("compute", 10.8, 10.81)),
        # A transfer is waiting, not computing: neither in the span nor in the busy time.
        record(("range-join-77", 1), ("transfer", 10.7, 10.9), ("compute", 10.9, 11.2)),
        record(("range-totals-77", 1), ("compute", 11.2, 11.21)),
        record(("range-pass-77", 1), ("compute", 11.3, 11.4)),
        record("range-bests-77", ("compute", 11.4, 11.41)),
        record(("range-finish-77", 1), ("compute", 11.5, 11.6)),
    ]
    spans = steps.step_spans(records)
    assert list(spans) == [step for step, _ in steps.STEPS]
    read = spans["read and check"]
    assert (read.start, read.stop) == (10.0, 10.4)
    assert read.seconds == pytest.approx(0.4)
    assert read.busy == pytest.approx(0.6)  # overlapping tasks: 0.2 + 0.3 + 0.1
    assert spans["split"].busy == pytest.approx(0.21)
    assert (spans["join"].start, spans["join"].stop) == (10.9, 11.21)
    assert spans["pass"].seconds == pytest.approx(0.11)


def test_a_task_of_no_step_is_an_error(steps: ModuleType) -> None:
    with pytest.raises(ValueError, match="range-renamed-1"):
        steps.step_spans([record(("range-renamed-1", 0), ("compute", 0.0, 1.0))])


def test_the_medians_and_the_time_between_steps(steps: ModuleType) -> None:
    span, run, usage = steps.Span, steps.Run, steps.Usage
    runs = [
        run(1.0, {"read and check": span(0.0, 0.5, 0.9), "join": span(0.6, 0.8, 0.3)},
            usage(1.1, 10), usage(0.2, 1)),
        run(2.0, {"read and check": span(0.0, 0.7, 1.3)}, usage(2.1, 40), usage(0.4, 3)),
        run(1.2, {"read and check": span(0.0, 0.6, 1.0), "join": span(0.7, 1.0, 0.5)},
            usage(1.3, 20), usage(0.1, 2)),
    ]  # fmt: skip
    got = steps.summarize(runs)
    assert list(got.spans) == ["read and check", "join"]
    assert got.spans["read and check"] == pytest.approx(0.6)
    assert got.spans["join"] == pytest.approx(0.2)
    assert got.busy["join"] == pytest.approx(0.3)
    # Wall less the spans: 0.3, 1.3, 0.3.
    assert got.between == pytest.approx(0.3)
    assert got.wall == pytest.approx(1.2)
    assert got.walls == (1.0, 2.0, 1.2)
    assert got.workers == usage(1.3, 20)
    assert got.scheduler == usage(0.2, 2)
    one = steps.StepTimes({"join": 0.4}, {"join": 0.4}, 0.1, 1.0, (1.0,), usage(0.9, 5))
    two = steps.StepTimes({"join": 0.25}, {"join": 0.4}, 0.05, 0.5, (0.5,), usage(0.95, 70))
    lines = steps.render_steps(one, two)
    assert "| join | 0.400 | 0.250 | 1.60x | 80% |" in lines
    assert f"| {steps.BETWEEN} | 0.100 | 0.050 | 2.00x | - |" in lines
    assert "| run | 1.000 | 0.500 | 2.00x | - |" in lines
    assert "| the workers' CPU, s | 0.900 | 0.950 |" in lines
    assert "| the steps' compute time, s | 0.400 | 0.400 |" in lines
    assert "| the workers taken off their core (involuntary switches) | 5 | 70 |" in lines


def test_usage_between_two_readings_adds_up_the_processes(steps: ModuleType) -> None:
    before = {"a": (1.0, 3), "b": (2.0, 5)}
    after = {"a": (1.5, 4), "b": (2.25, 9)}
    assert steps.used_between(before, after) == steps.Usage(0.75, 5)
    cpu, switches = steps.own_usage()
    assert cpu > 0 and switches >= 0


@pytest.mark.slow
def test_every_task_of_a_real_ranges_run_belongs_to_a_step(
    steps: ModuleType, tmp_path: Path
) -> None:
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    from evalserve import dask as evalserve_dask

    rng = np.random.default_rng(5)
    labels = (rng.random(40_000) < 0.3).astype(np.int64)
    pd.DataFrame({"label": labels, "score": rng.normal(size=labels.size) + labels}).to_parquet(
        tmp_path / "rows.parquet", row_group_size=10_000
    )
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
    ):

        def run() -> Any:
            frame = dd.read_parquet(tmp_path, split_row_groups=True)
            return evalserve_dask.evaluate(frame, task="binary", method="ranges", ranges=4)

        got = steps.record_steps(client, run, 2)
    assert list(got.spans) == [step for step, _ in steps.STEPS]
    assert all(got.busy[step] > 0 for step in got.spans)
    assert len(got.walls) == 2
    assert got.between > 0  # the client's round trips, at least
    assert got.workers.cpu > 0 and got.scheduler.cpu > 0
