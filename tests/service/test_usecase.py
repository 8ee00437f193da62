"""``usecase.StreamAccumulator``: batches merged like a binary counter give the answer of the
whole, and the distinct-score cap counts distinct scores, not rows or repeats across batches."""

from __future__ import annotations

import numpy as np
import pytest

from evalserve.core import evaluate
from evalserve.service.config import Settings
from evalserve.service.decode import Batch, Header
from evalserve.service.errors import PayloadTooLargeError
from evalserve.service.usecase import StreamAccumulator

HEADER = Header(task="binary", options={})


def _batch(labels: np.ndarray, scores: np.ndarray) -> Batch:
    return Batch(labels=labels.astype(np.float64), scores=scores)


def test_batches_merge_to_the_answer_of_the_whole() -> None:
    rng = np.random.default_rng(5)
    labels = (rng.random(10_000) < 0.3).astype(np.float64)
    scores = np.round(rng.random(10_000), 3)
    stream = StreamAccumulator(HEADER, Settings())
    for part in np.array_split(np.arange(10_000), 37):
        stream.add(_batch(labels[part], scores[part]))
    assert len(stream.levels) < 37  # merged as it went, not kept batch by batch
    streamed = stream.finish().to_dict()
    whole = evaluate("binary", labels, scores).to_dict()
    for name, value in whole["metrics"].items():
        assert streamed["metrics"][name] == pytest.approx(value, rel=1e-12, abs=1e-12), name


def test_repeated_scores_do_not_count_twice_against_the_cap() -> None:
    """100 batches of the same 1000 scores hold 1000 distinct scores: under a cap of 1500,
    although the levels together may list more before they are merged."""
    stream = StreamAccumulator(HEADER, Settings(max_stream_distinct_scores=1500))
    scores = np.linspace(0.0, 1.0, 1000)
    labels = np.arange(1000) % 2
    for _ in range(100):
        stream.add(_batch(labels, scores))
    assert stream.finish().to_dict()["n_samples"] == 100_000


def test_a_stream_over_the_distinct_score_cap_is_refused() -> None:
    stream = StreamAccumulator(HEADER, Settings(max_stream_distinct_scores=1500))
    labels = np.arange(1000) % 2
    stream.add(_batch(labels, np.linspace(0.0, 1.0, 1000)))
    with pytest.raises(PayloadTooLargeError) as error:
        stream.add(_batch(labels, np.linspace(2.0, 3.0, 1000)))
    assert error.value.field == "batch 2.scores"
    assert "1500 distinct scores" in str(error.value)
