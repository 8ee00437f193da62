"""Evaluate files through the accumulator: one batch at a time, so that memory is bounded by
the task's state and one batch, not by the files.

Errors come back as ``OfflineError`` with the file, the row (``line`` for CSV, counting the
header as line 1; ``row`` for Parquet, from 0) and the column: the command prints them and
exits with status 2.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from evalserve.core import Accumulator, EvaluationResult, InvalidInputError, Options
from evalserve.core._segments import DEFAULT_MAX_SEGMENTS
from evalserve.offline._columns import ColumnError, ColumnSpec, Plan, plan, text_labels
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
    delimiter_hint,
    display_name,
    sources,
)
from evalserve.offline._progress import Progress
from evalserve.offline._segments import Folding, add_counts

__all__ = [
    "OfflineError",
    "accumulate_files",
    "evaluate_files",
    "located",
    "read_rows",
    "segment_error",
]


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
    max_segments: int | None = DEFAULT_MAX_SEGMENTS,
    fold_segments: bool = False,
    segment_monitor_states: Mapping[str, bytes] | None = None,
) -> EvaluationResult:
    """What ``evaluate`` gives on all rows of ``paths`` (files, directories, globs, ``-``);
    ``baseline``, ``monitor_state`` and ``window`` as in ``evaluate`` (task binary: the drift
    test and the AUC monitor); with ``spec.segment``, ``max_segments``, ``fold_segments`` and
    ``segment_monitor_states`` as in ``evaluate`` (folding reads the segment column first, in
    a pass of its own)."""
    folding = None
    if fold_segments and spec.segment is not None and max_segments is not None:
        folding = _folding(paths, spec, max_segments, batch_rows)
    accumulator = accumulate_files(
        paths, spec, options, progress=progress, batch_rows=batch_rows,
        max_segments=max_segments, folding=folding,
    )  # fmt: skip
    try:
        result = accumulator.result(
            baseline=baseline, monitor_state=monitor_state, window=window,
            segment_monitor_states=segment_monitor_states
            if folding is None
            else folding.states(segment_monitor_states),
        )  # fmt: skip
    except InvalidInputError as error:
        raise OfflineError(f"{', '.join(paths)}: {error}") from None
    return result if folding is None else folding.named(result)


def _folding(
    paths: Sequence[str], spec: ColumnSpec, max_segments: int, batch_rows: int
) -> Folding | None:
    """The first pass of ``--fold-segments``: every row's segment, counted."""
    assert spec.segment is not None
    if STDIN in paths:
        raise OfflineError(
            "--fold-segments reads the segment column before the rows, and standard input "
            "cannot be read twice: write the rows to a file, or leave out --fold-segments"
        )
    counts: dict[str, int] = {}
    try:
        for source in sources(paths, spec.delimiter):
            names = table_names(source)
            if names is not None:
                plan_of(source, spec, names)  # a missing column: named before the pass
            column = [spec.segment]
            for batch in batches(source, column, batch_rows=batch_rows, dictionary=column):
                try:
                    add_counts(counts, batch.segments(spec.segment))
                except NullValueError as error:
                    raise OfflineError(
                        f"{source.name}, {_where(batch, error.row)}, column {error.column}: {error}"
                    ) from None
    except FileError as error:
        raise OfflineError(str(error)) from None
    return Folding.of_counts(counts, max_segments)


