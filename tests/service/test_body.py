"""Request bodies on the event loop: read into one buffer without a long hold of the loop
(``service.body``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable

import pytest

from evalserve.service import body

MIB = 1 << 20


async def _chunks(parts: Iterable[bytes]) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


def _read(parts: list[bytes], declared: int | None) -> tuple[bytearray, list[int]]:
    reserved: list[int] = []
    read = asyncio.run(body.read_body(_chunks(parts), declared, reserved.append))
    return read, reserved


def test_a_declared_body_is_filled_in_place() -> None:
    parts = [b"a" * 1000, b"b" * 24, b"c" * 3000]
    read, reserved = _read(parts, 4024)
    assert type(read) is bytearray and read == b"".join(parts)
    assert reserved == []  # reserved by the caller, from the declared length


def test_a_body_shorter_than_declared_keeps_what_came() -> None:
    read, _ = _read([b"x" * 10], 100)
    assert read == b"x" * 10


def test_a_body_longer_than_declared_grows_and_reserves() -> None:
    read, reserved = _read([b"x" * 10, b"y" * 10], 15)
    assert read == b"x" * 10 + b"y" * 10
    assert reserved == [20]


def test_a_chunked_body_is_joined_and_reserved_as_it_arrives() -> None:
    parts = [bytes([i]) * (100 + i) for i in range(50)]
    read, reserved = _read(parts, None)
    assert read == b"".join(parts)
    sizes = [len(p) for p in parts]
    assert reserved == [sum(sizes[: i + 1]) for i in range(len(sizes))]


def test_the_join_of_a_chunked_body_gives_the_loop_turns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(body, "JOIN_BYTES", 1000)
    turns = 0

    async def ticking() -> None:
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(0)

    async def main() -> bytearray:
        ticker = asyncio.create_task(ticking())
        await asyncio.sleep(0)
        started = turns
        read = await body.read_body(_chunks([b"z" * 500] * 20), None, lambda _: None)
        ticker.cancel()
        assert turns - started >= 10  # the join of 10,000 bytes yielded every 1,000
        return read

    assert asyncio.run(main()) == b"z" * 10_000


def test_a_refused_chunk_stops_the_read() -> None:
    taken: list[bytes] = []

    async def parts() -> AsyncIterator[bytes]:
        for part in (b"a" * 10, b"b" * 10, b"c" * 10):
            taken.append(part)
            yield part

    def reserve(size: int) -> None:
        if size > 15:
            raise MemoryError(size)

    with pytest.raises(MemoryError):
        asyncio.run(body.read_body(parts(), None, reserve))
    assert len(taken) == 2


def test_uninitialized_buffers_have_the_size_asked() -> None:
    assert len(body.uninitialized(0)) == 0
    buffer = body.uninitialized(MIB)
    assert type(buffer) is bytearray and len(buffer) == MIB
    buffer[:3] = b"abc"
    assert buffer[:3] == b"abc"
