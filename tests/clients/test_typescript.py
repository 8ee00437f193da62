"""The TypeScript client (clients/typescript, ``@evalserve/client``) against a real server on
loopback: every request of the contract table through both transports gives exactly the Python
client's answer (the whole result, after a JSON round trip), large binary inputs stream,
refusals come back as typed errors with the server's field and message, an unavailable server
is retried, the README's examples run, and the generated code is what protoc-gen-es makes of the
proto.

The client runs in Node (``tsx``); one Node process answers a whole batch of calls
(``clients/typescript/test/run-cases.ts``), so the module starts Node a handful of times, not
once per case.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import re
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from evalserve_client import Client, EvalserveError

from evalserve.core import evaluate
from evalserve.service.config import Settings
from tests.clients import stream_cases
from tests.clients.stream_cases import Case, assert_same_answer
from tests.clients.test_python_client import arguments
from tests.contract.servers import Service, running
from tests.contract.test_same_answer import REQUESTS, assert_same, request_of

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "clients" / "typescript"
BIN = PACKAGE / "node_modules" / ".bin"
TRANSPORTS = ("grpc", "rest")

Answers = dict[str, dict[str, Any]]


def _node_modules() -> None:
    if not (BIN / "tsx").exists() or not (BIN / "tsc").exists():
        pytest.fail("clients/typescript/node_modules is missing: run `make ts-install`")


def targets(service: Service) -> dict[str, str]:
    return {"grpc": service.grpc_target, "rest": service.url}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


# --- running the TypeScript client ---------------------------------------------------------


def ts_values(values: Any, packed: bool) -> Any:
    """A column (or matrix, or class names) for the case file: ``{"f64": base64}`` becomes a
    Float64Array in Node, a plain list a ``number[]``. Non-finite values always go packed (JSON
    has no NaN)."""
    array = np.asarray(values)
    if array.dtype.kind in "USO":
        return [str(v) for v in array.tolist()]
    array = array.astype(np.float64)
    if array.ndim == 2:
        return [ts_values(row, packed) for row in array]
    if packed or not np.isfinite(array).all():
        return {"f64": base64.b64encode(array.astype("<f8").tobytes()).decode()}
    return array.tolist()


def ts_payload(payload: dict[str, Any] | None, packed: bool) -> dict[str, Any] | None:
    """A baseline or challenger: its columns as ``ts_values``, numbers as given."""
    if payload is None:
        return None
    return {
        key: ts_values(value, packed) if isinstance(value, list | np.ndarray) else value
        for key, value in payload.items()
    }


def ts_case(
    case_id: str,
    target: str,
    task: str,
    y_true: Any,
    y_score: Any = None,
    *,
    packed: bool = True,
    settings: dict[str, Any] | None = None,
    **opts: Any,
) -> dict[str, Any]:
    """One ``evaluate`` call for run-cases.ts; ``opts`` in the client's names (``yPred``,
    ``sampleWeight``, ``options``, ...)."""
    columns = ("yPred", "sampleWeight")
    payloads = ("baseline", "challenger")
    given = {key: value for key, value in opts.items() if value is not None}
    converted = {
        key: ts_values(value, packed)
        if key in columns
        else ts_payload(value, packed)
        if key in payloads
        else value
        for key, value in given.items()
    }
    if task == "detection":
        truth, score = y_true, y_score
    else:
        truth = ts_values(y_true, packed)
        score = None if y_score is None else ts_values(y_score, packed)
    return {
        "id": case_id,
        "target": target,
        "settings": settings or {},
        "call": "evaluate",
        "task": task,
        "yTrue": truth,
        "yScore": score,
        "opts": converted,
    }


def start_cases(
    cases: list[dict[str, Any]],
    tmp_path: Path,
    *,
    parallel: bool = False,
    env: dict[str, str] | None = None,
) -> subprocess.Popen[str]:
    """Node running ``cases``; ``env`` adds to the environment (NODE_EXTRA_CA_CERTS, say)."""
    _node_modules()
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"cases": cases, "parallel": parallel}, allow_nan=False))
    return subprocess.Popen(
        [str(BIN / "tsx"), "test/run-cases.ts", str(path)],
        cwd=PACKAGE,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish_cases(
    process: subprocess.Popen[str], cases: list[dict[str, Any]], timeout: float = 300
) -> Answers:
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    finally:
        process.kill()  # no-op once it has exited
    assert process.returncode == 0, f"run-cases.ts failed:\n{stderr}"
    results: Answers = json.loads(stdout)["results"]
    assert sorted(results) == sorted(case["id"] for case in cases)
    return results


def run_cases(cases: list[dict[str, Any]], tmp_path: Path) -> Answers:
    return finish_cases(start_cases(cases, tmp_path), cases)


def ok(answers: Answers, case_id: str) -> dict[str, Any]:
    answer = answers[case_id]
    assert "ok" in answer, f"{case_id}: {answer.get('error')}"
    result: dict[str, Any] = answer["ok"]
    return result


def error(answers: Answers, case_id: str) -> dict[str, Any]:
    answer = answers[case_id]
    assert "error" in answer, f"{case_id}: answered instead of refusing"
    found: dict[str, Any] = answer["error"]
    return found


def round_trip(result: dict[str, Any]) -> dict[str, Any]:
    """What the TypeScript answers went through: JSON (a non-finite value would fail here)."""
    back: dict[str, Any] = json.loads(json.dumps(result, allow_nan=False))
    return back


def python_answer(target: str, *args: Any, **keywords: Any) -> dict[str, Any]:
    settings = keywords.pop("settings", {})
    with Client(target, **settings) as client:
        return round_trip(client.evaluate(*args, **keywords).to_dict())


def python_refusal(target: str, *args: Any, **keywords: Any) -> EvalserveError:
    with Client(target) as client, pytest.raises(EvalserveError) as refused:
        client.evaluate(*args, **keywords)
    return refused.value


def assert_equal(got: dict[str, Any], expected: dict[str, Any]) -> None:
    """The whole result, exactly: ``assert_same`` names the first differences (and tells a
    bool from a number), ``==`` guards the rest."""
    assert_same(got, expected)
    assert got == expected


def ts_stream_case(
    case_id: str, target: str, case: Case, settings: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A case of tests/clients/stream_cases.py as a run-cases.ts call."""
    given = case.keywords
    return ts_case(
        case_id, target, case.task, case.y_true, case.y_score, settings=settings,
        yPred=given.get("y_pred"), sampleWeight=given.get("sample_weight"),
        options=given.get("options"), classes=given.get("classes"), model=given.get("model"),
        baseline=given.get("baseline"), challenger=given.get("challenger"),
        coverage=given.get("coverage"), window=given.get("window"),
    )  # fmt: skip


