"""The monitor state file: one JSON document, replaced whole and atomically, changed under a lock.

Every change takes the lock file ``<path>.lock`` (created exclusively, ``O_CREAT | O_EXCL``,
which every OS and both clients do alike), reads the document, changes it, writes it to a temp
file in the same folder, flushes it to disk and renames it over the document, then frees the
lock. A reader never takes the lock: a rename is atomic, so it sees the old document or the new
one, never a part. A lock older than ``STALE`` seconds is taken to be a crashed writer's and is
broken; a writer waits at most ``timeout`` seconds for the lock, then raises ``TimeoutError``.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["FORMAT", "STALE", "VERSION", "empty", "locked", "read", "write"]

FORMAT = "evalserve-monitor-states"
VERSION = 1
STALE = 20.0
Document = dict[str, Any]


def empty() -> Document:
    return {"format": FORMAT, "version": VERSION, "monitors": [], "retired": []}


def read(path: Path) -> Document:
    """The document at ``path`` (an empty one when there is no file yet); ``ValueError`` for a
    file that is not a monitor state file (it is left as it is)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return empty()
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not a monitor state file ({error})") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ValueError(f"{path}: not a monitor state file (no format {FORMAT!r})")
    if document.get("version") != VERSION:
        raise ValueError(
            f"{path}: monitor state file version {document.get('version')!r}; this client reads"
            f" version {VERSION}"
        )
    return document


def write(path: Path, document: Document) -> None:
    """Replace ``path`` by ``document`` atomically (temp file, fsync, rename)."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        with temp.open("w", encoding="utf-8") as file:
            json.dump(document, file, indent=1, sort_keys=True, allow_nan=False)
            file.write("\n")
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
    _sync_folder(path.parent)


def _sync_folder(folder: Path) -> None:
    """Make the rename durable where the OS allows opening a folder (not on Windows)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


@contextlib.contextmanager
def locked(
    path: Path, timeout: float, sleep: Callable[[float], None] = time.sleep
) -> Iterator[None]:
    """Hold ``<path>.lock`` for the block (see the module's doc)."""
    lock = path.with_name(f"{path.name}.lock")
    deadline = time.monotonic() + timeout
    while True:
        try:
            descriptor = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            _break_if_stale(lock)
            if time.monotonic() > deadline:
                message = f"{lock}: held by another writer for over {timeout:g} s"
                raise TimeoutError(message) from None
            sleep(0.005)
            continue
        break
    try:
        os.write(descriptor, f"{os.getpid()}\n".encode())
        os.close(descriptor)
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            lock.unlink()


def _break_if_stale(lock: Path) -> None:
    try:
        age = time.time() - lock.stat().st_mtime
    except FileNotFoundError:
        return
    if age > STALE:
        with contextlib.suppress(FileNotFoundError):
            lock.unlink()
