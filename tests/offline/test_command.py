"""``evalserve evaluate`` as a person runs it: option flags, the table, the progress line on a
terminal (and nothing when piped)."""

from __future__ import annotations

import json
import pty
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalserve.core import evaluate
from tests.cli.run import on_a_terminal

COMMAND = [sys.executable, "-m", "evalserve"]


def _rows(tmp_path: Path, n: int = 1000) -> tuple[Path, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    labels = rng.integers(0, 2, n)
    scores = rng.random(n)
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"y": labels, "p": scores}), path)
    return path, labels, scores


def _evaluate(path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """``evalserve evaluate PATH`` on the columns y and p, with ``flags``."""
    return subprocess.run(
        [*_command(path), *flags], capture_output=True, text=True, timeout=120, check=False
    )


def _command(path: Path) -> list[str]:
    """``evalserve evaluate PATH`` on the columns y and p."""
    return [*COMMAND, "evaluate", str(path), "--label-column", "y", "--score-column", "p"]


def test_columns_and_options_as_flags(tmp_path: Path) -> None:
    path, labels, scores = _rows(tmp_path)
    done = _evaluate(path, "--threshold", "0.3", "--head-k", "10", "50", "--options", '{"beta": 2}')
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no progress line when stderr is not a terminal
    want = evaluate(
        "binary", labels, scores, options={"threshold": 0.3, "head_k": [10, 50], "beta": 2}
    ).to_dict()
    assert json.loads(done.stdout) == json.loads(json.dumps(want))


def test_operating_points_as_flags(tmp_path: Path) -> None:
    path, labels, scores = _rows(tmp_path)
    flags = ("--recall-at-precision", "0.6", "0.95", "--tpr-at-fpr", "0.01",
             "--specificity-at-sensitivity", "0.9", "--flagged-share", "0.05")  # fmt: skip
    done = _evaluate(path, *flags)
    assert done.returncode == 0, done.stderr
    options = {
        "recall_at_precision": [0.6, 0.95], "tpr_at_fpr": [0.01],
        "specificity_at_sensitivity": [0.9], "flagged_share": [0.05],
    }  # fmt: skip
    want = evaluate("binary", labels, scores, options=options).to_dict()
    got = json.loads(done.stdout)
    assert got == json.loads(json.dumps(want))
    assert "recall_at_precision_0.95_threshold" in got["metrics"]
    assert "flagged_share_0.05_threshold" in got["metrics"]
    # At most 8 targets an option: a clear error naming it.
    done = _evaluate(path, "--tpr-at-fpr", *(f"0.0{i}" for i in range(1, 10)))
    assert done.returncode == 2
    assert "options.tpr_at_fpr" in done.stderr and "at most 8 values" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_table_format(tmp_path: Path) -> None:
    path, labels, scores = _rows(tmp_path)
    done = _evaluate(path, "--format", "table")
    assert done.returncode == 0, done.stderr
    auc = evaluate("binary", labels, scores).metrics["roc_auc"]
    lines = done.stdout.splitlines()
    assert lines[0] == "task binary, 1,000 samples"
    row = next(line for line in lines if line.startswith("roc_auc "))
    assert f"{auc:.6g}" in row and "95% delong" in row


def test_the_table_names_what_each_test_compared_against(tmp_path: Path) -> None:
    """The drift test's row shows the baseline's AUC under "baseline", the paired test's the
    challenger's under "challenger"."""
    rng = np.random.default_rng(8)
    labels = rng.integers(0, 2, 400)
    scores = labels + rng.normal(size=400)
    challenger = labels + 2 * rng.normal(size=400)
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"y": labels, "p": scores, "c": challenger}), path)
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({"roc_auc": 0.9, "n_positive": 200, "n_negative": 200}))
    done = _evaluate(
        path, "--baseline", str(baseline), "--challenger-column", "c", "--format", "table"
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    drift = lines[lines.index("drift") + 1 : lines.index("drift") + 3]
    assert drift[0].split() == ["metric", "baseline", "delta", "p-value", "significant"]
    assert drift[1].split()[:2] == ["roc_auc", "0.9"]
    comparison = lines[lines.index("comparison") + 1 : lines.index("comparison") + 3]
    assert comparison[0].split() == ["metric", "challenger", "delta", "p-value", "significant"]
    paired = evaluate("binary", labels, scores, challenger={"scores": challenger}).comparison[
        "roc_auc"
    ]
    assert comparison[1].split()[:2] == ["roc_auc", f"{paired.challenger:.6g}"]


def test_a_bad_option_flag_is_a_clear_error(tmp_path: Path) -> None:
    path, _, _ = _rows(tmp_path)
    done = _evaluate(path, "--max-fpr", "2")
    assert done.returncode == 2
    assert "options.max_fpr" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.skipif(not hasattr(pty, "openpty"), reason="needs a pseudo-terminal")
def test_a_progress_line_on_a_terminal(tmp_path: Path) -> None:
    path, _, _ = _rows(tmp_path, n=200_000)
    output = tmp_path / "out.json"
    status, text = on_a_terminal(_command(path), output, timeout=120)
    assert status == 0
    assert json.loads(output.read_text())["n_samples"] == 200_000
    assert "200,000 rows" in text and "rows/s" in text and "1/1 file" in text
    assert text.endswith("\n")  # the cursor back on a fresh line


def test_threads_give_the_same_answer(tmp_path: Path) -> None:
    """--threads 2 on enough rows for two threads (half a million each) answers as one."""
    path, _, _ = _rows(tmp_path, n=1_200_000)
    answers = []
    for threads in ("1", "2"):
        done = _evaluate(path, "--threads", threads, "--head-k", "100")
        assert done.returncode == 0, done.stderr
        answers.append(json.loads(done.stdout))
    assert answers[0] == answers[1]


@pytest.mark.parametrize(
    ("flags", "fragment"),
    [
        (("--threads", "0"), "--threads must be a whole number from 1 to 64, got '0'"),
        (("--threads", "two"), "--threads must be a whole number from 1 to 64, got 'two'"),
        (("--threads", "2", "--engine", "dask"), "--threads sets the local engine's threads"),
    ],
)
def test_bad_threads_are_usage_errors(
    tmp_path: Path, flags: tuple[str, ...], fragment: str
) -> None:
    path, _, _ = _rows(tmp_path, n=10)
    done = _evaluate(path, *flags)
    assert done.returncode == 2
    assert fragment in done.stderr
    assert "Traceback" not in done.stderr
