"""The README's client examples run as written against a live server, and print what they say.

Each example is a fenced block right after an ``<!-- example: NAME -->`` marker; the test swaps
``localhost:8000`` / ``localhost:50051`` for the live server's ports, runs the block (shell with
bash, Python with this interpreter, TypeScript with the client's tsx) and hands its standard
output to the check of that name. Every fenced block of the "Clients and examples" section must
be an example (or an install command, marked ``<!-- install -->``), and every example must
have a check."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evalserve import core
from evalserve.service.encode import catalog_to_json
from tests.contract.servers import Service

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
TS_DIR = ROOT / "clients" / "typescript"
MARKED = re.compile(
    r"<!-- example: (?P<name>[\w-]+) -->\n```(?P<lang>\w+)\n(?P<code>.*?)```", re.DOTALL
)
SECTION = re.compile(r"^## Clients and examples\n(?P<body>.*?)(?=^## )", re.DOTALL | re.MULTILINE)

LABELS = [0, 0, 1, 1]
SCORES = [0.1, 0.4, 0.35, 0.8]


def examples() -> dict[str, tuple[str, str]]:
    found: dict[str, tuple[str, str]] = {}
    for match in MARKED.finditer(README.read_text()):
        assert match["name"] not in found, f"two README examples named {match['name']}"
        found[match["name"]] = (match["lang"], match["code"])
    return found


def _metrics_equal(answer: dict[str, Any], expected: dict[str, float | None]) -> None:
    # JSON numbers: 4.0 (REST) and 4 (grpcurl's protojson) both equal the core's 4.0.
    assert answer == {name: value for name, value in expected.items() if value is not None}


def _core_binary(**kwargs: Any) -> dict[str, Any]:
    return core.evaluate("binary", LABELS, SCORES, **kwargs).to_dict()


def check_curl_evaluate(out: str) -> None:
    body = json.loads(out)
    expected = _core_binary(options={"threshold": 0.5})
    assert body["metrics"] == expected["metrics"]
    assert body["undefined"] == expected["undefined"]
    assert body["curves"]["roc"] == expected["curves"]["roc"]
    assert body["metrics"]["roc_auc"] == 0.75


def check_stream(out: str) -> None:
    body = json.loads(out)
    assert int(body["n_samples"]) == 4
    _metrics_equal(
        {k: v for k, v in body["metrics"].items() if v is not None}, _core_binary()["metrics"]
    )


def check_catalog(out: str) -> None:
    names = [entry["name"] for entry in json.loads(out)["metrics"]]
    assert names == [entry["name"] for entry in catalog_to_json()["metrics"]]
    assert {"roc_auc", "average_precision", "ks_statistic", "map", "rmse"} <= set(names)


def check_curl_error(out: str, code: str) -> None:
    printed = [line.removeprefix("# ") for line in code.splitlines() if line.startswith("# ")]
    assert out.splitlines() == printed
    assert json.loads(out[: out.rindex("}") + 1])["error"]["field"] == "scores"


def check_grpcurl_evaluate(out: str) -> None:
    body = json.loads(out)
    assert body["task"] == "TASK_BINARY" and body["n_samples"] == "4"
    _metrics_equal(body["metrics"], _core_binary()["metrics"])


def check_grpcurl_describe(out: str) -> None:
    assert "evalserve.v1.EvaluationService\n" in out
    assert "rpc EvaluateStream ( stream .evalserve.v1.EvaluateStreamRequest )" in out
    assert '"status": "SERVING"' in out
    catalog, _ = json.JSONDecoder().raw_decode(out, out.index('{\n  "metrics"'))
    assert [entry["name"] for entry in catalog["metrics"]] == [
        entry["name"] for entry in catalog_to_json()["metrics"]
    ]


def check_python_grpc(out: str) -> None:
    auc, interval = out.strip().split(" ", 1)
    expected = _core_binary()
    assert float(auc) == expected["metrics"]["roc_auc"] == 0.75
    assert ast.literal_eval(interval) == expected["intervals"]["roc_auc"]


def check_python_rest(out: str) -> None:
    first, second = out.strip().splitlines()
    coverage, f1 = first.split()
    status, reason = second.split(" ", 1)
    assert float(coverage) == 8 / 32
    labels, scores = [0, 0, 1, 1, 0, 1, 0, 1], [0.1, 0.4, 0.35, 0.8, 0.2, 0.7, 0.6, 0.9]
    baseline = {"roc_auc": 0.95, "n_positive": 400, "n_negative": 600}
    expected = core.evaluate(
        "binary", labels, scores, options={"threshold": 0.5}, baseline=baseline
    ).to_dict()
    assert float(f1) == expected["metrics"]["f1"]
    assert status == expected["drift"]["roc_auc"]["status"] == "insufficient_data"
    assert reason == expected["drift"]["roc_auc"]["reason"]
    assert "drift_min_samples" in reason


def check_python_async(out: str) -> None:
    accuracy, auc = (float(value) for value in out.split())
    labels = ["cat", "dog", "owl", "owl", "cat", "dog"]
    scores = [[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.2, 0.7]] * 2
    metrics = core.evaluate("multiclass", labels, scores, classes=["cat", "dog", "owl"]).metrics
    assert (accuracy, auc) == (metrics["accuracy"], metrics["roc_auc_ovr_macro"])


def check_python_errors_plot(out: str) -> None:
    refusal, titles = out.splitlines()
    assert refusal == "scores | expected finite numbers, but row 1 is nan"
    assert ast.literal_eval(titles) == [
        "ROC curve",
        "Precision-recall curve",
        "Confusion matrix at the threshold",
    ]


def check_ts_grpc(out: str) -> None:
    auc, precision, lower = (float(value) for value in out.split())
    expected = _core_binary(options={"threshold": 0.3})
    assert (auc, precision) == (expected["metrics"]["roc_auc"], expected["metrics"]["precision"])
    assert lower == expected["intervals"]["roc_auc"]["lower"]


def check_ts_rest(out: str) -> None:
    first, refusal = out.splitlines()
    weighted, one_class, reason = first.split(" ", 2)
    expected = core.evaluate("binary", LABELS, SCORES, sample_weight=[1, 2, 1, 0.5]).to_dict()
    assert float(weighted) == expected["metrics"]["roc_auc"]
    undefined = core.evaluate("binary", [0, 0, 0], [0.2, 0.5, 0.9]).to_dict()
    assert undefined["metrics"]["roc_auc"] is None and one_class == "null"
    assert reason == undefined["undefined"]["roc_auc"]
    assert refusal == "scores | expected 2 values (one per label), but got 1"


CHECKS: dict[str, Callable[[str], None]] = {
    "ts-grpc": check_ts_grpc,
    "ts-rest": check_ts_rest,
    "python-grpc": check_python_grpc,
    "python-rest": check_python_rest,
    "python-async": check_python_async,
    "python-errors-plot": check_python_errors_plot,
    "curl-evaluate": check_curl_evaluate,
    "curl-stream": check_stream,
    "curl-catalog": check_catalog,
    "grpcurl-evaluate": check_grpcurl_evaluate,
    "grpcurl-stream": check_stream,
    "grpcurl-describe": check_grpcurl_describe,
}
CHECKS_WITH_CODE: dict[str, Callable[[str, str], None]] = {
    "curl-error": check_curl_error,
}


def _run(lang: str, code: str, service: Service, tmp_path: Path) -> str:
    code = code.replace("localhost:8000", service.url.removeprefix("http://"))
    code = code.replace("localhost:50051", service.grpc_target)
    # grpcurl comes with the test extra, into this interpreter's bin/.
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    if lang == "sh":
        command = ["bash", "-euo", "pipefail", "-c", code]
        cwd = ROOT
    elif lang == "python":
        command = [sys.executable, "-c", code]
        cwd = tmp_path
    elif lang == "ts":
        tsx = TS_DIR / "node_modules" / ".bin" / "tsx"
        if not tsx.exists():
            pytest.fail("clients/typescript/node_modules is missing: run `make ts-install`")
        # Inside the package, so that `@evalserve/client` resolves to it as for a user.
        script = TS_DIR / f".readme-example-{os.getpid()}.ts"
        script.write_text(code)
        command = [str(tsx), str(script)]
        cwd = TS_DIR
    else:
        raise AssertionError(f"no runner for ```{lang}")
    try:
        done = subprocess.run(
            command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
        )
    finally:
        if lang == "ts":
            script.unlink(missing_ok=True)
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_every_block_of_the_clients_section_is_a_checked_example() -> None:
    section = SECTION.search(README.read_text())
    assert section is not None, "README has no 'Clients and examples' section"
    fences = section["body"].count("```") // 2
    marked = len(MARKED.findall(section["body"]))
    installs = section["body"].count("<!-- install -->\n```")
    assert fences == marked + installs, "a block in 'Clients and examples' is not an example"
    assert set(examples()) == set(CHECKS) | set(CHECKS_WITH_CODE)


@pytest.mark.parametrize("name", sorted(set(CHECKS) | set(CHECKS_WITH_CODE)))
def test_example_runs_and_prints_what_it_says(name: str, service: Service, tmp_path: Path) -> None:
    lang, code = examples()[name]
    out = _run(lang, code, service, tmp_path)
    if name in CHECKS_WITH_CODE:
        CHECKS_WITH_CODE[name](out, code)
    else:
        CHECKS[name](out)
