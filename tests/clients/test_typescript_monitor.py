"""The TypeScript client keeps each model's AUC monitor state, as the Python client does:
against a real server on loopback, windows of one model go round on both transports, one-shot
and streamed; a retried call sends the same window and state; the state file outlives the Node
process and the Python client carries on from it (the same format and fingerprint); a new
baseline starts a new monitor and keeps the old; a refused state is set aside; two models are
kept apart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from evalserve_client import Client

from tests.clients.recording import grpc_recording, http_recording
from tests.clients.test_python_monitor import BASELINE, FILTER, OTHER_BASELINE, RANKER, rows
from tests.clients.test_python_retries import busy
from tests.clients.test_typescript import ok, run_cases, ts_case
from tests.contract.servers import Service

TRANSPORTS = ("grpc", "rest")


def window_case(
    case_id: str, target: str, index: int, settings: dict[str, Any], **opts: Any
) -> dict[str, Any]:
    y_true, y_score = rows(index)
    given: dict[str, Any] = {"model": RANKER, "baseline": BASELINE, **opts}
    return ts_case(case_id, target, "binary", y_true, y_score, settings=settings, **given)


def windows(answer: dict[str, Any]) -> int:
    count: int = answer["monitor"]["roc_auc"]["windows"]
    return count


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_windows_go_round_and_the_file_outlives_node(
    service: Service, transport: str, tmp_path: Path
) -> None:
    target = service.grpc_target if transport == "grpc" else service.url
    path = str(tmp_path / "monitors.json")
    one_shot = {"monitorStates": path}
    streamed = {"monitorStates": path, "streamThreshold": 100}  # another client, the same file
    cases = [
        window_case("w0", target, 0, one_shot),
        window_case("w1", target, 1, streamed),
        window_case("w2", target, 2, one_shot, window="2026-11-27T12"),
        window_case("again", target, 2, streamed, window="2026-11-27T12"),
        window_case("f0", target, 10, one_shot, model=FILTER),
    ]
    answers = run_cases(cases, tmp_path)
    assert [windows(ok(answers, c)) for c in ("w0", "w1", "w2", "again", "f0")] == [1, 2, 3, 3, 1]
    assert "counted already" in ok(answers, "again")["monitor"]["roc_auc"]["reason"]
    assert ok(answers, "w2")["window"] == "2026-11-27T12"
    assert ok(answers, "w0")["monitor_restarted"] is None
    generated = {ok(answers, c)["window"] for c in ("w0", "w1")}
    assert len(generated) == 2 and all(isinstance(w, str) and w for w in generated)
    document = json.loads(Path(path).read_text())
    assert document["format"] == "evalserve-monitor-states"
    by_model = {e["model"]["name"]: e for e in document["monitors"]}
    assert by_model["ranker"]["state"] == ok(answers, "again")["monitor_state"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cases.json", "monitors.json"]
    # a new Node process, then the Python client: both carry on from the file
    later = run_cases([window_case("w3", target, 3, one_shot)], tmp_path)
    assert windows(ok(later, "w3")) == 4
    with Client(target, monitor_states=path) as client:
        y_true, y_score = rows(4)
        result = client.evaluate("binary", y_true, y_score, model=RANKER, baseline=BASELINE)
    assert result.monitor["roc_auc"]["windows"] == 5 and result.monitor_restarted is None


def test_a_new_baseline_and_a_refused_state(service: Service, tmp_path: Path) -> None:
    path = tmp_path / "monitors.json"
    settings = {"monitorStates": str(path)}
    target = service.url
    answers = run_cases(
        [
            window_case("a0", target, 0, settings),
            window_case("a1", target, 1, settings),
            window_case("b0", target, 2, settings, baseline=OTHER_BASELINE),
            window_case("a2", target, 3, settings),
            window_case("tight", target, 4, settings, options={"drift_tolerance": 0.05}),
        ],
        tmp_path,
    )
    assert [windows(ok(answers, c)) for c in ("a0", "a1", "b0", "a2")] == [1, 2, 1, 3]
    assert "2 windows" in ok(answers, "b0")["monitor_restarted"]
    assert ok(answers, "a2")["monitor_restarted"] is None
    # the file now holds, for the first baseline, a state made for another tolerance
    document = json.loads(path.read_text())
    stale = ok(answers, "tight")["monitor_state"]
    question = next(e for e in document["monitors"] if e["windows"] == 3)["question"]
    for entry in document["monitors"]:
        if entry["question"] == question:
            entry["state"] = stale
    path.write_text(json.dumps(document))
    later = run_cases([window_case("a3", target, 5, settings)], tmp_path)
    restarted = ok(later, "a3")
    assert windows(restarted) == 1 and "refused" in restarted["monitor_restarted"]
    (retired,) = json.loads(path.read_text())["retired"]
    assert retired["question"] == question and "drift_tolerance" in retired["retired"]


def _sent(units: list[list[dict[str, Any]]]) -> list[tuple[str | None, str | None]]:
    return [(u[0]["header"].get("window"), u[0]["header"].get("monitor_state")) for u in units]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_retried_call_sends_the_same_window_and_state(transport: str, tmp_path: Path) -> None:
    """Two refusals of a one-shot window, one of a streamed one: every attempt of a window
    carries its window id and the state of the window before."""
    settings = {"backoffMs": 10, "monitorStates": str(tmp_path / "monitors.json")}
    streamed = {**settings, "streamThreshold": 100}
    with http_recording() as (url, seen), grpc_recording() as (address, recording):
        target = url if transport == "rest" else address

        def refuse(times: int) -> None:
            if transport == "rest":
                seen.refusals += [(503, {"retry-after": "0"})] * times
            else:
                recording.refusals += [busy()] * times

        answers = run_cases([window_case("w0", target, 0, settings)], tmp_path)
        refuse(2)
        answers.update(run_cases([window_case("w1", target, 1, settings)], tmp_path))
        refuse(1)
        answers.update(run_cases([window_case("w2", target, 2, streamed)], tmp_path))
        received = seen.received if transport == "rest" else recording.received
    assert [windows(ok(answers, c)) for c in ("w0", "w1", "w2")] == [1, 2, 3]
    calls = _sent(received)
    w1, w2 = ok(answers, "w1")["window"], ok(answers, "w2")["window"]
    assert len(calls) == 6
    assert calls[1:4] == [(w1, ok(answers, "w0")["monitor_state"])] * 3
    assert calls[4:] == [(w2, ok(answers, "w1")["monitor_state"])] * 2
