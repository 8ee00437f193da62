"""The ``evalserve`` command in a real subprocess (``python -m evalserve``), as a person runs
it, and the checks every refusal must pass: exit status 2, one line on stderr, no traceback."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
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


def on_a_terminal(command: list[str], stdout: Path, timeout: float = 300) -> tuple[int, str]:
    """``command`` run with its stderr on a pseudo-terminal (stdout to the file ``stdout``), as
    a person at a terminal runs it: its status and what the terminal got."""
    leader, follower = pty.openpty()
    with stdout.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=follower)
    os.close(follower)
    seen = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the process closed its end
                break
            if not chunk:
                break
            seen += chunk
        elif process.poll() is not None:
            break
    process.wait(timeout=60)
    os.close(leader)
    return process.returncode, seen.decode()
