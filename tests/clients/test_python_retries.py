"""The Python client's retries under pressure: full-jitter backoff within its bounds, the
server's retry hint (REST ``Retry-After`` in seconds or as an HTTP date, gRPC
``google.rpc.RetryInfo``) as the wait's floor, the cap on the total retry time, gRPC's own retry
policy in the channel's options and retrying unary calls on UNAVAILABLE (the explicit loop then
leaving them alone), and the ``google.rpc`` details of real refusals decoded.

The servers are tests/clients/recording.py's, on loopback, refusing the first calls as told.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import grpc
import pytest
from evalserve_client import AsyncClient, Client, InvalidArgument, TooLarge, Unavailable, _retry
from google.protobuf import any_pb2, duration_pb2
from google.rpc import error_details_pb2, status_pb2
from hypothesis import example, given
from hypothesis import strategies as st

from tests.clients.recording import Refusal, grpc_recording, http_recording

Y_TRUE, Y_SCORE = [0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]


def _packed(*messages: Any) -> list[any_pb2.Any]:
    packed = []
    for message in messages:
        detail = any_pb2.Any()
        detail.Pack(message)
        packed.append(detail)
    return packed


def refusal(
    code: grpc.StatusCode,
    message: str,
    *details: Any,
    trailers: tuple[tuple[str, str | bytes], ...] = (),
) -> Refusal:
    """A refusal carrying a serialized google.rpc.Status, as the service sends it."""
    status = status_pb2.Status(code=code.value[0], message=message, details=_packed(*details))
    bin_trailer = ("grpc-status-details-bin", status.SerializeToString())
    return Refusal(code, message, (bin_trailer, *trailers))


def retry_info(seconds: float) -> error_details_pb2.RetryInfo:
    delay = duration_pb2.Duration()
    delay.FromTimedelta(timedelta(seconds=seconds))
    return error_details_pb2.RetryInfo(retry_delay=delay)


def busy(hint: float | None = None) -> Refusal:
    details = () if hint is None else (retry_info(hint),)
    return refusal(grpc.StatusCode.UNAVAILABLE, "the server is busy", *details)


class Sleeps(list[float]):
    """A fake sleep: records each wait and returns at once."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def with_fake_sleep(client: Client) -> Sleeps:
    sleeps = Sleeps()
    client._sleep = sleeps  # type: ignore[method-assign]
    return sleeps


# --- the schedule ------------------------------------------------------------------------------


@given(
    retry=st.integers(0, 80),
    base=st.floats(0, 10),
    cap=st.floats(0, 100),
    draw=st.floats(0, 1, exclude_max=True),
)
@example(retry=74, base=1.716639580979672e-34, cap=1.0, draw=0.5)  # past the held exponent
def test_full_jitter_stays_within_zero_and_the_capped_exponential(
    retry: int, base: float, cap: float, draw: float
) -> None:
    wait = _retry.full_jitter(retry, base, cap, lambda: draw)
    # The exponent stops growing at 64 retries (2**retry would overflow a float past 1023);
    # it only shows with a base under cap / 2**64.
    ceiling = min(cap, base * 2.0 ** min(retry, 64))
    assert 0 <= wait <= ceiling
    assert wait == pytest.approx(draw * ceiling)


def test_full_jitter_spreads_over_the_whole_range() -> None:
    """Real draws: every wait below its ceiling, and both halves of the range are used."""
    waits = [_retry.full_jitter(3, 0.2, 1.0, __import__("random").random) for _ in range(400)]
    assert all(0 <= wait < 1.0 for wait in waits)
    assert min(waits) < 0.25 and max(waits) > 0.75


def test_retry_after_reads_seconds_and_http_dates() -> None:
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert _retry.retry_after("7") == 7.0
    assert _retry.retry_after(" 0 ") == 0.0
    later = format_datetime(now + timedelta(seconds=90), usegmt=True)
    assert _retry.retry_after(later, now=lambda: now) == 90.0
    earlier = format_datetime(now - timedelta(seconds=90), usegmt=True)
    assert _retry.retry_after(earlier, now=lambda: now) == 0.0
    assert _retry.retry_after(None) is None
    assert _retry.retry_after("soon") is None
    assert _retry.retry_after("-3") is None


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_schedule_stops_after_its_retries_and_takes_the_hint_as_floor() -> None:
    clock = FakeClock()
    schedule = _retry.Schedule(_retry.Policy(3, 1.0, 4.0, 1000.0), clock=clock, rand=lambda: 0.5)
    assert schedule.pause() == 0.5  # 0.5 * min(4, 1)
    assert schedule.pause(hint=3.0) == 3.0  # the hint over 0.5 * 2
    assert schedule.pause(hint=0.1) == 2.0  # the jitter over the hint: 0.5 * min(4, 4)
    assert schedule.pause() is None  # three retries made


