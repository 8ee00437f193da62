"""``evalserve report`` as a person runs it: the evaluator's inputs and flags, the page written
where asked, a baseline file, clear errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from evalserve.core import evaluate
from tests.report.cases import binary_rows

COMMAND = [sys.executable, "-m", "evalserve", "report"]


def _file(tmp_path: Path) -> tuple[Path, np.ndarray, np.ndarray]:
    labels, scores = binary_rows(3000, seed=11)
    path = tmp_path / "day.parquet"
    pq.write_table(pa.table({"y": labels, "p": scores}), path)
    return path, labels, scores


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COMMAND, *args], capture_output=True, text=True, timeout=180, check=False
    )


def test_writes_the_page_of_the_files(tmp_path: Path) -> None:
    path, labels, scores = _file(tmp_path)
    out = tmp_path / "report.html"
    done = _run(
        str(path), "--label-column", "y", "--score-column", "p", "--threshold", "0.35",
        "-o", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    page = out.read_text(encoding="utf-8")
    expected = evaluate("binary", labels, scores, options={"threshold": 0.35})
    assert f'data-value="{expected.metrics["roc_auc"]!r}"' in page
    assert f'data-value="{expected.metrics["tp"]!r}"' in page
    assert "threshold 0.35" in page
    assert str(path) in page  # the source, under the heading


def test_a_baseline_file_adds_the_drift_test(tmp_path: Path) -> None:
    path, _, _ = _file(tmp_path)
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({"roc_auc": 0.97, "n_positive": 900, "n_negative": 2100}))
    done = _run(
        str(path), "--label-column", "y", "--score-column", "p", "--baseline", str(baseline),
        "-o", "-",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Drift against the baseline" in done.stdout
    assert "significant difference" in done.stdout


def test_bad_input_exits_2_with_one_line(tmp_path: Path) -> None:
    path, _, _ = _file(tmp_path)
    done = _run(str(path), "--label-column", "nope", "-o", str(tmp_path / "r.html"))
    assert done.returncode == 2
    assert "nope" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "r.html").exists()
    missing = _run(str(path), "--baseline", str(tmp_path / "none.json"))
    assert missing.returncode == 2
    assert "none.json" in missing.stderr and "Traceback" not in missing.stderr


def test_the_operating_point_flags_fill_the_table(tmp_path: Path) -> None:
    path, labels, scores = _file(tmp_path)
    done = _run(
        str(path), "--label-column", "y", "--score-column", "p", "--recall-at-precision", "0.8",
        "--tpr-at-fpr", "0.05", "0.1", "--flagged-share", "0.1", "-o", "-",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    options = {"recall_at_precision": [0.8], "tpr_at_fpr": [0.05, 0.1], "flagged_share": [0.1]}
    expected = evaluate("binary", labels, scores, options=options)
    table = done.stdout[done.stdout.index('aria-labelledby="h-operating"') :]
    for name in ("recall_at_precision_0.8", "tpr_at_fpr_0.05", "flagged_share_0.1_actual"):
        assert (
            f'<code>{name}</code></td><td class="num" data-value="{expected.metrics[name]!r}"'
            in table
        )
    assert "budget of 0.1" in table


def test_the_segment_flags_add_the_segments_section(tmp_path: Path) -> None:
    labels, scores = binary_rows(3000, seed=12)
    countries = np.array(["de", "fr", "us"])[np.arange(labels.size) % 3]
    path = tmp_path / "day.parquet"
    pq.write_table(pa.table({"y": labels, "p": scores, "country": countries}), path)
    out = tmp_path / "report.html"
    done = _run(
        str(path), "--label-column", "y", "--score-column", "p",
        "--segment-column", "country", "-o", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    page = out.read_text(encoding="utf-8")
    assert 'class="segment"' in page
    for country in ("de", "fr", "us"):
        assert f">{country}<" in page


def test_a_baseline_payload_file_draws_the_reference_curves(tmp_path: Path) -> None:
    path, _, _ = _file(tmp_path)
    ref_labels, ref_scores = binary_rows(2000, seed=21)
    baseline = tmp_path / "reference.json"
    baseline.write_text(json.dumps({"labels": ref_labels.tolist(), "scores": ref_scores.tolist()}))
    done = _run(
        str(path), "--label-column", "y", "--score-column", "p", "--baseline", str(baseline),
        "-o", "-",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    expected = evaluate("binary", ref_labels, ref_scores)
    assert "reference: the baseline&#x27;s 2,000 samples" in done.stdout
    assert f"AUC {expected.metrics['roc_auc']:.4f}), the blue one the current data" in done.stdout
    assert '"series":"reference"' in done.stdout


def test_title_and_model_name_name_the_page(tmp_path: Path) -> None:
    path, _, _ = _file(tmp_path)
    out = tmp_path / "named.html"
    done = _run(
        str(path), "--label-column", "y", "--score-column", "p", "--title", "Churn <weekly>",
        "--model-name", "churn-gbm v3", "-o", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    page = out.read_text(encoding="utf-8")
    assert "<title>Churn &lt;weekly&gt;</title>" in page
    assert "<h1>Churn &lt;weekly&gt;</h1>" in page
    assert "model churn-gbm v3 · task binary" in page
    # The model's name alone titles the page.
    named = _run(
        str(path), "--label-column", "y", "--score-column", "p", "--model-name", "churn-gbm",
        "-o", "-",
    )  # fmt: skip
    assert named.returncode == 0, named.stderr
    assert "<title>Evaluation report: churn-gbm</title>" in named.stdout