# --- the contract table -------------------------------------------------------------------


def table_case(case: str, transport: str, target: str, packed: bool) -> dict[str, Any]:
    (task, y_true, y_score), keywords = arguments(request_of(case))
    return ts_case(
        f"table:{case}:{transport}",
        target,
        task,
        y_true,
        y_score,
        packed=packed,
        yPred=keywords["y_pred"] if task != "detection" else None,
        sampleWeight=keywords["sample_weight"] if task != "detection" else None,
        options=keywords["options"],
        classes=keywords["classes"],
        model=keywords["model"],
        baseline=keywords["baseline"],
        challenger=keywords["challenger"],
        coverage=keywords["coverage"],
    )


def _rows(n_rows: int, seed: int) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    rng = np.random.default_rng(seed)
    labels = (rng.random(n_rows) < 0.3).astype(np.float64)
    scores = np.round(1 / (1 + np.exp(-rng.normal(1.2 * labels - 0.6, 1.0))), 3)
    return labels, scores


STREAM_SETTINGS = {"streamThreshold": 1000, "chunkRows": 700}
PY_STREAM_SETTINGS = {"stream_threshold": 1000, "chunk_rows": 700}
BASELINE_ROWS = _rows(400, seed=21)
STREAM_COVERAGE = {"n_predictions": 10_000, "label_delay_seconds": 7200}
STREAM_WEIGHTS = np.random.default_rng(22).integers(1, 4, size=2500).astype(np.float64)


