"""The Python client keeps each model's AUC monitor state: against a real server on loopback,
windows of one model go round on both transports, one-shot and streamed; a retried call sends
the same window and state (recording servers refusing the first attempt); a file store outlives
its client and is shared by writers without losing a window; a new baseline starts a new
monitor and keeps the old one; a state the server refuses is set aside and a new monitor
starts; two models are kept apart."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from evalserve_client import AsyncClient, Client, MonitorStates, Unavailable

from tests.clients.recording import grpc_recording, http_recording
from tests.clients.test_python_retries import busy
from tests.contract.servers import Service

BASELINE = {"roc_auc": 0.85, "roc_auc_variance": 0.0}
OTHER_BASELINE = {"roc_auc": 0.9, "roc_auc_variance": 0.0}
RANKER = {"name": "ranker", "version": "3", "segment": "eu"}
FILTER = {"name": "filter", "version": "1"}
TRANSPORTS = ("grpc", "rest")


def target(service: Service, transport: str) -> str:
    return service.grpc_target if transport == "grpc" else service.url


def rows(index: int, shift: float = 1.47, n: int = 400) -> tuple[list[float], list[float]]:
    """Binormal rows, 20% positives (AUC about 0.85 at the default shift)."""
    rng = np.random.default_rng(index)
    labels = (np.arange(n) % 5 == 0).astype(float)
    return labels.tolist(), rng.normal(labels * shift, 1.0).tolist()


def hour(client: Client, index: int, **extra: Any) -> Any:
    """One window of ``RANKER`` (or ``extra["model"]``) against ``BASELINE`` (or ...)."""
    y_true, y_score = rows(index)
    keywords: dict[str, Any] = {"model": RANKER, "baseline": BASELINE, **extra}
    return client.evaluate("binary", y_true, y_score, **keywords)


def windows(result: Any) -> int:
    count: int = result.monitor["roc_auc"]["windows"]
    return count


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_hourly_windows_go_round_one_shot_and_streamed(service: Service, transport: str) -> None:
    with Client(target(service, transport)) as client:
        first = hour(client, 0)
        assert first.monitor_restarted is None and first.window is not None
        client.stream_threshold = 100  # the next windows stream: the header carries the state
        results = [first, *(hour(client, index) for index in (1, 2))]
        client.stream_threshold = 1_000_000
        results.append(hour(client, 3))
    assert [windows(r) for r in results] == [1, 2, 3, 4]
    assert len({r.window for r in results}) == 4  # one id a call
    assert all(r.monitor["roc_auc"]["status"] == "ok" for r in results)
    assert not any(r.monitor["roc_auc"]["alarm"] for r in results)
    (entry,) = client.monitor_states.entries()
    assert entry.state == results[-1].monitor_state and entry.windows == 4
    assert entry.window == results[-1].window
    assert results[-1].to_dict()["monitor_state"] == base64.b64encode(entry.state).decode()


def test_the_callers_window_id_is_counted_once(service: Service) -> None:
    with Client(service.url) as client:
        hour(client, 0, window="2026-11-27T10")
        again = hour(client, 0, window="2026-11-27T10")
        after = hour(client, 1, window="2026-11-27T11")
    assert windows(again) == 1 and "counted already" in again.monitor["roc_auc"]["reason"]
    assert again.window == "2026-11-27T10"
    assert windows(after) == 2


def test_two_models_are_kept_apart(service: Service) -> None:
    with Client(service.grpc_target) as client:
        for index in range(3):
            hour(client, index)
            if index < 2:
                hour(client, 10 + index, model=FILTER)
        assert windows(hour(client, 20, model=FILTER)) == 3
        assert windows(hour(client, 21)) == 4
        # without a model there is nothing to keep: each call is a first window
        y_true, y_score = rows(30)
        lone = client.evaluate("binary", y_true, y_score, baseline=BASELINE)
        assert windows(lone) == 1 and lone.window is None
    counts = {e.model.name: e.windows for e in client.monitor_states.entries()}
    assert counts == {"ranker": 4, "filter": 3}


def test_the_async_client_keeps_the_state_too(service: Service, tmp_path: Path) -> None:
    async def main() -> list[int]:
        path = tmp_path / "monitors.json"
        async with AsyncClient(service.grpc_target, monitor_states=path) as client:
            counts = []
            for index in range(3):
                y_true, y_score = rows(index)
                result = await client.evaluate(
                    "binary", y_true, y_score, model=RANKER, baseline=BASELINE
                )
                counts.append(windows(result))
            return counts

    assert asyncio.run(main()) == [1, 2, 3]


# --- the file store -----------------------------------------------------------------------------


def test_the_file_store_outlives_its_client(service: Service, tmp_path: Path) -> None:
    path = tmp_path / "monitors.json"
    with Client(service.url, monitor_states=path) as client:
        hour(client, 0)
        hour(client, 1)
    document = json.loads(path.read_text())
    assert document["format"] == "evalserve-monitor-states" and document["version"] == 1
    (stored,) = document["monitors"]
    assert stored["model"] == RANKER and stored["windows"] == 2
    assert base64.b64decode(stored["state"]).startswith(b"EVALSERVE-MONIT\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["monitors.json"]  # no temp, no lock
    with Client(service.grpc_target, monitor_states=MonitorStates(path)) as restarted:
        assert windows(hour(restarted, 2)) == 3


def test_a_file_that_is_not_a_state_file_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "monitors.json"
    path.write_text('{"something": "else"}')
    with pytest.raises(ValueError, match="not a monitor state file"):
        MonitorStates(path)
    assert path.read_text() == '{"something": "else"}'


def test_writers_sharing_a_file_lose_no_window(service: Service, tmp_path: Path) -> None:
    """Four clients, each with its own store object on one file (as four processes would be):
    two feed a model each, two feed one model together; every window is counted."""
    path = tmp_path / "monitors.json"
    errors: list[BaseException] = []

    def feed(model: dict[str, str], start: int) -> None:
        try:
            with Client(service.url, monitor_states=MonitorStates(path)) as client:
                for index in range(start, start + 4):
                    hour(client, index, model=model)
        except BaseException as error:
            errors.append(error)

    shared = {"name": "shared"}
    jobs = [(RANKER, 0), (FILTER, 10), (shared, 20), (shared, 30)]
    threads = [threading.Thread(target=feed, args=job) for job in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    counts = {e.model.name: e.windows for e in MonitorStates(path).entries()}
    assert counts == {"ranker": 4, "filter": 4, "shared": 8}


# --- a new baseline, a refused state ------------------------------------------------------------


def test_a_new_baseline_starts_a_new_monitor_and_keeps_the_old(service: Service) -> None:
    with Client(service.url) as client:
        hour(client, 0)
        hour(client, 1)
        moved = hour(client, 2, baseline=OTHER_BASELINE)
        assert windows(moved) == 1
        assert moved.monitor_restarted is not None and "2 windows" in moved.monitor_restarted
        assert windows(hour(client, 3, baseline=OTHER_BASELINE)) == 2
        back = hour(client, 4)  # the old baseline again: its monitor goes on
        assert windows(back) == 3 and back.monitor_restarted is None
        tighter = hour(client, 5, options={"drift_tolerance": 0.02})  # new options: new monitor
        assert windows(tighter) == 1 and tighter.monitor_restarted is not None
    assert sorted(e.windows for e in client.monitor_states.entries()) == [1, 2, 3]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_refused_state_is_set_aside_and_a_new_monitor_starts(
    service: Service, transport: str, tmp_path: Path
) -> None:
    """A state the server refuses (here one made for another tolerance, written into the file
    as an old client or a changed server default would leave it) is not lost: it moves to the
    store's retired list with the server's reason, and the window starts a new monitor."""
    path = tmp_path / "monitors.json"
    with Client(service.url, monitor_states=path) as client:
        other = hour(client, 0, options={"drift_tolerance": 0.05}, model={"name": "scratch"})
    document = json.loads(path.read_text())
    with Client(target(service, transport), monitor_states=path) as client:
        hour(client, 1)
        hour(client, 2)
        document = json.loads(path.read_text())
        stale = base64.b64encode(other.monitor_state or b"").decode()
        for entry in document["monitors"]:
            if entry["model"]["name"] == "ranker":
                entry["state"] = stale
        path.write_text(json.dumps(document))
        restarted = hour(client, 3)
        assert windows(restarted) == 1
        assert restarted.monitor_restarted is not None
        assert "refused" in restarted.monitor_restarted
        assert windows(hour(client, 4)) == 2
    (retired,) = client.monitor_states.retired()
    assert retired.model.name == "ranker" and retired.retired is not None
    assert "drift_tolerance" in retired.retired and retired.windows == 2


# --- retries -------------------------------------------------------------------------------------


def _sent(units: list[list[dict[str, Any]]]) -> list[tuple[str | None, str | None]]:
    """(window, state) of each call's header."""
    return [(u[0]["header"].get("window"), u[0]["header"].get("monitor_state")) for u in units]


