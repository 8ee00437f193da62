"""A progress line on a terminal: rows, rows/s and files (the dask engine: partitions), redrawn
at most a few times a second; nothing at all when the stream is not a terminal (piped,
redirected, under CI)."""

from __future__ import annotations

import time
from typing import TextIO

__all__ = ["Progress"]

REDRAW_SECONDS = 0.2


class Progress:
    def __init__(
        self, stream: TextIO, files: int, *, enabled: bool | None = None, unit: str = "file"
    ) -> None:
        self.stream = stream
        self.files = files
        self.unit = unit  # what ``files`` counts: file, or the dask engine's partition
        self.step = ""  # shown first when set (the dask engine: sampling, evaluating)
        self.enabled = stream.isatty() if enabled is None else enabled
        self.rows = 0
        self.files_done = 0
        self.started = time.monotonic()
        self._drawn = 0.0
        self._width = 0

    def add_rows(self, rows: int) -> None:
        self.rows += rows
        self._draw()

    def file_done(self) -> None:
        self.files_done += 1
        self._draw()

    def line(self) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        step = f"{self.step}: " if self.step else ""
        return (
            f"{step}{self.rows:,} rows, {self.rows / elapsed:,.0f} rows/s, "
            f"{self.files_done}/{self.files} {self.unit}{'s' if self.files != 1 else ''}"
        )

    def restart(self, step: str, files: int) -> None:
        """A new step over ``files`` units: its own rows and rate, from now; the step before
        it keeps its final figures on a line of its own."""
        if self.step and self.enabled:
            self.close()
            self._width = 0
        self.step, self.files = step, files
        self.rows = self.files_done = 0
        self.started = time.monotonic()
        self._draw(force=True)

    def _draw(self, *, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._drawn < REDRAW_SECONDS:
            return
        self._drawn = now
        text = self.line()
        self.stream.write("\r" + text.ljust(self._width))
        self.stream.flush()
        self._width = len(text)

    def close(self) -> None:
        """The final figures, and the cursor back at the start of a fresh line."""
        if self.enabled:
            self._draw(force=True)
            self.stream.write("\n")
            self.stream.flush()
