"""``evalserve evaluate`` messages in the file's own words, through a real subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

COMMAND = [sys.executable, "-m", "evalserve", "evaluate"]


def _run(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COMMAND, *arguments], capture_output=True, text=True, timeout=120, check=False
    )


def test_an_empty_parquet_file_has_no_rows(tmp_path: Path) -> None:
    path = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"label": pa.array([], pa.int64()),
                             "score": pa.array([], pa.float64())}), path)  # fmt: skip
    done = _run(str(path))
    assert done.returncode == 2, done
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].endswith(f"{path}: no rows to evaluate (the Parquet file has no rows)")
    assert "header" not in done.stderr


def test_a_csv_file_of_a_header_says_so(tmp_path: Path) -> None:
    path = tmp_path / "header.csv"
    path.write_text("label,score\n")
    done = _run(str(path))
    assert done.returncode == 2, done
    assert "Traceback" not in done.stderr
    assert f"{path}: no rows to evaluate (only a header)" in done.stderr, done.stderr
