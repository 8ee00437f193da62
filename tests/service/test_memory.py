"""service.memory: the allocator setting the service applies at start-up."""

from __future__ import annotations

import gc
import subprocess
import sys
import threading
import time

import pytest


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
def test_retaining_freed_memory_keeps_pages_for_the_next_array() -> None:
    # In a fresh interpreter: after the setting, a freed 80 MB array's pages are reused by the
    # next one, so allocating and touching it again costs (almost) no new page faults.
    program = """
import resource
import numpy as np
from evalserve.service.memory import retain_freed_memory
assert retain_freed_memory()
a = np.ones(10_000_000); del a
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
b = np.ones(10_000_000)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=60
    )
    faults = int(done.stdout.strip())
    # Without the setting this is about 80 MB / 4 KiB = 19,500 faults (or 40 with hugepages).
    assert faults < 1000


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
def test_trimming_runs_no_subprocess(monkeypatch: pytest.MonkeyPatch) -> None:
    # glibc is looked up once: ctypes.util.find_library forks ldconfig, which from a process
    # holding gigabytes stalled every door for 100-400 ms at each trim.
    from evalserve.service.memory import trim_freed_memory

    assert trim_freed_memory()

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("a trim started a process")

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    assert trim_freed_memory()


def test_the_trimmer_works_on_its_own_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    # Asking returns at once (a resize on the event loop never waits for a trim); the work
    # runs on the trimmer's thread, a cycle collection first when a burst is over.
    from evalserve.service import memory

    calls: list[tuple[str, str]] = []
    gate = threading.Event()

    def trim() -> bool:
        gate.wait(10)
        calls.append(("trim", threading.current_thread().name))
        return True

    monkeypatch.setattr(memory, "trim_freed_memory", trim)

    def collect() -> int:
        calls.append(("collect", ""))
        return 0

    monkeypatch.setattr(gc, "collect", collect)
    trimmer = memory.Trimmer()
    started = time.perf_counter()
    trimmer.trim()
    trimmer.trim()  # asked again while the first waits: served by one more run at most
    assert time.perf_counter() - started < 0.05
    assert calls == []
    gate.set()
    deadline = time.monotonic() + 10
    while trimmer.runs < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    runs = trimmer.runs
    trimmer.release()
    while trimmer.runs < runs + 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ("trim", "evalserve-trim") in calls
    assert calls[-2:] == [("collect", ""), ("trim", "evalserve-trim")]
    assert trimmer.runs <= 3
