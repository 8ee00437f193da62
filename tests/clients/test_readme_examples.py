"""The examples of the README and of the documentation site run as written, and print what they
say.

Each example is a fenced block right after an ``<!-- example: NAME -->`` marker, on any page
(``tests/docs/pages.py`` finds them; ``tests/docs/test_site.py`` makes sure that every shell,
Python or TypeScript block is an example or says why it is not run). The test swaps
``localhost:8000`` / ``localhost:50051`` for the live server's ports, runs the block (shell with
bash from the repository root, Python with this interpreter, TypeScript with the client's tsx)
and hands its standard output to the check of that name; a block after ``<!-- output: NAME -->``
must be exactly what example NAME prints. Every example must have a check."""

from __future__ import annotations

import ast
import csv
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.metrics import f1_score, roc_auc_score

from evalserve import core
from evalserve.service.encode import catalog_to_json
from tests.contract.servers import Service
from tests.docs.pages import ROOT, examples, outputs

TS_DIR = ROOT / "clients" / "typescript"
FAWCETT = ROOT / "examples" / "fawcett.csv"

LABELS = [0, 0, 1, 1]
SCORES = [0.1, 0.4, 0.35, 0.8]


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
    assert out.splitlines() == _commented(code)
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


def check_python_monitor(out: str) -> None:
    assert out.splitlines() == ["1 False", "2 False", "3 False", "3"]


def check_ts_monitor(out: str) -> None:
    assert out.splitlines() == ["1 false", "2 false", "3 false"]


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


# --- helpers for what an example says it prints -----------------------------------------------


def _commented(code: str) -> list[str]:
    """The lines an example shows as its output: its ``# ...`` lines after the command."""
    return [line.removeprefix("# ") for line in code.splitlines() if line.startswith("# ")]


def _inline_comments(code: str) -> list[str]:
    """The comments of an example's ``print(...)  # what it prints`` lines."""
    return [
        line.split("  # ", 1)[1]
        for line in code.splitlines()
        if line.lstrip().startswith("print(") and "  # " in line
    ]


def _elided_in_order(out: str, shown: str) -> None:
    """``shown`` is the output with parts left out as ``...``: its pieces come in this order."""
    position = 0
    for piece in shown.split("..."):
        found = out.find(piece, position)
        assert found >= 0, f"{piece!r} is not in the output after position {position}"
        position = found + len(piece)


def _fawcett() -> tuple[list[int], list[float]]:
    with FAWCETT.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    return [int(row["label"]) for row in rows], [float(row["score"]) for row in rows]


# --- the first evaluation (README and getting started) -----------------------------------------


def check_first_curl(out: str, code: str) -> None:
    check_curl_evaluate(out)
    (shown,) = _commented(code)
    _elided_in_order(out, shown)


def check_first_python(out: str, code: str) -> None:
    assert out.splitlines() == _inline_comments(code)
    first, method = out.splitlines()
    auc, f1 = (float(value) for value in first.split())
    # scikit-learn as the oracle: the AUC, and F1 at the default threshold 0.5.
    assert auc == roc_auc_score(LABELS, SCORES)
    assert f1 == pytest.approx(f1_score(LABELS, [int(s >= 0.5) for s in SCORES]), abs=1e-15)
    assert method == "delong-logit"


# --- the Python API page -----------------------------------------------------------------------


def check_python_api(out: str) -> None:
    aucs, precision, curve_type, coverage = out.splitlines()
    auc, at_4 = (float(value) for value in aucs.split())
    labels, scores = [0, 0, 1, 1, 0, 1, 0, 1], [0.1, 0.4, 0.35, 0.8, 0.2, 0.7, 0.6, 0.9]
    assert auc == roc_auc_score(labels, scores)
    assert at_4 == 3 / 4  # the four highest scores, 0.9, 0.8, 0.7 and 0.6, hold three positives
    # threshold 0.95 is above every score: no predicted positives, so precision is 0/0.
    assert precision == "None | no predicted positives (TP + FP = 0)"
    assert curve_type == "ndarray"
    assert ast.literal_eval(coverage) == {
        "n_labelled": 8, "n_predictions": 32, "label_coverage": 8 / 32
    }  # fmt: skip


def check_python_invalid(out: str, code: str) -> None:
    assert out.splitlines() == _inline_comments(code)
    assert out.startswith("scores | ")


def check_python_stats(out: str, code: str) -> None:
    assert out.splitlines() == _inline_comments(code)
    distinct, equal = out.split()
    assert equal == "True"  # the merged shards give exactly the metrics of the whole
    assert 0 < int(distinct) <= 1301  # 3-decimal scores in [0, 1.3]


# --- the offline evaluator ---------------------------------------------------------------------


def check_offline_file(out: str) -> None:
    body = json.loads(out)
    labels, scores = _fawcett()
    assert body["n_samples"] == 20
    assert body["metrics"]["roc_auc"] == pytest.approx(roc_auc_score(labels, scores), abs=1e-15)
    assert body["metrics"]["roc_auc"] == pytest.approx(0.68, abs=1e-15)  # the page says so
    assert body == json.loads(json.dumps(core.evaluate("binary", labels, scores).to_dict()))