def test_the_schedule_stops_when_a_retry_would_start_past_the_deadline() -> None:
    clock = FakeClock()
    schedule = _retry.Schedule(_retry.Policy(100, 1.0, 1.0, 10.0), clock=clock, rand=lambda: 0.9)
    clock.now = 9.0
    assert schedule.pause() == 0.9  # starts at 9.9
    clock.now = 9.95
    assert schedule.pause() is None  # would start at 10.85
    assert _retry.Schedule(_retry.Policy(5, 0.1, 1, 10), clock=clock).pause(hint=11) is None


def test_a_grpc_unary_schedule_counts_the_channels_attempts() -> None:
    """Each loop attempt of a gRPC unary call stands for the channel's attempts: retries=8 with
    gRPC's 5 gives one more call (10 attempts), retries=3 none (4), and the backoff goes on
    from the channel's."""
    policy = _retry.Policy(8, 1.0, 100.0, 1000.0)
    schedule = _retry.Schedule(policy, clock=FakeClock(), rand=lambda: 0.5, per_call=5)
    assert schedule.pause() == 8.0  # 0.5 * 2**4
    assert schedule.pause() is None
    policy = _retry.Policy(3, 1.0, 100.0, 1000.0)
    assert _retry.Schedule(policy, per_call=_retry.grpc_attempts(policy)).pause() is None


@pytest.mark.parametrize("bad", [{"retries": -1}, {"backoff": -0.1}, {"retry_deadline": -1}])
def test_negative_retry_settings_are_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        Client("http://127.0.0.1:9", **bad)  # type: ignore[arg-type]


# --- REST: Retry-After --------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["seconds", "http-date"])
def test_rest_honours_retry_after(form: str) -> None:
    """A 503 with Retry-After: the next attempt waits at least that long (the jitter, drawn as
    0, would not wait at all)."""
    if form == "seconds":
        value = "2"
    else:
        value = format_datetime(datetime.now(UTC) + timedelta(seconds=3), usegmt=True)
    with (
        http_recording(refusals=[(503, {"retry-after": value})]) as (url, seen),
        Client(url, retries=3, backoff=0.01) as client,
    ):
        client._random = lambda: 0.0
        sleeps = with_fake_sleep(client)
        result = client.evaluate("binary", Y_TRUE, Y_SCORE)
    assert result.metrics["roc_auc"] == 0.75
    assert len(seen) == 2
    assert len(sleeps) == 1
    assert 1.0 <= sleeps[0] <= 3.0


def test_rest_retry_after_is_waited_for_real() -> None:
    """Real time, generous margins: Retry-After: 1 makes the call last at least a second."""
    with (
        http_recording(refusals=[(503, {"retry-after": "1"})]) as (url, seen),
        Client(url, retries=2, backoff=0.01) as client,
    ):
        started = time.monotonic()
        client.evaluate("binary", Y_TRUE, Y_SCORE)
        elapsed = time.monotonic() - started
    assert len(seen) == 2
    assert 1.0 <= elapsed < 10.0


def test_rest_backoff_without_a_hint_is_full_jitter_within_bounds() -> None:
    refusals: list[tuple[int, dict[str, str]]] = [(503, {})] * 4
    with (
        http_recording(refusals=refusals) as (url, seen),
        Client(url, retries=4, backoff=0.5, max_backoff=2.0) as client,
    ):
        sleeps = with_fake_sleep(client)
        client.evaluate("binary", Y_TRUE, Y_SCORE)
    assert len(seen) == 5
    ceilings = [0.5, 1.0, 2.0, 2.0]  # min(max_backoff, backoff * 2**n)
    assert len(sleeps) == 4
    assert all(0 <= wait <= ceiling for wait, ceiling in zip(sleeps, ceilings, strict=True))


