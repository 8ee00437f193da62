"""``--baseline`` from a data file: a CSV or Parquet file of reference rows, read with the
data's column flags, is the REST request's baseline payload (the same drift test as the JSON
payload of its rows); a bad baseline is named as the baseline file, never as the data."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalserve.core import evaluate
from tests.cli.run import assert_refused, evalserve

COLUMNS = ("--label-column", "y", "--score-column", "p")


def _rows(seed: int, lift: float) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, 2000)
    return labels, np.round(rng.random(2000) * 0.5 + labels * lift, 4)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    labels, scores = _rows(1, 0.3)
    path = tmp_path / "current.parquet"
    pq.write_table(pa.table({"y": labels, "p": scores}), path)
    return path


@pytest.mark.parametrize("kind", ["parquet", "csv", "json"])
def test_a_data_file_baseline_is_the_payload_of_its_rows(
    tmp_path: Path, data: Path, kind: str
) -> None:
    labels, scores = _rows(2, 0.45)
    path = tmp_path / f"baseline.{kind}"
    if kind == "parquet":
        pq.write_table(pa.table({"y": labels, "p": scores}), path)
    elif kind == "csv":
        lines = [f"{y},{p}" for y, p in zip(labels, scores, strict=True)]
        path.write_text("\n".join(["y,p", *lines]) + "\n")
    else:
        path.write_text(json.dumps({"labels": labels.tolist(), "scores": scores.tolist()}))
    done = evalserve("evaluate", str(data), *COLUMNS, "--baseline", str(path))
    assert done.returncode == 0, done.stderr
    current = pq.read_table(data)
    want = evaluate(
        "binary", current["y"].to_numpy(), current["p"].to_numpy(),
        baseline={"labels": labels, "scores": scores},
    )  # fmt: skip
    drift = json.loads(done.stdout)["drift"]["roc_auc"]
    assert drift == json.loads(json.dumps(want.to_dict()))["drift"]["roc_auc"]
    assert drift["method"] == "delong-unpaired" and drift["significant"] is True


@pytest.mark.parametrize(
    ("name", "text", "fragments"),
    [
        ("text.csv", "y,p\n0,0.1\n1,x\n", ("line 3, column p", "expected a number")),
        ("label.csv", "y,p\n0,0.1\n2,0.3\n", ("baseline.labels", "expected labels 0 or 1")),
        ("columns.csv", "a,b\n0,0.1\n", ("no label column 'y'",)),
        ("header.csv", "y,p\n", ("no rows",)),
        ("empty.csv", "", ("empty",)),
        ("one-class.csv", "y,p\n1,0.2\n1,0.4\n", ("both classes",)),
        ("summary.json", '{"roc_auc": 2}', ("baseline.roc_auc",)),
        ("list.json", "[1, 2]", ("expected a JSON object",)),
        ("broken.json", "{", ("not a JSON object",)),
        ("garbage.parquet", "PAR1 not really", ("not a readable Parquet file",)),
    ],
)
def test_a_bad_baseline_names_the_baseline_file(
    tmp_path: Path, data: Path, name: str, text: str, fragments: tuple[str, ...]
) -> None:
    path = tmp_path / name
    path.write_text(text)
    line = assert_refused(
        evalserve("evaluate", str(data), *COLUMNS, "--baseline", str(path)),
        f"--baseline {path}",
        *fragments,
    )
    assert str(data) not in line


def test_a_parquet_baseline_in_the_report(tmp_path: Path, data: Path) -> None:
    labels, scores = _rows(2, 0.45)
    path = tmp_path / "baseline.parquet"
    pq.write_table(pa.table({"y": labels, "p": scores}), path)
    done = evalserve("report", str(data), *COLUMNS, "--baseline", str(path), "-o", "-")
    assert done.returncode == 0, done.stderr
    assert "Drift against the baseline" in done.stdout
