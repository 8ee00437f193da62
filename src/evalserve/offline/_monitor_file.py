"""``--monitor-state FILE``: the AUC monitor's state kept in a file between runs.

The file holds the bytes the last window's result returned (``result.monitor_state``); a run
reads it (absent: the model's first window), evaluates, and replaces it with the new state,
atomically (a temporary file in the same folder, then a rename), so an interrupted run leaves
the old state whole. ``--window`` names the run's window: a run of the same window again
(a retry) does not count it twice.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MonitorFile"]


@dataclass(frozen=True, slots=True)
class MonitorFile:
    """Where the monitor's state lives, and the window this run evaluates (None: unnamed)."""

    path: str
    window: str | None = None

    def read(self) -> bytes | None:
        """The stored state; None when the file does not exist yet. ``OSError`` otherwise."""
        try:
            return Path(self.path).read_bytes()
        except FileNotFoundError:
            return None

    def write(self, state: bytes) -> None:
        """Replace the stored state with ``state``, atomically. ``OSError`` when it cannot."""
        target = Path(self.path)
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or ".")
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(state)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