def test_the_total_retry_time_is_capped() -> None:
    """An always-busy server, many retries allowed: the retry deadline ends the call."""
    with (
        http_recording(refusals=[(503, {"retry-after": "0"})] * 1000) as (url, seen),
        Client(url, retries=1000, backoff=0.05, retry_deadline=1.0) as client,
    ):
        started = time.monotonic()
        with pytest.raises(Unavailable):
            client.evaluate("binary", Y_TRUE, Y_SCORE)
        elapsed = time.monotonic() - started
    assert elapsed < 6.0
    assert 2 <= len(seen) < 1000


def test_a_hint_past_the_retry_deadline_ends_the_call_at_once() -> None:
    with (
        http_recording(refusals=[(503, {"retry-after": "120"})]) as (url, seen),
        Client(url, retries=3, retry_deadline=5.0) as client,
    ):
        sleeps = with_fake_sleep(client)
        with pytest.raises(Unavailable) as raised:
            client.evaluate("binary", Y_TRUE, Y_SCORE)
    assert raised.value.retry_after == 120.0
    assert sleeps == [] and len(seen) == 1


def test_the_async_client_honours_retry_after() -> None:
    async def main() -> tuple[list[float], float | None]:
        refusals = [(503, {"retry-after": "1"})]
        with http_recording(refusals=refusals) as (url, _):
            async with AsyncClient(url, retries=2, backoff=0.01) as client:
                waited: list[float] = []

                async def sleep(seconds: float) -> None:
                    waited.append(seconds)

                client._sleep = sleep  # type: ignore[method-assign]
                result = await client.evaluate("binary", Y_TRUE, Y_SCORE)
        return waited, result.metrics["roc_auc"]

    waited, auc = asyncio.run(main())
    assert auc == 0.75
    assert len(waited) == 1 and waited[0] >= 1.0


# --- gRPC: the channel's retry policy -------------------------------------------------------------


def _service_config(client: Client) -> dict[str, Any]:
    options = dict(client._channel_options())
    assert options["grpc.enable_retries"] == 1
    config: dict[str, Any] = json.loads(str(options["grpc.service_config"]))
    return config


def test_the_channel_carries_grpcs_retry_policy() -> None:
    with Client("127.0.0.1:9", retries=3, backoff=0.25, max_backoff=4.0) as client:
        config = _service_config(client)
    (method_config,) = config["methodConfig"]
    names = {(name["service"], name["method"]) for name in method_config["name"]}
    assert names == {
        ("evalserve.v1.EvaluationService", "Evaluate"),
        ("evalserve.v1.EvaluationService", "ListMetrics"),
    }  # not EvaluateStream: a stream is retried by the client's loop
    assert method_config["retryPolicy"] == {
        "maxAttempts": 4,
        "initialBackoff": "0.250s",
        "maxBackoff": "4.000s",
        "backoffMultiplier": 2,
        "retryableStatusCodes": ["UNAVAILABLE"],
    }
    with Client("127.0.0.1:9", retries=9) as client:  # gRPC allows 5 attempts at most
        assert _service_config(client)["methodConfig"][0]["retryPolicy"]["maxAttempts"] == 5
    with Client("127.0.0.1:9", retries=0) as client:
        assert _service_config(client) == {}


def _counting(client: Client | AsyncClient) -> list[int]:
    """Counts the client's own attempts of ``evaluate`` (its explicit loop)."""
    calls: list[int] = []
    send: Callable[..., Any] = client._evaluate

    if isinstance(client, Client):

        def counted(*args: Any) -> Any:
            calls.append(1)
            return send(*args)

        client._evaluate = counted  # type: ignore[method-assign,assignment]
    else:

        async def counted_async(*args: Any) -> Any:
            calls.append(1)
            return await send(*args)

        client._evaluate = counted_async  # type: ignore[method-assign,assignment]
    return calls


@pytest.mark.parametrize("method", ["evaluate", "list_metrics"])
def test_grpcs_retry_policy_retries_unary_calls_on_unavailable(method: str) -> None:
    """Two UNAVAILABLE refusals, then the answer: the channel retried within one call of the
    client (the loop made one attempt), so the retries were the policy's."""
    with (
        grpc_recording(refusals=[busy(), busy()]) as (target, recording),
        Client(target, retries=3, backoff=0.01) as client,
    ):
        calls = _counting(client)
        if method == "evaluate":
            assert client.evaluate("binary", Y_TRUE, Y_SCORE).metrics["roc_auc"] == 0.75
            assert calls == [1]
        else:
            assert client.list_metrics("binary")
    assert len(recording.seen) == 3


