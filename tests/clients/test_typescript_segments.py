"""The TypeScript client's segments, as the Python client's (test_python_segments): against a
real server on loopback, a segmented ``evaluate`` over each transport (names, or codes with
their names) gives ``core.evaluate``'s answer with each segment's result; with a monitored
model each segment keeps its own AUC monitor state, in the state file's layout that the Python
client reads and carries on from."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from evalserve_client import Client

from evalserve.core import evaluate
from tests.clients.test_python_monitor import BASELINE, rows
from tests.clients.test_python_segments import MODEL, NAMES, segments_of
from tests.clients.test_typescript import error, ok, round_trip, run_cases, ts_case
from tests.contract.servers import Service
from tests.contract.test_same_answer import assert_same

TRANSPORTS = ("grpc", "rest")


def target(service: Service, transport: str) -> str:
    return service.grpc_target if transport == "grpc" else service.url


def windows(answer: dict[str, Any]) -> int:
    count: int = answer["monitor"]["roc_auc"]["windows"]
    return count


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_segmented_evaluate_gives_the_core_answer(
    service: Service, transport: str, tmp_path: Path
) -> None:
    y_true, y_score = rows(0, n=300)
    segments = segments_of(300)
    expected = round_trip(
        evaluate(
            "binary", np.asarray(y_true), np.asarray(y_score), segments=segments,
            baseline=BASELINE,
        ).to_dict()
    )  # fmt: skip
    where = target(service, transport)
    streamed = {"streamThreshold": 10}  # a segmented call is not streamed all the same
    cases = [
        ts_case("names", where, "binary", y_true, y_score, baseline=BASELINE, segments=segments),
        ts_case(
            "codes", where, "binary", y_true, y_score, baseline=BASELINE, settings=streamed,
            segmentCodes=[i % 3 for i in range(300)], segmentNames=NAMES,
        ),
        ts_case("short", where, "binary", y_true, y_score, segments=segments[:-1]),
        ts_case("plain", where, "binary", y_true, y_score),
    ]  # fmt: skip
    answers = run_cases(cases, tmp_path)
    for case in ("names", "codes"):
        answer = ok(answers, case)
        assert_same(answer, expected)
        assert sorted(answer["segments"]) == NAMES
        assert answer["segments"]["de"]["n_samples"] == 100
    assert error(answers, "short")["field"] == "segments"
    assert "segments" not in ok(answers, "plain")


def window_case(case_id: str, where: str, index: int, path: str, **opts: Any) -> dict[str, Any]:
    y_true, y_score = rows(index, n=600)
    given: dict[str, Any] = {"model": MODEL, "baseline": BASELINE, "segments": segments_of(600)}
    return ts_case(
        case_id, where, "binary", y_true, y_score, settings={"monitorStates": path},
        **{**given, **opts},
    )  # fmt: skip


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_each_segment_keeps_its_monitor_state(
    service: Service, transport: str, tmp_path: Path
) -> None:
    where = target(service, transport)
    path = str(tmp_path / "monitors.json")
    answers = run_cases(
        [
            window_case("w0", where, 0, path),
            window_case("w1", where, 1, path),
            window_case("w2", where, 2, path, segments=["de", "fr"] * 300),
        ],
        tmp_path,
    )
    first, second, third = (ok(answers, c) for c in ("w0", "w1", "w2"))
    assert [windows(first), windows(second), windows(third)] == [1, 2, 3]
    assert [windows(second["segments"][n]) for n in NAMES] == [2, 2, 2]
    assert sorted(third["segments"]) == ["de", "fr"]
    assert windows(third["segments"]["fr"]) == 3
    assert second["segments"]["it"]["window"] == second["window"]
    assert second["segments"]["it"]["monitor_restarted"] is None
    document = json.loads(Path(path).read_text())
    by_segment = {e["model"]["segment"]: e for e in document["monitors"]}
    assert sorted(by_segment) == ["", *NAMES]
    assert by_segment["it"]["state"] == second["segments"]["it"]["monitor_state"]
    # the Python client reads the file and carries every segment on
    with Client(where, monitor_states=path) as client:
        y_true, y_score = rows(3, n=600)
        fourth = client.evaluate(
            "binary", y_true, y_score, model=MODEL, baseline=BASELINE, segments=segments_of(600)
        )
    assert windows(fourth.to_dict()) == 4
    assert [windows(fourth.segments[n].to_dict()) for n in NAMES] == [4, 4, 3]


def test_refused_and_folded_segment_states(service: Service, tmp_path: Path) -> None:
    """A segment's state refused by name is set aside and that segment starts anew; a folded
    segment's state is not sent for rows that lack it, and stays."""
    path = str(tmp_path / "monitors.json")
    where = service.url
    many = [f"s{i:03d}" for i in range(101)]
    y_true, y_score = rows(5, n=606)
    folded = ts_case(
        "folded", where, "binary", y_true, y_score, settings={"monitorStates": path},
        model=MODEL, baseline=BASELINE, segments=[many[i % 101] for i in range(606)],
        foldSegments=True,
    )  # fmt: skip
    answers = run_cases([window_case("w0", where, 0, path), folded], tmp_path)
    other = ok(answers, "folded")["segments"]["__other__"]["monitor_state"]
    document = json.loads(Path(path).read_text())
    for entry in document["monitors"]:
        if entry["model"] == {**MODEL, "segment": "fr"}:
            entry["state"] = base64.b64encode(b"not a state").decode()
    Path(path).write_text(json.dumps(document))
    answers = run_cases([window_case("w2", where, 2, path, foldSegments=True)], tmp_path)
    again = ok(answers, "w2")
    assert windows(again) == 3 and windows(again["segments"]["de"]) == 2
    assert windows(again["segments"]["fr"]) == 1
    assert "refused" in again["segments"]["fr"]["monitor_restarted"]
    assert again["segments"]["de"]["monitor_restarted"] is None
    document = json.loads(Path(path).read_text())
    (retired,) = document["retired"]
    assert retired["model"]["segment"] == "fr"
    kept = {e["model"]["segment"]: e for e in document["monitors"]}
    assert kept["__other__"]["state"] == other
