"""The shipped deployment is consistent: with the Kubernetes memory limit, the default budget
(70 % of it) holds the largest request the default limits accept, on every door and for every
task, by the service's own cost model; and a stream's largest state can still be evaluated.

The largest accepted request of a task and encoding: as many rows as ``max_rows`` and the body
limit allow (the gRPC message limit for gRPC), with full-precision numbers; its body and
decoded sizes come from encoding a sample of real rows and scaling."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
import yaml

from evalserve.service.budget import COST_MODEL, grpc_message_limit, input_bytes, json_counts
from evalserve.service.config import Settings
from evalserve.service.json_codec import request_from_json
from evalserve.service.memory import BUDGET_SHARE
from evalserve.service.proto_codec import request_from_proto
from evalserve.v1 import evaluation_pb2 as pb

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = 20_000
UNITS = {"Gi": 1 << 30, "Mi": 1 << 20}


def _deployment() -> dict[str, Any]:
    documents = yaml.safe_load_all((ROOT / "deploy/k8s/deployment.yaml").read_text())
    return next(d for d in documents if d and d.get("kind") == "Deployment")


def _container() -> dict[str, Any]:
    container: dict[str, Any] = _deployment()["spec"]["template"]["spec"]["containers"][0]
    return container


def _memory_limit() -> int:
    limit = _container()["resources"]["limits"]["memory"]
    number, unit = re.fullmatch(r"(\d+)(Gi|Mi)", limit).groups()  # type: ignore[union-attr]
    return int(number) * UNITS[unit]


def _settings() -> Settings:
    env = {item["name"]: item["value"] for item in _container().get("env", []) if "value" in item}
    names = {f"EVALSERVE_{name.upper()}": name for name in Settings.model_fields}
    return Settings(**{names[key]: value for key, value in env.items() if key in names})


def _sample(task: str) -> dict[str, Any]:
    rng = np.random.default_rng(11)
    weights = rng.uniform(0.5, 2, SAMPLE)
    if task == "binary":
        return {"labels": rng.integers(0, 2, SAMPLE), "scores": rng.random(SAMPLE),
                "weights": weights}  # fmt: skip
    if task == "multiclass":
        scores = rng.random((SAMPLE, 10))
        return {"labels": rng.integers(0, 10, SAMPLE), "scores": scores / scores.sum(1)[:, None]}
    if task == "multilabel":
        return {"labels": rng.integers(0, 2, (SAMPLE, 10)), "scores": rng.random((SAMPLE, 10))}
    return {"labels": rng.random(SAMPLE), "predictions": rng.random(SAMPLE), "weights": weights}


def _costs(task: str, encoding: str, settings: Settings, budget: int) -> dict[str, int]:
    """Each phase's reservation for the largest request of ``task`` that ``settings`` accept."""
    columns = _sample(task)
    if encoding == "json":
        body = orjson.dumps({"task": task, **columns}, option=orjson.OPT_SERIALIZE_NUMPY)
        request = request_from_json(orjson.loads(body), settings)
        values, strings = json_counts(body)
    else:
        fields: dict[str, Any] = {
            f"{name}_f64": np.ascontiguousarray(v, "<f8").tobytes() for name, v in columns.items()
        }
        if task in ("multiclass", "multilabel"):
            fields["n_classes"] = columns["scores"].shape[1]
        message = pb.EvaluateRequest(task=getattr(pb, f"TASK_{task.upper()}"), **fields)
        body = message.SerializeToString()
        request = request_from_proto(message, settings)
        values = strings = 0
    limit = settings.max_request_bytes
    if encoding == "grpc":
        limit = grpc_message_limit(limit, budget, settings.max_inflight_requests)
    scale = min(settings.max_rows / SAMPLE, limit / len(body))
    size = int(len(body) * scale)
    codec = "json" if encoding == "json" else "protobuf"
    return {
        "read": COST_MODEL.read(size),
        "decode": COST_MODEL.decode(codec, size, int(values * scale), int(strings * scale)),
        "evaluate": COST_MODEL.evaluation(
            task, int(input_bytes(request.batch) * scale), held_bytes=size
        ),
    }


@pytest.mark.parametrize("encoding", ["json", "protobuf", "grpc"])
@pytest.mark.parametrize("task", ["binary", "multiclass", "multilabel", "regression"])
def test_the_largest_accepted_request_fits_the_default_budget(task: str, encoding: str) -> None:
    settings = _settings()
    budget = int(_memory_limit() * BUDGET_SHARE)
    costs = _costs(task, encoding, settings, budget)
    assert max(costs.values()) <= budget, (costs, budget)


@pytest.mark.parametrize("task", ["binary", "multiclass", "multilabel", "regression"])
def test_a_streams_largest_state_can_be_evaluated_inside_the_default_budget(task: str) -> None:
    settings = _settings()
    budget = int(_memory_limit() * BUDGET_SHARE)
    assert COST_MODEL.result(task, settings.max_stream_state_bytes) <= budget


def test_the_budget_is_not_set_by_hand_in_the_manifest() -> None:
    """The default follows the container's limit; a hand-set budget would drift from it."""
    names = {item["name"] for item in _container().get("env", [])}
    assert "EVALSERVE_MEMORY_BUDGET_BYTES" not in names


def test_the_sizing_table_is_the_benchmarks() -> None:
    """docs/deployment.md's rows per GiB are bench/memory_cost.py's figures under today's cost
    model (rounded to thousands): rerun the bench, or fix the page, when they part."""
    import importlib
    import json
    import sys

    sys.path.insert(0, str(ROOT / "bench"))  # as the bench scripts import each other
    try:
        _sizing = importlib.import_module("memory_cost")._sizing
    finally:
        sys.path.remove(str(ROOT / "bench"))
    figures = json.loads((ROOT / "bench/memory_cost.json").read_text("utf-8"))
    page = (ROOT / "docs/deployment.md").read_text("utf-8")
    table = page.split("<!-- sizing -->")[1].split("<!-- /sizing -->")[0]
    documented = {
        (cells[0], cells[1]): (int(cells[2].replace(",", "")), int(cells[3].replace(",", "")))
        for line in table.strip().splitlines()[2:]
        for cells in [[cell.strip() for cell in line.strip("|").split("|")]]
    }
    expected = {
        (f["task"], f["encoding"]): tuple(round(n, -3) for n in _sizing(f)) for f in figures
    }
    assert documented == expected