def other_cases(service: Service, limited: Service, dead: int) -> list[dict[str, Any]]:
    """Streams, refusals, deadlines, a dead server and the catalog, on both transports."""
    cases: list[dict[str, Any]] = []
    labels, scores = _rows(2500, seed=3)
    big_labels, big_scores = _rows(200_000, seed=9)
    baseline = {"labels": BASELINE_ROWS[0], "scores": BASELINE_ROWS[1]}
    for transport in TRANSPORTS:
        served, small = targets(service)[transport], targets(limited)[transport]
        dead_target = f"127.0.0.1:{dead}" if transport == "grpc" else f"http://127.0.0.1:{dead}"
        cases += [
            ts_case(f"stream:{transport}", small, "binary", labels, scores,
                    settings=STREAM_SETTINGS, options={"max_curve_points": 0}),
            ts_case(f"stream-weights-baseline:{transport}", served, "binary", labels, scores,
                    packed=False, settings=STREAM_SETTINGS, sampleWeight=STREAM_WEIGHTS,
                    baseline=baseline, options={"drift_min_samples": 5, "threshold": 0.4},
                    coverage=STREAM_COVERAGE),
            ts_case(f"one-shot-over-the-rows-limit:{transport}", small, "binary", labels, scores),
            ts_case(f"mismatched-lengths:{transport}", served, "binary", [0, 1, 1], [0.2, 0.7]),
            ts_case(f"nan-score:{transport}", served, "binary", [0, 1, 1], [0.2, np.nan, 0.7]),
            ts_case(f"negative-beta:{transport}", served, "binary", [0, 1], [0.2, 0.7],
                    options={"beta": -1.0}),
            ts_case(f"unknown-option:{transport}", served, "binary", [0, 1], [0.2, 0.7],
                    options={"colour": "red"}),
            ts_case(f"infinite-option:{transport}", served, "binary", [0, 1], [0.2, 0.7],
                    options={"threshold": {"number": "Infinity"}}),
            ts_case(f"deadline:{transport}", served, "binary", big_labels, big_scores,
                    timeoutMs=1),
            ts_case(f"dead-server:{transport}", dead_target, "binary", [0, 1], [0.2, 0.7],
                    settings={"retries": 2, "backoffMs": 50, "timeoutMs": 5000}),
            {"id": f"catalog:{transport}", "target": served, "call": "listMetrics"},
            {"id": f"catalog-multilabel:{transport}", "target": served, "call": "listMetrics",
             "task": "multilabel"},
            {"id": f"catalog-detection-opts:{transport}", "target": served,
             "call": "listMetrics", "opts": {"task": "detection", "timeoutMs": 30000}},
            {"id": f"catalog-unknown-task:{transport}", "target": served, "call": "listMetrics",
             "task": "ranking"},
        ]  # fmt: skip
        cases += [
            ts_stream_case(f"stream-task:{name}:{transport}", served, case, case.ts_settings)
            for name, case in stream_cases.cases().items()
        ]
    return cases


@pytest.fixture(scope="module")
def answers(
    service: Service, limited: Service, tmp_path_factory: pytest.TempPathFactory
) -> Answers:
    """Every TypeScript call of this module but the slow-starting server's, in one Node run."""
    cases = [
        table_case(case, transport, targets(service)[transport], packed=index % 2 == 0)
        for index, case in enumerate(REQUESTS)
        for transport in TRANSPORTS
    ]
    cases += other_cases(service, limited, dead=_free_port())
    return run_cases(cases, tmp_path_factory.mktemp("typescript"))


@pytest.mark.parametrize("case", list(REQUESTS))
def test_every_case_gives_the_python_clients_answer(
    service: Service, answers: Answers, case: str
) -> None:
    args, keywords = arguments(request_of(case))
    expected = python_answer(targets(service)["grpc"], *args, **keywords)
    assert_equal(python_answer(targets(service)["rest"], *args, **keywords), expected)
    for transport in TRANSPORTS:
        assert_equal(ok(answers, f"table:{case}:{transport}"), expected)


