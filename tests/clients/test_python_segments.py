"""The Python client's segments, against a real server on loopback: a segmented ``evaluate``
over each transport (names, or codes with their names) gives ``core.evaluate``'s answer, each
segment's result typed as the overall one; with a monitored model each segment keeps its own
AUC monitor state, which goes round with the next window, in memory and in a file store."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from evalserve_client import AsyncClient, Client, EvaluationResult, InvalidArgument

from evalserve.core import evaluate
from tests.clients.test_python_monitor import BASELINE, TRANSPORTS, rows, target
from tests.contract.servers import Service
from tests.contract.test_same_answer import assert_same

MODEL = {"name": "pricing", "version": "2"}
NAMES = ["de", "fr", "it"]


def segments_of(n: int) -> list[str]:
    return [NAMES[i % 3] for i in range(n)]


def windows(result: EvaluationResult) -> int:
    count: int = result.monitor["roc_auc"]["windows"]
    return count


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_segmented_evaluate_gives_the_core_answer(service: Service, transport: str) -> None:
    y_true, y_score = rows(0, n=300)
    segments = segments_of(300)
    expected = evaluate(
        "binary", np.asarray(y_true), np.asarray(y_score), segments=segments, baseline=BASELINE
    ).to_dict()
    with Client(target(service, transport)) as client:
        result = client.evaluate("binary", y_true, y_score, segments=segments, baseline=BASELINE)
        codes = client.evaluate(
            "binary", y_true, y_score, baseline=BASELINE,
            segment_codes=np.arange(300) % 3, segment_names=NAMES,
        )  # fmt: skip
    for got in (result, codes):
        assert_same(got.to_dict(), expected)
        assert sorted(got.segments) == NAMES
        for name, each in got.segments.items():
            assert isinstance(each, EvaluationResult) and not each.segments
            assert_same(each.to_dict(), expected["segments"][name])
            assert each.n_samples == 100 and each.metrics == expected["segments"][name]["metrics"]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_segmented_request_is_sent_in_one_message(service: Service, transport: str) -> None:
    """Streams take no segments yet: past the stream threshold a segmented call still goes in
    one message, and an unsegmented call without segments keeps the plain answer."""
    y_true, y_score = rows(1, n=300)
    with Client(target(service, transport), stream_threshold=10) as client:
        result = client.evaluate("binary", y_true, y_score, segments=segments_of(300))
        plain = client.evaluate("binary", y_true, y_score)
    assert sorted(result.segments) == NAMES
    assert plain.segments == {} and "segments" not in plain.to_dict()


def test_bad_segments_are_refused_naming_them(service: Service) -> None:
    y_true, y_score = rows(2, n=30)
    for where in (service.url, service.grpc_target):
        with Client(where) as client, pytest.raises(InvalidArgument) as refused:
            client.evaluate("binary", y_true, y_score, segments=segments_of(29))
        assert refused.value.field == "segments"
    with Client(service.url) as client, pytest.raises(InvalidArgument) as malformed:
        client.evaluate("binary", y_true, y_score, segment_codes=[0.5] * 30, segment_names=["a"])
    assert malformed.value.field == "segment_codes"


def hour(client: Client, index: int, **extra: Any) -> EvaluationResult:
    y_true, y_score = rows(index, n=600)
    keywords: dict[str, Any] = {"model": MODEL, "baseline": BASELINE, **extra}
    return client.evaluate("binary", y_true, y_score, segments=segments_of(600), **keywords)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_each_segment_keeps_its_monitor_state(
    service: Service, transport: str, tmp_path: Path
) -> None:
    path = tmp_path / "monitors.json"
    with Client(target(service, transport), monitor_states=path) as client:
        first = hour(client, 0)
        second = hour(client, 1)
        # a window without the segment "it" leaves its monitor where it was
        y_true, y_score = rows(2, n=400)
        third = client.evaluate(
            "binary", y_true, y_score, model=MODEL, baseline=BASELINE,
            segments=["de", "fr"] * 200,
        )  # fmt: skip
    assert windows(first) == 1 and windows(second) == 2 and windows(third) == 3
    assert [windows(first.segments[n]) for n in NAMES] == [1, 1, 1]
    assert [windows(second.segments[n]) for n in NAMES] == [2, 2, 2]
    assert sorted(third.segments) == ["de", "fr"]
    assert [windows(third.segments[n]) for n in ("de", "fr")] == [3, 3]
    assert second.segments["de"].window == second.window
    entries = {e.model.segment: e for e in client.monitor_states.entries()}
    assert sorted(entries) == ["", *NAMES]
    assert entries[""].state == third.monitor_state and entries[""].windows == 3
    assert entries["de"].state == third.segments["de"].monitor_state
    assert entries["it"].state == second.segments["it"].monitor_state
    assert entries["it"].windows == 2 and entries["it"].model.name == "pricing"
    # the file layout is the unsegmented one: a segment is the model key's segment
    document = json.loads(path.read_text())
    models = sorted(e["model"]["segment"] for e in document["monitors"])
    assert models == ["", *NAMES]
    # a new client reads the file and goes on
    with Client(target(service, transport), monitor_states=path) as client:
        fourth = hour(client, 3)
    assert windows(fourth) == 4 and windows(fourth.segments["it"]) == 3


def test_the_async_client_keeps_segment_states_too(service: Service) -> None:
    async def main() -> list[EvaluationResult]:
        async with AsyncClient(service.grpc_target) as client:
            results = []
            for index in range(2):
                y_true, y_score = rows(index, n=600)
                result = await client.evaluate(
                    "binary", y_true, y_score, model=MODEL, baseline=BASELINE,
                    segments=segments_of(600),
                )  # fmt: skip
                results.append(result)
            return results

    first, second = asyncio.run(main())
    assert [windows(second.segments[n]) for n in NAMES] == [2, 2, 2]
    assert windows(first.segments["fr"]) == 1


def _replace_state(path: Path, segment: str, state: str) -> None:
    document = json.loads(path.read_text())
    for entry in document["monitors"]:
        if entry["model"] == {**MODEL, "segment": segment}:
            entry["state"] = state
    path.write_text(json.dumps(document))


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_refused_segment_state_is_set_aside(
    service: Service, transport: str, tmp_path: Path
) -> None:
    """A segment's stored state the server refuses by name (not a state at all) is retired with
    the server's reason and that segment starts a new monitor; the others go on."""
    path = tmp_path / "monitors.json"
    with Client(target(service, transport), monitor_states=path) as client:
        hour(client, 0)
        hour(client, 1)
        _replace_state(path, "fr", base64.b64encode(b"not a state").decode())
        again = hour(client, 2)
    assert windows(again) == 3 and windows(again.segments["de"]) == 3
    assert windows(again.segments["fr"]) == 1
    assert again.segments["fr"].monitor_restarted is not None
    assert again.segments["de"].monitor_restarted is None and again.monitor_restarted is None
    (retired,) = client.monitor_states.retired()
    assert retired.model.segment == "fr" and retired.retired is not None


