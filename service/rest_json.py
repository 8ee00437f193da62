"""Where the REST API's JSON differs from the proto: the table ``service.rest_models`` derives its
models with (``service.rest_schema`` is the machinery).

Every message the JSON carries has an entry in ``MESSAGES`` (its model's name, how its fields
default, what it drops); a field is listed only where its JSON form is not the proto's: columns
that also take class names or nested rows, the ``<column>_f64`` base64 fields (``raw_column``),
the task as a lowercase name of the core's registry, model labels' pattern and length, null
curve thresholds and metrics, response-only shapes (per-class rows, curves by name), fields
that may be absent or null. The options are not here: their model comes from the core's options
table (``evalserve.core.OPTIONS``), defaults included.
"""

from __future__ import annotations

from typing import Any, Literal

from google.protobuf.descriptor import FieldDescriptor

from evalserve.core import TASKS
from evalserve.service.records import MAX_MODEL_LABEL, MODEL_LABEL_CHARS
from evalserve.service.rest_schema import JsonField, JsonMessage

__all__ = ["ENUMS", "MESSAGES", "raw_column"]

Task: Any = Literal.__getitem__(TASKS)  # the names of the core's task registry
# A column of rows in JSON: numbers, class names (labels), or n x k matrices as arrays of rows.
Labels = list[float] | list[str] | list[list[float]]
Scores = list[float] | list[list[float]]
Boxes = list[list[float]] | list[float]
Status = Literal["ok", "insufficient_data", "undefined"]

ENUMS: dict[str, Any] = {"evalserve.v1.Task": Task}

BASE64 = {"json_schema_extra": {"contentEncoding": "base64"}}


def raw_column(fd: FieldDescriptor) -> JsonField | None:
    """A ``bytes`` field is base64 text in JSON; ``<column>_f64`` is a column's raw form."""
    if fd.type != FieldDescriptor.TYPE_BYTES:
        return None
    column = fd.name.removesuffix("_f64")
    doc = (
        f"`{column}` as base64 of little-endian float64 bytes (the fast form for large arrays); "
        f"send `{column}` or `{column}_f64`, not both."
    )
    return JsonField(doc=doc if fd.name.endswith("_f64") else None, schema=BASE64)


def _model_label(default: str | None = None) -> JsonField:
    """A Prometheus label value: a string, not null; ``name`` is required, its version and
    segment default to empty."""
    repeat = "+" if default is None else "*"
    return JsonField(
        required=default is None,
        nullable=False,
        default=default,
        note=f"At most {MAX_MODEL_LABEL} characters of [{MODEL_LABEL_CHARS}] (a Prometheus label"
        " value).",
        schema={"max_length": MAX_MODEL_LABEL, "pattern": f"^[{MODEL_LABEL_CHARS}]{repeat}$"},
    )


TASK = JsonField(type=Task, required=True, nullable=False)
LABELS = JsonField(
    type=Labels,
    note="In JSON also names (multiclass class names, binary labels with "
    "`options.positive_label`; `label_names` in protobuf) or n x k rows (multilabel).",
)
SCORES = JsonField(type=Scores, note="In JSON an n x k matrix may also come as n rows of k.")
POSITIVE = {"ge": 1}
EMPTY_IS_ABSENT = "An empty array is an absent field (as in protobuf)."
BATCH_DOC = (
    "A line of ``POST /v1/evaluate/stream`` after the header: a batch of rows (the columns of "
    "``EvaluateRequest``; score matrices as n x k arrays or flat with the header's "
    "``n_classes`` or ``classes``), or, for task detection, of images."
)


def _request(name: str, /, **fields: JsonField) -> JsonMessage:
    return JsonMessage(name, absent=True, extra="forbid", fields=fields)


def _response(name: str, /, **fields: JsonField) -> JsonMessage:
    return JsonMessage(name, absent=False, extra="ignore", fields=fields)


