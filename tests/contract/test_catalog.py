"""The metric catalog is the same on every door: ``GET /v1/metrics`` and gRPC ``ListMetrics``
give the core's ``catalog_entries``, entry for entry and field for field, for every task and for
all of them; an unknown task is refused on both, naming the field ``task``."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from evalserve.core import TASKS, catalog_entries
from evalserve.v1 import evaluation_pb2 as pb
from tests.contract.doors import grpc_refusal, rest_refusal
from tests.contract.servers import Service

TASK_VALUES = {task: pb.Task.Value(f"TASK_{task.upper()}") for task in TASKS}
SCOPES = [pytest.param(None, id="every-task"), *(pytest.param(task, id=task) for task in TASKS)]


def _range(message: pb.MetricRange) -> dict[str, float | None]:
    return {
        "lower": message.lower if message.HasField("lower") else None,
        "upper": message.upper if message.HasField("upper") else None,
    }


def _entry_from_proto(info: pb.MetricInfo) -> dict[str, Any]:
    """A ``ListMetrics`` entry in the JSON shape, field by field (unset optionals as null)."""
    task = pb.Task.Name(info.task).removeprefix("TASK_").lower()
    return {
        "name": info.name,
        "tasks": [pb.Task.Name(each).removeprefix("TASK_").lower() for each in info.tasks],
        "higher_is_better": info.higher_is_better if info.HasField("higher_is_better") else None,
        "definition": info.definition,
        "aliases": list(info.aliases),
        "task": task,
        "range": _range(info.range),
        "convention": info.convention,
        "reference": info.reference,
        "test": info.test,
    }


def _core(task: str | None) -> list[dict[str, Any]]:
    return [
        {
            "name": info.name,
            "tasks": [info.task],
            "higher_is_better": info.higher_is_better,
            "definition": info.definition,
            "aliases": list(info.aliases),
            "task": info.task,
            "range": {
                "lower": None if info.range.lower is None else float(info.range.lower),
                "upper": None if info.range.upper is None else float(info.range.upper),
            },
            "convention": info.convention,
            "reference": info.reference,
            "test": info.test,
        }
        for info in catalog_entries(task)
    ]


@pytest.mark.parametrize("task", SCOPES)
def test_both_doors_serve_the_cores_catalog(service: Service, task: str | None) -> None:
    expected = _core(task)
    assert expected
    response = service.rest.get("/v1/metrics", params={} if task is None else {"task": task})
    assert response.status_code == 200, response.text
    assert response.json() == {"metrics": expected}
    request = pb.ListMetricsRequest(task=pb.TASK_UNSPECIFIED if task is None else TASK_VALUES[task])
    answer = service.stub.ListMetrics(request, timeout=30)
    assert [_entry_from_proto(info) for info in answer.metrics] == expected
    assert set(pb.MetricInfo.DESCRIPTOR.fields_by_name) == set(expected[0])


def test_an_unknown_task_is_refused_on_both_doors(service: Service) -> None:
    refused = rest_refusal(service.rest.get("/v1/metrics", params={"task": "ranking"}))
    assert (refused.status, refused.field) == (422, "task")
    assert "ranking" in refused.message
    with pytest.raises(grpc.RpcError) as error:
        service.stub.ListMetrics(pb.ListMetricsRequest(task=pb.Task.ValueType(42)), timeout=30)
    refusal = grpc_refusal(error.value)
    assert (refusal.status, refusal.field) == (grpc.StatusCode.INVALID_ARGUMENT, "task")
    assert "42" in refusal.message
