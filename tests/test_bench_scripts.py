"""Every benchmark script still runs: a ``--quick`` smoke run of each, writing its section to a
scratch results file. The numbers are not checked here (the scripts gate their own targets when
run in full); what is checked is that a change to the service or the core has not broken them,
as happened once when a handler gained an argument."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = {
    "binary_core.py": "## binary core (bench/binary_core.py)",
    "service_bench.py": "## service (bench/service_bench.py)",
    "multiclass_core.py": "## multiclass core (bench/multiclass_core.py)",
    "auc_simulation.py": "## AUC intervals and drift test, simulation (bench/auc_simulation.py)",
}


@pytest.mark.slow
@pytest.mark.parametrize("script", list(SCRIPTS))
def test_the_benchmark_runs_and_writes_its_section(script: str, tmp_path: Path) -> None:
    results = tmp_path / "RESULTS.md"
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / script), "--quick", "--no-fail",
         "--results", str(results)],
        cwd=REPO, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    text = results.read_text(encoding="utf-8")
    assert SCRIPTS[script] in text
    assert "| " in text.split(SCRIPTS[script])[1], "the section has no table"
