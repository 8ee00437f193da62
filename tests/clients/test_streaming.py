"""What the clients put on the wire when they stream, for every task, on both doors: recording
servers (tests/clients/recording.py) keep every gRPC message and NDJSON line in one neutral form,
which is checked against the input (tests/clients/stream_cases.py):

- over the stream threshold the call is a stream (``EvaluateStream``, ``POST
  /v1/evaluate/stream``), under it one request, and a challenger keeps it one request;
- the stream's first message is the header alone: the task, its class names, ``n_classes``
  (the width of the task's matrices, whichever way it is known), options, model, baseline and
  coverage;
- then batches of whole rows (``chunk_rows // k`` rows of a k-wide matrix) or whole images (up
  to ``chunk_rows`` boxes), carrying the task's columns (class-name labels as names), which end
  to end are the input;
- gRPC and REST carry the same content, the Python and TypeScript clients the same batches;
- the recording servers answer a stream with the one-shot answer to the request it stands for,
  which the clients give back;
- the Python client's progress line counts rows, or images for detection.

The end-to-end streams against the real server are in test_python_client.py and
test_typescript.py.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from evalserve_client import AsyncClient, Client

from tests.clients.recording import Recording, Seen, Unit, grpc_recording, http_recording
from tests.clients.stream_cases import (
    CASES,
    Case,
    cases,
    check_one_shot,
    check_stream,
    expected_batches,
    server_part,
)
from tests.clients.test_typescript import finish_cases, ok, round_trip, start_cases, ts_stream_case
from tests.contract.test_same_answer import assert_same

STREAM_CALLS = {"grpc": "EvaluateStream", "rest": "/v1/evaluate/stream"}
ONE_SHOT_CALLS = {"grpc": "Evaluate", "rest": "/v1/evaluate"}
DOORS = ("grpc", "rest")


@pytest.fixture
def recorders() -> Iterator[tuple[tuple[str, Recording], tuple[str, Seen]]]:
    with grpc_recording() as grpc, http_recording() as rest:
        yield grpc, rest


Recorders = tuple[tuple[str, Recording], tuple[str, Seen]]


def _calls(recorders: Recorders) -> dict[str, list[tuple[str, list[Unit]]]]:
    """Per door, what arrived: (method or path, units) per call, in order."""
    (_, recording), (_, seen) = recorders
    return {
        "grpc": [
            (method, units)
            for (method, _), units in zip(recording.seen, recording.received, strict=True)
        ],
        "rest": [(path, units) for (path, _), units in zip(seen, seen.received, strict=True)],
    }


def _targets(recorders: Recorders) -> dict[str, str]:
    (grpc, _), (rest, _) = recorders
    return {"grpc": grpc, "rest": rest}


def _evaluate(target: str, case: Case, settings: dict[str, Any], kind: str = "sync") -> Any:
    if kind == "sync":
        with Client(target, **settings) as client:
            return client.evaluate(*case.args(), **case.keywords).to_dict()

    async def main() -> Any:
        async with AsyncClient(target, **settings) as client:
            return (await client.evaluate(*case.args(), **case.keywords)).to_dict()

    return asyncio.run(main())


# --- the Python client ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize("name", CASES)
def test_the_python_client_streams_every_task(recorders: Recorders, name: str, kind: str) -> None:
    case = cases()[name]
    targets = _targets(recorders)
    answers = {door: _evaluate(targets[door], case, case.python_settings, kind) for door in DOORS}
    calls = _calls(recorders)
    for door in DOORS:
        ((method, units),) = calls[door]
        assert method == STREAM_CALLS[door]
        check_stream(name, units)
        assert_same(answers[door], case.one_shot())  # the one-shot answer to what arrived
    assert calls["grpc"][0][1] == calls["rest"][0][1]  # both doors carried the same content


@pytest.mark.parametrize("name", CASES)
def test_under_the_threshold_every_task_goes_in_one_request(
    recorders: Recorders, name: str
) -> None:
    case = cases()[name]
    targets = _targets(recorders)
    for door in DOORS:
        settings = {"stream_threshold": 10**9, "chunk_rows": case.chunk}
        assert_same(_evaluate(targets[door], case, settings), case.one_shot())
        ((method, units),) = _calls(recorders)[door]
        assert method == ONE_SHOT_CALLS[door]
        check_one_shot(name, units)


def _challenged() -> Case:
    case = cases()["binary"]
    scores = np.round(np.asarray(case.y_score) ** 2, 3)
    keywords = {"options": {"drift_min_samples": 5}, "challenger": {"scores": scores}}
    return Case("binary", case.y_true, case.y_score, keywords)


def test_a_challenger_keeps_a_large_input_in_one_request(recorders: Recorders) -> None:
    """A stream's header has no place for a challenger: such a request is never streamed."""
    case = _challenged()
    targets = _targets(recorders)
    for door in DOORS:
        result = _evaluate(targets[door], case, case.python_settings)
        assert result["comparison"]["roc_auc"]["status"] == "ok"
        ((method, units),) = _calls(recorders)[door]
        assert method == ONE_SHOT_CALLS[door]
        assert units[0]["challenger"]["scores"] == case.keywords["challenger"]["scores"].tolist()
        assert len(units[0]["labels"]) == len(case.y_true)


