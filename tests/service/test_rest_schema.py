"""The REST schema is derived from the proto, and it is the schema the server really speaks.

``service.rest_models`` builds its models from the proto's descriptors and comments, with the
JSON's differences in ``service.rest_json``. Here: the table names only proto fields and covers
every message the JSON carries; each model has its message's fields and the proto's comments;
option defaults live only in the options table. Then, against a running server and the served
``/openapi.json``: requests that use every documented request field (in each JSON form the
table declares) are read and answered, and the answers use every documented response field and
no undocumented one. A proto field that the decoder does not read, or that the encoder does not
write, fails here.
"""

from __future__ import annotations

import base64
from collections import defaultdict
from collections.abc import Iterator, Mapping
from typing import Any

import httpx
import pytest
from google.protobuf.descriptor import Descriptor
from pydantic import BaseModel

from evalserve.core import OPTIONS, evaluate
from evalserve.service import rest_models
from evalserve.service.config import Settings
from evalserve.service.rest_json import MESSAGES
from evalserve.service.rest_schema import FROM_PROTO, proto_doc
from evalserve.v1 import evaluation_pb2 as pb
from evalserve.v1.proto_docs import DOCS
from tests.core.test_worked_examples import FAWCETT_LABELS, FAWCETT_SCORES
from tests.service.test_rest import f64, ndjson, post_json, post_stream, served_app

ROOTS = ("EvaluateRequest", "EvaluateStreamRequest", "EvaluateResponse", "ListMetricsResponse")
GIVEN = {"Options"}  # built from the options table, not the proto


def _descriptor(name: str) -> Descriptor:
    return pb.DESCRIPTOR.message_types_by_name[name]


# --- the table and the derivation -------------------------------------------------------------


@pytest.mark.parametrize("proto", sorted(MESSAGES))
def test_the_table_names_only_fields_of_the_proto(proto: str) -> None:
    names = {field.name for field in _descriptor(proto).fields}
    entry = MESSAGES[proto]
    assert set(entry.fields) | entry.drop <= names
    assert entry.base is None or entry.base in MESSAGES


def _reached(descriptor: Descriptor, seen: set[str] | None = None) -> Iterator[str]:
    """The messages the JSON carries from ``descriptor`` on: not through a dropped field or
    one the table gives a JSON type of its own (per-class rows, named curves); each once (a
    response holds its segments' responses)."""
    seen = set() if seen is None else seen
    if descriptor.name in seen:
        return
    seen.add(descriptor.name)
    yield descriptor.name
    if descriptor.name not in MESSAGES:
        return
    entry = MESSAGES[descriptor.name]
    for field in descriptor.fields:
        override = entry.fields.get(field.name)
        if field.name in entry.drop or (override is not None and override.type is not FROM_PROTO):
            continue
        inner = field.message_type
        if inner is not None and inner.GetOptions().map_entry:
            inner = inner.fields_by_name["value"].message_type
        if inner is not None:
            yield from _reached(inner, seen)


def test_every_message_the_json_carries_has_an_entry_and_every_entry_is_carried() -> None:
    reached = {name for root in ROOTS for name in _reached(_descriptor(root))}
    reached.add("StreamHeader")  # the first NDJSON line: the header's fields, flattened
    assert reached == set(MESSAGES) | GIVEN


@pytest.mark.parametrize("proto", sorted(MESSAGES))
def test_each_model_has_exactly_its_messages_fields_in_order(proto: str) -> None:
    entry = MESSAGES[proto]
    expected = [f.name for f in _descriptor(proto).fields if f.name not in entry.drop]
    if entry.base is not None:
        expected = [*rest_models.MODELS[entry.base].model_fields, *expected]
    model = rest_models.MODELS[proto]
    assert list(model.model_fields) == expected
    assert model.__name__ == entry.name  # its OpenAPI component