def test_the_table_covers_what_the_client_must_carry(answers: Answers) -> None:
    """Ties, weights, options, drift, intervals, undefined metrics, per-class rows, curves and
    every task reached the TypeScript client and back."""
    grpc = {case: ok(answers, f"table:{case}:grpc") for case in REQUESTS}
    assert {result["task"] for result in grpc.values()} == {
        "binary", "multiclass", "multilabel", "regression", "detection"
    }  # fmt: skip
    assert grpc["ties"]["conventions"]["ties"]
    assert grpc["threshold-and-beta"]["metrics"]["f_beta"] is not None
    assert grpc["drift-payload"]["drift"]["roc_auc"]["status"] == "ok"
    assert grpc["drift-payload-too-few-for-a-verdict"]["drift"]["roc_auc"]["p_value"] is None
    assert grpc["challenger"]["comparison"]["roc_auc"]["significant"] in (True, False)
    assert (
        grpc["intervals-logit-bootstrap-level-90"]["intervals"]["average_precision"]["replicates"]
        == 50
    )
    undefined = grpc["single-class-negatives"]
    assert undefined["metrics"]["roc_auc"] is None
    assert undefined["undefined"]["roc_auc"]
    assert grpc["fawcett"]["curves"]["roc"]["thresholds"][0] is None  # the +inf start
    multiclass = grpc["task-multiclass-names-absent-class"]
    assert [row["class"] for row in multiclass["per_class"]] == ["cat", "dog", "bird", "fish"]
    assert grpc["coverage-binary"]["coverage"] == {
        "n_predictions": 80, "n_labelled": 20, "label_coverage": 0.25,
        "label_delay_seconds": 5400.5,
    }  # fmt: skip
    assert grpc["coverage-delay-only"]["coverage"] == {"n_labelled": 20, "label_delay_seconds": 0}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_large_binary_input_streams(
    service: Service, limited: Service, answers: Answers, transport: str
) -> None:
    """2 500 rows: over the limited server's 2 000 rows a request, under its 3 000 a stream, so
    only a stream gets through; the answer is the one-shot answer, as the Python client's."""
    labels, scores = _rows(2500, seed=3)
    options = {"max_curve_points": 0}
    refused = error(answers, f"one-shot-over-the-rows-limit:{transport}")
    assert refused["type"] == "TooLarge"
    assert refused["code"] == ("resource_exhausted" if transport == "grpc" else "too_large")
    expected = round_trip(evaluate("binary", labels, scores, options=options).to_dict())
    streamed = python_answer(
        targets(limited)[transport], "binary", labels, scores, options=options,
        settings=PY_STREAM_SETTINGS,
    )  # fmt: skip
    assert_equal(streamed, expected)
    assert_equal(ok(answers, f"stream:{transport}"), expected)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_stream_carries_weights_a_baseline_and_coverage(
    service: Service, answers: Answers, transport: str
) -> None:
    labels, scores = _rows(2500, seed=3)
    baseline = {"labels": BASELINE_ROWS[0], "scores": BASELINE_ROWS[1]}
    options = {"drift_min_samples": 5, "threshold": 0.4}
    keywords: dict[str, Any] = {
        "sample_weight": STREAM_WEIGHTS, "baseline": baseline, "options": options,
        "coverage": STREAM_COVERAGE,
    }  # fmt: skip
    expected = round_trip(evaluate("binary", labels, scores, **keywords).to_dict())
    assert expected["drift"]["roc_auc"]["status"] == "ok"
    assert expected["coverage"]["label_coverage"] == 0.25  # the header's coverage, at the end
    streamed = python_answer(
        targets(service)[transport], "binary", labels, scores, settings=PY_STREAM_SETTINGS,
        **keywords,
    )  # fmt: skip
    assert_equal(streamed, expected)
    assert_equal(ok(answers, f"stream-weights-baseline:{transport}"), expected)


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("name", stream_cases.CASES)
def test_every_task_streams_to_the_one_shot_answer(
    service: Service, answers: Answers, name: str, transport: str
) -> None:
    """Each task's input over the stream threshold, streamed by the TypeScript client, gets
    the answer the Python client gets in one request."""
    case = stream_cases.cases()[name]
    expected = python_answer(targets(service)[transport], *case.args(), **case.keywords)
    answer = stream_cases.server_part(ok(answers, f"stream-task:{name}:{transport}"), case)
    assert_same_answer(case.task, answer, expected)


