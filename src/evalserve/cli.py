"""The ``evalserve`` command: ``evaluate`` (offline, the numpy core only), ``report`` (the
same evaluation as an HTML page, from the ``report`` extra) and ``serve`` (the REST and gRPC
servers, from the ``service`` extra)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NoReturn

from evalserve.core import OPTIONS, TASKS, InvalidInputError, using_threads
from evalserve.core._segments import DEFAULT_MAX_SEGMENTS
from evalserve.core._threads import MAX_THREADS, check_threads
from evalserve.cpu_dispatch import restart_with_avx2_sort
from evalserve.service.memory import retain_freed_memory

if TYPE_CHECKING:
    from evalserve.offline import ColumnSpec, MonitorFile
    from evalserve.service.config import Settings

__all__ = ["main", "run"]

SERVICE_EXTRA_MISSING = (
    "evalserve: 'evalserve serve' needs the service extra: pip install 'evalserve[service]'"
)
REPORT_EXTRA_MISSING = (
    "evalserve: 'evalserve report' needs the report extra: pip install 'evalserve[report]'"
)
DASK_EXTRA_MISSING = (
    "evalserve: --engine dask needs the dask extra: pip install 'evalserve[dask]' "
    "(or leave out --engine dask)"
)


def _options(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"--options is not valid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("--options must be a JSON object")
    return value


def _thread_count(text: str) -> int:
    try:
        return check_threads(int(text), "--threads")
    except (ValueError, InvalidInputError):
        raise argparse.ArgumentTypeError(
            f"--threads must be a whole number from 1 to {MAX_THREADS}, got {text!r}"
        ) from None


_PARSERS: dict[str, Callable[[str], Any]] = {"<class 'int'>": int, "<class 'float'>": float}


def _settings_class() -> type[Settings] | None:
    """The server's settings, or None when the service extra is not installed."""
    try:
        from evalserve.service.config import Settings
    except ImportError:
        return None
    return Settings


def add_input_arguments(command: argparse.ArgumentParser) -> None:
    """The inputs, columns, task, options and engine: shared by the commands that read files."""
    command.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="CSV or Parquet file, directory or glob; - for CSV on stdin",
    )
    command.add_argument("--task", default="binary", choices=list(TASKS))
    command.add_argument(
        "--delimiter",
        type=_delimiter,
        metavar="CHAR",
        help="the CSV field delimiter: one character, such as ';' or '|', or \\t for a tab "
        "(default: a tab in .tsv files, else a comma)",
    )
    columns = command.add_argument_group("columns")
    columns.add_argument(
        "--label-column",
        action="append",
        default=[],
        metavar="C",
        help="labels (default label; multilabel: repeat, or a prefix such as label_)",
    )
    columns.add_argument(
        "--score-column",
        action="append",
        default=[],
        metavar="C",
        help="scores (default score; multiclass and multilabel: a list column, "
        "the columns one by one, or a prefix such as score_ or score_*)",
    )
    columns.add_argument(
        "--weight-column",
        metavar="C",
        help="sample weights (default: weight, when there is such a column)",
    )
    columns.add_argument(
        "--prediction-column",
        metavar="C",
        help="hard predictions (regression: default prediction when present, "
        "else the score column)",
    )
    columns.add_argument(
        "--classes",
        type=lambda text: tuple(text.split(",")),
        metavar="A,B,..",
        help="class names in score-column order (default: from a prefix)",
    )
    options = command.add_argument_group("options (see the options table in the docs)")
    options.add_argument(
        "--options", type=_options, default=None, help="JSON object, e.g. '{\"threshold\": 0.3}'"
    )
    for spec in OPTIONS.values():
        kind: Callable[[str], Any] = {"number": float, "integer": int}.get(spec.kind, str)
        options.add_argument(
            "--" + spec.name.replace("_", "-"),
            dest="option_" + spec.name,
            type=kind,
            nargs="+" if spec.repeated else None,
            choices=list(spec.choices) if spec.choices else None,
            help=f"{spec.doc.split('. ')[0].rstrip('.')} (default {spec.default_text})".replace(
                "%", "%%"
            ),
        )
    command.add_argument(
        "--baseline",
        metavar="FILE",
        help="the baseline (task binary: the drift test of roc_auc): a JSON file, as the REST "
        "request's baseline object, or a CSV or Parquet file of the reference rows, read with "
        "the same column flags as the data",
    )
    command.add_argument(
        "--monitor-state",
        metavar="FILE",
        help="the AUC monitor's state (with --baseline): read from FILE when it exists, "
        "replaced by the new state after the run; one file per monitored model",
    )
    command.add_argument(
        "--window",
        metavar="ID",
        help="this run's window id for the AUC monitor (for example the day the file "
        "covers): a run of the same window again is not counted twice",
    )
    engine = command.add_argument_group("engine")
    engine.add_argument(
        "--engine",
        choices=["local", "dask"],
        default="local",
        help="local (default): this process; dask: a Dask cluster",
    )
    engine.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="the Dask scheduler (default: a local cluster of processes)",
    )
    engine.add_argument(
        "--threads",
        type=_thread_count,
        metavar="N",
        help="local engine: the threads its sorts use (default: the CPUs this process may run "
        "on; the dask engine's tasks use one each)",
    )
    engine.add_argument(
        "--dask-method",
        choices=["tree", "ranges"],
        default=None,
        help="with --engine dask: tree (default; every task) merges each partition's state; "
        "ranges (task binary, no segments, no baseline) splits the scores into ranges across "
        "the workers, for data whose distinct scores do not fit one machine",
    )