def test_unary_attempts_are_not_doubled() -> None:
    """An always-busy server: retries=2 makes three attempts in all, not three per attempt."""
    with (
        grpc_recording(refusals=[busy()] * 20) as (target, recording),
        Client(target, retries=2, backoff=0.01) as client,
    ):
        calls = _counting(client)
        with pytest.raises(Unavailable):
            client.evaluate("binary", Y_TRUE, Y_SCORE)
    assert calls == [1]
    assert len(recording.seen) == 3


def test_retries_above_grpcs_limit_add_whole_calls() -> None:
    """retries=6 asks for 7 attempts, gRPC allows 5 a call: the loop calls twice (10 at most)."""
    with (
        grpc_recording(refusals=[busy()] * 20) as (target, recording),
        Client(target, retries=6, backoff=0.01) as client,
    ):
        calls = _counting(client)
        with pytest.raises(Unavailable):
            client.evaluate("binary", Y_TRUE, Y_SCORE)
    assert calls == [1, 1]
    assert len(recording.seen) == 10


def test_the_async_client_uses_the_retry_policy() -> None:
    async def main() -> tuple[float | None, list[int]]:
        async with AsyncClient(target, retries=3, backoff=0.01) as client:
            calls = _counting(client)
            result = await client.evaluate("binary", Y_TRUE, Y_SCORE)
        return result.metrics["roc_auc"], calls

    with grpc_recording(refusals=[busy(), busy()]) as (target, recording):
        auc, calls = asyncio.run(main())
    assert auc == 0.75 and calls == [1]
    assert len(recording.seen) == 3


def test_without_retries_a_busy_grpc_server_is_unavailable_with_its_hint() -> None:
    with (
        grpc_recording(refusals=[busy(hint=1.5)]) as (target, recording),
        Client(target, retries=0) as client,
        pytest.raises(Unavailable) as raised,
    ):
        client.evaluate("binary", Y_TRUE, Y_SCORE)
    assert raised.value.retry_after == 1.5
    assert len(recording.seen) == 1


def test_a_stream_is_retried_by_the_loop_after_the_retry_info_delay() -> None:
    """Streams are not retried by gRPC: the loop sends the whole stream again, waiting at least
    the RetryInfo delay."""
    with (
        grpc_recording(refusals=[busy(hint=1.25)]) as (target, recording),
        Client(target, retries=2, backoff=0.01, stream_threshold=2) as client,
    ):
        client._random = lambda: 0.0
        sleeps = with_fake_sleep(client)
        calls = _counting(client)
        result = client.evaluate("binary", Y_TRUE, Y_SCORE, progress=False)
    assert result.metrics["roc_auc"] == 0.75
    assert [method for method, _ in recording.seen] == ["EvaluateStream"] * 2
    assert recording.received[0] == recording.received[1]  # the same stream again, whole
    assert sleeps == [1.25] and calls == [1, 1]


