"""The Python client (clients/python, ``evalserve_client``) against a real server on loopback:
every request of the contract table through both transports gives ``core.evaluate``'s answer
exactly, large inputs of every task stream to the one-shot answer, refusals come back as typed
exceptions with the server's field and message, unavailable servers are retried (a gRPC or REST
server that comes up during the backoff is reached) while refusals are not, the metric catalog
is core's, and streamed uploads report their progress on stderr when asked (or on a terminal)."""

from __future__ import annotations

import asyncio
import inspect
import io
import re
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import grpc
import numpy as np
import pytest
from evalserve_client import (
    AsyncClient,
    Client,
    EvalserveError,
    EvaluationResult,
    InvalidArgument,
    MetricInfo,
    MetricRange,
    TooLarge,
    Unavailable,
)

from evalserve.core import catalog_entries, evaluate
from evalserve.service.config import Settings
from evalserve.v1 import evaluation_pb2 as pb
from tests.clients import stream_cases
from tests.clients.stream_cases import assert_same_answer
from tests.contract.doors import column
from tests.contract.servers import Service, running
from tests.contract.test_same_answer import REQUESTS, assert_same, expected_of, request_of


def targets(service: Service) -> dict[str, str]:
    return {"grpc": service.grpc_target, "rest": service.url}


def arguments(request: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """A contract-table request as ``evaluate`` arguments (what a caller would pass)."""
    keywords = {key: request.get(key) for key in ("options", "classes", "model", "baseline",
                                                  "challenger", "coverage")}  # fmt: skip
    if request["task"] == "detection":
        images = request["images"]
        y_true = [{"boxes": i["gt_boxes"], "classes": i["gt_classes"]} for i in images]
        y_score = [
            {"boxes": i["pred_boxes"], "classes": i["pred_classes"], "scores": i["pred_scores"]}
            for i in images
        ]
        return ("detection", y_true, y_score), keywords
    labels: Any = request.get("labels")
    if not (isinstance(labels, list) and labels and isinstance(labels[0], str)):
        labels = column(request, "labels")
    keywords["y_pred"] = column(request, "predictions")
    keywords["sample_weight"] = column(request, "weights")
    return (request["task"], labels, column(request, "scores")), keywords


@pytest.mark.parametrize("transport", ["grpc", "rest"])
@pytest.mark.parametrize("case", list(REQUESTS))
def test_every_case_gives_the_core_answer(service: Service, case: str, transport: str) -> None:
    args, keywords = arguments(request_of(case))
    with Client(targets(service)[transport]) as client:
        result = client.evaluate(*args, **keywords)
    assert isinstance(result, EvaluationResult)
    assert_same(result.to_dict(), expected_of(case))
    assert result.metrics == result.to_dict()["metrics"]


def test_the_typed_result_and_plain_inputs(service: Service) -> None:
    y_true = [0, 0, 1, 1]
    y_score = [0.1, 0.4, 0.35, 0.8]
    expected = evaluate("binary", np.asarray(y_true, float), np.asarray(y_score)).to_dict()
    for target in targets(service).values():
        with Client(target) as client:
            result = client.evaluate("binary", y_true, y_score)  # plain lists
        assert_same(result.to_dict(), expected)
        assert result.metrics["roc_auc"] == 0.75
        assert result.task == "binary"
        assert result.n_samples == 4
        assert set(result.curves) >= {"roc", "pr"}
        assert "roc_auc" in result.intervals
        assert result.drift == {}
        assert result.comparison == {}
        assert result.per_class == []
        assert isinstance(result.undefined, dict)
        assert isinstance(result.warnings, list)


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_pandas_columns_are_inputs(service: Service, transport: str) -> None:
    pd = pytest.importorskip("pandas")  # in the test extra: never skipped by `make test`
    index = pd.Index([10, 11, 12, 13, 14, 15])  # not 0..n-1: positions, not labels, count
    frame = pd.DataFrame(
        {
            "label": pd.Series([0, 0, 1, 1, 1, 0], index=index, dtype="int64"),
            "score": pd.Series([0.1, 0.4, 0.35, 0.8, 0.8, 0.2], index=index, dtype="float32"),
            "weight": pd.Series([1.0, 2.0, 1.0, 0.5, 1.0, 3.0], index=index),
            "species": pd.Categorical(["cat", "dog", "owl", "owl", "cat", "dog"]),
        },
        index=index,
    )
    probabilities = pd.DataFrame(
        np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.2, 0.7]] * 2),
        columns=["cat", "dog", "owl"],
    )
    with Client(targets(service)[transport]) as client:
        binary = client.evaluate(
            "binary", frame["label"], frame["score"], sample_weight=frame["weight"]
        )
        multiclass = client.evaluate(
            "multiclass",
            frame["species"],  # a categorical column of class names
            probabilities,
            classes=list(probabilities.columns),
        )
    assert_same(
        binary.to_dict(),
        evaluate(
            "binary",
            frame["label"].to_numpy(float),
            frame["score"].to_numpy(np.float64),
            sample_weight=frame["weight"].to_numpy(),
        ).to_dict(),
    )
    assert_same(
        multiclass.to_dict(),
        evaluate(
            "multiclass",
            list(frame["species"].astype(str)),
            probabilities.to_numpy(),
            classes=["cat", "dog", "owl"],
        ).to_dict(),
    )


