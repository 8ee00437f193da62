"""REST streams: ``POST /v1/evaluate/stream``, NDJSON lines merged as they arrive.

The lines of a body are cut as its chunks arrive (``_lines``); each non-blank line is one
message of the use case's stream protocol (``service.streams.StreamSession``), whose errors
name it ``line k``. The stream stops at its client's leaving (``connection.unless_gone``) and
after ``stream_idle_timeout_seconds`` without a line.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable

from starlette.requests import Request

from evalserve.core import EvaluationResult, InvalidInputError
from evalserve.report import report_options
from evalserve.service.budget import Reservation
from evalserve.service.config import Settings
from evalserve.service.errors import (
    MalformedRequestError,
    RequestTimeoutError,
    ServiceError,
    StreamProtocolError,
)
from evalserve.service.evaluator import Evaluator
from evalserve.service.json_codec import json_kind, stream_line_from_json
from evalserve.service.json_parse import parse_json
from evalserve.service.records import Header
from evalserve.service.streams import StreamMessage, StreamSession
from evalserve.service.usecase import EvaluationObserver

__all__ = ["NdjsonStream"]


async def _lines(
    chunks: AsyncIterator[bytes], buffered: Callable[[int, int], None]
) -> AsyncIterator[tuple[int, bytearray]]:
    """Numbered lines of a body as it arrives, but for blank ones (white space only, which a
    stream skips); a line may span any number of chunks. ``buffered(line, size)`` is told the
    size of the unfinished line ``line`` as it grows (before the bytes are kept). Runs of blank
    lines are skipped by C scans, not line by line: 200,000 of them held the event loop for
    a quarter of a second."""
    buffer = bytearray()
    number = 0
    async for chunk in chunks:
        search_from = len(buffer)  # the part before the new chunk holds no newline
        buffered(number + 1, len(buffer) + len(chunk))
        buffer += chunk
        start = 0
        while True:
            content = _CONTENT.search(buffer, start)
            # the complete lines before the one that holds ``content`` are blank
            last_blank = buffer.rfind(
                b"\n", start, len(buffer) if content is None else content.start()
            )
            if last_blank >= 0:
                number += buffer.count(b"\n", start, last_blank + 1)
                start = last_blank + 1
                search_from = max(search_from, start)
            if content is None or (end := buffer.find(b"\n", search_from)) < 0:
                break
            number += 1
            yield number, buffer[start:end]
            start = search_from = end + 1
        if start:
            del buffer[:start]
    if buffer:
        yield number + 1, buffer


# The first byte of a line that is not blank (bytes.isspace's white space is these six).
_CONTENT = re.compile(rb"[^ \t\n\r\x0b\x0c]")


def _blank(line: bytearray) -> bool:
    """A line of white space only, which a stream skips (``isspace`` stops at the first other
    byte: a batch line costs nothing here)."""
    return not line or line.isspace()


async def _body(request: Request, read: asyncio.Event) -> AsyncIterator[bytes]:
    """The body's chunks as they arrive; ``read`` is set once the last has arrived."""
    async for chunk in request.stream():
        yield chunk
    read.set()


class _LinePlaces:
    """How the errors of an NDJSON stream name its places: line k (blank lines count)."""

    def place(self, position: int) -> str:
        return f"line {position}"

    def no_header(self, position: int) -> StreamProtocolError:
        return StreamProtocolError(
            f"line {position}", "expected the header first: a JSON object with task"
        )

    def second_header(self, position: int, header_position: int) -> StreamProtocolError:
        return StreamProtocolError(
            f"line {position}", f"a second header; the header was line {header_position}"
        )

    def empty(self) -> StreamProtocolError:
        return StreamProtocolError(
            "line 1", "the stream is empty; expected a header line with task"
        )

    def located(
        self, error: ServiceError | InvalidInputError, position: int, batch: str
    ) -> Exception:
        """The same error with its field located on the stream's line (the use case counts
        batches, which are the non-blank lines)."""
        if error.field == batch or error.field.startswith(f"{batch}."):
            field = f"line {position}{error.field[len(batch) :]}"
        else:
            field = f"line {position}.{error.field}"
        return type(error)(field, error.message)


def _line_reader(
    settings: Settings, number: int, report: bool
) -> Callable[[bytes | bytearray], StreamMessage]:
    """Each line's reader; ``report``: the answer is the report, whose options go under the
    header's own."""

    def read(line: bytes | bytearray) -> StreamMessage:
        try:
            document = parse_json(line)  # a long line's columns are read in slices
        except MalformedRequestError as error:
            raise MalformedRequestError(f"line {number}", error.message) from None
        if not isinstance(document, dict):
            raise MalformedRequestError(
                f"line {number}", f"expected a JSON object, but got {json_kind(document)}"
            )
        header = "task" in document
        options = document.get("options")
        if report and header and (options is None or isinstance(options, dict)):
            document["options"] = report_options(options, settings.max_curve_points)
        return StreamMessage(header, lambda: stream_line_from_json(document, settings))

    return read


class NdjsonStream:
    """One ``POST /v1/evaluate/stream``: its lines, merged as they arrive, then its answer."""

    def __init__(
        self,
        settings: Settings,
        observer: EvaluationObserver,
        reservation: Reservation,
        encode: Callable[[EvaluationResult, Header], bytes],
        *,
        report: bool = False,
    ) -> None:
        self.settings = settings
        self.report = report
        self.session = StreamSession(settings, observer, reservation, _LinePlaces())
        self.encode = encode
        self.line_reserved = 0

    def buffered(self, number: int, size: int) -> None:
        """A line of ``size`` bytes so far is being received: reserve it (on the loop: a
        resize takes a lock, nothing more)."""
        if size > self.line_reserved:
            self.session.receiving(number, size)
            self.line_reserved = size

    def feed(self, number: int, line: bytearray) -> None:
        """Merge one non-blank line (CPU-bound: through ``Evaluator.run``)."""
        self.line_reserved = 0  # the next line reserves anew
        self.session.feed(number, line, "json", _line_reader(self.settings, number, self.report))

    async def merged(
        self, request: Request, evaluator: Evaluator, body_read: asyncio.Event
    ) -> bytes:
        """Merge the stream's lines as they arrive, then its answer; ``body_read`` is set once
        the body has arrived whole."""
        idle = self.settings.stream_idle_timeout_seconds
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(idle) as waiting:
                async for number, line in _lines(_body(request, body_read), self.buffered):
                    if _blank(line):  # skipped on the loop: no thread hop, no idle reset
                        continue
                    waiting.reschedule(None)  # a batch's own work is not idle time
                    await evaluator.run(self.feed, number, line)
                    waiting.reschedule(loop.time() + idle)
        except TimeoutError:
            raise RequestTimeoutError(
                "body",
                f"the stream sent no batch for {idle:g} s (stream_idle_timeout_seconds) after "
                f"{self.session.n_batches} batches; it was not evaluated",
            ) from None
        return await evaluator.run(self.session.finish, self.encode)