def accumulate_files(
    paths: Sequence[str],
    spec: ColumnSpec,
    options: Mapping[str, Any] | None = None,
    *,
    progress: Progress | None = None,
    batch_rows: int = BATCH_ROWS,
    max_segments: int | None = DEFAULT_MAX_SEGMENTS,
    folding: Folding | None = None,
) -> Accumulator:
    """The accumulator of every row of ``paths``: its ``result()`` is ``evaluate_files``'s
    answer, its ``to_bytes()`` a state to merge elsewhere. With ``spec.segment`` each batch
    carries its segments (at most ``max_segments``; ``folding`` renames the folded ones)."""
    try:
        found = sources(paths, spec.delimiter)
    except FileError as error:
        raise OfflineError(str(error)) from None
    if progress is not None:
        progress.files = len(found)
    text = text_labels(spec.task, options)
    accumulator: Accumulator | None = None
    first: Plan | None = None
    for source in found:
        try:
            names = table_names(source)
            table_plan = None if names is None else plan_of(source, spec, names, text)
            dictionary = () if spec.segment is None else (spec.segment,)
            for batch in batches(
                source, None if table_plan is None else table_plan.columns,
                batch_rows=batch_rows, dictionary=dictionary,
            ):  # fmt: skip
                if table_plan is None:
                    table_plan = plan_of(source, spec, list(batch.table.schema.names), text)
                if first is None:
                    first = table_plan
                    accumulator = _accumulator(spec, table_plan, options, max_segments)
                _same_classes(source, first, table_plan)
                assert accumulator is not None
                _update(accumulator, table_plan, batch, folding)
                if progress is not None:
                    progress.add_rows(batch.n_rows)
        except FileError as error:
            raise OfflineError(str(error)) from None
        if progress is not None:
            progress.file_done()
    if accumulator is None:
        raise no_rows(paths, found)
    return accumulator


def no_rows(paths: Sequence[str], found: Sequence[Source]) -> OfflineError:
    """The error of files that hold no row."""
    named = ", ".join(map(display_name, paths))
    # A CSV file without rows still has its header line; a Parquet file only its schema.
    csv = any(source.kind != "parquet" for source in found)
    why = "only a header" if csv else "the Parquet file has no rows"
    return OfflineError(f"{named}: no rows to evaluate ({why})")


def read_rows(
    path: str,
    spec: ColumnSpec,
    batch_rows: int = BATCH_ROWS,
    *,
    options: Mapping[str, Any] | Options | None = None,
) -> dict[str, Any]:
    """Every row of one CSV or Parquet file (not stdin, not a directory) as the arguments of
    ``evaluate`` (``y_true``, ``y_score``, ``sample_weight`` when there are weights), read
    with ``spec``'s columns; for a baseline read from a data file (its whole rows are the
    reference payload). ``options``: the evaluation's (with ``positive_label`` binary labels
    may be text). Errors name the file, the line or row and the column."""
    text = text_labels(spec.task, options)
    try:
        found = sources([path], spec.delimiter)
        if path == STDIN or len(found) != 1 or found[0].path != path:
            raise OfflineError(f"{display_name(path)}: expected one CSV or Parquet file")
        (source,) = found
        names = table_names(source)
        table_plan = None if names is None else plan_of(source, spec, names, text)
        parts: dict[str, list[Any]] = {}
        for batch in batches(
            source, None if table_plan is None else table_plan.columns, batch_rows=batch_rows
        ):
            if table_plan is None:
                table_plan = plan_of(source, spec, list(batch.table.schema.names), text)
            try:
                for name in table_plan.numeric:
                    batch.check_numbers(name)
                arguments = table_plan.arguments(batch.column)
            except (NullValueError, TextValueError) as error:
                raise OfflineError(_cell_error(batch, table_plan, error)) from None
            except InvalidInputError as error:
                raise OfflineError(located(error, table_plan, batch)) from None
            for name, values in arguments.items():
                parts.setdefault(name, []).append(np.asarray(values))
    except FileError as error:
        raise OfflineError(str(error)) from None
    if not parts:
        raise OfflineError(f"{source.name}: no rows (only a header?)")
    return {name: np.concatenate(values) for name, values in parts.items()}


def table_names(source: Source) -> list[str] | None:
    """A file's column names read before its rows (None: standard input, read with them)."""
    if source.kind == "parquet":
        return column_names(source)
    return None if source.path == STDIN else csv_header(source)


def plan_of(source: Source, spec: ColumnSpec, names: list[str], text: bool = False) -> Plan:
    """``spec``'s plan for a file of columns ``names`` (``text``: binary labels may be names);
    ``OfflineError`` naming the file when a column is missing."""
    try:
        return replace(plan(spec, names), text_labels=text)
    except ColumnError as error:
        raise OfflineError(f"{source.name}: {error}{delimiter_hint(source, names)}") from None


def _accumulator(
    spec: ColumnSpec, table_plan: Plan, options: Mapping[str, Any] | None, max_segments: int | None
) -> Accumulator:
    try:
        return Accumulator(spec.task, options, table_plan.classes, max_segments=max_segments)
    except InvalidInputError as error:
        raise OfflineError(str(error)) from None