@pytest.mark.parametrize(
    ("case", "args", "keywords", "field"),
    [
        ("mismatched-lengths", ([0, 1, 1], [0.2, 0.7]), {}, "scores"),
        ("nan-score", ([0, 1, 1], [0.2, float("nan"), 0.7]), {}, "scores"),
        ("negative-beta", ([0, 1], [0.2, 0.7]), {"options": {"beta": -1.0}}, "options.beta"),
    ],
)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_refusal_is_the_python_clients_typed_error(
    service: Service,
    answers: Answers,
    transport: str,
    case: str,
    args: tuple[Any, ...],
    keywords: dict[str, Any],
    field: str,
) -> None:
    python = python_refusal(targets(service)[transport], "binary", *args, **keywords)
    refused = error(answers, f"{case}:{transport}")
    assert refused["type"] == "InvalidArgument" == type(python).__name__
    assert refused["field"] == field == python.field
    assert refused["detail"] == python.message
    assert refused["code"] == python.code
    assert refused["message"] == f"{field}: {python.message}"


def test_an_unknown_option_is_refused_alike_on_both_transports(answers: Answers) -> None:
    """REST refuses it on the server; gRPC in the client (protobuf has no field for it), with
    the same field and code."""
    rest, grpc = error(answers, "unknown-option:rest"), error(answers, "unknown-option:grpc")
    assert rest["type"] == grpc["type"] == "InvalidArgument"
    assert rest["field"] == grpc["field"] == "options.colour"
    assert rest["code"] == grpc["code"] == "malformed"
    assert rest["detail"] == grpc["detail"]
    assert rest["detail"].startswith("unknown field; expected one of ['alpha', ")


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_non_finite_option_is_refused_as_the_python_client_does(
    service: Service, answers: Answers, transport: str
) -> None:
    """JSON has no infinity: sent over REST it would become null (the default). Both clients
    refuse it before sending, with the server's own gRPC message."""
    refused = error(answers, f"infinite-option:{transport}")
    with Client(targets(service)[transport]) as client, pytest.raises(EvalserveError) as python:
        client.evaluate("binary", [0, 1], [0.2, 0.7], options={"threshold": float("inf")})
    assert refused["type"] == type(python.value).__name__ == "InvalidArgument"
    assert refused["field"] == python.value.field == "options.threshold"
    assert refused["detail"] == python.value.message == "expected a finite number, but got inf"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_call_past_its_deadline_is_deadline_exceeded(answers: Answers, transport: str) -> None:
    refused = error(answers, f"deadline:{transport}")
    assert refused["type"] == "DeadlineExceeded"
    assert refused["code"] == "deadline_exceeded"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_dead_server_is_retried_then_unavailable(answers: Answers, transport: str) -> None:
    refused = error(answers, f"dead-server:{transport}")
    assert refused["type"] == "Unavailable"
    assert refused["code"] == "unavailable"
    # two retries after random waits of at most 50 and 100 ms (full jitter): far from the 5 s
    # deadline (tests/clients/test_typescript_retries.py checks the waits themselves)
    assert answers[f"dead-server:{transport}"]["ms"] < 5000


