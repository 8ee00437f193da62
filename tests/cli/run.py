"""The ``evalserve`` command in a real subprocess (``python -m evalserve``), as a person runs
it, and the checks every refusal must pass: exit status 2, one line on stderr, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

COMMAND = [sys.executable, "-m", "evalserve"]


def evalserve(
    *args: str,
    stdin: str | bytes | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 180,
) -> subprocess.CompletedProcess[str]:
    """``evalserve ARGS`` run to its end; ``env`` is added to this process's environment."""
    environment = {**os.environ, **(env or {})}
    data = stdin.decode("latin-1") if isinstance(stdin, bytes) else stdin
    return subprocess.run(
        [*COMMAND, *args], input=data, capture_output=True, text=True, timeout=timeout,
        check=False, cwd=cwd, env=environment,
    )  # fmt: skip


def assert_refused(done: subprocess.CompletedProcess[str], *fragments: str) -> str:
    """Exit status 2, exactly one line on stderr (no traceback) that says every fragment,
    nothing on stdout; the line."""
    lines = done.stderr.splitlines()
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == "", done.stdout
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]
