"""The threads an evaluation sorts on in the server: ``threads_per_evaluation``, by default
the CPUs the process may run on shared among the ``workers``, set on the worker thread of each
evaluation (and so on the threads it starts)."""

from __future__ import annotations

import asyncio

import pytest

from evalserve.core import available_cpus, current_threads
from evalserve.service.config import Settings
from evalserve.service.evaluator import Evaluator


@pytest.mark.parametrize("workers", [1, 2, 3, 64])
def test_default_shares_the_cpus_among_the_workers(workers: int) -> None:
    settings = Settings(workers=workers)
    assert settings.evaluation_threads == max(1, available_cpus() // workers)
    assert settings.evaluation_threads * min(workers, available_cpus()) <= max(
        available_cpus(), workers
    )


def test_the_setting_overrides_the_default() -> None:
    assert Settings(threads_per_evaluation=5, workers=8).evaluation_threads == 5


@pytest.mark.parametrize("bad", [0, 65])
def test_a_count_out_of_range_is_refused(bad: int) -> None:
    with pytest.raises(ValueError, match="threads_per_evaluation"):
        Settings(threads_per_evaluation=bad)


@pytest.mark.parametrize("threads", [1, 3])
def test_an_evaluation_runs_with_the_evaluators_threads(threads: int) -> None:
    async def seen() -> int:
        evaluator = Evaluator(2, threads=threads)
        try:
            with evaluator.admitted():
                return await evaluator.run(current_threads)
        finally:
            evaluator.close()

    assert asyncio.run(seen()) == threads
