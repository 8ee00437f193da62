"""The local cluster ``evalserve evaluate --engine dask`` starts (``evalserve.dask.local_client``):
worker processes of one thread whose tasks reuse the pages of the arrays they freed."""

from __future__ import annotations

import os
import resource

import numpy as np
import pytest

from evalserve.dask import WORKER_ENVIRON, local_client

pytestmark = pytest.mark.slow

# An array of more than the 64 MiB a thread's own malloc arena can hold (numpy asks for huge
# pages above 4 MiB: 50 faults of 2 MiB when its pages are new, 25,600 of 4 KiB without them).
LARGE = 100 * 2**20


def _faults_of_a_second_array() -> int:
    """On a worker's task thread: the page faults of a large array made and filled after one
    of the same size was made, filled and freed."""
    first = np.ones(LARGE // 8)
    del first
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    second = np.ones(LARGE // 8)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    del second
    return faults


def test_a_task_reuses_the_pages_of_a_freed_array() -> None:
    with local_client(n_workers=1, dashboard_address=":0") as client:
        seen = client.run(lambda: {name: os.environ.get(name) for name in WORKER_ENVIRON})
        assert list(seen.values()) == [WORKER_ENVIRON]
        workers = client.scheduler_info()["workers"]
        assert [worker["nthreads"] for worker in workers.values()] == [1]
        faults = client.submit(_faults_of_a_second_array, pure=False).result()
    assert faults < 25, faults