@pytest.mark.parametrize("proto", sorted(MESSAGES))
def test_each_description_is_the_proto_comment_unless_the_table_replaces_it(proto: str) -> None:
    entry = MESSAGES[proto]
    model = rest_models.MODELS[proto]
    assert model.__doc__ == (entry.doc if entry.doc is not None else proto_doc(proto))
    for name, info in model.model_fields.items():
        override = entry.fields.get(name)
        comment = DOCS.get(f"{proto}.{name}")
        if comment is not None and (override is None or override.doc is None):
            assert info.description is not None
            assert info.description.startswith(comment), name


def test_option_defaults_are_declared_only_in_the_options_table() -> None:
    for name in OPTIONS:
        assert "default" not in DOCS.get(f"Options.{name}", ""), name
    assert "options table" in DOCS["Options"]
    schema = rest_models.Options.model_json_schema()["properties"]
    assert {name: prop["default"] for name, prop in schema.items()} == {
        name: list(spec.default) if isinstance(spec.default, tuple) else spec.default
        for name, spec in OPTIONS.items()
    }


# --- the documented schema against the server ---------------------------------------------------

N = len(FAWCETT_LABELS)
FLIPPED = [1.0 - s for s in FAWCETT_SCORES]
PREDICTED = [float(s >= 0.5) for s in FAWCETT_SCORES]
WEIGHTS = [1.0 + (i % 3) for i in range(N)]
CLASSES = ["cat", "dog", "fox"]
NAMES = [CLASSES[i % 3] for i in range(9)]
ROWS = [[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.2, 0.7]] * 3
FLAT = [value for row in ROWS for value in row]
IMAGE = {
    "image_id": "a",
    "gt_boxes": [[0, 0, 10, 10], [20, 20, 30, 30]],
    "gt_classes": [1, 2],
    "pred_boxes": [0, 0, 9, 10, 21, 20, 30, 30, 50, 50, 60, 60],
    "pred_classes": [1, 2, 1],
    "pred_scores": [0.9, 0.8, 0.3],
}
BINARY = {"task": "binary", "labels": FAWCETT_LABELS, "scores": FAWCETT_SCORES}
RAW = {
    "labels_f64": f64(FAWCETT_LABELS),
    "scores_f64": f64(FAWCETT_SCORES),
    "predictions_f64": f64(PREDICTED),
    "weights_f64": f64(WEIGHTS),
}
HEADER = {
    "options": {"bootstrap_replicates": 20, "bootstrap_seed": 7, "max_curve_points": 50},
    "model": {"name": "ranker", "version": "2.1", "segment": "eu-west"},
    "coverage": {"n_predictions": 100, "label_delay_seconds": 3600.5},
}

SUMMARY = {"roc_auc": 0.7, "roc_auc_variance": 0.002}
# The AUC monitor's state after a first window against SUMMARY, as base64.
STATE = base64.b64encode(
    evaluate("binary", FAWCETT_LABELS, FAWCETT_SCORES, baseline=SUMMARY).monitor_state or b""
).decode()
MONITORED = {**BINARY, "baseline": SUMMARY, "monitor_state": STATE, "window": "2026-11-27T10"}