def _delimiter(text: str) -> str:
    value = {"\\t": "\t", "tab": "\t"}.get(text, text)
    if len(value) != 1 or value in '"\r\n':
        raise argparse.ArgumentTypeError(
            f"expected one character (such as ';', '|' or \\t for a tab), got {text!r}"
        )
    return value


def _refuse(message: str) -> NoReturn:
    """One line on stderr, exit status 2 (input the command cannot take)."""
    print(f"evalserve: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def _baseline(args: argparse.Namespace, options: dict[str, Any] | None) -> dict[str, Any] | None:
    """``--baseline``: a JSON object, or a CSV or Parquet file's rows read with the data's column
    flags (the reference payload: labels, scores, weights); checked against the task and the
    options here, so that a bad baseline is named as the baseline file."""
    path: str | None = args.baseline
    if path is None:
        return None
    from evalserve.core import InvalidInputError, parse_options
    from evalserve.offline import OfflineError, read_rows
    from evalserve.offline._files import CSV_SUFFIXES, PARQUET_SUFFIXES

    where = f"--baseline {path}"
    if path.lower().endswith(PARQUET_SUFFIXES + CSV_SUFFIXES):
        try:
            spec = replace(column_spec(args), prediction=None, segment=None)
            rows = read_rows(path, spec, options=options)
        except OfflineError as error:
            _refuse(f"--baseline {error}")
        value: Any = {"labels": rows["y_true"], "scores": rows.get("y_score")}
        if "sample_weight" in rows:
            value["weights"] = rows["sample_weight"]
    else:
        try:
            with open(path, encoding="utf-8") as file:
                value = json.load(file)
        except OSError as error:
            _refuse(f"{where}: {error.strerror}")
        except ValueError as error:
            _refuse(f"{where}: not a JSON object ({error}); a CSV or Parquet baseline needs "
                    "its suffix (.csv, .tsv, .parquet ...)")  # fmt: skip
        if not isinstance(value, dict):
            _refuse(f"{where}: expected a JSON object, got {type(value).__name__}")
    from evalserve.core._evaluate import check_comparison
    from evalserve.core.binary._compare import baseline_estimate

    try:
        parsed = parse_options(options)
    except InvalidInputError:
        return dict(value)  # the options' own error comes with the evaluation
    try:
        check_comparison(args.task, value)
        baseline_estimate(value, parsed)
    except InvalidInputError as error:
        _refuse(f"{where}: {error}")
    return dict(value)


def column_spec(args: argparse.Namespace) -> ColumnSpec:
    from evalserve.offline import ColumnSpec  # pyarrow: not for the server's process

    return ColumnSpec(
        task=args.task,
        label=tuple(args.label_column),
        score=tuple(args.score_column),
        weight=args.weight_column,
        prediction=args.prediction_column,
        classes=args.classes,
        segment=getattr(args, "segment_column", None),
        delimiter=args.delimiter,
    )


def _max_segments(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return value


def add_segment_arguments(command: argparse.ArgumentParser) -> None:
    """``--segment-column``, ``--max-segments``, ``--fold-segments`` (``evaluate`` and
    ``report``)."""
    segments = command.add_argument_group("segments")
    segments.add_argument(
        "--segment-column",
        metavar="C",
        help="each row's segment (a country, a tier: text): the overall result and one per "
        "segment (JSON: segments; table: the worst segments first)",
    )
    segments.add_argument(
        "--max-segments",
        type=_max_segments,
        default=DEFAULT_MAX_SEGMENTS,
        metavar="N",
        help=f"at most N distinct segments (default {DEFAULT_MAX_SEGMENTS}); more is an error "
        "unless --fold-segments",
    )
    segments.add_argument(
        "--fold-segments",
        action="store_true",
        help="past --max-segments, fold the smallest segments into __other__ (reads the "
        "segment column in a first pass; not from stdin, not on the dask engine)",
    )


def add_challenger_arguments(command: argparse.ArgumentParser) -> None:
    """``--challenger-column`` (``evaluate`` and ``report``)."""
    command.add_argument_group("champion vs challenger").add_argument(
        "--challenger-column",
        metavar="C",
        help="a second model's scores on the same rows (task binary): the result's comparison "
        "is DeLong's paired test of its AUC against the score column's; holds the rows' "
        "columns in memory (local engine only)",
    )


def _challenger(args: argparse.Namespace) -> str | None:
    """``--challenger-column``, refused on the dask engine (its states cannot pair rows)."""
    column: str | None = getattr(args, "challenger_column", None)
    if column is not None and args.engine == "dask":
        _refuse(
            "--challenger-column pairs each row's two scores, which the dask engine's merged "
            "states cannot: leave out --engine dask (the local engine holds the columns in "
            "memory)"
        )
    return column


def option_values(args: argparse.Namespace) -> dict[str, Any] | None:
    """--options with the option flags on top."""
    values = dict(args.options or {})
    for name in OPTIONS:
        value = getattr(args, "option_" + name)
        if value is not None:
            values[name] = value
    return values or None


class _Parser(argparse.ArgumentParser):
    """argparse, whose usage errors are one line (the usage of ``evaluate`` alone is dozens of
    lines of option flags): the command, what was wrong, where the help is; exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser(settings: type[Settings] | None) -> argparse.ArgumentParser:
    """The command line; ``serve`` takes a flag per field of ``settings`` (none without the
    service extra)."""
    parser = _Parser(prog="evalserve", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    offline_cmd = commands.add_parser(
        "evaluate",
        help="evaluate CSV or Parquet files and print the result (JSON, or a table)",
        description="Evaluate CSV or Parquet files (files, directories or globs; - is CSV on "
        "stdin) in batches, for every task, and print what POST /v1/evaluate answers.",
    )
    add_input_arguments(offline_cmd)
    add_segment_arguments(offline_cmd)
    add_challenger_arguments(offline_cmd)
    offline_cmd.add_argument(
        "--format",
        dest="output_format",
        choices=["json", "table"],
        default="json",
        help="json (default): the REST response; table: aligned text",
    )
    report_cmd = commands.add_parser(
        "report",
        help="evaluate CSV or Parquet files and write the HTML report",
        description="Evaluate as 'evalserve evaluate' does and write one self-contained HTML "
        "page (metrics, intervals, charts; no network needed to open it).",
    )
    add_input_arguments(report_cmd)
    add_segment_arguments(report_cmd)
    add_challenger_arguments(report_cmd)
    report_cmd.add_argument(
        "-o",
        "--output",
        default="report.html",
        metavar="FILE",
        help="the page to write (default report.html; - for standard output); an existing "
        "file is kept unless --force",
    )
    report_cmd.add_argument(
        "-f",
        "--force",
        "--overwrite",
        action="store_true",
        help="replace the output file when it exists",
    )
    report_cmd.add_argument(
        "--title", metavar="TEXT", help="the page's title and heading (default: from the model)"
    )
    report_cmd.add_argument(
        "--model-name", metavar="NAME", help="the model's name, shown on the page"
    )
    report_cmd.set_defaults(output_format="html")
    serve_cmd = commands.add_parser(
        "serve", help="run the REST and gRPC servers (defaults from EVALSERVE_* variables)"
    )
    for name, field in settings.model_fields.items() if settings else ():
        flag = "--" + name.replace("_", "-")
        kind: Callable[[str], Any] = _PARSERS.get(str(field.annotation), str)
        help_text = (field.description or "").replace("%", "%%")  # argparse formats help
        serve_cmd.add_argument(flag, type=kind, default=None, help=help_text)
    return parser


def _settings(settings: type[Settings], args: argparse.Namespace) -> Settings:
    from pydantic import ValidationError

    overrides = {
        name: getattr(args, name)
        for name in settings.model_fields
        if getattr(args, name, None) is not None
    }
    try:
        return settings(**overrides)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}{_given(e.get('input'), e['msg'])}"
            for e in error.errors()
        )
        print(f"evalserve: bad setting: {problems}", file=sys.stderr)
        raise SystemExit(2) from None


def _given(value: Any, message: str) -> str:
    """`` (got VALUE)`` when the message does not say the value already."""
    if value is None or isinstance(value, dict) or str(value) in message:
        return ""
    return f" (got {value!r:.60})"


def _command(argv: Sequence[str]) -> str | None:
    """The command named by ``argv`` (its first argument not an option), if any."""
    return next((argument for argument in argv if not argument.startswith("-")), None)


def _serve(settings: type[Settings], args: argparse.Namespace) -> int:
    try:
        from evalserve.service.listen import ListenError
        from evalserve.service.server import serve
    except ImportError:
        print(SERVICE_EXTRA_MISSING, file=sys.stderr)
        return 2
    try:
        return serve(_settings(settings, args))
    except ListenError as error:  # a port in use: one line, the flag to change it
        print(error, file=sys.stderr)
        return 2


def run() -> NoReturn:
    """The ``evalserve`` program (the installed command, ``python -m evalserve``): first, where
    numpy's AVX-512 sort is the slow one, the same command again with numpy's AVX2 sort
    (:mod:`evalserve.cpu_dispatch`), then :func:`main` on the command line and its status."""
    restart_with_avx2_sort()
    sys.exit(main())


def main(argv: Sequence[str] | None = None) -> int:
    """The command line ``argv`` (default ``sys.argv[1:]``) run in this process; the exit
    status."""
    # The server's settings (pydantic, a tenth of a second to import) only where serve's
    # flags may be read: not for evaluate and report.
    command = _command(sys.argv[1:] if argv is None else argv)
    settings = None if command in ("evaluate", "report") else _settings_class()
    parser = build_parser(settings)
    # Known arguments first: without the service extra, serve's flags are unknown here, and the
    # answer is the extra to install, not a usage error.
    args, unknown = parser.parse_known_args(argv)
    if args.command == "serve" and settings is None:
        print(SERVICE_EXTRA_MISSING, file=sys.stderr)
        return 2
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.command == "serve":
        assert settings is not None
        return _serve(settings, args)
    if args.command == "report" and not _report_available():
        print(REPORT_EXTRA_MISSING, file=sys.stderr)
        return 2
    retain_freed_memory()  # as the server does: big arrays reuse freed pages
    output = getattr(args, "output", None)
    if args.command == "report":
        _check_output(output, args.force)
    monitor = _monitor_file(args, parser)
    baseline = _baseline(args, option_values(args))
    segment = getattr(args, "segment_column", None)
    fold_segments = getattr(args, "fold_segments", False)
    if segment is None and fold_segments:
        parser.error("--fold-segments folds segments: give --segment-column too")
    if segment is not None and monitor is not None:
        parser.error(
            "--monitor-state keeps the overall AUC monitor only, not each segment's: "
            "leave out --segment-column or --monitor-state"
        )
    options = option_values(args)
    page = None
    if args.output_format == "html":
        from evalserve.report import report_options

        options = report_options(options)
        page = {"title": args.title, "model": args.model_name}
    if args.dask_method is not None and args.engine != "dask":
        parser.error("--dask-method chooses how the dask engine works: give --engine dask too")
    if args.threads is not None and args.engine == "dask":
        parser.error("--threads sets the local engine's threads: the Dask workers' own "
                     "--nthreads decide on the dask engine")  # fmt: skip
    status = _evaluate(args, output, options, baseline, monitor, page, _challenger(args))
    if status == 0 and args.command == "report" and output not in (None, "-"):
        print(f"evalserve: wrote {output}", file=sys.stderr)  # stdout: the results alone
    return status


def _check_output(output: str | None, force: bool) -> None:
    """``report -o FILE``: refused when FILE exists (unless ``--force``) or is a directory,
    before any row is read."""
    import os

    if output is None or output == "-":
        return
    if os.path.isdir(output):
        _refuse(f"{output}: is a directory; give the page's file name with -o")
    if os.path.exists(output) and not force:
        _refuse(f"{output} exists; give --force to replace it, or another file with -o")


def _evaluate(
    args: argparse.Namespace,
    output: str | None,
    options: dict[str, Any] | None,
    baseline: dict[str, Any] | None,
    monitor: MonitorFile | None,
    page: dict[str, str | None] | None = None,
    challenger: str | None = None,
) -> int:
    """The evaluation on the engine asked for; the exit status."""
    max_segments = getattr(args, "max_segments", DEFAULT_MAX_SEGMENTS)
    fold_segments = getattr(args, "fold_segments", False)
    if args.engine == "dask":
        run_files = _dask_run_files()
        if run_files is None:
            print(DASK_EXTRA_MISSING, file=sys.stderr)
            return 2
        return run_files(
            args.paths,
            column_spec(args),
            options,
            scheduler=args.scheduler,
            method=args.dask_method or "tree",
            output_format=args.output_format,
            output=output,
            baseline=baseline,
            monitor=monitor,
            max_segments=max_segments,
            fold_segments=fold_segments,
            page=page,
        )
    from evalserve import offline

    with using_threads(args.threads):
        return offline.run(
            args.paths,
            column_spec(args),
            options,
            output_format=args.output_format,
            output=output,
            baseline=baseline,
            monitor=monitor,
            max_segments=max_segments,
            fold_segments=fold_segments,
            page=page,
            challenger=challenger,
        )


def _monitor_file(args: argparse.Namespace, parser: argparse.ArgumentParser) -> MonitorFile | None:
    """``--monitor-state`` and ``--window``, checked: the monitor needs a baseline."""
    path, window = getattr(args, "monitor_state", None), getattr(args, "window", None)
    if path is None:
        if window is not None:
            parser.error("--window names a window of the AUC monitor: give --monitor-state too")
        return None
    if getattr(args, "baseline", None) is None:
        parser.error("--monitor-state needs --baseline: the AUC monitor tests against it")
    from evalserve.offline import MonitorFile  # pyarrow: imported by the commands that read

    return MonitorFile(path, window)


def _dask_run_files() -> Callable[..., int] | None:
    """``evalserve.dask.run_files``, or None when the dask extra (dask, distributed) is not
    installed."""
    try:
        import distributed  # noqa: F401  (run_files's scheduler client)

        from evalserve.dask import run_files
    except ImportError as error:
        if (error.name or "").split(".")[0] in ("dask", "distributed"):
            return None
        raise
    return run_files


def _report_available() -> bool:
    from importlib.util import find_spec

    return find_spec("altair") is not None


if __name__ == "__main__":
    run()
