"""The ``evalserve`` command."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import ValidationError

from service import offline
from service.config import Settings
from service.memory import retain_freed_memory

__all__ = ["main"]


def _options(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"--options is not valid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("--options must be a JSON object")
    return value


_PARSERS: dict[str, Callable[[str], Any]] = {"<class 'int'>": int, "<class 'float'>": float}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="evalserve", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    offline_cmd = commands.add_parser(
        "evaluate", help="evaluate a CSV file (label,score[,weight]) and print the JSON result"
    )
    offline_cmd.add_argument("file", help="CSV file with a header line, or - for stdin")
    offline_cmd.add_argument("--task", default="binary", choices=["binary"])
    offline_cmd.add_argument(
        "--options", type=_options, default=None, help="JSON object, e.g. '{\"threshold\": 0.3}'"
    )
    serve_cmd = commands.add_parser(
        "serve", help="run the REST and gRPC servers (defaults from EVALSERVE_* variables)"
    )
    for name, field in Settings.model_fields.items():
        flag = "--" + name.replace("_", "-")
        kind: Callable[[str], Any] = _PARSERS.get(str(field.annotation), str)
        serve_cmd.add_argument(flag, type=kind, default=None, help=field.description)
    return parser


def _settings(args: argparse.Namespace) -> Settings:
    overrides = {
        name: getattr(args, name)
        for name in Settings.model_fields
        if getattr(args, name, None) is not None
    }
    try:
        return Settings(**overrides)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in error.errors()
        )
        raise SystemExit(f"evalserve: bad setting: {problems}") from None


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    retain_freed_memory()
    if args.command == "evaluate":
        return offline.run(args.file, task=args.task, options=args.options, out=sys.stdout)
    from service.server import serve  # the servers' imports are not needed offline

    return serve(_settings(args))


if __name__ == "__main__":
    sys.exit(main())
