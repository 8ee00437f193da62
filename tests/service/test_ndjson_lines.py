"""The NDJSON stream's line splitter: every line that is not blank, with its number, however the
body is cut into chunks; runs of blank lines skipped by scans, not line by line (200,000 blank
lines in one stream held the event loop, and the health probes, for a quarter of a second)."""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import AsyncIterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalserve.service import rest_stream
from evalserve.service.rest_stream import _lines

LINE = st.one_of(
    st.sampled_from([b"", b" ", b"\t", b"\r", b" \x0b\x0c ", b"{}", b'{"a": 1}', b" x "]),
    st.binary(max_size=12).filter(lambda line: b"\n" not in line),
)


def _split(body: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(cut, len(body)) for cut in cuts} | {0, len(body)})
    return [body[a:b] for a, b in itertools.pairwise(points)]


async def _chunks(parts: list[bytes]) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


def _collect(parts: list[bytes]) -> tuple[list[tuple[int, bytes]], list[tuple[int, int]]]:
    told: list[tuple[int, int]] = []

    async def run() -> list[tuple[int, bytes]]:
        buffered = lambda line, size: told.append((line, size))  # noqa: E731
        return [(n, bytes(line)) async for n, line in _lines(_chunks(parts), buffered)]

    return asyncio.run(run()), told


@given(lines=st.lists(LINE, max_size=30), end=st.booleans(), cuts=st.lists(st.integers(0, 400)))
def test_every_line_that_is_not_blank_with_its_number(
    lines: list[bytes], end: bool, cuts: list[int]
) -> None:
    body = b"\n".join(lines) + (b"\n" if end else b"")
    got, told = _collect(_split(body, cuts))
    complete = lines if end else lines[:-1]
    expected = [(n, line) for n, line in enumerate(complete, 1) if line and not line.isspace()]
    if not end and lines and lines[-1]:  # the last line, unfinished: as it came, even blank
        expected.append((len(lines), lines[-1]))
    assert got == expected
    assert all(size >= 0 for _, size in told)


def test_a_run_of_blank_lines_costs_no_step_per_line(monkeypatch: pytest.MonkeyPatch) -> None:
    searches = []
    content = rest_stream._CONTENT

    class Counted:
        def search(self, buffer: bytearray, start: int) -> re.Match[bytes] | None:
            searches.append(start)
            return content.search(buffer, start)

    monkeypatch.setattr(rest_stream, "_CONTENT", Counted())
    body = b'{"task": "binary"}\n' + b" \n\n\r\n" * 100_000 + b'{"labels": [1]}\n'
    chunks = list(range(0, len(body), 65_536))
    got, _ = _collect(_split(body, chunks))
    assert got == [(1, b'{"task": "binary"}'), (300_002, b'{"labels": [1]}')]
    # a scan per line that is not blank and per chunk, not one per line
    assert len(searches) <= 2 * (2 + len(chunks))
