"""Both clients send the caller's headers with every call: HTTP headers over REST, call metadata
over gRPC (an API gateway's authorization, a request id). The servers here are small recording
servers on loopback that answer with the core's real result, so what arrived can be read back;
bad header names and values are refused when the client is made."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from evalserve_client import AsyncClient, Client

from tests.clients.recording import Recording, Seen, answer, grpc_recording, http_recording
from tests.clients.test_typescript import finish_cases, ok, start_cases, ts_case
from tests.contract.test_same_answer import assert_same

HEADERS = {"Authorization": "Bearer token-123", "x-request-id": "req-42"}
SENT = {"authorization": "Bearer token-123", "x-request-id": "req-42"}
LABELS = [0.0, 0.0, 1.0, 1.0]
SCORES = [0.1, 0.4, 0.35, 0.8]


@pytest.fixture
def grpc_recorder() -> Iterator[tuple[str, Recording]]:
    with grpc_recording() as served:
        yield served


@pytest.fixture
def http_recorder() -> Iterator[tuple[str, Seen]]:
    with http_recording() as served:
        yield served


def _sent(headers: dict[str, str]) -> dict[str, str]:
    return {key: headers[key] for key in SENT if key in headers}


def test_the_python_client_sends_its_headers_on_every_grpc_call(
    grpc_recorder: tuple[str, Recording],
) -> None:
    target, recording = grpc_recorder
    with Client(target, headers=HEADERS, stream_threshold=2, chunk_rows=1) as client:
        streamed = client.evaluate("binary", LABELS, SCORES)
        client.list_metrics()
    with Client(target, headers=HEADERS) as client:
        unary = client.evaluate("binary", LABELS, SCORES)

    async def awaited() -> None:
        async with AsyncClient(target, headers=HEADERS) as client:
            await client.evaluate("binary", LABELS, SCORES)

    asyncio.run(awaited())
    methods = [method for method, _ in recording.seen]
    assert methods == ["EvaluateStream", "ListMetrics", "Evaluate", "Evaluate"]
    assert all(_sent(headers) == SENT for _, headers in recording.seen)
    expected = answer(LABELS, SCORES).to_dict()
    assert_same(streamed.to_dict(), expected)
    assert_same(unary.to_dict(), expected)


def test_the_python_client_sends_its_headers_on_every_rest_call(
    http_recorder: tuple[str, Seen],
) -> None:
    target, seen = http_recorder
    with Client(target, headers=HEADERS, stream_threshold=2, chunk_rows=1) as client:
        streamed = client.evaluate("binary", LABELS, SCORES)
        client.list_metrics()
        unary = client.evaluate("binary", LABELS[:2] + LABELS[2:], SCORES, timeout=10)
    assert [path for path, _ in seen] == [
        "/v1/evaluate/stream",
        "/v1/metrics",
        "/v1/evaluate/stream",
    ]
    assert all(_sent(headers) == SENT for _, headers in seen)
    expected = answer(LABELS, SCORES).to_dict()
    assert_same(streamed.to_dict(), expected)
    assert_same(unary.to_dict(), expected)


@pytest.mark.parametrize(
    "headers",
    [{"bad name": "x"}, {"x-trace-bin": "x"}, {"grpc-timeout": "1S"}, {"x-id": "caf\u00e9"},
     {"content-type": "text/plain"}, {"x-id": "a\nb"}],
)  # fmt: skip
def test_bad_headers_are_refused_when_the_client_is_made(headers: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="header"):
        Client("127.0.0.1:1", headers=headers)


def test_the_typescript_client_sends_its_headers_on_every_call(
    grpc_recorder: tuple[str, Recording],
    http_recorder: tuple[str, Seen],
    tmp_path: Path,
) -> None:
    grpc_target, recording = grpc_recorder
    rest_target, seen = http_recorder
    settings = {"headers": HEADERS, "streamThreshold": 2, "chunkRows": 1}
    cases = []
    for name, target in (("grpc", grpc_target), ("rest", rest_target)):
        cases += [
            ts_case(f"stream:{name}", target, "binary", LABELS, SCORES, settings=settings),
            ts_case(f"unary:{name}", target, "binary", LABELS[:2], SCORES[:2],
                    settings={"headers": HEADERS}),
            {"id": f"catalog:{name}", "target": target, "settings": settings,
             "call": "listMetrics"},
        ]  # fmt: skip
    answers = finish_cases(start_cases(cases, tmp_path), cases)
    assert [method for method, _ in recording.seen] == ["EvaluateStream", "Evaluate", "ListMetrics"]
    assert [path for path, _ in seen] == ["/v1/evaluate/stream", "/v1/evaluate", "/v1/metrics"]
    assert all(_sent(h) == SENT for _, h in recording.seen + seen)
    for name in ("grpc", "rest"):
        assert ok(answers, f"stream:{name}")["metrics"] == answer(LABELS, SCORES).metrics
