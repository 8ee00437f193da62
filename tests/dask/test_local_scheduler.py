"""``evalserve.dask`` on Dask's local schedulers (no ``distributed`` client): the ranges path
persists the checked partitions in this process and answers as ``evaluate`` does."""

from __future__ import annotations

import os
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from dask._expr import HLGExpr
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
def test_the_ranges_graph_grows_as_partitions_plus_ranges(
    counted: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The graph after the cuts is written out key by key: one split a run of partitions (at
    most ``SPLIT_ROWS`` rows, one partition at least), one task a range for the pieces split
    on each worker (on a local scheduler, one worker), four tasks a range and one for the
    bests; with the progress line, a count a split. A task per partition and range would grow
    as their product (and a graph built by delayed calls took time quadratic in the
    partitions)."""
    monkeypatch.setattr(evalserve_dask, "SPLIT_ROWS", 120)
    partitions, cuts = 7, [0.2, 0.5, 0.8]
    ranges = len(cuts) + 1
    rng = np.random.default_rng(3)
    batches = [
        delayed(range_batch)(rng.random(50) < 0.5, rng.random(50), None) for _ in range(partitions)
    ]
    batches = list(persist(*batches, scheduler="synchronous"))
    groups = [evalserve_dask.Group("", list(range(partitions)))]
    rows = [50] * partitions
    assert groups[0].chunks(rows) == [[0, 1], [2, 3], [4, 5], [6]]
    graph = evalserve_dask._range_graph(
        batches, groups, rows, cuts, parse_options(None), None, counted=counted
    )
    own = [key for key in graph.tasks if isinstance(key, tuple) and "range-" in str(key[0])]
    splits = 4
    assert len(own) == splits + ranges + 4 * ranges + counted * splits
    assert len(graph.tasks) == len(own) + partitions + 1  # the batches, the bests
    for j in range(ranges):
        (taken,) = [key for key in own if str(key[0]).startswith("range-pieces-") and key[2] == j]
        assert graph.tasks[taken][:2] == (evalserve_dask._worker_pieces, j)
        assert len(graph.tasks[taken][2:]) == splits
    assert len(graph.counts) == (splits if counted else 0)
    assert graph.partitions == partitions and graph.placed == {}  # no worker known
    *per_range, bests = graph.targets
    assert all(isinstance(each, list) and len(each) == ranges for each in per_range)
    assert not isinstance(bests, list) and bests in graph.tasks
    with dask.config.set(scheduler="synchronous"):
        got_totals, *_ = evalserve_dask._compute_graph(graph, 0, None, "evaluating")
    assert sum(t.n_rows for t in got_totals) == 50 * partitions


def test_the_default_count_of_ranges() -> None:
    """One range per ``RANGE_ROWS`` rows, at least two per thread, two at least, 64 at most;
    on a local scheduler, two per CPU of this machine."""
    per = evalserve_dask.RANGE_ROWS
    assert evalserve_dask._default_ranges(1000, 1) == 2
    assert evalserve_dask._default_ranges(1000, 3) == 6
    assert evalserve_dask._default_ranges(5 * per + 1, 1) == 6
    assert evalserve_dask._default_ranges(1000 * per, 2) == 64
    assert evalserve_dask._default_ranges(0, 0) == 2
    batches = [delayed(range_batch)(np.array([0, 1]), np.array([0.2, 0.7]), None)]
    groups, threads = evalserve_dask._groups(list(persist(*batches, scheduler="synchronous")))
    assert [group.partitions for group in groups] == [[0]]
    assert threads == (os.cpu_count() or 1)


def test_the_ranges_graph_places_its_tasks() -> None:
    """With the workers known, each split and each worker's pieces run on the worker holding
    the partitions, and each range's join, totals and passes on one worker thread, taken in
    turn forth and back; the high-level graph restricts exactly those tasks, loosely."""
    rng = np.random.default_rng(4)
    batches = [delayed(range_batch)(rng.random(40) < 0.5, rng.random(40), None) for _ in range(3)]
    batches = list(persist(*batches, scheduler="synchronous"))
    groups = [evalserve_dask.Group("tcp://a:1", [0, 2], threads=2),
              evalserve_dask.Group("tcp://b:1", [1])]  # fmt: skip
    cuts = [0.1, 0.3, 0.5, 0.7, 0.9]  # six ranges
    graph = evalserve_dask._range_graph(
        batches, groups, [40] * 3, cuts, parse_options(None), None, counted=True
    )
    by_name: dict[str, list[tuple[Any, str]]] = {}
    for key, worker in graph.placed.items():
        assert isinstance(key, tuple)
        by_name.setdefault(str(key[0]).rsplit("-", 1)[0], []).append((key, worker))
    assert sorted(worker for _, worker in by_name["range-split"]) == ["tcp://a:1", "tcp://b:1"]
    for key, worker in by_name["range-pieces"]:
        assert worker == groups[key[1]].worker
    joins = dict(sorted((key[1], worker) for key, worker in by_name["range-join"]))
    slots = ["tcp://a:1", "tcp://a:1", "tcp://b:1"]
    assert [joins[j] for j in range(6)] == [slots[i] for i in (0, 1, 2, 2, 1, 0)]
    for name in ("range-totals", "range-pass", "range-finish"):
        assert {key[1]: worker for key, worker in by_name[name]} == joins
    assert [evalserve_dask._turn(j, 2) for j in range(6)] == [0, 1, 1, 0, 0, 1]
    layered = evalserve_dask._placed(graph)
    annotations = HLGExpr(layered).__dask_annotations__()  # None: the scheduler's choice
    restricted = {key: value for key, value in annotations["workers"].items() if value}
    assert restricted == {key: [worker] for key, worker in graph.placed.items()}
    loose = {key for key, value in annotations["allow_other_workers"].items() if value}
    assert loose == set(graph.placed) and set(annotations["workers"]) == set(layered)
