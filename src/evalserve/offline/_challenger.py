"""``--challenger-column``: champion against challenger, DeLong's paired test of two models'
AUCs on the same rows.

The test pairs each row's two scores, which the accumulator's state cannot (a stream keeps
the distinct scores of each model, not which row had which pair). So here the files are read
batch by batch as the accumulator's path reads them, each batch checked (numbers, missing
values) and its columns kept, and ``evaluate(..., challenger={"scores": ...})`` runs once on
all of them: memory grows with the rows (the columns read, about 8 bytes a row each, while
they are joined twice that), not with one batch.

Errors name the file, the line (CSV) or row (Parquet) and the column, as the accumulator's
path does: a row the core refuses is traced back to the batch it came from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalserve.core import EvaluationResult, InvalidInputError, evaluate, parse_options
from evalserve.core._segments import DEFAULT_MAX_SEGMENTS
from evalserve.core._tasks import comparing_tasks, task_spec
from evalserve.offline._columns import ColumnSpec, Plan, text_labels
from evalserve.offline._files import (
    BATCH_ROWS,
    Batch,
    FileError,
    NullValueError,
    Source,
    TextValueError,
    batches,
    delimiter_hint,
    display_name,
    sources,
)
from evalserve.offline._progress import Progress
from evalserve.offline._run import (
    ROW,
    OfflineError,
    column_text,
    no_rows,
    plan_of,
    row_text,
    segment_error,
    table_names,
)

__all__ = ["CHALLENGER_FIELD", "evaluate_paired"]

CHALLENGER_FIELD = "challenger.scores"


def evaluate_paired(
    paths: Sequence[str],
    spec: ColumnSpec,
    challenger: str,
    options: Mapping[str, Any] | None = None,
    *,
    progress: Progress | None = None,
    batch_rows: int = BATCH_ROWS,
    baseline: Mapping[str, Any] | None = None,
    monitor_state: bytes | None = None,
    window: str | None = None,
    max_segments: int | None = DEFAULT_MAX_SEGMENTS,
    fold_segments: bool = False,
) -> EvaluationResult:
    """What ``evaluate(task, ..., challenger={"scores": ...})`` gives on all rows of ``paths``,
    the challenger's scores read from the column ``challenger``; the other arguments as in
    ``evaluate_files`` (with ``spec.segment``, folding happens in ``evaluate``: the rows are
    in memory). Raises ``OfflineError`` naming file, row and column."""
    if not task_spec(spec.task).compares:
        raise OfflineError(
            f"--challenger-column compares two models' scores: it takes task "
            f"{comparing_tasks()}, not {spec.task!r}"
        )
    try:
        parse_options(options)  # the options' own error, before the rows are read
    except InvalidInputError as error:
        raise OfflineError(str(error)) from None
    rows = _read(paths, spec, challenger, progress, batch_rows, text_labels(spec.task, options))
    segments: dict[str, Any] = {}
    if rows.segment_codes:
        segments = {
            "segments": np.concatenate(rows.segment_codes),
            "segment_names": list(rows.segment_names),
        }
    arguments = rows.arguments()
    try:
        return evaluate(
            spec.task, **arguments, options=options, baseline=baseline,
            challenger={"scores": np.concatenate(rows.challenger)},
            classes=rows.plan.classes, monitor_state=monitor_state, window=window,
            max_segments=max_segments, fold_segments=fold_segments, **segments,
        )  # fmt: skip
    except InvalidInputError as error:
        if "segments" in segments:
            error = segment_error(error, segments["segments"])
        raise OfflineError(rows.located(error, paths)) from None


@dataclass(frozen=True)
class _Span:
    """Where a batch's rows sit: in its file, and among all the rows read."""

    source: Source
    first_row: int  # in the file (0-based, header not counted)
    start: int  # among all rows read
    n_rows: int

    def where(self, row: int) -> str:
        """Row ``row`` of the span, as the file numbers it (CSV: its line)."""
        return row_text(self.source, self.first_row, row)