def test_the_catalog_is_the_rest_catalog_on_both_transports(
    service: Service, answers: Answers
) -> None:
    expected = service.rest.get("/v1/metrics").json()["metrics"]
    assert len(expected) > 50
    for target in targets(service).values():
        with Client(target) as client:
            python = [dataclasses.asdict(info) for info in client.list_metrics()]
        assert round_trip({"metrics": python})["metrics"] == expected
    assert ok(answers, "catalog:rest") == expected
    assert ok(answers, "catalog:grpc") == expected


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(
    ("case", "task"),
    [("catalog-multilabel", "multilabel"), ("catalog-detection-opts", "detection")],
)
def test_the_catalog_of_one_task_is_the_python_clients(
    service: Service, answers: Answers, transport: str, case: str, task: str
) -> None:
    with Client(targets(service)[transport]) as client:
        python = [dataclasses.asdict(info) for info in client.list_metrics(task)]
    assert python and {entry["task"] for entry in python} == {task}
    assert ok(answers, f"{case}:{transport}") == round_trip({"metrics": python})["metrics"]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_unknown_task_is_refused_as_the_python_client_refuses_it(
    service: Service, answers: Answers, transport: str
) -> None:
    with Client(targets(service)[transport]) as client, pytest.raises(EvalserveError) as python:
        client.list_metrics("ranking")
    refused = error(answers, f"catalog-unknown-task:{transport}")
    assert refused["type"] == type(python.value).__name__ == "InvalidArgument"
    assert refused["field"] == python.value.field == "task"
    assert refused["code"] == python.value.code == "invalid_argument"
    assert refused["detail"] == python.value.message


# --- a server that comes up late -------------------------------------------------------------


def test_a_server_briefly_unavailable_is_retried(tmp_path: Path) -> None:
    """Both calls start before anything listens on their ports (each says so on stderr); the
    server starts then, during their backoff, and both get its answer."""
    rest_port, grpc_port = _free_port(), _free_port()
    retrying = {"retries": 8, "backoffMs": 100}
    y_true, y_score = [0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]
    cases = [
        ts_case("late:rest", f"http://127.0.0.1:{rest_port}", "binary", y_true, y_score,
                settings=retrying),
        ts_case("late:grpc", f"127.0.0.1:{grpc_port}", "binary", y_true, y_score,
                settings=retrying),
    ]  # fmt: skip
    process = start_cases(cases, tmp_path, parallel=True)
    assert process.stderr is not None
    started = {process.stderr.readline().strip() for _ in cases}
    assert started == {"started late:rest", "started late:grpc"}
    # "started" is printed just before the first attempt: give it time to be refused, so the
    # answer below can only come from a retry even on a loaded machine.
    time.sleep(0.3)
    settings = Settings.model_validate(
        {"host": "127.0.0.1", "rest_port": rest_port, "grpc_port": grpc_port}
    )
    with running(settings):
        late = finish_cases(process, cases, timeout=120)
    expected = round_trip(evaluate("binary", np.asarray(y_true, float), np.asarray(y_score))
                          .to_dict())  # fmt: skip
    for transport in TRANSPORTS:
        assert_equal(ok(late, f"late:{transport}"), expected)
        assert late[f"late:{transport}"]["ms"] >= 100  # one backoff at least: it was retried


# --- the README, the generated code, the types ----------------------------------------------


def js(value: float) -> str:
    """A number as console.log prints it (1, not 1.0)."""
    return str(int(value)) if float(value).is_integer() else repr(value)


