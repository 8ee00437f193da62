"""The offline evaluator: CSV and Parquet files in, the REST response (JSON or a table) out.

``evaluate_files`` reads files, directories and globs in record batches through the
``Accumulator``, for every task; ``run`` is ``evalserve evaluate``. The column rules are in
:mod:`evalserve.offline._columns`, the readers in :mod:`evalserve.offline._files`.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from evalserve.core import EvaluationResult
from evalserve.core._segments import DEFAULT_MAX_SEGMENTS
from evalserve.offline._challenger import evaluate_paired
from evalserve.offline._columns import DETECTION_COLUMNS, ColumnError, ColumnSpec, Plan, plan
from evalserve.offline._monitor_file import MonitorFile
from evalserve.offline._progress import Progress
from evalserve.offline._run import OfflineError, accumulate_files, evaluate_files, read_rows
from evalserve.offline._table import table

__all__ = [
    "DETECTION_COLUMNS",
    "ColumnError",
    "ColumnSpec",
    "MonitorFile",
    "OfflineError",
    "Plan",
    "Progress",
    "accumulate_files",
    "emit",
    "evaluate_files",
    "evaluate_paired",
    "plan",
    "read_rows",
    "render",
    "run",
]


def render(
    result: EvaluationResult,
    output_format: str,
    *,
    options: Mapping[str, Any] | None = None,
    source: str | None = None,
    page: Mapping[str, Any] | None = None,
) -> str:
    """The result as the REST response's JSON, as a table, or as the HTML report (``html``;
    ``options`` and ``source`` are named in it; ``page``: more of ``render_report``'s
    arguments: ``title``, ``model``, ``baseline``)."""
    if output_format == "table":
        return table(result)
    if output_format == "html":
        from evalserve.report import render_report  # Altair: the report extra

        return render_report(result, options=options, source=source, **(page or {}))
    return json.dumps(result.to_dict(), indent=2, allow_nan=False)


def emit(text: str, output: str | None, out: TextIO = sys.stdout) -> None:
    """``text`` to the file ``output``, or to ``out`` when it is None or ``-``."""
    if output is not None and output != "-":
        with open(output, "w", encoding="utf-8") as file:
            file.write(text)
        return
    with contextlib.suppress(BrokenPipeError):  # the reader left early (`| head`)
        print(text, file=out)


def run(
    paths: Sequence[str],
    spec: ColumnSpec,
    options: Mapping[str, Any] | None,
    *,
    output_format: str = "json",
    output: str | None = None,
    baseline: Mapping[str, Any] | None = None,
    monitor: MonitorFile | None = None,
    max_segments: int | None = DEFAULT_MAX_SEGMENTS,
    fold_segments: bool = False,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
    page: Mapping[str, Any] | None = None,
    challenger: str | None = None,
) -> int:
    """``evalserve evaluate`` and ``evalserve report``: evaluate ``paths`` and print the
    result (or write it to ``output``); the exit status (2 for input that cannot be
    evaluated, with one line on ``err`` naming file, row and column). With ``monitor``, the
    AUC monitor's state is read from its file and the new one written back. With
    ``spec.segment``, ``max_segments`` and ``fold_segments`` as in ``evaluate``; ``page``:
    the report's ``title`` and ``model`` (output format html; a baseline payload is drawn as
    the report's reference). With ``challenger`` (a column of a second model's scores), the
    paired comparison: the rows' columns are held in memory (``evaluate_paired``)."""
    progress = Progress(err, files=0)
    try:
        state = None if monitor is None else _read_state(monitor)
        window = None if monitor is None else monitor.window
        if challenger is None:
            result = evaluate_files(
                paths, spec, options, progress=progress, baseline=baseline, monitor_state=state,
                window=window, max_segments=max_segments, fold_segments=fold_segments,
            )  # fmt: skip
        else:
            result = evaluate_paired(
                paths, spec, challenger, options, progress=progress, baseline=baseline,
                monitor_state=state, window=window, max_segments=max_segments,
                fold_segments=fold_segments,
            )  # fmt: skip
        if monitor is not None:
            _write_state(monitor, result)
    except OfflineError as error:
        progress.close()
        print(f"evalserve: error: {error}", file=err)
        return 2
    progress.close()
    page = {**(page or {}), "baseline": baseline}
    text = render(result, output_format, options=options, source=", ".join(paths), page=page)
    try:
        emit(text, output, out)
    except OSError as error:
        print(f"evalserve: error: {output}: {error.strerror}", file=err)
        return 2
    return 0


def _read_state(monitor: MonitorFile) -> bytes | None:
    try:
        return monitor.read()
    except OSError as error:
        raise OfflineError(f"{monitor.path}: {error.strerror}") from None


def _write_state(monitor: MonitorFile, result: EvaluationResult) -> None:
    """Store the result's new monitor state (none: the run had no baseline)."""
    if result.monitor_state is None:
        raise OfflineError("--monitor-state needs --baseline: the AUC monitor tests against it")
    try:
        monitor.write(result.monitor_state)
    except OSError as error:
        raise OfflineError(f"{monitor.path}: {error.strerror}") from None