# Each message of the JSON, by its proto name; Options comes from the options table, and
# ClassMetrics, NamedArrays and Values have no JSON model (per-class rows and curves are flat).
MESSAGES: dict[str, JsonMessage] = {
    "EvaluateRequest": JsonMessage(
        "EvaluateRequest",
        absent=True,
        extra="forbid",
        doc="The body of ``POST /v1/evaluate`` (JSON; protobuf bodies carry the same message).",
        fields={
            "task": TASK,
            "labels": LABELS,
            "scores": SCORES,
            "n_classes": JsonField(schema=POSITIVE),
            "segments": JsonField(note=EMPTY_IS_ABSENT),
            "segment_codes": JsonField(note=EMPTY_IS_ABSENT),
            "segment_monitor_states": JsonField(type=dict[str, str], note="Each state as base64."),
        },
    ),
    "EvaluateStreamRequest": JsonMessage(
        "StreamBatchLine",
        absent=True,
        extra="forbid",
        doc=BATCH_DOC,
        drop=frozenset({"header"}),  # the header's fields are on the first line
        fields={
            "labels": LABELS,
            "scores": SCORES,
            "segments": JsonField(note=EMPTY_IS_ABSENT),
            "segment_codes": JsonField(note=EMPTY_IS_ABSENT),
        },
    ),
    "StreamHeader": JsonMessage(
        "StreamHeaderLine",
        absent=True,
        extra="forbid",
        base="EvaluateStreamRequest",
        doc="The first line of ``POST /v1/evaluate/stream``: the stream's header (it may carry "
        "rows too).",
        fields={
            "task": TASK,
            "n_classes": JsonField(schema=POSITIVE),
            "segment_monitor_states": JsonField(type=dict[str, str], note="Each state as base64."),
        },
    ),
    "Model": _request(
        "Model",
        name=_model_label(),
        version=_model_label(""),
        segment=_model_label(""),
    ),
    "Baseline": _request("Baseline"),
    "Challenger": _request("Challenger", scores=JsonField(type=Scores)),
    "Coverage": _request(
        "Coverage",
        n_predictions=JsonField(schema=POSITIVE),
        label_delay_seconds=JsonField(schema={"ge": 0}),
    ),
    "DetectionImage": _request(
        "DetectionImage",
        gt_boxes=JsonField(type=Boxes, note="In JSON also m rows of 4."),
        pred_boxes=JsonField(type=Boxes, note="In JSON also p rows of 4."),
    ),
    "EvaluateResponse": JsonMessage(
        "EvaluateResponse",
        absent=False,
        extra="ignore",
        doc="The JSON result. An undefined metric is null in ``metrics``, its reason in "
        "``undefined``.",
        fields={
            "metrics": JsonField(
                type=dict[str, float | None],
                doc="Every metric: an undefined one is null, its reason in `undefined`.",
            ),
            "per_class": JsonField(
                type=list[dict[str, Any]],
                doc='One row per class: {"class": name, metric: value, ..., "undefined": '
                '{metric: reason}, "intervals": {metric: interval}}.',
            ),
            "coverage": JsonField(doc="{} unless the request had `coverage`."),
            "segments": JsonField(
                required=False,
                nullable=False,
                note="Absent unless the request had segments; each entry is a full "
                "EvaluateResponse (the JSON of `evaluate(...).segments[name].to_dict()`).",
            ),
            "monitor_state": JsonField(
                type=str | None,
                doc="The AUC monitor's state as base64 (null without a baseline): send it back "
                "as `monitor_state` with the next window.",
            ),
        },
    ),
    "Curves": JsonMessage(
        "Curves",
        absent=True,
        extra="allow",  # the other curves, each under its own name
        drop=frozenset({"other"}),
        doc="The ROC and PR curves (binary); every other curve or matrix under its own name, as "
        "named arrays of numbers (multiclass: ``roc_macro`` with ``fpr``/``tpr``, "
        "``confusion_matrix``, ``roc_per_class``). In protobuf those are ``Curves.other``.",
    ),
    "RocCurve": _response(
        "RocCurve", thresholds=JsonField(type=list[float | None], note="JSON has it as null.")
    ),
    "PrCurve": _response("PrCurve", thresholds=JsonField(type=list[float | None])),
    "Interval": _response(
        "Interval",
        std_error=JsonField(required=False, nullable=True),
        replicates=JsonField(required=False),  # absent unless a bootstrap made the interval
        seed=JsonField(required=False),
    ),
    "DriftTest": _response("DriftTest", status=JsonField(type=Status)),
    "Comparison": _response("Comparison", status=JsonField(type=Status)),
    "MonitorVerdict": _response(
        "MonitorVerdict", status=JsonField(type=Literal["ok", "insufficient_data"])
    ),
    "CoverageReport": JsonMessage(
        "CoverageReport",
        absent=True,
        extra="ignore",
        doc="The request's coverage with the rows evaluated (absent keys: not sent).",
    ),
    "ListMetricsResponse": JsonMessage(
        "MetricCatalog",
        absent=False,
        extra="ignore",
        doc="``GET /v1/metrics``: every metric the service can return, or those of ``?task=``.",
    ),
    "MetricInfo": _response("MetricEntry"),
    "MetricRange": _response("MetricRange"),
}
