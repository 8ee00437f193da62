"""The REST API's documentation models: the proto messages of ``evalserve.v1``, field by field.

They give ``/docs`` its schemas and nothing else: request bodies are parsed by
``service.json_codec`` straight to numpy (a pydantic ``list[float]`` of a million scores costs more
than the evaluation). ``tests/service/test_rest.py`` fails when a model and its proto message
have different field names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, confloat, conint, conlist, create_model
from pydantic.json_schema import models_json_schema

from evalserve.core import OPTIONS, OptionSpec
from evalserve.service.records import MAX_MODEL_LABEL, MODEL_LABEL_CHARS

__all__ = [
    "REQUEST_MODELS",
    "Baseline",
    "Challenger",
    "Comparison",
    "Curves",
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
    "Options",
    "PrCurve",
    "RocCurve",
    "Status",
    "StreamBatchLine",
    "StreamHeaderLine",
    "request_schemas",
]

Task = Literal["binary", "multiclass", "multilabel", "regression", "detection"]
Labels = list[float] | list[str] | list[list[float]]
Scores = list[float] | list[list[float]]


def _raw(column: str) -> Any:
    return Field(
        None,
        description=f"`{column}` as base64 of little-endian float64 bytes (the fast form for "
        f"large arrays); send `{column}` or `{column}_f64`, not both.",
        json_schema_extra={"contentEncoding": "base64"},
    )


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


def _model_label(description: str, default: str | None = None) -> Any:
    repeat = "+" if default is None else "*"
    return Field(
        ... if default is None else default,
        description=f"{description}; at most {MAX_MODEL_LABEL} characters of"
        f" [{MODEL_LABEL_CHARS}] (a Prometheus label value)",
        max_length=MAX_MODEL_LABEL,
        pattern=f"^[{MODEL_LABEL_CHARS}]{repeat}$",
    )


class Model(_Strict):
    """Names the evaluated model; a request that carries one updates its Prometheus gauges."""

    name: str = _model_label("the model (label `model`), required")
    version: str = _model_label("its version (label `version`)", "")
    segment: str = _model_label("the slice of traffic (label `segment`)", "")


class Baseline(_Strict):
    """Reference of the drift test: a summary, or a reference payload of labels and scores."""

    roc_auc: float | None = None
    roc_auc_variance: float | None = None
    n_positive: float | None = None
    n_negative: float | None = None
    labels: list[float] | None = None
    scores: list[float] | None = None
    labels_f64: str | None = _raw("labels")
    scores_f64: str | None = _raw("scores")
    weights: list[float] | None = None
    weights_f64: str | None = _raw("weights")


class Coverage(_Strict):
    """How much of the evaluated window's predictions have their labels (labels arrive late)."""

    n_predictions: int | None = Field(
        None, ge=1, description="predictions made in the window, labelled or not (>= rows sent)"
    )
    label_delay_seconds: float | None = Field(
        None, ge=0, description="how late the labels arrive, in seconds (e.g. the median)"
    )


class Challenger(_Strict):
    """A second model's scores on the same rows (paired comparison)."""

    scores: Scores | None = None
    scores_f64: str | None = _raw("scores")


class DetectionImage(_Strict):
    """One image of a detection request. Boxes are [x1, y1, x2, y2]."""

    image_id: str | None = None
    gt_boxes: list[list[float]] | list[float] | None = Field(
        None, description="ground-truth boxes, m x 4 (or flat, row-major)"
    )
    gt_classes: list[int] | None = Field(None, description="class id of each ground-truth box")
    pred_boxes: list[list[float]] | list[float] | None = Field(
        None, description="predicted boxes, p x 4 (or flat, row-major)"
    )
    pred_classes: list[int] | None = Field(None, description="class id of each predicted box")
    pred_scores: list[float] | None = Field(None, description="score of each predicted box")


class EvaluateRequest(_Strict):
    """The body of ``POST /v1/evaluate`` (JSON; protobuf bodies carry the same message)."""

    task: Task
    labels: Labels | None = Field(
        None,
        description="ground truth: 0/1 (binary), class index or name (multiclass), n x k 0/1 "
        "(multilabel), targets (regression)",
    )
    scores: Scores | None = Field(None, description="n (binary) or n x k scores")
    predictions: list[float] | None = Field(
        None, description="optional hard predictions; the predictions of a regression model"
    )
    weights: list[float] | None = Field(None, description="optional non-negative sample weights")
    classes: list[str] | None = Field(None, description="class names in score-column order")
    label_names: list[str] | None = Field(
        None, description="multiclass ground truth as class names, instead of `labels`"
    )
    options: Options | None = None
    model: Model | None = None
    baseline: Baseline | None = None
    challenger: Challenger | None = None
    labels_f64: str | None = _raw("labels")
    scores_f64: str | None = _raw("scores")
    predictions_f64: str | None = _raw("predictions")
    weights_f64: str | None = _raw("weights")
    n_classes: int | None = Field(
        None,
        description="columns of flat (row-major) score matrices: default len(classes), or for "
        "multiclass len(scores) / len(labels)",
        ge=1,
    )
    images: list[DetectionImage] | None = Field(
        None, description="detection: one entry per image (labels and scores stay empty)"
    )
    coverage: Coverage | None = None


