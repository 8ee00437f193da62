"""The ``evalserve`` command."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from service import offline
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    retain_freed_memory()
    if args.command == "evaluate":
        return offline.run(args.file, task=args.task, options=args.options, out=sys.stdout)
    return 2  # unreachable: argparse requires a known command


if __name__ == "__main__":
    sys.exit(main())
