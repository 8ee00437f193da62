"""The offline evaluator: a CSV file (or stdin) in, the REST response JSON out."""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Iterable
from typing import Any, TextIO

import numpy as np

from evalserve.core import EvaluationResult, InvalidInputError, evaluate

__all__ = ["CsvError", "evaluate_csv", "read_binary_csv"]

BINARY_COLUMNS = ("label", "score")


class CsvError(ValueError):
    """A CSV file that cannot be read; the message names the line and column."""


def read_binary_csv(rows: Iterable[str]) -> dict[str, np.ndarray[Any, Any]]:
    """Columns ``label``, ``score`` and optional ``weight`` (any order, header required)."""
    reader = csv.reader(rows)
    header = next(reader, None)
    if header is None:
        raise CsvError("the file is empty; expected a header line with label,score[,weight]")
    names = [name.strip().lower() for name in header]
    missing = [name for name in BINARY_COLUMNS if name not in names]
    if missing:
        raise CsvError(
            f"header {header!r} lacks column(s) {missing}; expected label,score[,weight]"
        )
    wanted = [*BINARY_COLUMNS, *(["weight"] if "weight" in names else [])]
    positions = [names.index(name) for name in wanted]
    columns: list[list[float]] = [[] for _ in wanted]
    for line_number, row in enumerate(reader, start=2):
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) != len(names):
            raise CsvError(f"line {line_number}: expected {len(names)} fields, got {len(row)}")
        for column, position, name in zip(columns, positions, wanted, strict=True):
            cell = row[position].strip()
            try:
                column.append(float(cell))
            except ValueError:
                raise CsvError(
                    f"line {line_number}, column {name}: expected a number, got {cell!r}"
                ) from None
    return {
        name: np.asarray(column, dtype=np.float64)
        for name, column in zip(wanted, columns, strict=True)
    }


def evaluate_csv(
    stream: TextIO, *, task: str, options: dict[str, Any] | None = None
) -> EvaluationResult:
    if task != "binary":
        raise CsvError(f"the offline evaluator reads task 'binary' only, not {task!r}")
    data = read_binary_csv(stream)
    return evaluate(
        task, data["label"], data["score"], sample_weight=data.get("weight"), options=options
    )


def run(path: str, *, task: str, options: dict[str, Any] | None, out: TextIO) -> int:
    """Evaluate ``path`` (``-`` for stdin) and print the JSON; returns the exit status."""
    try:
        if path == "-":
            result = evaluate_csv(sys.stdin, task=task, options=options)
        else:
            with open(path, encoding="utf-8", newline="") as handle:
                result = evaluate_csv(handle, task=task, options=options)
    except (CsvError, InvalidInputError, OSError) as exc:
        print(f"evalserve: error: {exc}", file=sys.stderr)
        return 2
    buffer = io.StringIO()
    json.dump(result.to_dict(), buffer, indent=2, allow_nan=False)
    try:
        print(buffer.getvalue(), file=out)
    except BrokenPipeError:  # the reader left early (`| head`): not our error
        return 0
    return 0
