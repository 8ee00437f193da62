"""The TypeScript client's retries under pressure, against tests/clients/recording.py's servers
on loopback refusing the first calls as told: the server's hint (REST ``Retry-After`` in seconds
or as an HTTP date, gRPC ``google.rpc.RetryInfo``) waited for, the cap on the total retry time,
unary calls and streams retried on UNAVAILABLE, the ``google.rpc`` details of a real refusal
decoded by the generated messages; and retry.ts's full jitter within its bounds
(``test/schedule.ts``). Wall times have generous margins.
"""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2

from tests.clients.recording import Header, grpc_recording, http_recording
from tests.clients.test_python_retries import busy, memory_busy, refusal
from tests.clients.test_typescript import BIN, PACKAGE, _node_modules, error, ok, run_cases, ts_case

Y_TRUE, Y_SCORE = [0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]


def one_call(tmp_path: Path, target: str, settings: dict[str, Any]) -> dict[str, Any]:
    cases = [ts_case("call", target, "binary", Y_TRUE, Y_SCORE, settings=settings)]
    return run_cases(cases, tmp_path)["call"]


def test_full_jitter_and_the_schedule() -> None:
    _node_modules()
    done = subprocess.run(
        [str(BIN / "tsx"), "test/schedule.ts"],
        cwd=PACKAGE,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    found = json.loads(done.stdout)
    for row in found["jitter"]:
        assert row["ceiling"] == min(5000, 200 * 2 ** row["retry"])
        assert all(0 <= wait < row["ceiling"] for wait in row["waits"])
        # real draws spread over the range: both of its halves are used
        assert min(row["waits"]) < row["ceiling"] / 2 < max(row["waits"])
    assert found["retryAfter"][:4] == [["7", 7000], [" 0 ", 0], ["soon", None], ["-3", None]]
    assert [ms for _, ms in found["retryAfter"][4:]] == [90_000, 0]
    # retries=3 at 1 s, cap 4 s, draws of 0.5: 500, the hint 3000 over 1000, 2000 over 100, none
    assert found["pauses"] == [500, 3000, 2000, None]
    assert found["deadline"] == [900, None]
    # a gRPC unary call stands for gRPC's 5 attempts: one more call, its backoff from theirs
    assert found["unaryPauses"] == [8000, None]


def test_the_unary_channel_carries_grpcs_retry_policy() -> None:
    _node_modules()
    done = subprocess.run(
        [str(BIN / "tsx"), "test/schedule.ts"],
        cwd=PACKAGE,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    three, nine, none = json.loads(done.stdout)["options"]
    assert three["grpc.enable_retries"] == 1
    (method_config,) = json.loads(three["grpc.service_config"])["methodConfig"]
    names = {(name["service"], name["method"]) for name in method_config["name"]}
    assert names == {
        ("evalserve.v1.EvaluationService", "Evaluate"),
        ("evalserve.v1.EvaluationService", "ListMetrics"),
    }  # not EvaluateStream: streams are the client loop's
    assert method_config["retryPolicy"] == {
        "maxAttempts": 4,
        "initialBackoff": "0.250s",
        "maxBackoff": "4.000s",
        "backoffMultiplier": 2,
        "retryableStatusCodes": ["UNAVAILABLE"],
    }
    nine_config = json.loads(nine["grpc.service_config"])
    assert nine_config["methodConfig"][0]["retryPolicy"]["maxAttempts"] == 5  # gRPC's limit
    assert json.loads(none["grpc.service_config"]) == {}


@pytest.mark.parametrize("method", ["evaluate", "listMetrics"])
def test_grpcs_retry_policy_retries_unary_calls_on_unavailable(tmp_path: Path, method: str) -> None:
    """Two UNAVAILABLE refusals, then the answer, within one call of the client's loop."""
    with grpc_recording(refusals=[busy(), busy()]) as (target, recording):
        if method == "evaluate":
            answer = one_call(tmp_path, target, {"retries": 3, "backoffMs": 10})
            assert ok({"call": answer}, "call")["metrics"]["roc_auc"] == 0.75
        else:
            case = {"id": "call", "target": target, "settings": {"retries": 3, "backoffMs": 10},
                    "call": "listMetrics", "task": "binary"}  # fmt: skip
            assert ok(run_cases([case], tmp_path), "call")
    assert len(recording.seen) == 3


@pytest.mark.parametrize(("retries", "attempts"), [(2, 3), (6, 10)])
def test_unary_attempts_are_not_doubled(tmp_path: Path, retries: int, attempts: int) -> None:
    """An always-busy server: retries=2 makes 3 attempts in all (the channel's), retries=6 two
    calls of gRPC's 5 (the loop adds a call for the retries past gRPC's limit), never more."""
    with grpc_recording(refusals=[busy()] * 30) as (target, recording):
        answer = one_call(tmp_path, target, {"retries": retries, "backoffMs": 10})
    assert error({"call": answer}, "call")["type"] == "Unavailable"
    assert len(recording.seen) == attempts


def test_grpcs_retry_policy_honours_the_pushback_trailer(tmp_path: Path) -> None:
    pushback = refusal(
        grpc.StatusCode.UNAVAILABLE, "busy", trailers=(("grpc-retry-pushback-ms", "1000"),)
    )
    with grpc_recording(refusals=[pushback]) as (target, recording):
        answer = one_call(tmp_path, target, {"retries": 2, "backoffMs": 1})
    assert ok({"call": answer}, "call")["metrics"]["roc_auc"] == 0.75
    assert len(recording.seen) == 2
    assert 1000 <= answer["ms"] < 10_000


def test_a_large_unary_call_is_retried_by_the_channel_too(tmp_path: Path) -> None:
    """grpc-js keeps a call's messages for retries only up to 256 KiB by default and does not
    retry a larger call: the client raises that buffer (a 200,000-row call is 3 MB)."""
    rows = 200_000
    settings = {"retries": 3, "backoffMs": 10, "streamThreshold": 10 * rows}
    case = ts_case("call", "", "binary", [0, 1] * (rows // 2), [0.25, 0.75] * (rows // 2),
                   settings=settings)  # fmt: skip
    with grpc_recording(refusals=[busy(), busy()]) as (target, recording):
        answer = run_cases([{**case, "target": target}], tmp_path)
    assert ok(answer, "call")["metrics"]["roc_auc"] == 1.0
    assert [method for method, _ in recording.seen] == ["Evaluate"] * 3


def test_resource_exhausted_with_a_hint_is_retried_by_the_loop_after_it(tmp_path: Path) -> None:
    """The server's memory is busy now (RESOURCE_EXHAUSTED with a RetryInfo): the channel's
    policy leaves it (gRPC answers the same code for an oversize message), the loop retries it
    after the hint, one attempt each; without a hint it is final (TooLarge, not retried)."""
    with grpc_recording(refusals=[memory_busy(1.0)]) as (target, recording):
        answer = one_call(tmp_path, target, {"retries": 2, "backoffMs": 1})
    assert ok({"call": answer}, "call")["metrics"]["roc_auc"] == 0.75
    assert len(recording.seen) == 2
    assert 1000 <= answer["ms"] < 10_000
    with grpc_recording(refusals=[memory_busy(0.05)] * 10) as (target, recording):
        answer = one_call(tmp_path, target, {"retries": 2, "backoffMs": 1})
    refused = error({"call": answer}, "call")
    assert refused["type"] == "Unavailable" and refused["retryAfterMs"] == 50
    assert len(recording.seen) == 3
    with grpc_recording(refusals=[memory_busy(None)]) as (target, recording):
        answer = one_call(tmp_path, target, {"retries": 3, "backoffMs": 1})
    assert error({"call": answer}, "call")["type"] == "TooLarge"
    assert len(recording.seen) == 1


@pytest.mark.parametrize("form", ["seconds", "http-date"])
def test_rest_retry_after_is_waited_for(tmp_path: Path, form: str) -> None:
    value: Header = "1"
    if form == "http-date":  # from when the refusal is sent, in whole seconds: 2 s to 3 s ahead
        value = lambda: format_datetime(  # noqa: E731
            datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=3), usegmt=True
        )
    with http_recording(refusals=[(503, {"retry-after": value})]) as (url, seen):
        answer = one_call(tmp_path, url, {"retries": 2, "backoffMs": 1})
    assert ok({"call": answer}, "call")["metrics"]["roc_auc"] == 0.75
    assert len(seen) == 2
    assert 1000 <= answer["ms"] < 15_000


def test_a_streams_retry_info_is_waited_for(tmp_path: Path) -> None:
    """Streams are retried by the client's loop, which honours RetryInfo (gRPC's retry policy
    of the unary calls only knows the pushback trailer)."""
    settings = {"retries": 2, "backoffMs": 1, "streamThreshold": 2}
    with grpc_recording(refusals=[busy(hint=1.0)]) as (target, recording):
        answer = one_call(tmp_path, target, settings)
    assert ok({"call": answer}, "call")["metrics"]["roc_auc"] == 0.75
    assert [seen for seen, _ in recording.seen] == ["EvaluateStream"] * 2
    assert recording.received[0] == recording.received[1]  # the whole call again
    assert 1000 <= answer["ms"] < 10_000


def test_the_total_retry_time_is_capped(tmp_path: Path) -> None:
    refusals = [(503, {"retry-after": "0"})] * 1000
    settings = {"retries": 1000, "backoffMs": 50, "retryDeadlineMs": 1000}
    with http_recording(refusals=refusals) as (url, seen):
        answer = one_call(tmp_path, url, settings)
    assert error({"call": answer}, "call")["type"] == "Unavailable"
    assert 2 <= len(seen) < 1000
    assert answer["ms"] < 6000


def test_a_hint_past_the_retry_deadline_ends_the_call_at_once(tmp_path: Path) -> None:
    settings = {"retries": 3, "retryDeadlineMs": 5000, "streamThreshold": 2}  # the loop's
    with grpc_recording(refusals=[busy(hint=120.0)]) as (target, recording):
        answer = one_call(tmp_path, target, settings)
    refused = error({"call": answer}, "call")
    assert refused["type"] == "Unavailable"
    assert refused["retryAfterMs"] == 120_000
    assert len(recording.seen) == 1
    assert answer["ms"] < 5000


def test_bad_request_details_are_decoded(tmp_path: Path) -> None:
    bad = error_details_pb2.BadRequest(
        field_violations=[
            error_details_pb2.BadRequest.FieldViolation(
                field="batch 2.scores", description="must be finite"
            ),
        ]
    )
    invalid = refusal(grpc.StatusCode.INVALID_ARGUMENT, "batch 2.scores: must be finite", bad)
    with grpc_recording(refusals=[invalid]) as (target, recording):
        answer = one_call(tmp_path, target, {"retries": 3})
    refused = error({"call": answer}, "call")
    assert refused["type"] == "InvalidArgument"
    assert refused["field"] == "batch 2.scores"  # holds a space: from the detail, not split
    assert refused["detail"] == "must be finite"
    assert refused["retryAfterMs"] is None
    assert len(recording.seen) == 1  # not retried