def check_offline_options(out: str) -> None:
    body = json.loads(out)
    labels, scores = _fawcett()
    expected = core.evaluate("binary", labels, scores, options={"threshold": 0.3, "head_k": [5]})
    assert body["metrics"] == json.loads(json.dumps(expected.to_dict()["metrics"]))
    top = np.argsort(scores, kind="stable")[::-1][:5]  # the five highest scores have no ties
    assert body["metrics"]["precision_at_5"] == sum(labels[i] for i in top) / 5


def check_offline_table(out: str) -> None:
    lines = out.splitlines()
    assert lines[0] == "task binary, 20 samples"
    assert lines[1] == ""
    assert lines[2].split()[:2] == ["metric", "value"]
    assert lines[3].split()[:2] == ["n_samples", "20"]


def check_printed_as_commented(out: str, code: str) -> None:
    assert out.splitlines() == _commented(code)


def check_k8s_generated(out: str) -> None:
    assert out == "deploy/k8s is up to date\n"


def check_python_accumulator(out: str) -> None:
    # The example compares the merged answer with evaluate's itself: it must print True.
    assert out.split() == ["9000", "True"]


def check_operating_points(out: str) -> None:
    # Its output block is exact; here: each value lies inside its interval.
    for line in out.splitlines()[:3]:
        value, low, high = (
            float(x)
            for x in line.split(": ")[1].replace(",", "").strip("]").replace("[", "").split()
        )
        assert low <= value <= high, line


def check_client_operating_points(out: str) -> None:
    # Recall 0.75 at threshold 0.7 (precision 1 there), no interval without the bootstrap; the
    # budget of 2 rows in 8 flags the top two (0.9 and 0.8, both positives); EER 0.25 at 0.6.
    point, budget, rest = (line.replace(",", " ").split() for line in out.splitlines())
    assert [float(point[0]), float(point[1])] == [0.75, 0.7]
    assert point[2:] in (["None", "None"], ["null", "null"])
    assert [float(value) for value in budget] == [0.8, 0.25, 1.0, 0.5]
    assert float(rest[0]) == 0.25
    words = [word.strip("[]'") for word in rest[1:]]
    assert [word for word in words if word] == ["fnr", "fpr", "thresholds"]


def check_monitor_evaluate(out: str) -> None:
    # Quiet hours stay quiet; the drop at hour 5 alarms at once (its output block is exact).
    verdicts = [line.split()[-1] for line in out.splitlines()]
    assert verdicts == ["ok"] * 5 + ["ALARM"] * 3


CHECKS: dict[str, Callable[[str], None]] = {
    "ts-grpc": check_ts_grpc,
    "ts-rest": check_ts_rest,
    "python-grpc": check_python_grpc,
    "python-rest": check_python_rest,
    "python-monitor": check_python_monitor,
    "ts-monitor": check_ts_monitor,
    "python-async": check_python_async,
    "python-errors-plot": check_python_errors_plot,
    "curl-evaluate": check_curl_evaluate,
    "curl-stream": check_stream,
    "curl-catalog": check_catalog,
    "grpcurl-evaluate": check_grpcurl_evaluate,
    "grpcurl-stream": check_stream,
    "grpcurl-describe": check_grpcurl_describe,
    "first-grpcurl": check_grpcurl_evaluate,
    "python-api": check_python_api,
    "python-accumulator": check_python_accumulator,
    "monitor-evaluate": check_monitor_evaluate,
    "operating-points": check_operating_points,
    "python-operating-points": check_client_operating_points,
    "ts-operating-points": check_client_operating_points,
    "offline-file": check_offline_file,
    "offline-options": check_offline_options,
    "offline-table": check_offline_table,
    "k8s-generated": check_k8s_generated,
}
CHECKS_WITH_CODE: dict[str, Callable[[str, str], None]] = {
    "curl-error": check_curl_error,
    "first-curl": check_first_curl,
    "first-python": check_first_python,
    "python-invalid": check_python_invalid,
    "python-stats": check_python_stats,
    "offline-error": check_printed_as_commented,
    "offline-segments": check_printed_as_commented,
    "offline-challenger": check_printed_as_commented,
    "offline-delimiter": check_printed_as_commented,
    "offline-positive-label": check_printed_as_commented,
    "report-title": check_printed_as_commented,
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


def test_every_example_has_a_check() -> None:
    assert set(examples()) == set(CHECKS) | set(CHECKS_WITH_CODE)


@pytest.mark.parametrize("name", sorted(set(CHECKS) | set(CHECKS_WITH_CODE)))
def test_example_runs_and_prints_what_it_says(name: str, service: Service, tmp_path: Path) -> None:
    example = examples()[name]
    out = _run(example.lang, example.code, service, tmp_path)
    for shown in outputs().get(name, []):
        if "\n...\n" in shown.code:  # trimmed: the lines shown, in order, "..." for the rest
            _elided_in_order(out, shown.code)
        else:
            assert out == shown.code, f"{shown.where} is not what {name} prints"
    if name in CHECKS_WITH_CODE:
        CHECKS_WITH_CODE[name](out, example.code)
    else:
        CHECKS[name](out)