def _rows(n_rows: int, seed: int) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    rng = np.random.default_rng(seed)
    labels = (rng.random(n_rows) < 0.3).astype(np.float64)
    scores = np.round(1 / (1 + np.exp(-rng.normal(1.2 * labels - 0.6, 1.0))), 3)
    return labels, scores


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_an_input_over_the_threshold_streams(limited: Service, transport: str) -> None:
    """2 500 rows: over the limited server's 2 000 rows a request, under its 3 000 a stream, so
    only a stream gets through; the answer is the one-shot core answer."""
    labels, scores = _rows(2500, seed=3)
    options = {"max_curve_points": 0}
    expected = evaluate("binary", labels, scores, options=options).to_dict()
    target = targets(limited)[transport]
    with Client(target) as client, pytest.raises(TooLarge) as refused:
        client.evaluate("binary", labels, scores, options=options)
    assert refused.value.message
    with Client(target, stream_threshold=1000, chunk_rows=700) as client:
        result = client.evaluate("binary", labels, scores, options=options)
    assert_same(result.to_dict(), expected)


@pytest.mark.parametrize("transport", ["grpc", "rest"])
@pytest.mark.parametrize(
    ("positive", "negative", "option"),
    [("yes", "no", "yes"), (2, 1, 2), (2.0, 1.0, np.float64(2.0)), (1, -1, "1")],
    ids=["names", "numbers-option-int", "numbers-option-numpy", "minus-1-1"],
)
def test_positive_label_one_shot_and_streamed(
    limited: Service, transport: str, positive: Any, negative: Any, option: Any
) -> None:
    """options.positive_label through the client: names go as label names (protobuf) or JSON
    strings, a number as the option's text; the one-shot and the streamed answers are the
    answer of the same rows as 1/0 labels."""
    labels, scores = _rows(2500, seed=4)
    named = np.where(labels == 1, positive, negative)
    expected = evaluate("binary", labels, scores, options={"max_curve_points": 0}).to_dict()
    options = {"max_curve_points": 0, "positive_label": option}
    target = targets(limited)[transport]
    with Client(target) as client:
        result = client.evaluate("binary", named[:1500], scores[:1500], options=options)
    part = evaluate("binary", labels[:1500], scores[:1500], options={"max_curve_points": 0})
    assert_same(result.to_dict(), part.to_dict())
    with Client(target, stream_threshold=1000, chunk_rows=700) as client:
        result = client.evaluate("binary", named, scores, options=options)
    assert_same(result.to_dict(), expected)


