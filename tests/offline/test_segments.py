"""``evalserve evaluate --segment-column C``: CSV and Parquet (text, dictionary-encoded and
number columns), read in small batches, against ``evaluate(..., segments=...)`` on the same
rows in memory; folding; the table's order; and the errors, each one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import pytest

from evalserve.core import evaluate
from evalserve.offline import ColumnSpec, OfflineError, evaluate_files
from evalserve.offline._files import Source, batches
from evalserve.offline._table import segment_order, table

COMMAND = [sys.executable, "-m", "evalserve", "evaluate"]
N = 1009  # not a multiple of the batch size
COUNTRIES = ["DE", "FR", "US", "NL", "IT"]


def _same(got: Any, want: Any) -> None:
    assert json.dumps(got.to_dict(), sort_keys=True) == json.dumps(want.to_dict(), sort_keys=True)


def _rows(draw: int = 2) -> tuple[np.ndarray, np.ndarray, list[str]]:
    rng = np.random.default_rng(draw)
    labels = rng.integers(0, 2, N)
    scores = np.round(rng.random(N), 3)  # ties
    # Segments of different sizes, so that folding has an order to follow.
    countries = [COUNTRIES[i] for i in rng.choice(5, N, p=[0.4, 0.25, 0.2, 0.1, 0.05])]
    return labels, scores, countries


def _write(path: Path, columns: dict[str, Any]) -> Path:
    table = pa.table(columns)
    if path.suffix == ".parquet":
        pq.write_table(table, path, row_group_size=300)
    else:
        pa_csv.write_csv(table, path)
    return path


def _run(path: Path, *flags: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COMMAND, str(path), *flags], input=stdin, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip


def _one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stdout
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("evalserve: error: ")
    return lines[0]


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_segments_of_text_equal_evaluate(tmp_path: Path, suffix: str) -> None:
    labels, scores, countries = _rows()
    path = _write(tmp_path / f"rows{suffix}", {"label": labels, "score": scores, "c": countries})
    want = evaluate("binary", labels, scores, segments=countries)
    got = evaluate_files([str(path)], ColumnSpec(segment="c"), batch_rows=128)
    _same(got, want)
    assert sorted(got.segments) == sorted(COUNTRIES)
    # The command's JSON is the same answer.
    done = _run(path, "--segment-column", "c")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == json.loads(json.dumps(want.to_dict()))


def test_a_dictionary_encoded_parquet_column(tmp_path: Path) -> None:
    labels, scores, countries = _rows(3)
    encoded = pa.array(countries).dictionary_encode()
    path = _write(tmp_path / "rows.parquet", {"label": labels, "score": scores, "c": encoded})
    _same(
        evaluate_files([str(path)], ColumnSpec(segment="c"), batch_rows=100),
        evaluate("binary", labels, scores, segments=countries),
    )


def test_the_segment_column_is_read_as_codes(tmp_path: Path) -> None:
    """Text in Parquet and CSV alike reaches the accumulator as codes into a few names."""
    labels, scores, countries = _rows()
    columns = {"label": labels, "score": scores, "c": countries}
    for suffix in (".parquet", ".csv"):
        path = _write(tmp_path / f"rows{suffix}", columns)
        kind = "parquet" if suffix == ".parquet" else "csv"
        batch = next(batches(Source(str(path), kind), ["c"], batch_rows=200, dictionary=["c"]))
        assert pa.types.is_dictionary(batch.table.column("c").type)
        codes, names = batch.segments("c")
        assert codes.dtype == np.intp and sorted(names) == sorted(set(countries[: batch.n_rows]))
        assert [names[code] for code in codes] == countries[: batch.n_rows]


def test_numbers_name_segments_by_their_text(tmp_path: Path) -> None:
    labels, scores, _ = _rows()
    tiers = np.arange(N) % 3 + 1
    path = _write(tmp_path / "rows.parquet", {"label": labels, "score": scores, "tier": tiers})
    got = evaluate_files([str(path)], ColumnSpec(segment="tier"), batch_rows=128)
    _same(got, evaluate("binary", labels, scores, segments=[str(t) for t in tiers]))
    # CSV keeps the text as written: 007 is segment "007".
    text = "label,score,tier\n0,0.1,007\n1,0.9,007\n0,0.3,8\n1,0.6,8\n"
    done = _run(Path("-"), "--segment-column", "tier", stdin=text)
    assert done.returncode == 0, done.stderr
    assert sorted(json.loads(done.stdout)["segments"]) == ["007", "8"]


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
@pytest.mark.parametrize("cap", [2, 4, 5])
def test_folding_equals_evaluate(tmp_path: Path, suffix: str, cap: int) -> None:
    labels, scores, countries = _rows()
    path = _write(tmp_path / f"rows{suffix}", {"label": labels, "score": scores, "c": countries})
    want = evaluate(
        "binary", labels, scores, segments=countries, max_segments=cap, fold_segments=True
    )
    got = evaluate_files(
        [str(path)], ColumnSpec(segment="c"), batch_rows=128, max_segments=cap, fold_segments=True
    )
    _same(got, want)
    assert ("__other__" in got.segments) == (cap < len(COUNTRIES))


def test_folding_is_refused_on_stdin() -> None:
    done = _run(Path("-"), "--segment-column", "c", "--fold-segments", stdin="label,score,c\n")
    line = _one_error_line(done)
    assert "--fold-segments" in line and "standard input" in line


def test_the_table_puts_the_worst_segment_first(tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    labels = rng.integers(0, 2, 3000)
    noise = {"good": 0.3, "bad": 2.0, "middling": 0.8}
    names = list(noise) * 1000
    scores = labels + rng.normal(0, [noise[name] for name in names])
    names[:4] = ["one-class"] * 4  # roc_auc undefined there: last
    labels[:4] = 1
    path = _write(tmp_path / "rows.parquet", {"label": labels, "score": scores, "g": names})
    done = _run(path, "--segment-column", "g", "--format", "table")
    assert done.returncode == 0, done.stderr
    headers = [line for line in done.stdout.splitlines() if line.startswith("segment ")]
    assert [line.split("'")[1] for line in headers] == ["bad", "middling", "good", "one-class"]
    assert headers[-1].endswith("samples, roc_auc undefined")
    assert headers[0].startswith("segment 'bad': 999 samples, roc_auc 0.")
    assert done.stdout.splitlines()[0] == "task binary, 3,000 samples"
    assert "4 segments, the worst roc_auc first" in done.stdout


def test_lower_is_better_puts_the_highest_error_first() -> None:
    rng = np.random.default_rng(4)
    target = rng.normal(size=600)
    groups = ["a", "b", "c"] * 200
    spread = {"a": 1.0, "b": 3.0, "c": 0.1}
    predicted = target + rng.normal(0, [spread[g] for g in groups])
    result = evaluate("regression", target, y_pred=predicted, segments=groups)
    assert segment_order(result) == ["b", "a", "c"]  # rmse: lower is better
    text = table(result)
    assert text.index("segment 'b'") < text.index("segment 'a'") < text.index("segment 'c'")


def test_a_missing_segment_column_is_one_line(tmp_path: Path) -> None:
    labels, scores, countries = _rows()
    path = _write(tmp_path / "rows.csv", {"label": labels, "score": scores, "c": countries})
    line = _one_error_line(_run(path, "--segment-column", "country"))
    assert "no segment column 'country'" in line and "'c'" in line
    with pytest.raises(OfflineError, match="no segment column"):
        evaluate_files([str(path)], ColumnSpec(segment="country"))


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_too_many_segments_is_one_line(tmp_path: Path, suffix: str) -> None:
    labels, scores, countries = _rows()
    path = _write(tmp_path / f"rows{suffix}", {"label": labels, "score": scores, "c": countries})
    line = _one_error_line(_run(path, "--segment-column", "c", "--max-segments", "3"))
    assert "column c (segments)" in line and "at most 3 distinct segments" in line
    done = _run(path, "--segment-column", "c", "--max-segments", "0")
    assert done.returncode == 2 and "--max-segments" in done.stderr


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_a_name_of_200k_characters_is_one_short_line(tmp_path: Path, suffix: str) -> None:
    labels, scores, countries = _rows()
    countries[700] = "x" * 200_000
    path = _write(tmp_path / f"rows{suffix}", {"label": labels, "score": scores, "c": countries})
    line = _one_error_line(_run(path, "--segment-column", "c"))
    assert len(line) < 300
    where = "line 702" if suffix == ".csv" else "row 700"
    assert f"{where}, column c (segments)" in line
    assert "has 200000 characters, over 128" in line


def test_an_empty_or_reserved_name_is_named_where_it_is() -> None:
    line = _one_error_line(
        _run(Path("-"), "--segment-column", "c", stdin="label,score,c\n0,0.1,a\n1,0.2,\n")
    )
    assert "line 3, column c (segments)" in line and "is empty" in line
    line = _one_error_line(
        _run(Path("-"), "--segment-column", "c", stdin="label,score,c\n0,0.1,__other__\n")
    )
    assert "'__other__', which is reserved" in line


def test_segments_and_the_monitor_file_are_refused_together(tmp_path: Path) -> None:
    labels, scores, countries = _rows()
    path = _write(tmp_path / "rows.csv", {"label": labels, "score": scores, "c": countries})
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({"roc_auc": 0.8, "roc_auc_variance": 0.0}))
    flags = ("--baseline", str(baseline), "--monitor-state", str(tmp_path / "state"))
    done = _run(path, "--segment-column", "c", *flags)
    assert done.returncode == 2 and "--monitor-state keeps the overall AUC monitor" in done.stderr
    assert not (tmp_path / "state").exists()
    # With a baseline alone, every segment has its drift test, as evaluate gives it.
    done = _run(path, "--segment-column", "c", "--baseline", str(baseline))
    assert done.returncode == 0, done.stderr
    want = evaluate(
        "binary", labels, scores, segments=countries, baseline=json.loads(baseline.read_text())
    )
    assert json.loads(done.stdout) == json.loads(json.dumps(want.to_dict()))
    done = _run(path, "--fold-segments")
    assert done.returncode == 2 and "give --segment-column too" in done.stderr


def test_folded_segments_carry_their_monitor_states(tmp_path: Path) -> None:
    labels, scores, countries = _rows()
    path = _write(tmp_path / "rows.parquet", {"label": labels, "score": scores, "c": countries})
    baseline = {"roc_auc": 0.8, "roc_auc_variance": 0.0}
    first = evaluate(
        "binary", labels, scores, segments=countries, max_segments=3, fold_segments=True,
        baseline=baseline,
    )  # fmt: skip
    states = {name: each.monitor_state or b"" for name, each in first.segments.items()}
    assert "__other__" in states
    want = evaluate(
        "binary", labels, scores, segments=countries, max_segments=3, fold_segments=True,
        baseline=baseline, segment_monitor_states=states,
    )  # fmt: skip
    got = evaluate_files(
        [str(path)], ColumnSpec(segment="c"), batch_rows=128, max_segments=3, fold_segments=True,
        baseline=baseline, segment_monitor_states=states,
    )  # fmt: skip
    _same(got, want)
