"""The offline evaluator: CSV and Parquet files in, the REST response (JSON or a table) out.

``evaluate_files`` reads files, directories and globs in record batches through the
``Accumulator``, for every task; ``run`` is ``evalserve evaluate``. The column rules are in
:mod:`evalserve.offline._columns`, the readers in :mod:`evalserve.offline._files`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from evalserve.core import EvaluationResult
from evalserve.offline._columns import DETECTION_COLUMNS, ColumnError, ColumnSpec, Plan, plan
from evalserve.offline._progress import Progress
from evalserve.offline._run import OfflineError, accumulate_files, evaluate_files
from evalserve.offline._table import table

__all__ = [
    "DETECTION_COLUMNS",
    "ColumnError",
    "ColumnSpec",
    "OfflineError",
    "Plan",
    "Progress",
    "accumulate_files",
    "evaluate_files",
    "plan",
    "render",
    "run",
]


def render(result: EvaluationResult, output_format: str) -> str:
    """The result as the REST response's JSON, or as a table."""
    if output_format == "table":
        return table(result)
    return json.dumps(result.to_dict(), indent=2, allow_nan=False)


def run(
    paths: Sequence[str],
    spec: ColumnSpec,
    options: Mapping[str, Any] | None,
    *,
    output_format: str = "json",
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
) -> int:
    """``evalserve evaluate``: evaluate ``paths`` and print the result; the exit status (2 for
    input that cannot be evaluated, with one line on ``err`` naming file, row and column)."""
    progress = Progress(err, files=0)
    try:
        result = evaluate_files(paths, spec, options, progress=progress)
    except OfflineError as error:
        progress.close()
        print(f"evalserve: error: {error}", file=err)
        return 2
    progress.close()
    try:
        print(render(result, output_format), file=out)
    except BrokenPipeError:  # the reader left early (`| head`): not our error
        return 0
    return 0