def _same_classes(source: Source, first: Plan, table_plan: Plan) -> None:
    if table_plan.classes != first.classes or len(table_plan.score) != len(first.score):
        raise OfflineError(
            f"{source.name}: its score columns {list(table_plan.score)} differ from the first "
            f"file's {list(first.score)}; every file must have the same classes"
        )


def _update(
    accumulator: Accumulator, table_plan: Plan, batch: Batch, folding: Folding | None = None
) -> None:
    try:
        for name in table_plan.numeric:
            batch.check_numbers(name)
        arguments = table_plan.arguments(batch.column)
        if table_plan.segment is not None:
            codes, names = batch.segments(
                table_plan.segment, None if folding is None else folding.name
            )
            arguments |= {"segments": codes, "segment_names": names}
            try:
                accumulator.update(**arguments)
            except InvalidInputError as error:
                raise segment_error(error, codes) from None
            return
        accumulator.update(**arguments)
    except (NullValueError, TextValueError) as error:
        raise OfflineError(_cell_error(batch, table_plan, error)) from None
    except InvalidInputError as error:
        raise OfflineError(located(error, table_plan, batch)) from None


_NAME = re.compile(r"^name (\d+) (.*)$", re.DOTALL)


def segment_error(error: InvalidInputError, codes: Any) -> InvalidInputError:
    """A bad name among a batch's segment names, said of the first row that has it."""
    found = _NAME.match(error.message) if error.field == "segment_names" else None
    if found is None:
        return error
    row = int(np.flatnonzero(np.asarray(codes) == int(found.group(1)))[0])
    return InvalidInputError("segments", f"the segment name at row {row} {found.group(2)}")


_IMAGE = re.compile(r"^images\[(\d+)\]\.(\w+)$")
ROW = re.compile(r"\brow (\d+)")


def _cell_error(batch: Batch, table_plan: Plan, error: NullValueError | TextValueError) -> str:
    """A bad cell's error: the file, its line or row, the column; a name in a binary label
    column says how to read names."""
    text = f"{batch.source.name}, {_where(batch, error.row)}, column {error.column}: {error}"
    binary_label = table_plan.task == "binary" and error.column in table_plan.label
    if isinstance(error, TextValueError) and binary_label:
        text += " (label names need --positive-label NAME, the positive class's name)"
    return text


def located(error: InvalidInputError, table_plan: Plan, batch: Batch) -> str:
    """The core's error with the batch's rows and fields turned into the file's rows and
    columns."""
    field, message = error.field, error.message
    image = _IMAGE.match(field)
    if image:
        where = _where(batch, int(image.group(1)))
        return f"{batch.source.name}, {where}, column {image.group(2)}: {message}"
    columns = table_plan.field_columns().get(field)
    column = column_text(columns) if columns else field
    if field.startswith("options."):  # an option that does not fit the rows (positive_label)
        column, message = column_text(table_plan.label), f"{field} {message}"
    if field in ("segments", "segment_names"):
        column = f"{column} (segments)"
    found = ROW.search(message)
    if found:
        where = _where(batch, int(found.group(1)))
        message = ROW.sub(lambda m: _where(batch, int(m.group(1))), message)
        return f"{batch.source.name}, {where}, column {column}: {message}"
    first, last = batch.first_row, batch.first_row + batch.n_rows - 1
    return (
        f"{batch.source.name}, {_where(batch, 0)} to {_where(batch, last - first)}, "
        f"column {column}: {message}"
    )


def _where(batch: Batch, row: int) -> str:
    return row_text(batch.source, batch.first_row, row)


def row_text(source: Source, first_row: int, row: int) -> str:
    """Row ``row`` of rows that start at the file's row ``first_row`` (0-based, the header not
    counted), as the file numbers it: a CSV file's line, a Parquet file's row."""
    absolute = first_row + row
    if source.rows_are_lines:
        return f"line {absolute + 2}"  # the header is line 1
    return f"row {absolute}"


def column_text(columns: tuple[str, ...]) -> str:
    if len(columns) == 1:
        return columns[0]
    return f"{columns[0]} .. {columns[-1]} ({len(columns)} columns)"