def test_a_large_unary_call_is_retried_by_the_channel_too() -> None:
    """gRPC keeps a call's messages for its retries only up to 256 KiB by default, and does not
    retry a larger call at all: the client raises that buffer, so a 200,000-row call (3 MB)
    is retried as a small one is."""
    rows = 200_000
    with (
        grpc_recording(refusals=[busy(), busy()]) as (target, recording),
        Client(target, retries=3, backoff=0.01, stream_threshold=10 * rows) as client,
    ):
        calls = _counting(client)
        client.evaluate("binary", [0, 1] * (rows // 2), [0.25, 0.75] * (rows // 2))
    assert calls == [1]
    assert [method for method, _ in recording.seen] == ["Evaluate"] * 3


def memory_busy(hint: float | None) -> Refusal:
    details = () if hint is None else (retry_info(hint),)
    bad = error_details_pb2.BadRequest(
        field_violations=[
            error_details_pb2.BadRequest.FieldViolation(field="body", description="busy")
        ]
    )
    pushback = ("grpc-retry-pushback-ms", "-1" if hint is None else str(round(1000 * hint)))
    return refusal(
        grpc.StatusCode.RESOURCE_EXHAUSTED, "body: busy", bad, *details, trailers=(pushback,)
    )


def test_resource_exhausted_with_a_hint_is_retried_by_the_loop_after_it() -> None:
    """The server's memory is busy now (RESOURCE_EXHAUSTED with a RetryInfo): not the channel's
    to retry (gRPC answers the same code for a message over its size limit), so the loop
    retries, once an attempt, after the hint."""
    with (
        grpc_recording(refusals=[memory_busy(1.0), memory_busy(2.0)]) as (target, recording),
        Client(target, retries=3, backoff=0.01) as client,
    ):
        client._random = lambda: 0.0
        sleeps = with_fake_sleep(client)
        calls = _counting(client)
        assert client.evaluate("binary", Y_TRUE, Y_SCORE).metrics["roc_auc"] == 0.75
    assert sleeps == [1.0, 2.0] and calls == [1, 1, 1]
    assert len(recording.seen) == 3


def test_resource_exhausted_without_a_hint_is_final() -> None:
    with (
        grpc_recording(refusals=[memory_busy(None)]) as (target, recording),
        Client(target, retries=3, backoff=0.01) as client,
        pytest.raises(TooLarge) as raised,
    ):
        client.evaluate("binary", Y_TRUE, Y_SCORE)
    assert raised.value.field == "body"
    assert len(recording.seen) == 1


def test_memory_busy_retries_stop_after_the_retries() -> None:
    with (
        grpc_recording(refusals=[memory_busy(0.5)] * 10) as (target, recording),
        Client(target, retries=2, backoff=0.01) as client,
        pytest.raises(Unavailable) as raised,
    ):
        with_fake_sleep(client)
        client.evaluate("binary", Y_TRUE, Y_SCORE)
    assert raised.value.code == "resource_exhausted" and raised.value.retry_after == 0.5
    assert len(recording.seen) == 3


def test_the_pushback_trailer_is_a_retry_hint() -> None:
    pushback = refusal(
        grpc.StatusCode.UNAVAILABLE, "busy", trailers=(("grpc-retry-pushback-ms", "750"),)
    )
    with (
        grpc_recording(refusals=[pushback]) as (target, _),
        Client(target, retries=0) as client,
        pytest.raises(Unavailable) as raised,
    ):
        client.evaluate("binary", Y_TRUE, Y_SCORE)
    assert raised.value.retry_after == 0.75


def test_retry_info_takes_precedence_over_the_pushback_trailer() -> None:
    both = refusal(
        grpc.StatusCode.UNAVAILABLE,
        "busy",
        retry_info(1.5),
        trailers=(("grpc-retry-pushback-ms", "750"),),
    )
    with (
        grpc_recording(refusals=[both]) as (target, _),
        Client(target, retries=0) as client,
        pytest.raises(Unavailable) as raised,
    ):
        client.evaluate("binary", Y_TRUE, Y_SCORE)
    assert raised.value.retry_after == 1.5


# --- gRPC: error details ----------------------------------------------------------------------


def test_bad_request_details_are_decoded() -> None:
    bad = error_details_pb2.BadRequest(
        field_violations=[
            error_details_pb2.BadRequest.FieldViolation(
                field="batch 2.scores", description="must be finite"
            ),
            error_details_pb2.BadRequest.FieldViolation(field="labels", description="not 0/1"),
        ]
    )
    invalid = refusal(grpc.StatusCode.INVALID_ARGUMENT, "batch 2.scores: must be finite", bad)
    with (
        grpc_recording(refusals=[invalid]) as (target, recording),
        Client(target, retries=3) as client,
        pytest.raises(InvalidArgument) as raised,
    ):
        client.evaluate("binary", Y_TRUE, Y_SCORE)
    assert raised.value.field == "batch 2.scores"  # holds a space: from the detail, not split
    assert raised.value.message == "must be finite"
    assert raised.value.code == "invalid_argument"
    assert len(recording.seen) == 1  # not retried


def test_unreadable_details_fall_back_to_the_message() -> None:
    broken = Refusal(
        grpc.StatusCode.INVALID_ARGUMENT,
        "labels: not 0/1",
        (("grpc-status-details-bin", b"\xff\xff\xff"),),
    )
    with (
        grpc_recording(refusals=[broken]) as (target, _),
        Client(target) as client,
        pytest.raises(InvalidArgument) as raised,
    ):
        client.evaluate("binary", Y_TRUE, Y_SCORE)
    assert raised.value.field is None
    assert raised.value.message == "labels: not 0/1"
