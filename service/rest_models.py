"""The REST API's documentation models: the proto messages of ``evalserve.v1``, derived.

They give ``/docs`` its schemas and nothing else: request bodies are parsed by
``service.json_codec`` straight to numpy (a pydantic ``list[float]`` of a million scores costs more
than the evaluation). Each model is derived from its proto message (``service.rest_schema``:
the fields and types of the descriptor, the descriptions of the proto's comments), with the
JSON's differences from the proto in one table (``service.rest_json``); ``Options`` comes from
the core's options table. ``tests/service/test_rest_schema.py`` checks the models against the
proto and against what the server reads and answers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    confloat,
    conint,
    conlist,
    constr,
    create_model,
)
from pydantic.json_schema import models_json_schema

from evalserve.core import MAX_STRING_OPTION, OPTIONS, OptionSpec
from evalserve.service.rest_json import ENUMS, MESSAGES, raw_column
from evalserve.service.rest_schema import derive
from evalserve.v1 import evaluation_pb2 as pb

__all__ = [
    "MODELS",
    "REQUEST_MODELS",
    "Baseline",
    "Challenger",
    "Comparison",
    "Coverage",
    "CoverageReport",
    "Curves",
    "DetectionImage",
    "DriftTest",
    "ErrorBody",
    "ErrorDetail",
    "EvaluateRequest",
    "EvaluateResponse",
    "Interval",
    "MetricCatalog",
    "MetricEntry",
    "MetricRange",
    "Model",
    "MonitorVerdict",
    "Options",
    "PrCurve",
    "RocCurve",
    "Status",
    "StreamBatchLine",
    "StreamHeaderLine",
    "request_schemas",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _option_field(spec: OptionSpec) -> tuple[Any, Any]:
    """An option's REST field, from its row of the core's table: the type of one value with
    its bounds, a list of them for a list option, null allowed; the table's default and doc."""
    bounds: dict[str, Any] = {}
    if spec.low is not None:
        bounds["gt" if spec.low_open else "ge"] = spec.low
    if spec.high is not None:
        bounds["lt" if spec.high_open else "le"] = spec.high
    value: Any
    if spec.kind == "choice":
        value = Literal.__getitem__(spec.choices)
    elif spec.kind == "integer":
        value = conint(**bounds)
    elif spec.kind == "string":  # a number is taken as its text
        text = constr(strict=True, min_length=1, max_length=MAX_STRING_OPTION)
        value = text | confloat(strict=True, allow_inf_nan=False)
    else:
        value = confloat(**bounds, allow_inf_nan=False)
    if spec.repeated:
        value = conlist(value, max_length=spec.max_items)
    default = list(spec.default) if isinstance(spec.default, tuple) else spec.default
    description = (
        f"{spec.doc} Allowed: {spec.range_text}. Tasks: {', '.join(spec.tasks)} (the others "
        "check it and ignore it)."
    )
    return value | None, Field(default, description=description)


OPTIONS_DOC = (
    "Tuning of the evaluation; an absent or null option takes its default. Built from the "
    "core's options table (`evalserve.core.OPTIONS`)."
)

if TYPE_CHECKING:

    class Options(_Strict):
        """The options; the fields come from ``evalserve.core.OPTIONS`` at run time."""

else:
    Options = create_model(
        "Options",
        __base__=_Strict,
        __module__=__name__,
        __doc__=OPTIONS_DOC,
        **{name: _option_field(spec) for name, spec in OPTIONS.items()},
    )


# The models of the proto's messages, derived from their descriptors and comments with the
# JSON differences of ``service.rest_json``; Options from the options table.
MODELS = derive(pb.DESCRIPTOR, MESSAGES, given={"Options": Options}, enums=ENUMS, rule=raw_column)

if TYPE_CHECKING:

    class Derived(BaseModel):
        """A derived model as the type checker sees it: its fields are known at run time."""

        def __getattr__(self, name: str) -> Any: ...

else:
    Derived = BaseModel


def _derived(proto: str) -> type[Derived]:
    return cast("type[Derived]", MODELS[proto])


EvaluateRequest = _derived("EvaluateRequest")
StreamBatchLine = _derived("EvaluateStreamRequest")
StreamHeaderLine = _derived("StreamHeader")
Model = _derived("Model")
Baseline = _derived("Baseline")
Challenger = _derived("Challenger")
Coverage = _derived("Coverage")
DetectionImage = _derived("DetectionImage")
EvaluateResponse = _derived("EvaluateResponse")
Curves = _derived("Curves")
RocCurve = _derived("RocCurve")
PrCurve = _derived("PrCurve")
Interval = _derived("Interval")
DriftTest = _derived("DriftTest")
Comparison = _derived("Comparison")
MonitorVerdict = _derived("MonitorVerdict")
CoverageReport = _derived("CoverageReport")
MetricCatalog = _derived("ListMetricsResponse")
MetricEntry = _derived("MetricInfo")
MetricRange = _derived("MetricRange")


# The REST API's own shapes, with no proto message.
class ErrorDetail(BaseModel):
    code: str = Field(
        description="malformed, invalid_argument, stream_protocol, too_large, "
        "unsupported_media_type, not_found, method_not_allowed or internal"
    )
    field: str = Field(description="the offending field, e.g. `scores` or `options.beta`")
    message: str = Field(description="what was expected and what came")


class ErrorBody(BaseModel):
    """Every error response of the REST API."""

    error: ErrorDetail


class Status(BaseModel):
    status: str


# Request bodies are documented through ``openapi_extra`` (FastAPI does not parse them), so
# their schemas are added to the OpenAPI components by hand.
REQUEST_MODELS: tuple[type[BaseModel], ...] = (EvaluateRequest, StreamHeaderLine, StreamBatchLine)
SCHEMA_REF = "#/components/schemas/{model}"


def request_schemas() -> dict[str, Any]:
    """The JSON schemas of the request models (and their parts), keyed by component name."""
    _, top = models_json_schema(
        [(model, "validation") for model in REQUEST_MODELS], ref_template=SCHEMA_REF
    )
    definitions: dict[str, Any] = top["$defs"]
    return definitions