@pytest.mark.parametrize("transport", ["grpc", "rest"])
@pytest.mark.parametrize("name", stream_cases.CASES)
def test_every_task_streams_to_the_one_shot_answer(
    service: Service, name: str, transport: str
) -> None:
    """Each task's input over the stream threshold (a small one here) goes as a stream, in
    batches of whole rows or images, and gets the answer the same input gets in one request."""
    case = stream_cases.cases()[name]
    target = targets(service)[transport]
    with Client(target) as client:
        one_shot = client.evaluate(*case.args(), **case.keywords).to_dict()
    assert_same(one_shot, case.one_shot())
    with Client(target, **case.python_settings) as client:
        streamed = client.evaluate(*case.args(), **case.keywords).to_dict()
    assert_same_answer(case.task, streamed, one_shot)


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_a_million_rows_stream_by_default(service: Service, transport: str) -> None:
    labels, scores = _rows(1_000_001, seed=4)
    # integer weights: their sums are exact in any batch order (fractional ones are merged per
    # 250 000-row chunk, and float addition is not associative over a million rows)
    weights = np.random.default_rng(5).integers(1, 4, size=len(labels)).astype(np.float64)
    expected = evaluate("binary", labels, scores, sample_weight=weights).to_dict()
    with Client(targets(service)[transport]) as client:
        assert client.stream_threshold < len(labels)
        result = client.evaluate("binary", labels, scores, sample_weight=weights, timeout=300)
    assert_same(result.to_dict(), expected)


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_a_refusal_is_a_typed_error_with_the_servers_field(
    service: Service, transport: str
) -> None:
    with Client(targets(service)[transport]) as client:
        with pytest.raises(InvalidArgument) as refused:
            client.evaluate("binary", [0, 1, 1], [0.2, float("nan"), 0.7])
        assert refused.value.field == "scores"
        assert "nan" in refused.value.message
        with pytest.raises(InvalidArgument) as refused:
            client.evaluate("binary", [0, 1], [0.2, 0.7], options={"beta": -1.0})
        assert refused.value.field == "options.beta"
        assert isinstance(refused.value, EvalserveError)
        assert refused.value.message in str(refused.value)


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_a_refused_stream_batch_names_its_batch_and_field(service: Service, transport: str) -> None:
    """The field of a streamed refusal contains a space ("batch 5.scores"): it comes from the
    server's BadRequest detail on gRPC, not from splitting the message."""
    labels = np.r_[np.zeros(50), np.ones(50)]
    scores = np.linspace(0, 1, 100)
    scores[77] = np.nan  # rows 60..79 are the fourth batch of 20
    client = Client(targets(service)[transport], stream_threshold=10, chunk_rows=20)
    with client, pytest.raises(InvalidArgument) as refused:
        client.evaluate("binary", labels, scores)
    # gRPC numbers messages (the header is message 1), REST numbers lines (the header is line 1)
    where = {"grpc": "batch 5", "rest": "line 5"}[transport]
    assert refused.value.field == f"{where}.scores"
    assert refused.value.message == "expected finite numbers, but row 17 is nan"
    assert refused.value.code == "invalid_argument"


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_options_a_transport_cannot_carry_are_refused_as_the_server_would(
    service: Service, transport: str
) -> None:
    """An unknown option (gRPC cannot encode it) and a non-finite one (JSON has no inf) are
    refused before sending, with the messages the server gives where it can see them."""
    server_unknown = service.rest.post(
        "/v1/evaluate",
        json={"task": "binary", "labels": [0, 1], "scores": [0.2, 0.7], "options": {"thresh": 1}},
    ).json()["error"]
    request = pb.EvaluateRequest(task=pb.TASK_BINARY, labels=[0, 1], scores=[0.2, 0.7])
    request.options.threshold = float("inf")
    with pytest.raises(grpc.RpcError) as raw:
        service.stub.Evaluate(request)
    with Client(targets(service)[transport]) as client:
        with pytest.raises(InvalidArgument) as unknown:
            client.evaluate("binary", [0, 1], [0.2, 0.7], options={"thresh": 1})
        with pytest.raises(InvalidArgument) as infinite:
            client.evaluate("binary", [0, 1], [0.2, 0.7], options={"threshold": float("inf")})
    assert (unknown.value.field, unknown.value.message, unknown.value.code) == (
        server_unknown["field"],
        server_unknown["message"],
        server_unknown["code"],
    )
    assert f"{infinite.value.field}: {infinite.value.message}" == raw.value.details()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_a_dead_server_is_retried_then_unavailable(transport: str) -> None:
    port = _free_port()
    target = f"127.0.0.1:{port}" if transport == "grpc" else f"http://127.0.0.1:{port}"
    started = time.monotonic()
    with Client(target, retries=2, backoff=0.05, timeout=5) as client, pytest.raises(Unavailable):
        client.evaluate("binary", [0, 1], [0.2, 0.7])
    assert time.monotonic() - started < 10


