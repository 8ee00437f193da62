"""Every benchmark script still runs: a ``--quick`` smoke run of each, writing its section to a
scratch results file. The numbers are not checked here (the scripts gate their own targets when
run in full); what is checked is that a change to the service or the core has not broken them,
as happened once when a handler gained an argument."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from evalserve.v1 import evaluation_pb2 as pb
from tests.bench.scripts import bench_modules

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = {
    "binary_core.py": "## binary core (bench/binary_core.py)",
    "service_bench.py": "## service (bench/service_bench.py)",
    "multiclass_core.py": "## multiclass core (bench/multiclass_core.py)",
    "auc_simulation.py": "## AUC intervals and drift test, simulation (bench/auc_simulation.py)",
    "stream_cost.py": "## streams against one-shot (bench/stream_cost.py)",
    "memory_cost.py": "## memory cost per request (bench/memory_cost.py)",
    "load.py": "## the service under load (bench/load.py)",
    "refusal_cost.py": "## what a refusal costs (bench/refusal_cost.py)",
    "offline_scale.py": "## offline evaluation at scale (bench/offline_scale.py)",
    "segments_cost.py": "## segments (bench/segments_cost.py)",
    "offline_cost.py": "## offline evaluator (bench/offline_cost.py)",
    "dask_scaling.py": "## Dask scaling (bench/dask_scaling.py)",
}


@pytest.mark.slow
@pytest.mark.parametrize("script", list(SCRIPTS))
def test_the_benchmark_runs_and_writes_its_section(script: str, tmp_path: Path) -> None:
    results = tmp_path / "RESULTS.md"
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / script), "--quick", "--no-fail",
         "--results", str(results),
         *(["--figures", str(tmp_path / "figures.json")] if script == "memory_cost.py" else [])],
        cwd=REPO, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    text = results.read_text(encoding="utf-8")
    assert SCRIPTS[script] in text
    assert "| " in text.split(SCRIPTS[script])[1], "the section has no table"


# --- the binary benchmark's worker processes --------------------------------------------------
# The sort floor and the server-allocator row come from worker processes, and the memory target
# from a fresh one: these check that each does what the table says it did.

ROWS = 20_000


@pytest.fixture(scope="module")
def bench() -> Iterator[dict[str, ModuleType]]:
    """The bench modules this file tests."""
    with bench_modules("binary_worker", "binary_workload", "machine", "health_scenarios") as found:
        yield found


@pytest.fixture
def rows(bench: dict[str, ModuleType], tmp_path: Path) -> Any:
    data = bench["binary_workload"].make_data(ROWS, 0)
    data.save(tmp_path)
    return data


def test_the_sort_floor_worker_turns_off_what_it_is_told_and_sorts_the_same_rows(
    bench: dict[str, ModuleType], rows: Any, tmp_path: Path
) -> None:
    # The AVX-512 targets where the CPU has them (what the benchmark disables); elsewhere any
    # dispatch target numpy found here (AVX2's X86_V3 on x86-64), to exercise the same check.
    machine = bench["machine"]
    disabled = machine.avx512_dispatch_targets() or machine.numpy_simd().found[:1]
    if not disabled:
        pytest.skip("numpy dispatches to no SIMD target on this CPU: nothing to disable")
    worker_module, workload = bench["binary_worker"], bench["binary_workload"]
    environment = {"NPY_DISABLE_CPU_FEATURES": " ".join(disabled)}
    with worker_module.Worker(tmp_path, "sort-floor", environment) as worker:
        simd = worker.hello["simd"]
        assert set(disabled) <= set(simd["not_found"])
        assert not set(disabled) & set(simd["found"])
        for name, result in (
            ("np.sort", np.sort(rows.scores)),
            ("np.argsort", np.argsort(rows.scores)),
        ):
            assert worker.warm(name) == workload.summary(name, result, rows)
            assert worker.time(name).wall > 0


def test_the_sort_floor_worker_refuses_a_feature_numpy_ignores(
    bench: dict[str, ModuleType], rows: Any, tmp_path: Path
) -> None:
    # numpy only warns about a name that is no dispatch target of its build, and sorts as before.
    worker_module = bench["binary_worker"]
    environment = {"NPY_DISABLE_CPU_FEATURES": "NOT_A_CPU_FEATURE"}
    with pytest.raises(worker_module.WorkerError, match="NOT_A_CPU_FEATURE"):
        worker_module.Worker(tmp_path, "sort-floor", environment)


def test_the_server_allocator_worker_computes_the_same_suites(
    bench: dict[str, ModuleType], rows: Any, tmp_path: Path
) -> None:
    worker_module, workload = bench["binary_worker"], bench["binary_workload"]
    with worker_module.Worker(tmp_path, "server-allocator") as worker:
        assert worker.hello["setting"] == "server-allocator"
        for name, weighted in (("our suite", False), ("our weighted suite", True)):
            ours = workload.summary(name, workload.suite(rows, weighted=weighted), rows)
            workload.same_summary(name, ours, worker.warm(name), "(server-allocator worker)")
            assert worker.time(name).wall > 0


def test_the_memory_probe_measures_the_call_above_its_inputs(
    bench: dict[str, ModuleType], rows: Any, tmp_path: Path
) -> None:
    # The suite sorts the scores into a new array, so at least 8 bytes per row; far less than a
    # kilobyte per row, which only counting the process's imports or inputs would reach.
    for weighted in (False, True):
        peak = bench["binary_worker"].extra_peak_bytes(tmp_path, weighted=weighted)
        assert 8 * ROWS <= peak < 1000 * ROWS


def test_the_health_scenarios_encode_bodies_as_protobuf_does(
    bench: dict[str, ModuleType],
) -> None:
    data = bench["health_scenarios"].protobuf_body(1000, 3)
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, 1000)
    scores = rng.random(1000) * 0.7 + labels * 0.3
    message = pb.EvaluateRequest(task=pb.TASK_BINARY, labels=labels, scores=scores)
    assert data == message.SerializeToString()


def test_the_health_table_gives_each_scenario_its_verdict(bench: dict[str, ModuleType]) -> None:
    health = bench["health_scenarios"]
    fast, slow = (health.ScenarioResult(scenario) for scenario in health.scenarios(False)[:2])
    kinds = ("healthz", "readyz", "grpc health")
    fast.probes = health.probe_summary(dict.fromkeys(kinds, [0.01] * 99 + [0.2]))
    slow.probes = health.probe_summary(
        {"healthz": [0.01] * 90 + [0.2] * 10, "readyz": [-1.0], "grpc health": [0.01]}
    )
    fast.answers, slow.answers = {"200": 3}, {"200": 1, "500": 1}
    assert fast.met and not slow.met
    assert (fast.unexpected(), slow.unexpected()) == ([], ["500"])
    table = "\n".join(health.render_health([fast, slow], 20.0))
    assert "| 10M rows, REST protobuf | 200 (3) | 11.9 / 200.0 | 11.9 / 200.0 |" in table
    assert "| 8 x 5M rows, REST protobuf | 200 (1), 500 (1) | 200.0 / 200.0 | failed /" in table
    assert table.count("**missed**") == 1
