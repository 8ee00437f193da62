"""The dask engine's flags: ``--dask-method ranges`` answers what the local engine answers
(task binary), refuses what the ranges path cannot take in one line, and is refused without
``--engine dask``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.cli.run import assert_refused, evalserve

pytest.importorskip("distributed")


def _file(tmp_path: Path) -> Path:
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, 5000)
    scores = np.round(rng.random(5000) * 0.5 + labels * 0.3, 3)
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"label": labels, "score": scores}), path)
    return path


def test_ranges_answers_as_the_local_engine(tmp_path: Path) -> None:
    path = _file(tmp_path)
    local = evalserve("evaluate", str(path))
    ranges = evalserve("evaluate", str(path), "--engine", "dask", "--dask-method", "ranges")
    assert local.returncode == 0 and ranges.returncode == 0, ranges.stderr
    want, got = json.loads(local.stdout)["metrics"], json.loads(ranges.stdout)["metrics"]
    assert got["roc_auc"] == pytest.approx(want["roc_auc"], abs=1e-12)
    assert got["average_precision"] == pytest.approx(want["average_precision"], abs=1e-12)


def test_ranges_refuses_a_segment_column_in_one_line(tmp_path: Path) -> None:
    path = _file(tmp_path)
    pq.write_table(
        pq.read_table(path).append_column("country", pa.array(["de", "fr"] * 2500)), path
    )
    done = evalserve("evaluate", str(path), "--engine", "dask", "--dask-method", "ranges",
                     "--segment-column", "country")  # fmt: skip
    assert_refused(done, "ranges", "segments")


def test_the_method_needs_the_dask_engine(tmp_path: Path) -> None:
    assert_refused(
        evalserve("evaluate", str(_file(tmp_path)), "--dask-method", "ranges"),
        "--dask-method", "--engine dask",
    )  # fmt: skip
