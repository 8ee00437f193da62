"""A one-line progress report of a streamed upload on stderr: rows (images, for detection) handed
to the transport out of the total, rewritten in place.

Written here rather than taken from tqdm: the client needs one counter on one line, which is
twenty lines, and a library that lands in other services' dependency trees should not bring a
dependency for it.
"""

from __future__ import annotations

import sys
from typing import TextIO

__all__ = ["ProgressLine", "shown"]


def shown(progress: bool | None, streamed: bool) -> bool:
    """Whether a call reports progress: never for a single message; for a stream, when asked,
    or by default when stderr is a terminal (so logs and CI output stay clean)."""
    if not streamed:
        return False
    if progress is None:
        return sys.stderr.isatty()
    return progress


class ProgressLine:
    """``line(rows)`` adds ``rows`` sent and redraws ``evalserve: 500,000/1,000,000 rows sent
    (50%)`` (``unit`` names what is counted: "images" for detection); the line ends when the
    total is reached or at ``close()``."""

    def __init__(self, total: int, stream: TextIO | None = None, *, unit: str = "rows") -> None:
        self.total = total
        self.unit = unit
        self.sent = 0
        self._stream = sys.stderr if stream is None else stream
        self._open = False

    def __call__(self, rows: int) -> None:
        self.sent += rows
        percent = 100 * self.sent // max(self.total, 1)
        self._stream.write(
            f"\revalserve: {self.sent:,}/{self.total:,} {self.unit} sent ({percent}%)"
        )
        self._open = True
        if self.sent >= self.total:
            self.close()
        self._stream.flush()

    def close(self) -> None:
        if self._open:
            self._stream.write("\n")
            self._stream.flush()
            self._open = False