def test_a_retried_rest_call_sends_the_same_window_and_state() -> None:
    with http_recording(refusals=[]) as (url, seen), Client(url, backoff=0.01) as client:
        hour(client, 0)
        seen.refusals.append((503, {"retry-after": "0"}))
        result = hour(client, 1)
        client.stream_threshold = 100
        seen.refusals.append((503, {"retry-after": "0"}))
        streamed = hour(client, 2)
    calls = _sent(seen.received)
    assert len(calls) == 5
    assert calls[1] == calls[2] and calls[3] == calls[4]  # each retry: the same window and state
    assert calls[1][0] == result.window and calls[3][0] == streamed.window
    assert calls[1][1] is not None and calls[3][1] is not None
    assert windows(result) == 2 and windows(streamed) == 3  # each window counted once


def test_a_retried_grpc_call_sends_the_same_window_and_state() -> None:
    with grpc_recording() as (address, recording), Client(address, backoff=0.01) as client:
        hour(client, 0)
        recording.refusals.append(busy())
        result = hour(client, 1)
        client.stream_threshold = 100
        recording.refusals.append(busy())
        streamed = hour(client, 2)
    calls = _sent(recording.received)
    assert len(calls) == 5
    assert calls[1] == calls[2] and calls[3] == calls[4]
    assert calls[1][0] == result.window and calls[3][0] == streamed.window
    assert windows(result) == 2 and windows(streamed) == 3


def test_a_failed_call_keeps_the_stored_state() -> None:
    """A call that fails for good stores nothing: the next call sends the last good state."""
    with grpc_recording() as (address, recording), Client(address, retries=0) as client:
        first = hour(client, 0)
        recording.refusals.append(busy())
        with pytest.raises(Unavailable, match="busy"):
            hour(client, 1)
        after = hour(client, 2)
    assert windows(after) == 2
    assert _sent(recording.received)[-1][1] == base64.b64encode(first.monitor_state or b"").decode()
