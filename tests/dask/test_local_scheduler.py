"""``evalserve.dask`` on Dask's local schedulers (no ``distributed`` client): the ranges path
persists the checked partitions in this process and answers as ``evaluate`` does."""

from __future__ import annotations

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from evalserve import dask as evalserve_dask
from evalserve.core import InvalidInputError, evaluate

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
