"""The offline evaluator, run as users run it: the installed ``evalserve`` command."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "fawcett.csv"


def _evalserve(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    executable = shutil.which("evalserve", path=str(Path(sys.executable).parent))
    command = [executable] if executable else [sys.executable, "-m", "evalserve.service"]
    return subprocess.run(
        [*command, *args], input=stdin, capture_output=True, text=True, timeout=60, check=False
    )


def test_evaluates_the_example_file() -> None:
    done = _evalserve("evaluate", "--task", "binary", str(EXAMPLE))
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["task"] == "binary"
    assert body["n_samples"] == 20
    assert body["metrics"]["roc_auc"] == pytest.approx(0.68)
    assert body["curves"]["roc"]["thresholds"][0] is None  # +inf has no JSON form
    assert set(body) >= {"metrics", "undefined", "curves", "conventions", "warnings"}


def test_reads_stdin_with_weights_and_options() -> None:
    csv_text = "score,label,weight\n0.9,1,2\n0.8,0,1\n0.3,1,1\n0.1,0,1\n"
    done = _evalserve("evaluate", "-", "--options", '{"threshold": 0.5}', stdin=csv_text)
    assert done.returncode == 0, done.stderr
    metrics = json.loads(done.stdout)["metrics"]
    # Weighted pairs: (.9>.8) 2*1, (.9>.1) 2*1, (.3<.8) 0, (.3>.1) 1*1 -> 5 / (3 * 2).
    assert metrics["roc_auc"] == pytest.approx(5 / 6)
    assert metrics["tp"] == 2.0


@pytest.mark.parametrize(
    ("csv_text", "fragment"),
    [
        pytest.param("", "empty", id="empty"),
        pytest.param("label,prob\n1,0.5\n", "no score column 'score'", id="header"),
        pytest.param("label,score\n1,0.5\n0,abc\n", "line 3, column score", id="number"),
        pytest.param("label,score\n1,0.5,7\n", "expected 2 fields, got 3", id="fields"),
        pytest.param("label,score\n3,0.5\n", "line 2, column label: expected labels 0", id="label"),
        pytest.param("label,score\n1,nan\n", "line 2, column score: is missing", id="nan"),
    ],
)
def test_bad_files_fail_with_a_message(csv_text: str, fragment: str) -> None:
    done = _evalserve("evaluate", "-", stdin=csv_text)
    assert done.returncode == 2
    assert fragment in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


def test_missing_file_is_an_error_not_a_crash(tmp_path: Path) -> None:
    done = _evalserve("evaluate", str(tmp_path / "nope.csv"))
    assert done.returncode == 2
    assert "No such file" in done.stderr


def test_serve_help_lists_every_setting() -> None:
    from evalserve.service.config import Settings

    done = subprocess.run(
        [sys.executable, "-m", "evalserve", "serve", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    for name in Settings.model_fields:
        assert "--" + name.replace("_", "-") in done.stdout, name
    assert "70% of the container" in " ".join(done.stdout.split())
