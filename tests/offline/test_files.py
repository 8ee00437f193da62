"""The offline evaluator on real files: CSV and Parquet, files, directories and globs, every
task, read in small batches, against ``evaluate`` on the same rows in memory."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import pytest

from evalserve.core import evaluate
from evalserve.offline import ColumnSpec, OfflineError, evaluate_files
from tests.offline.images import image_columns, random_images

RNG = np.random.default_rng(11)
N = 503  # not a multiple of the batch size


def _same(got: Any, want: Any) -> None:
    assert json.dumps(got.to_dict(), sort_keys=True) == json.dumps(want.to_dict(), sort_keys=True)


def _write(table: pa.Table, path: Path) -> None:
    if path.suffix == ".parquet":
        pq.write_table(table, path, row_group_size=97)
    else:
        pa_csv.write_csv(table, path)


def _binary() -> tuple[pa.Table, Any]:
    labels = RNG.integers(0, 2, N)
    scores = np.round(RNG.random(N), 3)  # ties
    weights = RNG.integers(0, 4, N).astype(float)
    table = pa.table({"id": np.arange(N), "score": scores, "label": labels, "weight": weights})
    return table, evaluate("binary", labels, scores, sample_weight=weights)


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_binary_with_default_columns_and_weights(tmp_path: Path, suffix: str) -> None:
    table, want = _binary()
    path = tmp_path / f"rows{suffix}"
    _write(table, path)
    _same(evaluate_files([str(path)], ColumnSpec(), batch_rows=64), want)


def test_a_directory_and_a_glob_read_every_file_in_name_order(tmp_path: Path) -> None:
    table, want = _binary()
    parts = tmp_path / "day=2026-11-23"
    parts.mkdir()
    for index, start in enumerate(range(0, N, 150)):
        pq.write_table(table.slice(start, 150), parts / f"part-{index:03}.parquet")
    (parts / "_SUCCESS").write_text("")  # not a data file: skipped
    _same(evaluate_files([str(tmp_path)], ColumnSpec(), batch_rows=50), want)
    _same(evaluate_files([str(parts / "part-*.parquet")], ColumnSpec()), want)


def test_compressed_csv(tmp_path: Path) -> None:
    table, want = _binary()
    plain = tmp_path / "rows.csv"
    pa_csv.write_csv(table, plain)
    packed = tmp_path / "rows.csv.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    _same(evaluate_files([str(packed)], ColumnSpec()), want)


def test_multiclass_by_prefix_with_class_names_as_labels(tmp_path: Path) -> None:
    names = ["cat", "dog", "owl"]
    scores = RNG.dirichlet(np.ones(3), N)
    labels = RNG.integers(0, 3, N)
    columns = {f"p_{name}": scores[:, i] for i, name in enumerate(names)}
    table = pa.table({"label": [names[i] for i in labels], **columns})
    _write(table, tmp_path / "mc.csv")
    spec = ColumnSpec(task="multiclass", score=("p_",))
    got = evaluate_files([str(tmp_path / "mc.csv")], spec, {"top_k": [2]}, batch_rows=100)
    want = evaluate("multiclass", labels, scores, classes=names, options={"top_k": [2]})
    _same(got, want)


def test_multiclass_from_a_list_column(tmp_path: Path) -> None:
    scores = RNG.dirichlet(np.ones(4), N)
    labels = RNG.integers(0, 4, N)
    table = pa.table({"label": labels, "score": pa.array(list(scores), pa.list_(pa.float64()))})
    pq.write_table(table, tmp_path / "mc.parquet", row_group_size=100)
    got = evaluate_files([str(tmp_path / "mc.parquet")], ColumnSpec(task="multiclass"))
    _same(got, evaluate("multiclass", labels, scores))


def test_multilabel_by_the_default_prefixes(tmp_path: Path) -> None:
    labels = RNG.integers(0, 2, (N, 3))
    scores = RNG.random((N, 3))
    columns: dict[str, Any] = {f"label_{k}": labels[:, i] for i, k in enumerate("abc")}
    columns |= {f"score_{k}": scores[:, i] for i, k in enumerate("abc")}
    _write(pa.table(columns), tmp_path / "ml.parquet")
    got = evaluate_files([str(tmp_path / "ml.parquet")], ColumnSpec(task="multilabel"))
    _same(got, evaluate("multilabel", labels, scores, classes=["a", "b", "c"]))


def test_regression_takes_the_prediction_column(tmp_path: Path) -> None:
    truth = RNG.normal(size=N)
    predicted = truth + RNG.normal(scale=0.3, size=N)
    _write(pa.table({"label": truth, "prediction": predicted}), tmp_path / "r.csv")
    got = evaluate_files([str(tmp_path / "r.csv")], ColumnSpec(task="regression"), {"n_params": 2})
    _same(got, evaluate("regression", truth, y_pred=predicted, options={"n_params": 2}))


def test_detection_one_image_per_row_in_parquet_and_csv(tmp_path: Path) -> None:
    targets, predictions = random_images(RNG, 40)
    columns = image_columns(targets, predictions)
    want = evaluate("detection", targets, predictions)
    pq.write_table(pa.table(columns), tmp_path / "det.parquet", row_group_size=9)
    spec = ColumnSpec(task="detection")
    _same(evaluate_files([str(tmp_path / "det.parquet")], spec, batch_rows=9), want)
    as_json = {name: [json.dumps(cell) for cell in cells] for name, cells in columns.items()}
    pa_csv.write_csv(pa.table(as_json), tmp_path / "det.csv")
    _same(evaluate_files([str(tmp_path / "det.csv")], spec), want)


def test_parquet_errors_name_file_row_and_column(tmp_path: Path) -> None:
    scores = RNG.random(300)
    scores[257] = np.nan
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"label": RNG.integers(0, 2, 300), "score": scores}), path)
    with pytest.raises(OfflineError, match=r"bad\.parquet, row 257, column score: .*finite"):
        evaluate_files([str(path)], ColumnSpec(), batch_rows=100)


def test_unknown_class_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "mc.csv"
    path.write_text("label,score_a,score_b\na,0.2,0.8\nb,0.6,0.4\nz,0.5,0.5\n")
    with pytest.raises(OfflineError, match=r"mc\.csv, line 4, column label: .*'z'"):
        evaluate_files([str(path)], ColumnSpec(task="multiclass"))


def test_a_missing_column_lists_the_columns(tmp_path: Path) -> None:
    path = tmp_path / "x.parquet"
    pq.write_table(pa.table({"y": [1, 0], "p": [0.1, 0.2]}), path)
    with pytest.raises(
        OfflineError, match=r"x\.parquet: no label column 'label'; the table has columns 'y', 'p'"
    ):
        evaluate_files([str(path)], ColumnSpec())


def test_files_of_different_classes_are_refused(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("label,score_a,score_b\n0,0.2,0.8\n")
    (tmp_path / "b.csv").write_text("label,score_a,score_c\n0,0.2,0.8\n")
    with pytest.raises(OfflineError, match=r"b\.csv: its score columns"):
        evaluate_files([str(tmp_path)], ColumnSpec(task="multiclass"))


def test_nothing_to_read(tmp_path: Path) -> None:
    with pytest.raises(OfflineError, match="no file matches"):
        evaluate_files([str(tmp_path / "*.parquet")], ColumnSpec())
    (tmp_path / "empty.csv").write_text("label,score\n")
    with pytest.raises(OfflineError, match="no rows"):
        evaluate_files([str(tmp_path / "empty.csv")], ColumnSpec())


class _Stdin:
    def __init__(self, data: bytes) -> None:
        self.buffer = io.BytesIO(data)


def _csv_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pa_csv.write_csv(table, sink)
    return bytes(sink.getvalue().to_pybytes())


@pytest.mark.parametrize("block", [7, 64, 1000, 1 << 20])
def test_stdin_in_blocks_cut_at_line_ends(monkeypatch: pytest.MonkeyPatch, block: int) -> None:
    from evalserve.offline import _files

    table, want = _binary()
    monkeypatch.setattr(_files, "CSV_BLOCK_BYTES", block)
    monkeypatch.setattr("sys.stdin", _Stdin(_csv_bytes(table).rstrip(b"\n")))  # no last newline
    _same(evaluate_files(["-"], ColumnSpec()), want)


def test_stdin_errors_count_lines_across_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    from evalserve.offline import _files

    rows = b"".join(b"%d,0.%d\n" % (i % 2, i) for i in range(100))
    data = b"label,score\n" + rows + b"1,0.5,7\n"  # line 102 has three fields
    monkeypatch.setattr(_files, "CSV_BLOCK_BYTES", 50)
    monkeypatch.setattr("sys.stdin", _Stdin(data))
    with pytest.raises(OfflineError, match=r"<stdin>, line 102: expected 2 fields, got 3"):
        evaluate_files(["-"], ColumnSpec())
    monkeypatch.setattr("sys.stdin", _Stdin(b"label,score\n"))
    with pytest.raises(OfflineError, match=r"<stdin>: no rows to evaluate"):
        evaluate_files(["-"], ColumnSpec())


class _Pool:
    """Stands in for pyarrow's memory pool: counts the times its freed memory is given back."""

    def __init__(self) -> None:
        self.released = 0

    def release_unused(self) -> None:
        self.released += 1


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_each_file_read_gives_back_what_pyarrow_kept(
    tmp_path: Path, suffix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once a file is read, pyarrow's allocator gives its freed buffers back (it keeps them
    for the next read otherwise: 167 MiB of a 20M-row evaluation's peak)."""
    table, _ = _binary()
    for index in range(3):
        _write(table, tmp_path / f"part-{index}{suffix}")
    pool = _Pool()
    monkeypatch.setattr(pa, "default_memory_pool", lambda: pool)
    evaluate_files([str(tmp_path)], ColumnSpec(weight="weight"))
    assert pool.released == 3