@dataclass
class _Rows:
    """Every batch's columns, kept in reading order, and where each batch came from."""

    plan: Plan
    challenger_column: str
    parts: list[dict[str, Any]] = field(default_factory=list)
    challenger: list[NDArray[np.float64]] = field(default_factory=list)
    segment_codes: list[NDArray[np.intp]] = field(default_factory=list)
    segment_names: dict[str, int] = field(default_factory=dict)
    spans: list[_Span] = field(default_factory=list)
    n_rows: int = 0

    def add(self, batch: Batch, table_plan: Plan) -> None:
        try:
            for name in [*table_plan.numeric, self.challenger_column]:
                batch.check_numbers(name)
            arguments = table_plan.arguments(batch.column)
            scores = np.asarray(batch.column(self.challenger_column), dtype=np.float64)
            if table_plan.segment is not None:
                codes, names = batch.segments(table_plan.segment)
                known = self.segment_names
                lookup = np.array(
                    [known.setdefault(name, len(known)) for name in names], dtype=np.intp
                )
                self.segment_codes.append(lookup[np.asarray(codes, dtype=np.intp)])
        except (NullValueError, TextValueError) as error:
            where = _Span(batch.source, batch.first_row, 0, batch.n_rows).where(error.row)
            raise OfflineError(
                f"{batch.source.name}, {where}, column {error.column}: {error}"
            ) from None
        except InvalidInputError as error:
            span = _Span(batch.source, batch.first_row, 0, batch.n_rows)
            raise OfflineError(_located(error, span, self._columns(table_plan))) from None
        self.parts.append(arguments)
        self.challenger.append(scores)
        self.spans.append(_Span(batch.source, batch.first_row, self.n_rows, batch.n_rows))
        self.n_rows += batch.n_rows

    def arguments(self) -> dict[str, Any]:
        """``evaluate``'s row arguments, each batch's joined; a file without the default weight
        column weighs its rows 1, as the accumulator's path does."""
        names = list(dict.fromkeys(name for part in self.parts for name in part))
        joined: dict[str, Any] = {}
        for name in names:
            pieces = []
            for part, span in zip(self.parts, self.spans, strict=True):
                if name in part:
                    pieces.append(np.asarray(part[name]))
                elif name == "sample_weight":
                    pieces.append(np.ones(span.n_rows))
                else:  # pragma: no cover - the plan asks every file for the same columns
                    raise OfflineError(f"{span.source.name}: no values for {name}")
            joined[name] = np.concatenate(pieces)
        self.parts.clear()  # the joined arrays replace them
        return joined

    def located(self, error: InvalidInputError, paths: Sequence[str]) -> str:
        """The core's error on all rows, said of the file, line or row, and column."""
        found = ROW.search(error.message)
        columns = self._columns(self.plan)
        if found is None or not self.spans:
            column = columns.get(error.field)
            if column is None:
                return f"{', '.join(map(display_name, paths))}: {error}"
            return f"{', '.join(map(display_name, paths))}, column {column}: {error.message}"
        starts = [span.start for span in self.spans]
        index = int(np.searchsorted(starts, int(found.group(1)), side="right")) - 1
        span = self.spans[max(index, 0)]
        shifted = ROW.sub(lambda m: f"row {int(m.group(1)) - span.start}", error.message)
        return _located(InvalidInputError(error.field, shifted), span, columns)

    def _columns(self, table_plan: Plan) -> dict[str, str]:
        """The column (or columns) behind each field of ``evaluate``'s request."""
        named = {name: column_text(columns) for name, columns in table_plan.field_columns().items()}
        named[CHALLENGER_FIELD] = self.challenger_column
        for name in ("segments", "segment_names"):
            if name in named:
                named[name] += " (segments)"
        return named


def _located(error: InvalidInputError, span: _Span, columns: Mapping[str, str]) -> str:
    """An error of one span's rows (``row N`` counted from its first) as the file's line or
    row, and column."""
    column = columns.get(error.field, error.field)
    found = ROW.search(error.message)
    if found is None:
        last = span.where(span.n_rows - 1)
        return f"{span.source.name}, {span.where(0)} to {last}, column {column}: {error.message}"
    message = ROW.sub(lambda m: span.where(int(m.group(1))), error.message)
    return f"{span.source.name}, {span.where(int(found.group(1)))}, column {column}: {message}"


def _read(
    paths: Sequence[str],
    spec: ColumnSpec,
    challenger: str,
    progress: Progress | None,
    batch_rows: int,
    text: bool,
) -> _Rows:
    """Every batch of ``paths`` (``text``: binary labels may be names, with
    ``positive_label``)."""
    try:
        found = sources(paths, spec.delimiter)
    except FileError as error:
        raise OfflineError(str(error)) from None
    if progress is not None:
        progress.files = len(found)
    rows: _Rows | None = None
    for source in found:
        try:
            names = table_names(source)
            table_plan = None if names is None else _plan(source, spec, challenger, names, text)
            dictionary = () if spec.segment is None else (spec.segment,)
            columns = None if table_plan is None else [*table_plan.columns, challenger]
            for batch in batches(
                source, None if columns is None else list(dict.fromkeys(columns)),
                batch_rows=batch_rows, dictionary=dictionary,
            ):  # fmt: skip
                if table_plan is None:
                    table_plan = _plan(
                        source, spec, challenger, list(batch.table.schema.names), text
                    )
                if rows is None:
                    rows = _Rows(table_plan, challenger)
                rows.add(batch, table_plan)
                if progress is not None:
                    progress.add_rows(batch.n_rows)
        except FileError as error:
            raise OfflineError(str(error)) from None
        if progress is not None:
            progress.file_done()
    if rows is None or rows.n_rows == 0:
        raise no_rows(paths, found)
    return rows


def _plan(source: Source, spec: ColumnSpec, challenger: str, names: list[str], text: bool) -> Plan:
    """The data's plan (``plan_of``), and the challenger's column there too."""
    table_plan = plan_of(source, spec, names, text)
    if challenger not in names:
        shown = ", ".join(repr(name) for name in names[:20])
        more = f" and {len(names) - 20} more" if len(names) > 20 else ""
        raise OfflineError(
            f"{source.name}: no challenger column {challenger!r}; the table has columns "
            f"{shown}{more}{delimiter_hint(source, names)}"
        )
    return table_plan
