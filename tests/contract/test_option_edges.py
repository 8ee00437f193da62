"""Every option's edges on every door: the values ``tests/core/test_options.py`` derives from
the options table (the last value inside each bound, the first outside), sent in the Fawcett
request through REST JSON, REST protobuf and gRPC ``Evaluate``.

Inside, the door answers what the core answers; outside, it refuses with 422 /
INVALID_ARGUMENT, naming ``options.<name>``, with the core's own message. An edge an encoding
cannot carry (JSON has no infinity, an int64 no 2^63) is left out for that door.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from evalserve.core import InvalidInputError, parse_options
from evalserve.service.encode import proto_to_json
from tests.contract.doors import (
    JSON,
    PROTOBUF,
    NotExpressibleError,
    Refusal,
    answer,
    core_answer,
    grpc_refusal,
    json_body,
    post,
    proto_request,
    rest_refusal,
)
from tests.contract.servers import Service
from tests.core.test_options import EDGES, Edge
from tests.core.test_worked_examples import FAWCETT_LABELS, FAWCETT_SCORES

DOORS = ("rest-json", "rest-protobuf", "grpc")


def _request(edge: Edge) -> dict[str, Any]:
    options = {edge.option: edge.value}
    return {
        "task": "binary",
        "labels": FAWCETT_LABELS,
        "scores": FAWCETT_SCORES,
        "options": options,
    }


def _body(edge: Edge, door: str) -> bytes:
    """What the door is sent; raises NotExpressibleError when its encoding has no such value."""
    if door == "rest-json":
        return json_body(_request(edge))
    return proto_request(_request(edge)).SerializeToString()


def _expressible(edge: Edge, door: str) -> bool:
    try:
        _body(edge, door)
    except NotExpressibleError:
        return False
    return True


def _cases() -> Iterator[Any]:
    for edge in EDGES:
        for door in DOORS:
            if _expressible(edge, door):
                yield pytest.param(edge, door, id=f"{edge.id}-{door}")


def _call(service: Service, edge: Edge, door: str) -> dict[str, Any] | Refusal:
    if door == "grpc":
        try:
            reply = service.stub.Evaluate(proto_request(_request(edge)), timeout=60)
        except grpc.RpcError as error:
            return grpc_refusal(error)
        return proto_to_json(reply)
    kind = JSON if door == "rest-json" else PROTOBUF
    response = post(service, "/v1/evaluate", _body(edge, door), kind)
    return answer(response) if response.status_code == 200 else rest_refusal(response)


def test_every_edge_reaches_some_door() -> None:
    carried = {edge.id for edge in EDGES for door in DOORS if _expressible(edge, door)}
    assert carried == {edge.id for edge in EDGES}


@pytest.mark.parametrize(("edge", "door"), list(_cases()))
def test_each_bound_holds_at_its_edge_on_every_door(
    service: Service, edge: Edge, door: str
) -> None:
    got = _call(service, edge, door)
    if edge.passes:
        assert got == core_answer(_request(edge))
        return
    with pytest.raises(InvalidInputError) as refused:
        parse_options({edge.option: edge.value})
    assert isinstance(got, Refusal), got
    assert got.status == (grpc.StatusCode.INVALID_ARGUMENT if door == "grpc" else 422)
    assert (got.field, got.message) == (f"options.{edge.option}", refused.value.message)
