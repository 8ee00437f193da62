"""The ``evalserve`` command: ``evaluate`` (offline, the numpy core only) and ``serve`` (the
REST and gRPC servers, from the ``service`` extra)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from evalserve import offline
from evalserve.service.memory import retain_freed_memory

if TYPE_CHECKING:
    from evalserve.service.config import Settings

__all__ = ["main"]

SERVICE_EXTRA_MISSING = (
    "evalserve: 'evalserve serve' needs the service extra: pip install 'evalserve[service]'"
)


def _options(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"--options is not valid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("--options must be a JSON object")
    return value


_PARSERS: dict[str, Callable[[str], Any]] = {"<class 'int'>": int, "<class 'float'>": float}


def _settings_class() -> type[Settings] | None:
    """The server's settings, or None when the service extra is not installed."""
    try:
        from evalserve.service.config import Settings
    except ImportError:
        return None
    return Settings


def build_parser(settings: type[Settings] | None) -> argparse.ArgumentParser:
    """The command line; ``serve`` takes a flag per field of ``settings`` (none without the
    service extra)."""
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
    for name, field in settings.model_fields.items() if settings else ():
        flag = "--" + name.replace("_", "-")
        kind: Callable[[str], Any] = _PARSERS.get(str(field.annotation), str)
        serve_cmd.add_argument(flag, type=kind, default=None, help=field.description)
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
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in error.errors()
        )
        raise SystemExit(f"evalserve: bad setting: {problems}") from None


def _serve(settings: type[Settings], args: argparse.Namespace) -> int:
    try:
        from evalserve.service.server import serve
    except ImportError:
        print(SERVICE_EXTRA_MISSING, file=sys.stderr)
        return 2
    return serve(_settings(settings, args))


def main(argv: Sequence[str] | None = None) -> int:
    settings = _settings_class()
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
    retain_freed_memory()  # as the server does: big arrays reuse freed pages
    return offline.run(args.file, task=args.task, options=args.options, out=sys.stdout)


if __name__ == "__main__":
    sys.exit(main())
