"""Waiting for a server process started by a test: its stderr read line by line until the
line ``evalserve serve`` prints once both servers listen."""

from __future__ import annotations

import re
import subprocess
import threading
import time

READY_LINE = re.compile(r"REST on http://([\d.]+):(\d+), gRPC on ([\d.]+):(\d+)")


def wait_ready(
    process: subprocess.Popen[str], lines: list[str], timeout: float
) -> tuple[re.Match[str], threading.Thread] | None:
    """Read ``process``'s stderr into ``lines`` until its ready line: the line's match (host,
    REST port, host, gRPC port) and a daemon thread that goes on reading the rest into
    ``lines``, so the pipe never fills. None when the stream ends or ``timeout`` seconds pass
    first."""
    stream = process.stderr
    assert stream is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            return None
        lines.append(line)
        found = READY_LINE.search(line)
        if found:
            reader = threading.Thread(target=lambda: lines.extend(stream), daemon=True)
            reader.start()
            return found, reader
    return None
