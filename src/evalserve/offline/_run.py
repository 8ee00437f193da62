"""Evaluate files through the accumulator: one batch at a time, so that memory is bounded by
the task's state and one batch, not by the files.

Errors come back as ``OfflineError`` with the file, the row (``line`` for CSV, counting the
header as line 1; ``row`` for Parquet, from 0) and the column: the command prints them and
exits with status 2.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from evalserve.core import Accumulator, EvaluationResult, InvalidInputError
from evalserve.offline._columns import ColumnError, ColumnSpec, Plan, plan
from evalserve.offline._files import (
    BATCH_ROWS,
    STDIN,
    Batch,
    FileError,
    NullValueError,
    Source,
    TextValueError,
    batches,
    column_names,
    csv_header,
    display_name,
    sources,
)
from evalserve.offline._progress import Progress

__all__ = ["OfflineError", "accumulate_files", "evaluate_files", "located"]


class OfflineError(ValueError):
    """Input the offline evaluator cannot evaluate; the message names file, row and column."""


def evaluate_files(
    paths: Sequence[str],
    spec: ColumnSpec,
    options: Mapping[str, Any] | None = None,
    *,
    progress: Progress | None = None,
    batch_rows: int = BATCH_ROWS,
    baseline: Mapping[str, Any] | None = None,
    monitor_state: bytes | None = None,
    window: str | None = None,
) -> EvaluationResult:
    """What ``evaluate`` gives on all rows of ``paths`` (files, directories, globs, ``-``);
    ``baseline``, ``monitor_state`` and ``window`` as in ``evaluate`` (task binary: the drift
    test and the AUC monitor)."""
    accumulator = accumulate_files(paths, spec, options, progress=progress, batch_rows=batch_rows)
    try:
        return accumulator.result(baseline=baseline, monitor_state=monitor_state, window=window)
    except InvalidInputError as error:
        raise OfflineError(f"{', '.join(paths)}: {error}") from None


def accumulate_files(
    paths: Sequence[str],
    spec: ColumnSpec,
    options: Mapping[str, Any] | None = None,
    *,
    progress: Progress | None = None,
    batch_rows: int = BATCH_ROWS,
) -> Accumulator:
    """The accumulator of every row of ``paths``: its ``result()`` is ``evaluate_files``'s
    answer, its ``to_bytes()`` a state to merge elsewhere."""
    try:
        found = sources(paths)
    except FileError as error:
        raise OfflineError(str(error)) from None
    if progress is not None:
        progress.files = len(found)
    accumulator: Accumulator | None = None
    first: Plan | None = None
    for source in found:
        try:
            names = _names(source)
            table_plan = None if names is None else _plan(source, spec, names)
            for batch in batches(
                source, None if table_plan is None else table_plan.columns, batch_rows=batch_rows
            ):
                if table_plan is None:
                    table_plan = _plan(source, spec, list(batch.table.schema.names))
                if first is None:
                    first = table_plan
                    accumulator = _accumulator(spec, table_plan, options)
                _same_classes(source, first, table_plan)
                assert accumulator is not None
                _update(accumulator, table_plan, batch)
                if progress is not None:
                    progress.add_rows(batch.n_rows)
        except FileError as error:
            raise OfflineError(str(error)) from None
        if progress is not None:
            progress.file_done()
    if accumulator is None:
        named = ", ".join(map(display_name, paths))
        raise OfflineError(f"{named}: no rows to evaluate (only a header?)")
    return accumulator


def _names(source: Source) -> list[str] | None:
    if source.kind == "parquet":
        return column_names(source)
    return None if source.path == STDIN else csv_header(source)


def _plan(source: Source, spec: ColumnSpec, names: list[str]) -> Plan:
    try:
        return plan(spec, names)
    except ColumnError as error:
        raise OfflineError(f"{source.name}: {error}") from None


def _accumulator(
    spec: ColumnSpec, table_plan: Plan, options: Mapping[str, Any] | None
) -> Accumulator:
    try:
        return Accumulator(spec.task, options, table_plan.classes)
    except InvalidInputError as error:
        raise OfflineError(str(error)) from None


def _same_classes(source: Source, first: Plan, table_plan: Plan) -> None:
    if table_plan.classes != first.classes or len(table_plan.score) != len(first.score):
        raise OfflineError(
            f"{source.name}: its score columns {list(table_plan.score)} differ from the first "
            f"file's {list(first.score)}; every file must have the same classes"
        )


def _update(accumulator: Accumulator, table_plan: Plan, batch: Batch) -> None:
    try:
        for name in table_plan.numeric:
            batch.check_numbers(name)
        accumulator.update(**table_plan.arguments(batch.column))
    except (NullValueError, TextValueError) as error:
        raise OfflineError(
            f"{batch.source.name}, {_where(batch, error.row)}, column {error.column}: {error}"
        ) from None
    except InvalidInputError as error:
        raise OfflineError(located(error, table_plan, batch)) from None


_IMAGE = re.compile(r"^images\[(\d+)\]\.(\w+)$")
_ROW = re.compile(r"\brow (\d+)")


def located(error: InvalidInputError, table_plan: Plan, batch: Batch) -> str:
    """The core's error with the batch's rows and fields turned into the file's rows and
    columns."""
    field, message = error.field, error.message
    image = _IMAGE.match(field)
    if image:
        where = _where(batch, int(image.group(1)))
        return f"{batch.source.name}, {where}, column {image.group(2)}: {message}"
    columns = table_plan.field_columns().get(field)
    column = _column_text(columns) if columns else field
    found = _ROW.search(message)
    if found:
        where = _where(batch, int(found.group(1)))
        message = _ROW.sub(lambda m: _where(batch, int(m.group(1))), message)
        return f"{batch.source.name}, {where}, column {column}: {message}"
    first, last = batch.first_row, batch.first_row + batch.n_rows - 1
    return (
        f"{batch.source.name}, {_where(batch, 0)} to {_where(batch, last - first)}, "
        f"column {column}: {message}"
    )


def _where(batch: Batch, row: int) -> str:
    absolute = batch.first_row + row
    if batch.source.rows_are_lines:
        return f"line {absolute + 2}"  # the header is line 1
    return f"row {absolute}"


def _column_text(columns: tuple[str, ...]) -> str:
    if len(columns) == 1:
        return columns[0]
    return f"{columns[0]} .. {columns[-1]} ({len(columns)} columns)"
