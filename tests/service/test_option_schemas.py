"""The options table (``evalserve.core.OPTIONS``) against the API's schemas, option by option.

``tests/service/test_rest.py`` checks that each REST model has its proto message's field names;
this file checks the options in depth: the proto ``Options`` message has exactly the table's
options with matching types (``optional`` for a scalar, ``repeated`` for a list), the REST
model (built from the table) documents each one's type, bounds, default and doc, and both
decoders carry every option to the core.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.protobuf.descriptor import FieldDescriptor
from pydantic import ValidationError

from evalserve.core import OPTIONS, OptionSpec, parse_options
from evalserve.core._options import MAX_STRING_OPTION
from evalserve.service import json_codec, proto_codec, records, rest_models
from evalserve.service.config import Settings
from evalserve.v1 import evaluation_pb2 as pb
from tests.core.test_options import CHANGED, EDGES, Edge

SPECS = [pytest.param(spec, id=name) for name, spec in OPTIONS.items()]
PROTO_FIELDS = pb.Options.DESCRIPTOR.fields_by_name
PROTO_TYPES = {
    "number": FieldDescriptor.TYPE_DOUBLE,
    "integer": FieldDescriptor.TYPE_INT64,
    "choice": FieldDescriptor.TYPE_STRING,
    "string": FieldDescriptor.TYPE_STRING,
}
JSON_TYPES = {"number": "number", "integer": "integer", "choice": "string", "string": "string"}


# --- protobuf ---------------------------------------------------------------------------------


def test_the_proto_message_has_exactly_the_options_of_the_table() -> None:
    assert sorted(PROTO_FIELDS) == sorted(OPTIONS)


@pytest.mark.parametrize("spec", SPECS)
def test_each_proto_field_has_the_type_of_its_option(spec: OptionSpec) -> None:
    field = PROTO_FIELDS[spec.name]
    assert field.type == PROTO_TYPES[spec.kind]
    assert field.is_repeated == spec.repeated
    if not spec.repeated:
        # proto3 `optional`: an unset field is told from a zero, so unset takes the default
        assert field.has_presence


# --- the decoders -----------------------------------------------------------------------------


def test_both_decoders_take_exactly_the_options_of_the_table() -> None:
    assert sorted(records.OPTION_FIELDS) == sorted(OPTIONS)


@pytest.mark.parametrize("spec", SPECS)
def test_both_decoders_carry_each_option_to_the_core(spec: OptionSpec) -> None:
    value, _ = CHANGED[spec.name]
    expected = getattr(parse_options({spec.name: value}), spec.name)
    assert expected != spec.default
    settings = Settings()
    message = pb.EvaluateRequest(task=pb.TASK_BINARY, options=pb.Options(**{spec.name: value}))
    from_proto = proto_codec.header_from_proto(message, settings).options
    from_json = json_codec.header_from_json(
        {"task": "binary", "options": {spec.name: value}}, settings
    ).options
    for options in (from_proto, from_json):
        assert getattr(parse_options(options), spec.name) == expected


# --- the REST model ---------------------------------------------------------------------------


def _schema() -> dict[str, Any]:
    schema: dict[str, Any] = rest_models.Options.model_json_schema()
    return schema


def test_the_rest_model_has_exactly_the_options_of_the_table() -> None:
    schema = _schema()
    assert list(schema["properties"]) == list(OPTIONS)
    assert schema["additionalProperties"] is False
    assert rest_models.Options.__name__ == "Options"  # its name in the OpenAPI components


def _bounds(schema: dict[str, Any]) -> dict[str, Any]:
    keys = ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum")
    return {key: schema[key] for key in keys if key in schema}


def _expected_bounds(spec: OptionSpec) -> dict[str, Any]:
    bounds = {}
    if spec.low is not None:
        bounds["exclusiveMinimum" if spec.low_open else "minimum"] = spec.low
    if spec.high is not None:
        bounds["exclusiveMaximum" if spec.high_open else "maximum"] = spec.high
    return bounds


@pytest.mark.parametrize("spec", SPECS)
def test_the_rest_model_documents_each_option_from_the_table(spec: OptionSpec) -> None:
    prop = _schema()["properties"][spec.name]
    *values, null = prop["anyOf"]
    assert null == {"type": "null"}  # null is the default
    if spec.kind == "string":  # a string, or a number taken as its text
        text, number = values
        assert number == {"type": "number"}
        assert (text["minLength"], text["maxLength"]) == (1, MAX_STRING_OPTION)
        values = [text]
    (value,) = values
    if spec.repeated:
        assert value["type"] == "array"
        assert value["maxItems"] == spec.max_items
        value = value["items"]
    assert value["type"] == JSON_TYPES[spec.kind]
    assert _bounds(value) == _expected_bounds(spec)
    assert value.get("enum", []) == list(spec.choices)
    assert prop["default"] == json.loads(spec.default_text)
    assert prop["description"].startswith(spec.doc)
    assert spec.range_text in prop["description"]


def _rest_accepts(edge: Edge) -> bool:
    try:
        rest_models.Options.model_validate({edge.option: edge.value})
    except ValidationError:
        return False
    return True


@pytest.mark.parametrize("edge", [pytest.param(edge, id=edge.id) for edge in EDGES])
def test_the_rest_model_draws_each_edge_where_the_core_does(edge: Edge) -> None:
    """The schema's bounds are the core's: a client validating against the OpenAPI schema
    agrees with the service at every edge, except the 1 that a count with ``zero_means``
    refuses, which JSON Schema ranges cannot say (its description does)."""
    if edge.label == "one" and OPTIONS[edge.option].zero_means is not None:
        assert _rest_accepts(edge)
        assert "or [2," in OPTIONS[edge.option].range_text
        return
    assert _rest_accepts(edge) == edge.passes
