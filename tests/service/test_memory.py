"""service.memory: the allocator setting the service applies at start-up."""

from __future__ import annotations

import subprocess
import sys

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
