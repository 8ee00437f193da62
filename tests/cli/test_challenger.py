"""``--challenger-column``: the paired comparison of two models' scores on the same rows
(DeLong's paired test), read from files by a real ``evalserve`` process, answers what
``evalserve.evaluate(..., challenger=...)`` answers on the same rows; a bad challenger column
is named with its file, line or row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalserve import evaluate
from tests.cli.run import assert_refused, evalserve


def _columns(n: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    return {
        "label": labels,
        "score": np.round(rng.random(n) + labels * 0.4, 3),
        "score_b": np.round(rng.random(n) + labels * 0.6, 3),
        "weight": rng.integers(1, 4, n).astype(np.float64),
        "country": rng.choice(["de", "fr", "it"], n),
    }


def _files(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """Two Parquet files in a folder (the rows of both, in name order)."""
    folder = tmp_path / "rows"
    folder.mkdir()
    first, second = _columns(1200, 1), _columns(800, 2)
    pq.write_table(pa.table(first), folder / "a.parquet")
    pq.write_table(pa.table(second), folder / "b.parquet")
    joined = {name: np.concatenate([first[name], second[name]]) for name in first}
    return folder, joined


def _answer(done: Any) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def _same(result: Any) -> dict[str, Any]:
    want: dict[str, Any] = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    return want


def test_the_comparison_equals_evaluate_on_the_same_rows(tmp_path: Path) -> None:
    folder, rows = _files(tmp_path)
    got = _answer(evalserve("evaluate", str(folder), "--challenger-column", "score_b"))
    want = evaluate(
        "binary", rows["label"], rows["score"], sample_weight=rows["weight"],
        challenger={"scores": rows["score_b"]},
    )  # fmt: skip
    assert got["comparison"]["roc_auc"]["status"] == "ok"
    assert got["comparison"]["roc_auc"]["challenger"] > got["metrics"]["roc_auc"]
    assert got == _same(want)


def test_segments_and_a_baseline_with_the_challenger(tmp_path: Path) -> None:
    folder, rows = _files(tmp_path)
    baseline = {"roc_auc": 0.8, "roc_auc_variance": 1e-4}
    (tmp_path / "baseline.json").write_text(json.dumps(baseline))
    done = evalserve(
        "evaluate", str(folder), "--challenger-column", "score_b", "--segment-column",
        "country", "--baseline", str(tmp_path / "baseline.json"),
    )  # fmt: skip
    got = _answer(done)
    want = evaluate(
        "binary", rows["label"], rows["score"], sample_weight=rows["weight"],
        challenger={"scores": rows["score_b"]}, segments=rows["country"], baseline=baseline,
    )  # fmt: skip
    assert set(got["segments"]) == {"de", "fr", "it"}
    assert got["segments"]["fr"]["comparison"]["roc_auc"]["status"] == "ok"
    got.pop("monitor_state", None)
    assert got == {key: value for key, value in _same(want).items() if key != "monitor_state"}


def test_csv_on_stdin_with_the_challenger() -> None:
    text = "label,score,score_b\n" + "".join(
        f"{i % 2},{(i * 7 % 10) / 10},{(i * 3 % 10) / 10 + i % 2 * 0.05}\n" for i in range(60)
    )
    got = _answer(evalserve("evaluate", "-", "--challenger-column", "score_b", stdin=text))
    rows = np.array([line.split(",") for line in text.splitlines()[1:]], dtype=np.float64)
    want = evaluate("binary", rows[:, 0], rows[:, 1], challenger={"scores": rows[:, 2]})
    assert got["comparison"] == _same(want)["comparison"]


def test_label_names_with_positive_label_and_the_challenger() -> None:
    """--positive-label reads a label column of names on the challenger's path too."""
    named = "label,score,score_b\n" + "".join(
        f"{'yes' if i % 2 else 'no'},{(i * 7 % 10) / 10},{(i * 3 % 10) / 10}\n" for i in range(40)
    )
    got = _answer(
        evalserve("evaluate", "-", "--positive-label", "yes", "--challenger-column", "score_b",
                  stdin=named)
    )  # fmt: skip
    rows = [line.split(",") for line in named.splitlines()[1:]]
    labels = np.array([row[0] == "yes" for row in rows])
    scores = np.array([[float(row[1]), float(row[2])] for row in rows])
    want = evaluate("binary", labels, scores[:, 0], challenger={"scores": scores[:, 1]})
    assert got["comparison"] == _same(want)["comparison"]
    assert got["metrics"] == _same(want)["metrics"]


def test_a_bad_row_is_named_in_its_own_file(tmp_path: Path) -> None:
    """The second file's row 7 (not row 1207 of all rows read)."""
    folder, _ = _files(tmp_path)
    second = pq.read_table(folder / "b.parquet").to_pydict()
    second["score_b"][7] = float("nan")
    pq.write_table(pa.table(second), folder / "b.parquet")
    done = evalserve("evaluate", str(folder), "--challenger-column", "score_b")
    assert_refused(done, f"{folder / 'b.parquet'}, row 7, column score_b", "finite", "nan")


def test_the_report_shows_the_challenger(tmp_path: Path) -> None:
    folder, rows = _files(tmp_path)
    page = tmp_path / "report.html"
    done = evalserve("report", str(folder), "--challenger-column", "score_b", "-o", str(page))
    assert done.returncode == 0, done.stderr
    html = page.read_text(encoding="utf-8")
    want = evaluate(
        "binary", rows["label"], rows["score"], sample_weight=rows["weight"],
        challenger={"scores": rows["score_b"]},
    )  # fmt: skip
    test = want.comparison["roc_auc"]
    assert "The challenger against this model" in html
    row = (
        f'<th scope="row">roc_auc</th><td class="num">{test.challenger:.6g}</td>'
        f'<td class="num">{test.delta:.6g}</td>'
    )
    assert row in html
    assert "delong-paired" in html


@pytest.mark.parametrize(
    ("flags", "fragments"),
    [
        (("--engine", "dask"), ("--challenger-column", "dask engine", "--engine dask")),
        (("--task", "regression"), ("--challenger-column", "'binary'", "'regression'")),
    ],
)
def test_refusals_are_one_line(
    tmp_path: Path, flags: tuple[str, ...], fragments: tuple[str, ...]
) -> None:
    folder, _ = _files(tmp_path)
    done = evalserve("evaluate", str(folder), "--challenger-column", "score_b", *flags)
    assert_refused(done, *fragments)
