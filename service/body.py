"""A REST request body, read on the event loop without a long hold of it.

The body is copied as it arrives into one buffer, which the decoders read. Any operation on
the whole buffer at once holds the loop (and the GIL) for as long as it takes, page faults
included: ``bytearray(size)`` zeroes the buffer before it is filled, which took 0.16-0.7 s
for 160 MB on a 2-core VM, and a buffer grown chunk by chunk is copied whole at each of its
reallocations. So the buffer of a declared length is allocated without being zeroed (its
pages fault in chunk by chunk as the body fills it), and a chunked body is kept as its
chunks, joined a few MiB per turn of the loop once it has all arrived.
"""

from __future__ import annotations

import asyncio
import ctypes
from collections.abc import AsyncIterator, Callable
from typing import Final, cast

__all__ = ["JOIN_BYTES", "read_body", "uninitialized"]

# CPython's PyByteArray_FromStringAndSize(NULL, size): a bytearray whose bytes are left as
# malloc gives them (the interpreter's own API; bytearray(size) zeroes them).
_new_bytearray = ctypes.pythonapi.PyByteArray_FromStringAndSize
_new_bytearray.restype = ctypes.py_object
_new_bytearray.argtypes = (ctypes.c_char_p, ctypes.c_ssize_t)

# Bytes of a chunked body joined per turn of the event loop (about a millisecond).
JOIN_BYTES: Final = 4 << 20


def uninitialized(size: int) -> bytearray:
    """A ``bytearray`` of ``size`` bytes, not zeroed: its every byte is to be written before
    it is read."""
    return cast(bytearray, _new_bytearray(None, size))


async def read_body(
    chunks: AsyncIterator[bytes], declared: int | None, reserve: Callable[[int], None]
) -> bytearray:
    """The body whose chunks are ``chunks``: of ``declared`` bytes (its Content-Length), or,
    with None, as long as its chunks. ``reserve(size)`` is told each size the body grows past
    ``declared`` before the bytes are kept (it raises to refuse them)."""
    if declared is None:
        return await _joined(chunks, reserve)
    body = uninitialized(declared)
    received = 0
    async for chunk in chunks:
        end = received + len(chunk)
        if end > declared:  # not from a server that holds the request to its Content-Length
            reserve(end)
            body[received:] = chunk
        else:
            body[received:end] = chunk
        received = end
    if received < len(body):
        del body[received:]
    return body


async def _joined(chunks: AsyncIterator[bytes], reserve: Callable[[int], None]) -> bytearray:
    parts: list[bytes] = []
    size = 0
    async for chunk in chunks:
        reserve(size + len(chunk))
        parts.append(chunk)
        size += len(chunk)
    body = uninitialized(size)
    at = since_turn = 0
    for index, part in enumerate(parts):
        body[at : at + len(part)] = part
        parts[index] = b""  # its memory goes as soon as it is copied
        at += len(part)
        since_turn += len(part)
        if since_turn >= JOIN_BYTES:
            await asyncio.sleep(0)
            since_turn = 0
    return body
