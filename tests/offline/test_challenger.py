"""``evaluate_paired`` (``--challenger-column``) in process: a bad row in a later batch of a
file is named at its own row, and files with and without the default weight column weigh the
latter's rows 1, as the accumulator's path does."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalserve.core import evaluate
from evalserve.offline import ColumnSpec, OfflineError, evaluate_paired


def _table(n: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    return {"label": labels, "score": rng.random(n) + labels * 0.3, "b": rng.random(n) + labels}


def test_a_bad_row_in_a_later_batch_is_named_in_the_file(tmp_path: Path) -> None:
    columns = _table(1000, 1)
    columns["b"][731] = np.inf
    pq.write_table(pa.table(columns), tmp_path / "rows.parquet")
    with pytest.raises(OfflineError) as caught:
        evaluate_paired([str(tmp_path / "rows.parquet")], ColumnSpec(), "b", batch_rows=100)
    assert str(caught.value) == (
        f"{tmp_path / 'rows.parquet'}, row 731, column b: expected finite numbers, but row 731 "
        "is inf"
    )


def test_a_file_without_the_weight_column_weighs_its_rows_one(tmp_path: Path) -> None:
    first, second = _table(300, 2), _table(200, 3)
    first["weight"] = np.full(300, 2.0)
    pq.write_table(pa.table(first), tmp_path / "a.parquet")
    pq.write_table(pa.table(second), tmp_path / "b.parquet")
    got = evaluate_paired([str(tmp_path)], ColumnSpec(), "b", batch_rows=64)
    want = evaluate(
        "binary",
        np.concatenate([first["label"], second["label"]]),
        np.concatenate([first["score"], second["score"]]),
        sample_weight=np.concatenate([first["weight"], np.ones(200)]),
        challenger={"scores": np.concatenate([first["b"], second["b"]])},
    )
    assert got.to_dict() == want.to_dict()