class StreamBatchLine(_Strict):
    """A line of ``POST /v1/evaluate/stream`` after the header: a batch of rows (the columns of
    ``EvaluateRequest``; score matrices as n x k arrays or flat with the header's ``n_classes``
    or ``classes``), or, for task detection, of images."""

    labels: Labels | None = None
    scores: Scores | None = None
    predictions: list[float] | None = None
    weights: list[float] | None = None
    label_names: list[str] | None = None
    labels_f64: str | None = _raw("labels")
    scores_f64: str | None = _raw("scores")
    predictions_f64: str | None = _raw("predictions")
    weights_f64: str | None = _raw("weights")
    images: list[DetectionImage] | None = Field(
        None, description="detection: the images of this batch (no row columns then)"
    )


class StreamHeaderLine(StreamBatchLine):
    """The first line of ``POST /v1/evaluate/stream``: the stream's header (it may carry rows
    too)."""

    task: Task
    classes: list[str] | None = None
    options: Options | None = None
    model: Model | None = None
    baseline: Baseline | None = None
    n_classes: int | None = Field(None, ge=1, description="columns of flat score matrices")
    coverage: Coverage | None = None


class RocCurve(BaseModel):
    fpr: list[float]
    tpr: list[float]
    thresholds: list[float | None] = Field(description="the first threshold (+inf) is null")


class PrCurve(BaseModel):
    precision: list[float]
    recall: list[float]
    thresholds: list[float | None]


class Curves(BaseModel):
    """The ROC and PR curves (binary); every other curve or matrix under its own name, as named
    arrays of numbers (multiclass: ``roc_macro`` with ``fpr``/``tpr``, ``confusion_matrix``).
    In protobuf those are ``Curves.other``."""

    model_config = ConfigDict(extra="allow")

    roc: RocCurve | None = None
    pr: PrCurve | None = None


class Interval(BaseModel):
    lower: float
    upper: float
    level: float
    method: str = Field(description='"delong", "delong-logit", "wilson" or "bootstrap-percentile"')
    std_error: float | None = None
    replicates: int | None = Field(None, description="bootstrap replicates (bootstrap only)")
    seed: int | None = Field(None, description="bootstrap seed (bootstrap only)")


class DriftTest(BaseModel):
    """The current metric against the baseline's (unpaired). Without a verdict (status
    "insufficient_data" or "undefined") the numbers are null and ``reason`` says why."""

    baseline: float
    delta: float | None
    z: float | None
    p_value: float | None
    significant: bool | None
    method: str
    df: float | None = Field(description="Welch-Satterthwaite degrees of freedom, or null: normal")
    std_error: float | None
    status: Literal["ok", "insufficient_data", "undefined"]
    reason: str | None


class Comparison(BaseModel):
    """The challenger's metric against the champion's on the same rows (paired)."""

    challenger: float | None
    delta: float | None
    z: float | None
    p_value: float | None
    significant: bool | None
    method: str
    std_error: float | None
    status: Literal["ok", "insufficient_data", "undefined"]
    reason: str | None
    df: float | None = Field(description="always null: the paired test is normal")


class CoverageReport(BaseModel):
    """The request's coverage with the rows evaluated (absent keys: not sent)."""

    n_predictions: int | None = None
    n_labelled: int | None = Field(None, description="rows evaluated (images for detection)")
    label_coverage: float | None = Field(None, description="n_labelled / n_predictions")
    label_delay_seconds: float | None = None


class EvaluateResponse(BaseModel):
    """The JSON result. An undefined metric is null in ``metrics``, its reason in
    ``undefined``."""

    task: Task
    n_samples: int
    metrics: dict[str, float | None]
    undefined: dict[str, str]
    per_class: list[dict[str, Any]] = Field(
        description='one row per class: {"class": name, metric: value, ...}'
    )
    curves: Curves
    intervals: dict[str, Interval]
    drift: dict[str, DriftTest]
    comparison: dict[str, Comparison]
    conventions: dict[str, str]
    warnings: list[str]
    coverage: CoverageReport = Field(description="{} unless the request had coverage")


class MetricRange(BaseModel):
    """The closed interval every defined value of a metric lies in."""

    lower: float | None = Field(description="null: unbounded below")
    upper: float | None = Field(description="null: unbounded above")


class MetricEntry(BaseModel):
    """One metric of one task (evalserve.v1.MetricInfo); (task, name) is unique."""

    name: str = Field(description="a template such as precision_at_{k} stands for each k")
    tasks: list[Task] = Field(description="kept for v0.1 clients: [task]")
    higher_is_better: bool | None = Field(description="null for counts and thresholds")
    definition: str
    aliases: list[str]
    task: Task
    range: MetricRange
    convention: str = Field(
        description='where references disagree, the choice made: "key: text; ..." (keys of '
        "a result's `conventions`)"
    )
    reference: str = Field(description="what the value is checked against")
    test: str = Field(description="the pytest node id of the test that checks it")


class MetricCatalog(BaseModel):
    """``GET /v1/metrics``: every metric the service can return, or those of ``?task=``."""

    metrics: list[MetricEntry]


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