def test_a_segments_state_of_another_question_is_set_aside_alone(
    service: Service, tmp_path: Path
) -> None:
    """A segment's state made for another question (another tolerance) is refused by the
    server naming that segment (``segment_monitor_states.fr``): only its state is set aside
    and its monitor starts anew; the overall monitor and the other segments' carry on."""
    path = tmp_path / "monitors.json"
    with Client(service.grpc_target, monitor_states=path) as client:
        other = hour(client, 0, options={"drift_tolerance": 0.05}, model={"name": "scratch"})
        hour(client, 1)
        _replace_state(path, "fr", base64.b64encode(other.monitor_state or b"").decode())
        again = hour(client, 2)
    assert windows(again) == 2
    assert [windows(again.segments[n]) for n in NAMES] == [2, 1, 2]
    assert again.segments["fr"].monitor_restarted is not None
    retired = client.monitor_states.retired()
    assert [e.model.segment for e in retired] == ["fr"]


def test_a_folded_segment_state_is_not_sent_for_rows_that_lack_it(service: Service) -> None:
    """Past the server's 100 segments the smallest fold into ``__other__``, whose monitor is
    kept; a later window that folds nothing has no ``__other__``: its state is not sent, and
    stays for a window that folds again."""
    many = [f"s{i:03d}" for i in range(101)]
    with Client(service.url) as client:
        y_true, y_score = rows(0, n=606)
        folded = client.evaluate(
            "binary", y_true, y_score, model=MODEL, baseline=BASELINE,
            segments=[many[i % 101] for i in range(606)], fold_segments=True,
        )  # fmt: skip
        assert "__other__" in folded.segments and any("__other__" in w for w in folded.warnings)
        few = hour(client, 1, fold_segments=True)
    assert sorted(few.segments) == NAMES and windows(few) == 2
    assert windows(few.segments["de"]) == 1
    kept = {e.model.segment: e for e in client.monitor_states.entries()}
    assert kept["__other__"].state == folded.segments["__other__"].monitor_state
