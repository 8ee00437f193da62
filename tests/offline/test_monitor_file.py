"""``evalserve evaluate --baseline B --monitor-state FILE --window ID``: the AUC monitor's state
kept in a file between runs, as ``evaluate`` keeps it in memory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalserve.core import evaluate
from evalserve.offline import MonitorFile

COMMAND = [sys.executable, "-m", "evalserve", "evaluate"]
BASELINE = {"roc_auc": 0.85, "roc_auc_variance": 0.0}


def _window(tmp_path: Path, index: int, shift: float) -> tuple[Path, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(index)
    labels = (np.arange(3000) % 5 == 0).astype(np.int64)
    scores = rng.normal(labels * shift, 1.0)
    path = tmp_path / f"window-{index}.parquet"
    pq.write_table(pa.table({"y": labels, "p": scores}), path)
    return path, labels, scores


def _run(path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    command = [*COMMAND, str(path), "--label-column", "y", "--score-column", "p", *flags]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def test_runs_carry_the_state_as_evaluate_does(tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps(BASELINE))
    state_file = tmp_path / "ranker.state"
    state = None
    for index, shift in enumerate((1.47, 1.47, 0.5, 0.5)):
        path, labels, scores = _window(tmp_path, index, shift)
        flags = ("--baseline", str(baseline), "--monitor-state", str(state_file))
        done = _run(path, *flags, "--window", f"day-{index}")
        assert done.returncode == 0, done.stderr
        want = evaluate(
            "binary", labels, scores, baseline=BASELINE, monitor_state=state, window=f"day-{index}"
        )
        state = want.monitor_state
        assert state_file.read_bytes() == state
        assert (
            json.loads(done.stdout)["monitor"] == json.loads(json.dumps(want.to_dict()))["monitor"]
        )
    assert json.loads(done.stdout)["monitor"]["roc_auc"]["alarm"] is True
    # the same window again (a retry): counted once
    again = _run(path, *flags, "--window", "day-3")
    assert again.returncode == 0 and state_file.read_bytes() == state
    assert json.loads(again.stdout)["monitor"]["roc_auc"]["windows"] == 4


def test_the_flags_need_a_baseline_and_a_state_file(tmp_path: Path) -> None:
    path, _, _ = _window(tmp_path, 0, 1.0)
    done = _run(path, "--monitor-state", str(tmp_path / "s"))
    assert done.returncode == 2 and "--monitor-state needs --baseline" in done.stderr
    done = _run(path, "--window", "w")
    assert done.returncode == 2 and "give --monitor-state too" in done.stderr


def test_a_damaged_state_file_is_one_clear_line(tmp_path: Path) -> None:
    path, _, _ = _window(tmp_path, 0, 1.0)
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps(BASELINE))
    state_file = tmp_path / "s"
    state_file.write_bytes(b"garbage")
    done = _run(path, "--baseline", str(baseline), "--monitor-state", str(state_file))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("evalserve: error:")
    assert "monitor_state" in done.stderr and "Traceback" not in done.stderr
    assert state_file.read_bytes() == b"garbage"  # left as it was


def test_the_state_file_is_replaced_whole(tmp_path: Path) -> None:
    target = MonitorFile(str(tmp_path / "state"))
    assert target.read() is None
    target.write(b"one")
    target.write(b"two")
    assert target.read() == b"two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state"]  # no temporary left
    with pytest.raises(OSError):
        MonitorFile(str(tmp_path / "missing" / "state")).write(b"x")