def readme_examples() -> list[str]:
    text = (PACKAGE / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```ts\n(.*?)```", text, flags=re.DOTALL)


def test_the_readme_examples_run(service: Service, tmp_path: Path) -> None:
    """Each ``ts`` block of the README, pointed at the test server instead of the default
    ports, prints what the Python client computes."""
    _node_modules()
    examples = readme_examples()
    assert len(examples) == 3
    grpc, rest = targets(service)["grpc"], targets(service)["rest"]
    printed = []
    for index, example in enumerate(examples):
        assert "localhost:50051" in example or "http://localhost:8000" in example
        code = example.replace("http://localhost:8000", rest).replace("localhost:50051", grpc)
        path = tmp_path / f"example{index}.mts"
        path.write_text(code)
        done = subprocess.run(
            [str(BIN / "tsx"), "--tsconfig", str(PACKAGE / "tsconfig.json"), str(path)],
            cwd=PACKAGE, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        printed.append(done.stdout)
    y_true, y_score = [0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]
    first = python_answer(grpc, "binary", y_true, y_score, options={"threshold": 0.3})
    assert printed[0].startswith(
        f"{js(first['metrics']['roc_auc'])} {js(first['metrics']['precision'])}"
    )
    weighted = python_answer(rest, "binary", y_true, y_score, sample_weight=[1, 2, 1, 0.5])
    names = ["cat", "dog", "bird"]
    scores = [[0.7, 0.2, 0.1], [0.3, 0.6, 0.1], [0.2, 0.3, 0.5]]
    multiclass = python_answer(rest, "multiclass", names, scores, classes=names)
    one_class = python_answer(rest, "binary", [0, 0, 0], [0.2, 0.5, 0.9])
    assert one_class["metrics"]["roc_auc"] is None
    assert printed[1].splitlines() == [
        f"{js(weighted['metrics']['roc_auc'])} {js(multiclass['metrics']['accuracy'])}",
        f"null {one_class['undefined']['roc_auc']}",
    ]
    assert printed[2].strip() == "scores expected 3 values (one per label), but got 2"


def test_the_generated_code_is_up_to_date() -> None:
    _node_modules()
    done = subprocess.run(
        ["node", "scripts/check-generated.mjs"],
        cwd=PACKAGE, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "up to date" in done.stdout


def test_the_client_typechecks_strictly() -> None:
    _node_modules()
    done = subprocess.run(
        [str(BIN / "tsc"), "--noEmit", "-p", "tsconfig.json"],
        cwd=PACKAGE, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


# --- the package as a consumer installs it -------------------------------------------------

CONSUMER_JS = """\
import { EvalserveClient, InvalidArgument } from "@evalserve/client";

for (const target of process.argv.slice(2)) {
  const client = new EvalserveClient(target);
  const result = await client.evaluate("binary", [0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]);
  let field = null;
  try {
    await client.evaluate("binary", [0, 1], [0.5]);
  } catch (error) {
    if (error instanceof InvalidArgument) field = error.field;
  }
  console.log(JSON.stringify({ result, field }));
  client.close();
}
"""

CONSUMER_TS = """\
import { EvalserveClient, type EvaluationResult } from "@evalserve/client";

const client = new EvalserveClient("localhost:50051", { timeoutMs: 5000 });
const result: EvaluationResult = await client.evaluate("binary", [0, 1], [0.2, 0.7]);
const auc: number | null | undefined = result.metrics["roc_auc"];
console.log(auc, result.undefined["roc_auc"]);
client.close();
"""


def test_the_packed_package_installs_and_works_in_another_project(
    service: Service, tmp_path: Path
) -> None:
    """`npm pack` (its prepack builds dist/), installed into an empty project as a caller
    would: plain JavaScript runs against the live server on both transports, and a strict
    TypeScript caller type-checks against the published declarations."""
    _node_modules()
    npm = ["npm", "--no-audit", "--no-fund", "--loglevel=error"]
    packed = subprocess.run(
        [*npm, "pack", "--pack-destination", str(tmp_path)],
        cwd=PACKAGE, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert packed.returncode == 0, packed.stderr
    tarball = tmp_path / packed.stdout.strip().splitlines()[-1]
    consumer = tmp_path / "consumer"
    consumer.mkdir()
    (consumer / "package.json").write_text('{"name": "consumer", "private": true}\n')
    installed = subprocess.run(
        [*npm, "install", "--prefer-offline", str(tarball)],
        cwd=consumer, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    shipped = consumer / "node_modules" / "@evalserve" / "client"
    assert (shipped / "dist" / "index.js").exists() and (shipped / "dist" / "index.d.ts").exists()

    (consumer / "example.mjs").write_text(CONSUMER_JS)
    ran = subprocess.run(
        ["node", "example.mjs", *targets(service).values()],
        cwd=consumer, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    expected = evaluate("binary", [0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]).to_dict()
    for line in ran.stdout.splitlines():
        answer = json.loads(line)
        assert_same(answer["result"], expected)
        assert answer["field"] == "scores"
    assert len(ran.stdout.splitlines()) == 2

    (consumer / "example.mts").write_text(CONSUMER_TS)
    checked = subprocess.run(
        [str(BIN / "tsc"), "--noEmit", "--strict", "--module", "nodenext", "--moduleResolution",
         "nodenext", "--target", "es2022", "--types", "node", "--typeRoots",
         str(PACKAGE / "node_modules" / "@types"), "example.mts"],
        cwd=consumer, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
