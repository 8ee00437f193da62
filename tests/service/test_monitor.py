"""The AUC monitor through the service: its state goes out with each answer and comes back with
the next window, on every transport; retries are idempotent; its gauges follow the last window.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from evalserve.service.config import Settings
from evalserve.v1 import evaluation_pb2 as pb
from tests.service.test_metrics import (
    Stack,
    evaluated,
    model_labels,
    one,
    post_stream,
    scrape,
    stack,
)

KNOWN = {"roc_auc": 0.85, "roc_auc_variance": 0.0}
LABELS = model_labels("ranker", "3", "eu")
MODEL = {"name": "ranker", "version": "3", "segment": "eu"}


@pytest.fixture(scope="module")
def served() -> Iterator[Stack]:
    with stack(Settings(host="127.0.0.1")) as running:
        yield running


def window(auc_shift: float, seed: int, n: int = 2000) -> dict[str, list[float]]:
    """Binormal rows, 20% positives; ``auc_shift`` the positives' mean."""
    rng = np.random.default_rng(seed)
    labels = (np.arange(n) % 5 == 0).astype(float)
    scores = rng.normal(labels * auc_shift, 1.0)
    return {"labels": labels.tolist(), "scores": scores.tolist()}


def body(
    rows: dict[str, list[float]], state: str | None, name: str, **extra: Any
) -> dict[str, Any]:
    return {
        "task": "binary", **rows, "baseline": KNOWN, "model": MODEL,
        "monitor_state": state, "window": name, **extra,
    }  # fmt: skip


def test_the_state_goes_round_and_the_monitor_alarms_on_a_real_drop(served: Stack) -> None:
    state = None
    verdicts = []
    for index in range(6):
        shift = 1.47 if index < 3 else 0.6  # AUC about 0.85, then about 0.66
        answer = evaluated(served, body(window(shift, index), state, f"w{index}"))
        verdicts.append(answer["monitor"]["roc_auc"])
        state = answer["monitor_state"]
        assert isinstance(state, str) and base64.b64decode(state)
    assert [v["windows"] for v in verdicts] == [1, 2, 3, 4, 5, 6]
    assert not any(v["alarm"] for v in verdicts[:3])
    assert verdicts[-1]["alarm"] and verdicts[-1]["statistic"] >= verdicts[-1]["threshold"]
    assert verdicts[0]["threshold"] == 8760.0  # the default promise: a year of hourly windows
    scraped = scrape(served)
    labels = {**LABELS, "metric": "roc_auc"}
    assert one(scraped, "evalserve_model_monitor_alarm", **labels) == 1.0
    assert one(scraped, "evalserve_model_monitor_threshold", **labels) == 8760.0
    statistic = one(scraped, "evalserve_model_monitor_statistic", **labels)
    assert statistic == pytest.approx(verdicts[-1]["statistic"], rel=1e-12)


def test_a_retry_with_either_state_is_not_counted_twice(served: Stack) -> None:
    first = evaluated(served, body(window(0.9, 10), None, "2026-11-27T10"))
    second = evaluated(served, body(window(0.9, 11), first["monitor_state"], "2026-11-27T11"))
    with_old = evaluated(served, body(window(0.9, 11), first["monitor_state"], "2026-11-27T11"))
    with_new = evaluated(served, body(window(0.9, 11), second["monitor_state"], "2026-11-27T11"))
    assert with_old["monitor"] == second["monitor"]
    assert with_old["monitor_state"] == second["monitor_state"]
    assert with_new["monitor_state"] == second["monitor_state"]
    assert with_new["monitor"]["roc_auc"]["windows"] == 2
    assert "counted already" in with_new["monitor"]["roc_auc"]["reason"]


def test_grpc_and_streams_carry_the_same_state(served: Stack) -> None:
    rows = window(1.2, 20)
    first = evaluated(served, body(rows, None, "a"))
    state = base64.b64decode(first["monitor_state"])
    request = pb.EvaluateRequest(
        task=pb.TASK_BINARY, labels=rows["labels"], scores=rows["scores"],
        baseline=pb.Baseline(roc_auc=0.85, roc_auc_variance=0.0), monitor_state=state, window="b",
    )  # fmt: skip
    by_grpc = served.stub.Evaluate(request)
    by_rest = evaluated(served, body(rows, first["monitor_state"], "b"))
    assert by_grpc.monitor_state == base64.b64decode(by_rest["monitor_state"])
    assert by_grpc.monitor["roc_auc"].statistic == by_rest["monitor"]["roc_auc"]["statistic"]
    header = body({}, first["monitor_state"], "b")
    streamed = post_stream(served, header, rows)
    assert streamed.status_code == 200, streamed.text
    assert streamed.json()["monitor_state"] == by_rest["monitor_state"]


def test_without_a_baseline_there_is_no_monitor(served: Stack) -> None:
    rows = window(1.2, 30)
    answer = evaluated(served, {"task": "binary", **rows})
    assert answer["monitor"] == {} and answer["monitor_state"] is None