def test_a_server_briefly_unavailable_is_retried() -> None:
    """The first attempts find nothing on the port; the server comes up during the backoff."""
    port = _free_port()
    settings = Settings(host="127.0.0.1", rest_port=port, grpc_port=0)
    release = threading.Event()

    def serve_soon() -> None:
        time.sleep(0.5)
        with running(settings):
            release.wait(timeout=60)

    server = threading.Thread(target=serve_soon, daemon=True)
    server.start()
    try:
        with Client(f"http://127.0.0.1:{port}", retries=8, backoff=0.1) as client:
            result = client.evaluate("binary", [0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
        assert result.metrics["roc_auc"] == 0.75
    finally:
        release.set()
        server.join(timeout=60)


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_the_async_client(service: Service, limited: Service, transport: str) -> None:
    labels, scores = _rows(2500, seed=7)
    expected = evaluate("binary", labels, scores).to_dict()
    case = "task-multiclass"
    args, keywords = arguments(request_of(case))

    async def main() -> None:
        async with AsyncClient(targets(service)[transport]) as client:
            one, two = await asyncio.gather(
                client.evaluate("binary", labels, scores), client.evaluate(*args, **keywords)
            )
            assert_same(one.to_dict(), expected)
            assert_same(two.to_dict(), expected_of(case))
            with pytest.raises(InvalidArgument) as refused:
                await client.evaluate("binary", [0, 1], [0.2, 0.7], options={"beta": -1.0})
            assert refused.value.field == "options.beta"
        async with AsyncClient(
            targets(limited)[transport], stream_threshold=1000, chunk_rows=700
        ) as client:
            streamed = await client.evaluate("binary", labels, scores)
            assert_same(streamed.to_dict(), expected)

    asyncio.run(main())


# --- the metric catalog -------------------------------------------------------------------------


def _core_catalog(task: str | None = None) -> list[MetricInfo]:
    return [
        MetricInfo(
            info.name, info.tasks, info.higher_is_better, info.definition, info.aliases,
            info.task, MetricRange(*map(_bound, (info.range.lower, info.range.upper))),
            info.convention, info.reference, info.test,
        )
        for info in catalog_entries(task)
    ]  # fmt: skip


def _bound(value: float | None) -> float | None:
    return None if value is None else float(value)


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_list_metrics_is_cores_catalog(service: Service, transport: str) -> None:
    with Client(targets(service)[transport]) as client:
        catalog = client.list_metrics()
    assert catalog == _core_catalog()
    by_key = {(entry.task, entry.name): entry for entry in catalog}
    roc_auc = by_key["binary", "roc_auc"]
    assert roc_auc.tasks == ("binary",)
    assert roc_auc.higher_is_better is True
    assert roc_auc.range == MetricRange(0.0, 1.0) and 0.68 in roc_auc.range
    assert roc_auc.convention.startswith("ties: ")
    assert roc_auc.test == "tests/core/test_binary_sklearn.py::test_roc_auc_matches_sklearn"
    assert "sklearn.metrics.roc_auc_score" in roc_auc.reference
    assert by_key["binary", "log_loss"].range == MetricRange(0.0, None)
    assert by_key["binary", "ks_threshold"].range == MetricRange(None, None)
    assert by_key["multiclass", "brier_score"].range == MetricRange(0.0, 2.0)
    assert any(entry.higher_is_better is None for entry in catalog)  # counts have no direction
    assert "sensitivity" in by_key["binary", "recall"].aliases

    async def main() -> list[MetricInfo]:
        async with AsyncClient(targets(service)[transport]) as client:
            return await client.list_metrics(timeout=30)

    assert asyncio.run(main()) == catalog


@pytest.mark.parametrize("task", ["multiclass", "detection"])
@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_list_metrics_of_one_task(service: Service, transport: str, task: str) -> None:
    expected = _core_catalog(task)
    assert expected and {entry.task for entry in expected} == {task}
    with Client(targets(service)[transport]) as client:
        assert client.list_metrics(task) == expected
        assert client.list_metrics(task=task, timeout=30) == expected

    async def main() -> list[MetricInfo]:
        async with AsyncClient(targets(service)[transport]) as client:
            return await client.list_metrics(task)

    assert asyncio.run(main()) == expected


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_list_metrics_refuses_an_unknown_task_alike_on_both_transports(
    service: Service, transport: str
) -> None:
    # gRPC cannot carry the name, so the client refuses it; REST hears it from the server.
    with Client(targets(service)[transport]) as client, pytest.raises(InvalidArgument) as sync:
        client.list_metrics("ranking")

    async def main() -> None:
        async with AsyncClient(targets(service)[transport]) as client:
            await client.list_metrics("ranking")

    with pytest.raises(InvalidArgument) as awaited:
        asyncio.run(main())
    for refused in (sync.value, awaited.value):
        assert (refused.field, refused.code) == ("task", "invalid_argument")
        assert refused.message == (
            "expected one of ['binary', 'multiclass', 'multilabel', 'regression', "
            "'detection'], but got 'ranking'"
        )


# --- the progress line of streamed uploads ----------------------------------------------------

SENT = re.compile(r"\revalserve: ([\d,]+)/([\d,]+) rows sent \((\d+)%\)")


def _reports(err: str) -> list[tuple[int, int]]:
    return [(int(s.replace(",", "")), int(t.replace(",", ""))) for s, t, _ in SENT.findall(err)]


@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_a_forced_progress_line_reports_every_row_sent(
    limited: Service, transport: str, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    labels, scores = _rows(2500, seed=8)
    settings: dict[str, Any] = {"stream_threshold": 1000, "chunk_rows": 700, "progress": True}
    target = targets(limited)[transport]
    if kind == "sync":
        with Client(target, **settings) as client:
            client.evaluate("binary", labels, scores)
    else:

        async def main() -> None:
            async with AsyncClient(target, **settings) as client:
                await client.evaluate("binary", labels, scores)

        asyncio.run(main())
    err = capsys.readouterr().err
    assert _reports(err) == [(700, 2500), (1400, 2500), (2100, 2500), (2500, 2500)]
    assert err.endswith("2,500/2,500 rows sent (100%)\n")


def test_progress_is_off_by_default_unless_stderr_is_a_terminal(
    limited: Service, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    labels, scores = _rows(2500, seed=9)
    with Client(limited.grpc_target, stream_threshold=1000, chunk_rows=700) as client:
        client.evaluate("binary", labels, scores)  # captured stderr: not a terminal
        assert capsys.readouterr().err == ""

        class Terminal(io.StringIO):
            def isatty(self) -> bool:
                return True

        terminal = Terminal()
        monkeypatch.setattr(sys, "stderr", terminal)
        client.evaluate("binary", labels, scores)
        assert _reports(terminal.getvalue())[-1] == (2500, 2500)
        terminal.truncate(0)
        client.evaluate("binary", labels, scores, progress=False)  # the call's word wins
        client.evaluate("binary", labels[:900], scores[:900], progress=True)  # one message
        assert terminal.getvalue() == ""


# --- retries ------------------------------------------------------------------------------------


class _Counted:
    """Counts a client's attempts (its one method that sends) and signals the first failure."""

    def __init__(self) -> None:
        self.outcomes: list[str] = []
        self.failed = threading.Event()

    def wrap(self, send: Any) -> Any:
        def counted(*args: Any) -> Any:
            with self._counting():
                return send(*args)

        async def counted_async(*args: Any) -> Any:
            with self._counting():
                return await send(*args)

        return counted_async if inspect.iscoroutinefunction(send) else counted

    @contextmanager
    def _counting(self) -> Iterator[None]:
        try:
            yield
        except EvalserveError as error:
            self.outcomes.append(type(error).__name__)
            self.failed.set()
            raise
        self.outcomes.append("ok")


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_grpc_server_that_comes_up_during_the_backoff_is_reached(kind: str) -> None:
    """Nothing listens on the port when the call starts; the server starts once the first
    attempt has failed, and a retry reaches it."""
    port = _free_port()
    counted = _Counted()
    release = threading.Event()

    def serve_after_the_first_failure() -> None:
        assert counted.failed.wait(timeout=30)
        with running(Settings(host="127.0.0.1", rest_port=0, grpc_port=port)):
            release.wait(timeout=60)

    server = threading.Thread(target=serve_after_the_first_failure, daemon=True)
    server.start()
    target = f"127.0.0.1:{port}"
    try:
        if kind == "sync":
            with Client(target, retries=8, backoff=0.1) as client:
                client._evaluate = counted.wrap(client._evaluate)  # type: ignore[method-assign]
                result = client.evaluate("binary", [0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
        else:

            async def main() -> EvaluationResult:
                async with AsyncClient(target, retries=8, backoff=0.1) as client:
                    client._evaluate = counted.wrap(client._evaluate)  # type: ignore[method-assign]
                    return await client.evaluate("binary", [0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])

            result = asyncio.run(main())
        assert result.metrics["roc_auc"] == 0.75
        assert counted.outcomes[0] == "Unavailable"
        assert counted.outcomes[-1] == "ok"
        assert set(counted.outcomes[:-1]) == {"Unavailable"}
    finally:
        release.set()
        server.join(timeout=60)


def _requests(service: Service, code: str, transport: str) -> float:
    prefix = f'evalserve_requests_total{{code="{code}",method="evaluate",transport="{transport}"}} '
    lines = service.rest.get("/metrics").text.splitlines()
    return sum(float(line.removeprefix(prefix)) for line in lines if line.startswith(prefix))


@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_an_invalid_argument_is_not_retried(service: Service, transport: str, kind: str) -> None:
    code = "INVALID_ARGUMENT" if transport == "grpc" else "422"
    before = _requests(service, code, transport)
    counted = _Counted()
    target = targets(service)[transport]
    with pytest.raises(InvalidArgument):
        if kind == "sync":
            with Client(target, retries=5, backoff=0.01) as client:
                client._evaluate = counted.wrap(client._evaluate)  # type: ignore[method-assign]
                client.evaluate("binary", [0, 1], [0.2, 0.7], options={"beta": -1.0})
        else:

            async def main() -> None:
                async with AsyncClient(target, retries=5, backoff=0.01) as client:
                    client._evaluate = counted.wrap(client._evaluate)  # type: ignore[method-assign]
                    await client.evaluate("binary", [0, 1], [0.2, 0.7], options={"beta": -1.0})

            asyncio.run(main())
    assert counted.outcomes == ["InvalidArgument"]
    # The server counts a request once its answer is on the way, so the count can trail the
    # client by a moment: wait for the one request, then make sure no second one follows.
    deadline = time.monotonic() + 5
    while _requests(service, code, transport) - before < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)
    assert _requests(service, code, transport) - before == 1
