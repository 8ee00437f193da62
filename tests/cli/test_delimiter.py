"""``--delimiter``: a CSV file split at ';', '|' or a tab reads as the comma file does (files,
stdin, the dask engine); a file read as one column because of its delimiter says which flag
reads it; ``.tsv`` files are split at tabs by default."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalserve.core import evaluate
from tests.cli.run import assert_refused, evalserve

LABELS = [0, 1, 0, 1, 1, 0, 1, 0]
SCORES = [0.1, 0.8, 0.35, 0.4, 0.9, 0.2, 0.65, 0.7]


def _text(delimiter: str) -> str:
    rows = [f"{label}{delimiter}{score}" for label, score in zip(LABELS, SCORES, strict=True)]
    return "\n".join([f"label{delimiter}score", *rows]) + "\n"


def _auc(stdout: str) -> float:
    return float(json.loads(stdout)["metrics"]["roc_auc"])


WANT = evaluate("binary", LABELS, SCORES).metrics["roc_auc"]


@pytest.mark.parametrize(("delimiter", "flag"), [(";", ";"), ("|", "|"), ("\t", "\\t")])
def test_a_delimited_file_reads_with_the_flag(tmp_path: Path, delimiter: str, flag: str) -> None:
    path = tmp_path / "rows.csv"
    path.write_text(_text(delimiter))
    done = evalserve("evaluate", str(path), "--delimiter", flag)
    assert done.returncode == 0, done.stderr
    assert _auc(done.stdout) == WANT
    piped = evalserve("evaluate", "-", "--delimiter", flag, stdin=_text(delimiter))
    assert piped.returncode == 0, piped.stderr
    assert _auc(piped.stdout) == WANT


@pytest.mark.parametrize(("delimiter", "shown"), [(";", "';'"), ("\t", "'\\t'")])
def test_one_column_suggests_the_flag(tmp_path: Path, delimiter: str, shown: str) -> None:
    path = tmp_path / "rows.csv"
    path.write_text(_text(delimiter))
    assert_refused(
        evalserve("evaluate", str(path)),
        f"{path}: no label column 'label'",
        f"give --delimiter {shown}",
    )


def test_a_tsv_file_is_split_at_tabs(tmp_path: Path) -> None:
    path = tmp_path / "rows.tsv"
    path.write_text(_text("\t"))
    done = evalserve("evaluate", str(path))
    assert done.returncode == 0, done.stderr
    assert _auc(done.stdout) == WANT


@pytest.mark.parametrize("value", [";;", "", "\n", '"'])
def test_a_bad_delimiter_is_one_line(tmp_path: Path, value: str) -> None:
    path = tmp_path / "rows.csv"
    path.write_text(_text(","))
    assert_refused(evalserve("evaluate", str(path), "--delimiter", value), "--delimiter")


def test_the_dask_engine_takes_the_delimiter(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    path = tmp_path / "rows.csv"
    path.write_text(_text(";"))
    done = evalserve("evaluate", str(path), "--delimiter", ";", "--engine", "dask")
    assert done.returncode == 0, done.stderr
    assert _auc(done.stdout) == WANT
