"""``evalserve.dask`` on Dask's local schedulers (no ``distributed`` client): the ranges path
persists the checked partitions in this process and answers as ``evaluate`` does."""

from __future__ import annotations

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from dask.base import persist
from dask.delayed import delayed

from evalserve import dask as evalserve_dask
from evalserve.core import InvalidInputError, evaluate, parse_options
from evalserve.core.ranges import range_batch

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("scheduler", ["synchronous", "threads"])
@pytest.mark.parametrize("method", ["tree", "ranges"])
def test_a_local_scheduler_gives_the_in_process_answer(scheduler: str, method: str) -> None:
    rng = np.random.default_rng(8)
    n = 6000
    frame = pd.DataFrame({"label": rng.integers(0, 2, n), "score": np.round(rng.random(n), 3)})
    with dask.config.set(scheduler=scheduler):
        got = evalserve_dask.evaluate(
            dd.from_pandas(frame, npartitions=5), task="binary", method=method, ranges=3
        )
    want = evaluate("binary", frame.label.to_numpy(), frame.score.to_numpy())
    for name, value in want.metrics.items():
        if value is None:
            assert got.metrics[name] is None, name
        else:
            assert got.metrics[name] == pytest.approx(value, rel=1e-12, abs=1e-12), name


def test_the_progress_callback_needs_a_distributed_client() -> None:
    frame = pd.DataFrame({"label": [0, 1, 0, 1], "score": [0.1, 0.9, 0.2, 0.8]})
    with dask.config.set(scheduler="synchronous"), pytest.raises(InvalidInputError) as refused:
        evalserve_dask.evaluate(
            dd.from_pandas(frame, npartitions=2), method="ranges", progress=lambda *call: None
        )
    assert refused.value.field == "progress"


@pytest.mark.parametrize("counted", [False, True])
def test_the_ranges_graph_grows_as_partitions_plus_ranges(counted: bool) -> None:
    """The graph after the cuts is written out key by key: one split a partition, one task a
    range for the pieces split on each worker (on a local scheduler, one worker), six tasks
    a range and one for the bests; with the progress line, a row count a partition. A task per
    partition and range would grow as their product (and a graph built by delayed calls took
    time quadratic in the partitions)."""
    partitions, cuts = 7, [0.2, 0.5, 0.8]
    ranges = len(cuts) + 1
    rng = np.random.default_rng(3)
    batches = [
        delayed(range_batch)(rng.random(50) < 0.5, rng.random(50), None) for _ in range(partitions)
    ]
    batches = list(persist(*batches, scheduler="synchronous"))
    graph = evalserve_dask._range_graph(batches, cuts, parse_options(None), None, counted=counted)
    own = [key for key in graph.tasks if isinstance(key, tuple) and "range-" in str(key[0])]
    assert len(own) == partitions + ranges + 6 * ranges + counted * partitions
    assert len(graph.tasks) == len(own) + partitions + 1  # the batches, the bests
    for j in range(ranges):
        (taken,) = [key for key in own if str(key[0]).startswith("range-pieces-") and key[2] == j]
        assert graph.tasks[taken][1:3] == (j, list(range(partitions)))
    assert len(graph.counts) == (partitions if counted else 0)
    *per_range, bests = graph.targets
    assert all(isinstance(each, list) and len(each) == ranges for each in per_range)
    assert not isinstance(bests, list) and bests in graph.tasks
    with dask.config.set(scheduler="synchronous"):
        got_totals, *_ = evalserve_dask._compute_graph(graph, 0, None, "evaluating")
    assert sum(t.n_rows for t in got_totals) == 50 * partitions
