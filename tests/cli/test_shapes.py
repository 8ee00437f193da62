"""Every task on every shape of file: an answer, or one line naming the file, the column and
what the task expects; never a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalserve.core import TASKS
from tests.cli.run import evalserve

SHAPES: dict[str, dict[str, list[Any]]] = {
    "one_score": {"label": [0, 1, 0, 1], "score": [0.1, 0.8, 0.3, 0.6]},
    "three_labels": {"label": [0, 1, 2, 1], "score": [0.1, 0.8, 0.3, 0.6]},
    "text_labels": {"label": ["a", "b", "a", "b"], "score": [0.1, 0.8, 0.3, 0.6]},
    "bool_labels": {"label": [True, False, True, False], "score": [0.1, 0.8, 0.3, 0.6]},
    "fraction_labels": {"label": [0.5, 1.0, 0.0, 1.0], "score": [0.1, 0.8, 0.3, 0.6]},
    "list_scores": {
        "label": [0, 1, 2, 1],
        "score": [[0.2, 0.3, 0.5], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4], [0.6, 0.2, 0.2]],
    },
    "ragged_scores": {
        "label": [0, 1, 2, 1],
        "score": [[0.2, 0.3, 0.5], [0.1, 0.9], [0.3, 0.3, 0.4], [0.6, 0.2, 0.2]],
    },
    "list_labels": {
        "label": [[0, 1], [1, 1], [0, 0], [1, 0]],
        "score": [[0.2, 0.3], [0.1, 0.8], [0.3, 0.3], [0.6, 0.2]],
    },
    "score_prefix": {
        "label": [0, 1, 2, 1],
        "score_a": [0.2, 0.1, 0.3, 0.6],
        "score_b": [0.3, 0.8, 0.3, 0.2],
        "score_c": [0.5, 0.1, 0.4, 0.2],
    },
    "both_prefixes": {
        "label_a": [0, 1, 0, 1],
        "label_b": [1, 1, 0, 0],
        "score_a": [0.2, 0.1, 0.3, 0.6],
        "score_b": [0.3, 0.8, 0.3, 0.2],
    },
    "text_scores": {"label": [0, 1, 0, 1], "score": ["x", "y", "z", "w"]},
    "some_detection": {"gt_boxes": [[1, 2, 3, 4]], "score": [1]},
}


def _write(tmp_path: Path, name: str, kind: str) -> Path:
    columns = SHAPES[name]
    path = tmp_path / f"{name}.{kind}"
    if kind == "parquet":
        pq.write_table(pa.table(columns), path)
        return path
    lines = [",".join(columns)]
    for row in zip(*columns.values(), strict=True):
        cells = ['"' + json.dumps(v) + '"' if isinstance(v, list) else str(v) for v in row]
        lines.append(",".join(cells))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("kind", ["csv", "parquet"])
@pytest.mark.parametrize("task", TASKS)
def test_every_task_on_every_shape(tmp_path: Path, task: str, kind: str) -> None:
    for name in SHAPES:
        path = _write(tmp_path, name, kind)
        done = evalserve("evaluate", "--task", task, str(path))
        assert "Traceback" not in done.stderr, (task, name, done.stderr)
        assert done.returncode in (0, 2), (task, name, done.stderr)
        if done.returncode == 2:
            line = done.stderr.strip()
            assert "\n" not in line and line.startswith(f"evalserve: error: {path}"), line


@pytest.mark.parametrize("kind", ["csv", "parquet"])
@pytest.mark.parametrize(
    ("task", "column", "hint"),
    [
        ("multiclass", "score", "--score-column score_"),
        ("multilabel", "label", "--label-column label_"),
    ],
)
def test_one_number_a_row_says_what_the_task_reads(
    tmp_path: Path, kind: str, task: str, column: str, hint: str
) -> None:
    path = _write(tmp_path, "three_labels", kind)
    done = evalserve("evaluate", "--task", task, str(path))
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    where = "line 2" if kind == "csv" else "row 0"
    assert done.stderr.startswith(f"evalserve: error: {path}, {where}, column {column}: ")
    assert f"task {task!r} reads" in done.stderr and hint in done.stderr
    assert "a single value" in done.stderr
