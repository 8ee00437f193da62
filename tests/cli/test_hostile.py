"""The hostile command line: every bad file, flag and value is refused with exit status 2 and
exactly one line on stderr that names the file, line or row and column (or the flag) and says
what was wrong; never a traceback, never a partial answer on stdout.

``CASES`` is the one table: each case is the command's arguments (``{dir}`` is a directory of
bad files written by ``_corpus``), the text on stdin, and the fragments the line must say.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.cli.run import assert_refused, evalserve


@dataclass(frozen=True)
class Case:
    id: str
    args: tuple[str, ...]
    says: tuple[str, ...]
    stdin: str | None = None


GOOD = "{dir}/good.csv"

CASES = [
    # files
    Case("missing-file", ("evaluate", "{dir}/nope.csv"), ("{dir}/nope.csv", "No such file")),
    Case("directory-of-nothing", ("evaluate", "{dir}/empty-dir"),
         ("{dir}/empty-dir", "no CSV or Parquet files")),
    Case("glob-of-nothing", ("evaluate", "{dir}/*.nothing"), ("no file matches",)),
    Case("empty-file", ("evaluate", "{dir}/empty.csv"), ("{dir}/empty.csv", "empty")),
    Case("header-only", ("evaluate", "{dir}/header.csv"), ("{dir}/header.csv", "no rows")),
    Case("binary-garbage-csv", ("evaluate", "{dir}/garbage.csv"), ("{dir}/garbage.csv",)),
    Case("binary-garbage-parquet", ("evaluate", "{dir}/garbage.parquet"),
         ("{dir}/garbage.parquet", "not a readable Parquet file")),
    Case("wrong-column", ("evaluate", GOOD, "--label-column", "nope"),
         ("{dir}/good.csv", "no label column 'nope'", "'label', 'score'")),
    Case("text-in-row", ("evaluate", "{dir}/text.csv"),
         ("{dir}/text.csv, line 4, column score", "expected a number, got 'high'")),
    Case("text-in-parquet-row", ("evaluate", "{dir}/text.parquet"),
         ("{dir}/text.parquet, row 2, column score", "expected a number, got 'high'")),
    Case("nan-score", ("evaluate", "{dir}/nan.csv"),
         ("{dir}/nan.csv, line 3, column score", "missing")),
    Case("inf-score", ("evaluate", "{dir}/inf.csv"),
         ("{dir}/inf.csv, line 3, column score", "inf")),
    Case("extra-field", ("evaluate", "{dir}/fields.csv"),
         ("{dir}/fields.csv, line 3", "expected 2 fields, got 3")),
    Case("label-not-binary", ("evaluate", "{dir}/label.csv"),
         ("{dir}/label.csv, line 3, column label", "expected labels 0 or 1")),
    Case("negative-weight", ("evaluate", "{dir}/weights.csv"),
         ("{dir}/weights.csv, line 3, column weight", "-1")),
    Case("stdin-text", ("evaluate", "-"), ("<stdin>, line 3, column score",),
         stdin="label,score\n0,0.1\n1,x\n"),
    Case("stdin-empty", ("evaluate", "-"), ("<stdin>", "empty"), stdin=""),
    Case("one-number-multiclass", ("evaluate", "--task", "multiclass", GOOD),
         ("{dir}/good.csv, line 2, column score", "one list per row")),
    Case("detection-columns", ("evaluate", "--task", "detection", GOOD),
         ("{dir}/good.csv", "no detection column 'gt_boxes'")),
    # flags and values
    Case("bad-task", ("evaluate", "--task", "ranking", GOOD), ("--task", "'ranking'")),
    Case("options-not-json", ("evaluate", GOOD, "--options", "{threshold: 1}"),
         ("--options", "not valid JSON")),
    Case("options-not-object", ("evaluate", GOOD, "--options", "[1]"),
         ("--options", "JSON object")),
    Case("unknown-option", ("evaluate", GOOD, "--options", '{"treshold": 0.3}'),
         ("treshold",)),
    Case("option-out-of-range", ("evaluate", GOOD, "--max-fpr", "2"), ("options.max_fpr",)),
    Case("option-not-a-number", ("evaluate", GOOD, "--threshold", "high"),
         ("--threshold", "'high'")),
    Case("unknown-flag", ("evaluate", GOOD, "--treshold", "0.3"), ("--treshold",)),
    Case("no-path", ("evaluate",), ("PATH",)),
    Case("no-command", (), ("command",)),
    Case("bad-delimiter", ("evaluate", GOOD, "--delimiter", "ab"), ("--delimiter", "'ab'")),
    Case("missing-baseline", ("evaluate", GOOD, "--baseline", "{dir}/none.json"),
         ("--baseline {dir}/none.json",)),
    Case("bad-baseline-rows", ("evaluate", GOOD, "--baseline", "{dir}/text.csv"),
         ("--baseline {dir}/text.csv, line 4, column score",)),
    Case("baseline-for-regression", ("evaluate", "--task", "regression", GOOD, "--baseline",
                                     "{dir}/baseline.json"), ("--baseline", "'regression'")),
    Case("monitor-without-baseline", ("evaluate", GOOD, "--monitor-state", "{dir}/m.state"),
         ("--monitor-state needs --baseline",)),
    Case("window-without-monitor", ("evaluate", GOOD, "--window", "d1"), ("--window",)),
    Case("zero-max-segments", ("evaluate", GOOD, "--max-segments", "0"), ("--max-segments",)),
    Case("missing-segment-column", ("evaluate", GOOD, "--segment-column", "country"),
         ("{dir}/good.csv", "no segment column 'country'")),
    Case("dask-method-without-dask", ("evaluate", GOOD, "--dask-method", "ranges"),
         ("--engine dask",)),
    # --challenger-column
    Case("missing-challenger-column", ("evaluate", GOOD, "--challenger-column", "score_b"),
         ("{dir}/good.csv", "no challenger column 'score_b'", "'label', 'score'")),
    Case("text-in-challenger", ("evaluate", "{dir}/challenger-text.csv", "--challenger-column",
                                "score_b"),
         ("{dir}/challenger-text.csv, line 3, column score_b", "expected a number, got 'x'")),
    Case("nan-in-challenger-csv", ("evaluate", "{dir}/challenger-nan.csv", "--challenger-column",
                                   "score_b"),
         ("{dir}/challenger-nan.csv, line 4, column score_b", "missing")),
    Case("nan-in-challenger-parquet", ("evaluate", "{dir}/challenger-nan.parquet",
                                       "--challenger-column", "score_b"),
         ("{dir}/challenger-nan.parquet, row 1, column score_b", "finite", "nan")),
    Case("inf-in-challenger", ("evaluate", "{dir}/challenger-inf.csv", "--challenger-column",
                               "score_b"),
         ("{dir}/challenger-inf.csv, line 2, column score_b", "inf")),
    Case("challenger-on-dask", ("evaluate", "{dir}/challenger-text.csv", "--challenger-column",
                                "score_b", "--engine", "dask"),
         ("--challenger-column", "--engine dask")),
    Case("challenger-for-multiclass", ("evaluate", "--task", "multiclass", GOOD,
                                       "--challenger-column", "score"),
         ("--challenger-column", "'multiclass'")),
    Case("bad-engine", ("evaluate", GOOD, "--engine", "spark"), ("--engine", "'spark'")),
    Case("bad-format", ("evaluate", GOOD, "--format", "xml"), ("--format", "'xml'")),
    Case("report-into-a-directory", ("report", GOOD, "-o", "{dir}"), ("is a directory",)),
    Case("report-over-a-file", ("report", GOOD, "-o", "{dir}/good.csv"),
         ("{dir}/good.csv exists", "--force")),
    Case("bad-port", ("serve", "--grpc-port", "grpc"), ("--grpc-port", "'grpc'")),
    Case("port-out-of-range", ("serve", "--rest-port", "65536"), ("rest_port", "65536")),
]  # fmt: skip


def _corpus(root: Path) -> None:
    (root / "empty-dir").mkdir()
    (root / "good.csv").write_text("label,score\n0,0.1\n1,0.8\n0,0.3\n1,0.6\n")
    (root / "empty.csv").write_text("")
    (root / "header.csv").write_text("label,score\n")
    (root / "garbage.csv").write_bytes(np.random.default_rng(0).bytes(4096))
    (root / "garbage.parquet").write_bytes(b"PAR1" + np.random.default_rng(1).bytes(500))
    (root / "text.csv").write_text("label,score\n0,0.1\n1,0.8\n0,high\n")
    pq.write_table(pa.table({"label": [0, 1, 0], "score": ["0.1", "0.8", "high"]}),
                   root / "text.parquet")  # fmt: skip
    (root / "nan.csv").write_text("label,score\n0,0.1\n1,NaN\n")
    (root / "inf.csv").write_text("label,score\n0,0.1\n1,inf\n")
    (root / "fields.csv").write_text("label,score\n0,0.1\n1,0.8,3\n")
    (root / "label.csv").write_text("label,score\n0,0.1\n2,0.8\n")
    (root / "weights.csv").write_text("label,score,weight\n0,0.1,1\n1,0.8,-1\n")
    (root / "challenger-text.csv").write_text("label,score,score_b\n0,0.1,0.2\n1,0.8,x\n")
    (root / "challenger-nan.csv").write_text(
        "label,score,score_b\n0,0.1,0.2\n1,0.8,0.7\n1,0.6,NaN\n"
    )
    (root / "challenger-inf.csv").write_text("label,score,score_b\n0,0.1,-inf\n1,0.8,0.7\n")
    pq.write_table(pa.table({"label": [0, 1, 1], "score": [0.1, 0.8, 0.6],
                             "score_b": [0.2, float("nan"), 0.5]}),
                   root / "challenger-nan.parquet")  # fmt: skip
    (root / "baseline.json").write_text('{"roc_auc": 0.8, "n_positive": 50, "n_negative": 50}')


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    _corpus(root)
    return root


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_refused_in_one_line(corpus: Path, case: Case) -> None:
    args = [arg.replace("{dir}", str(corpus)) for arg in case.args]
    done = evalserve(*args, stdin=case.stdin, cwd=corpus, timeout=60)
    assert_refused(done, *(fragment.replace("{dir}", str(corpus)) for fragment in case.says))