def test_a_row_wider_than_a_batch_goes_alone(recorders: Recorders) -> None:
    """A batch holds at least one row: k columns over ``chunk_rows`` send one row a batch."""
    case = cases()["multilabel"]
    target = _targets(recorders)["grpc"]
    rows = 5
    small = Case(case.task, case.y_true[:rows], case.y_score[:rows], case.keywords)
    _evaluate(target, small, {"stream_threshold": 3, "chunk_rows": 2})
    ((method, units),) = _calls(recorders)["grpc"]
    assert method == "EvaluateStream"
    assert units[0]["header"]["n_classes"] == 4
    assert [len(unit["labels"]) for unit in units[1:]] == [4] * rows


SENT = re.compile(r"\revalserve: ([\d,]+)/([\d,]+) (rows|images) sent \((\d+)%\)")


@pytest.mark.parametrize("name", ["multiclass", "detection"])
def test_the_progress_line_counts_rows_or_images(
    recorders: Recorders, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    case = cases()[name]
    target = _targets(recorders)["rest"]
    _evaluate(target, case, {**case.python_settings, "progress": True})
    err = capsys.readouterr().err
    reports = [(int(s.replace(",", "")), int(t.replace(",", "")), unit)
               for s, t, unit, _ in SENT.findall(err)]  # fmt: skip
    batches = expected_batches(name)
    total = sum(batches)
    unit = "images" if case.task == "detection" else "rows"
    assert reports == [(int(np.sum(batches[: i + 1])), total, unit) for i in range(len(batches))]
    assert err.endswith(f"{total:,}/{total:,} {unit} sent (100%)\n")


# --- the TypeScript client -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def typescript(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Every TypeScript call of this module in one Node run, against recording servers; then
    the Python client's streams of the same cases, to compare."""
    with grpc_recording() as grpc, http_recording() as rest:
        recorders = (grpc, rest)
        targets = _targets(recorders)
        ids: dict[str, list[str]] = {door: [] for door in DOORS}
        calls = []
        for door in DOORS:
            for name, case in cases().items():
                ids[door].append(f"stream:{name}:{door}")
                calls.append(ts_stream_case(ids[door][-1], targets[door], case, case.ts_settings))
                ids[door].append(f"one-shot:{name}:{door}")
                calls.append(ts_stream_case(ids[door][-1], targets[door], case))
            challenged = _challenged()
            ids[door].append(f"challenger:{door}")
            calls.append(ts_stream_case(ids[door][-1], targets[door], challenged,
                                        challenged.ts_settings))  # fmt: skip
        answers = finish_cases(start_cases(calls, tmp_path_factory.mktemp("streams")), calls)
        ts_calls = {
            door: dict(zip(ids[door], _calls(recorders)[door], strict=True)) for door in DOORS
        }
        for door in DOORS:
            for case in cases().values():
                _evaluate(targets[door], case, case.python_settings)
        python = {door: _calls(recorders)[door][len(ids[door]) :] for door in DOORS}
        yield {"answers": answers, "calls": ts_calls, "python": python}


@pytest.mark.parametrize("name", CASES)
def test_the_typescript_client_streams_every_task(typescript: dict[str, Any], name: str) -> None:
    case = cases()[name]
    expected = round_trip(case.one_shot())
    streams = {}
    for door in DOORS:
        method, units = typescript["calls"][door][f"stream:{name}:{door}"]
        assert method == STREAM_CALLS[door]
        check_stream(name, units)
        assert_same(server_part(ok(typescript["answers"], f"stream:{name}:{door}"), case), expected)
        streams[door] = units
        python_method, python_units = typescript["python"][door][CASES.index(name)]
        assert python_method == method
        assert units == python_units  # both clients cut the same batches
    assert streams["grpc"] == streams["rest"]


@pytest.mark.parametrize("name", CASES)
def test_the_typescript_client_sends_a_small_input_in_one_request(
    typescript: dict[str, Any], name: str
) -> None:
    expected = round_trip(cases()[name].one_shot())
    for door in DOORS:
        method, units = typescript["calls"][door][f"one-shot:{name}:{door}"]
        assert method == ONE_SHOT_CALLS[door]
        check_one_shot(name, units)
        answer = ok(typescript["answers"], f"one-shot:{name}:{door}")
        assert_same(server_part(answer, cases()[name]), expected)


def test_the_typescript_client_keeps_a_challenger_in_one_request(
    typescript: dict[str, Any],
) -> None:
    case = _challenged()
    for door in DOORS:
        method, units = typescript["calls"][door][f"challenger:{door}"]
        assert method == ONE_SHOT_CALLS[door]
        assert units[0]["challenger"]["scores"] == case.keywords["challenger"]["scores"].tolist()
        answer = ok(typescript["answers"], f"challenger:{door}")
        assert answer["comparison"]["roc_auc"]["status"] == "ok"


def test_the_cases_stream_in_several_batches_of_whole_units() -> None:
    """The cases exercise what they should: every task, class names, a flat matrix, images
    without boxes, and batches that do not divide the input evenly."""
    tasks = {case.task for case in cases().values()}
    assert tasks == {"binary", "multiclass", "multilabel", "regression", "detection"}
    for name in CASES:
        batches = expected_batches(name)
        assert len(batches) > 2 and len(set(batches)) > 1, name
    detection = cases()["detection"]
    assert any(not target["boxes"] for target in detection.y_true)