# Each JSON form of each request field at least once: every one must be answered 200.
REQUESTS: list[dict[str, Any]] = [
    {
        **BINARY,
        **HEADER,
        "predictions": PREDICTED,
        "weights": WEIGHTS,
        "baseline": {"labels": FAWCETT_LABELS, "scores": FLIPPED, "weights": WEIGHTS},
        "challenger": {"scores": FLIPPED},
    },
    {
        "task": "binary",
        **RAW,
        "baseline": {k: RAW[k] for k in ("labels_f64", "scores_f64", "weights_f64")},
        "challenger": {"scores_f64": f64(FLIPPED)},
    },
    {**BINARY, "baseline": SUMMARY},
    MONITORED,
    {**BINARY, "baseline": {"roc_auc": 0.7, "n_positive": 50, "n_negative": 60}},
    {"task": "multiclass", "classes": CLASSES, "label_names": NAMES, "scores": ROWS},
    {"task": "multiclass", "classes": CLASSES, "labels": NAMES, "scores": FLAT},
    {"task": "multiclass", "labels": [i % 3 for i in range(9)], "scores": ROWS, "n_classes": 3},
    {
        "task": "multilabel",
        "labels": [[1, 0], [0, 1], [1, 1], [0, 0]],
        "scores": [[0.7, 0.2], [0.3, 0.8], [0.6, 0.9], [0.1, 0.2]],
    },
    {"task": "regression", "labels": [1.0, 2.5, 3.0, 4.5], "predictions": [1.1, 2.0, 3.3, 4.0]},
    {"task": "detection", "images": [IMAGE, {**IMAGE, "image_id": "b"}]},
    {**BINARY, "segments": ["a", "b", "c", "d"] * (N // 4), "fold_segments": True},
    {
        **BINARY,
        "baseline": SUMMARY,
        "segment_codes": [i % 2 for i in range(N)],
        "segment_names": ["a", "b"],
        "segment_monitor_states": {"a": STATE},
    },
]
# Streams, as lists of NDJSON lines: the header line first.
STREAMS: list[list[dict[str, Any]]] = [
    [
        {**REQUESTS[0], "challenger": None},
        {**RAW},
        {k: REQUESTS[0][k] for k in ("labels", "scores", "predictions", "weights")},
    ],
    [{"task": "binary", **RAW}],
    [MONITORED, {k: RAW[k] for k in ("labels_f64", "scores_f64")}],
    [
        {
            "task": "multiclass",
            "classes": CLASSES,
            "n_classes": 3,
            "label_names": NAMES,
            "scores": FLAT,
        },
        {"label_names": NAMES, "scores": FLAT},
    ],
    [{"task": "detection", "images": [IMAGE]}, {"images": [{**IMAGE, "image_id": "c"}]}],
    # segments per batch: names, then codes with that batch's own names
    [
        {
            **BINARY,
            "baseline": SUMMARY,
            "segment_monitor_states": {"a": STATE},
            "segments": ["a", "b"] * (N // 2),
        },
        {
            "labels": FAWCETT_LABELS,
            "scores": FAWCETT_SCORES,
            "segment_codes": [i % 2 for i in range(N)],
            "segment_names": ["b", "a"],
        },
    ],
    [
        {**BINARY, "segment_codes": [0] * N, "segment_names": ["a"]},
        {"labels": FAWCETT_LABELS, "scores": FAWCETT_SCORES, "segments": ["b"] * N},
    ],
]


def _clean(line: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in line.items() if value is not None}


class Seen:
    """The keys each component's objects had, walking values along the served schema."""

    def __init__(self, components: Mapping[str, Any]) -> None:
        self.components = components
        self.keys: dict[str, set[str]] = defaultdict(set)

    def walk(self, schema: Mapping[str, Any], value: Any, where: str) -> None:
        if "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[-1]
            component = self.components[name]
            if isinstance(value, dict):
                properties = component.get("properties", {})
                if component.get("additionalProperties") is not True:
                    assert set(value) <= set(properties), (where, name, set(value))
                assert set(component.get("required", ())) <= set(value), (where, name)
                self.keys[name] |= set(value) & set(properties)
            self.walk(component, value, where)
        elif "anyOf" in schema:
            for branch in schema["anyOf"]:
                if _fits(branch, value, self.components):
                    self.walk(branch, value, where)
                    break
            else:
                raise AssertionError(f"{where}: {value!r:.80} fits no branch of {schema}")
        elif isinstance(value, dict):
            for key, item in value.items():
                inner = schema.get("properties", {}).get(key, schema.get("additionalProperties"))
                if isinstance(inner, dict):
                    self.walk(inner, item, f"{where}.{key}")
        elif isinstance(value, list) and "items" in schema:
            for index, item in enumerate(value):
                self.walk(schema["items"], item, f"{where}[{index}]")


JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}


def _fits(schema: Mapping[str, Any], value: Any, components: Mapping[str, Any]) -> bool:
    """Whether ``value`` has the JSON type of ``schema`` (items checked one level down)."""
    if "$ref" in schema:
        return _fits(components[schema["$ref"].rsplit("/", 1)[-1]], value, components)
    kind = JSON_TYPES.get(type(value), "number")
    expected = schema.get("type")
    if expected == "integer" and isinstance(value, int) and not isinstance(value, bool):
        return True
    if expected != kind:
        return False
    return kind != "array" or not value or _fits(schema["items"], value[0], components)


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    with served_app(Settings()) as running:
        yield running.client


@pytest.fixture(scope="module")
def components(client: httpx.Client) -> dict[str, Any]:
    schemas: dict[str, Any] = client.get("/openapi.json").json()["components"]["schemas"]
    return schemas


@pytest.fixture(scope="module")
def answers(client: httpx.Client) -> list[tuple[str, Any]]:
    """Each request and stream's JSON answer, with the catalog, a health check and an error,
    by the component that documents it."""
    got: list[tuple[str, httpx.Response]] = [
        *(("EvaluateResponse", post_json(client, body)) for body in REQUESTS),
        *(("EvaluateResponse", post_stream(client, ndjson(*map(_clean, s)))) for s in STREAMS),
        ("MetricCatalog", client.get("/v1/metrics")),
        ("Status", client.get("/healthz")),
    ]
    for name, response in got:
        assert response.status_code == 200, (name, response.text)
    error = post_json(client, {"task": "ranking"})
    assert error.status_code == 400
    return [*((name, response.json()) for name, response in got), ("ErrorBody", error.json())]


def _ref(name: str) -> dict[str, str]:
    return {"$ref": rest_models.SCHEMA_REF.format(model=name)}


def _request_components(components: Mapping[str, Any]) -> set[str]:
    names = {m.__name__ for m in rest_models.REQUEST_MODELS}
    while True:
        more = {ref.rsplit("/", 1)[-1] for name in names for ref in _refs(components[name])} - names
        if not more:
            return names
        names |= more


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        yield from (v for k, v in node.items() if k == "$ref")
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def test_the_server_reads_every_documented_request_field(
    components: dict[str, Any], answers: list[tuple[str, Any]]
) -> None:
    """Every example is valid by the documented models and was answered 200 (``answers``), and
    together they use every field of every request component (options: test_option_schemas)."""
    seen = Seen(components)
    for body in REQUESTS:
        rest_models.EvaluateRequest.model_validate(body)
        seen.walk(_ref("EvaluateRequest"), body, "request")
    for stream in STREAMS:
        header, *batches = map(_clean, stream)
        rest_models.StreamHeaderLine.model_validate(header)
        seen.walk(_ref("StreamHeaderLine"), header, "header line")
        for batch in batches:
            rest_models.StreamBatchLine.model_validate(batch)
            seen.walk(_ref("StreamBatchLine"), batch, "batch line")
    for name in sorted(_request_components(components) - {"Options"}):
        unused = set(components[name]["properties"]) - seen.keys[name]
        assert not unused, f"no example sends {name}.{sorted(unused)}: add one"


def test_the_server_answers_every_documented_response_field_and_no_other(
    components: dict[str, Any], answers: list[tuple[str, Any]]
) -> None:
    seen = Seen(components)
    models: dict[str, type[BaseModel]] = {
        "EvaluateResponse": rest_models.EvaluateResponse,
        "Status": rest_models.Status,
    }
    models |= {"MetricCatalog": rest_models.MetricCatalog, "ErrorBody": rest_models.ErrorBody}
    for name, body in answers:
        models[name].model_validate(body)
        seen.walk(_ref(name), body, name)
    response_components = set(seen.keys) - _request_components(components)
    assert response_components >= {"EvaluateResponse", "Interval", "DriftTest", "Comparison"}
    for name in sorted(response_components):
        unused = set(components[name].get("properties", {})) - seen.keys[name]
        assert not unused, f"no answer has {name}.{sorted(unused)}"
