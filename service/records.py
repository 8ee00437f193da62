"""The request records: what a request says, whichever transport and encoding carried it.

The JSON codec (``service.json_codec``) and the protobuf codec (``service.proto_codec``) make
these; the use case (``service.usecase``) takes them; nothing here knows HTTP, gRPC, JSON or
protobuf. Values are numpy arrays and plain Python values as sent: the core checks them
(``core._validation``, ``core.parse_options``), so both transports report the same bad value
the same way. The field-name tuples below are the wire's names, which both codecs accept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from typing import Any

from numpy.typing import NDArray

from evalserve.core import InvalidInputError
from evalserve.service.errors import MalformedRequestError
from evalserve.v1 import evaluation_pb2 as pb

__all__ = [
    "Baseline",
    "Batch",
    "Challenger",
    "Column",
    "Coverage",
    "Header",
    "Images",
    "ModelRef",
    "Request",
    "Segments",
    "model_ref",
]

Column = NDArray[Any]
# The row columns of a request, and those a request may leave out.
COLUMNS = ("labels", "scores", "predictions", "weights")
OPTIONAL_COLUMNS = ("predictions", "weights")
# What a stream says once (its header), what every batch may carry, and a whole request.
HEADER_FIELDS = (
    "task",
    "classes",
    "options",
    "model",
    "baseline",
    "n_classes",
    "coverage",
    "monitor_state",
    "window",
    "segment_monitor_states",
)
# A batch's segments (a stream's batches each carry their own; a whole request's are its rows').
BATCH_SEGMENT_FIELDS = ("segments", "segment_codes", "segment_names")
BATCH_FIELDS = (
    *COLUMNS,
    "label_names",
    *(f"{name}_f64" for name in COLUMNS),
    "images",
    *BATCH_SEGMENT_FIELDS,
)
# Folding needs every row at once: whole requests only (a stream is refused naming it).
FOLD_FIELD = "fold_segments"
SEGMENT_FIELDS = (*BATCH_SEGMENT_FIELDS, FOLD_FIELD, "segment_monitor_states")
REQUEST_FIELDS = tuple(dict.fromkeys((*HEADER_FIELDS, *BATCH_FIELDS, "challenger", FOLD_FIELD)))
IMAGE_FIELDS = tuple(f.name for f in pb.DetectionImage.DESCRIPTOR.fields)
BASELINE_COLUMNS = ("labels", "scores", "weights")
BASELINE_SUMMARY = ("roc_auc", "roc_auc_variance", "n_positive", "n_negative")
BASELINE_FIELDS = tuple(f.name for f in pb.Baseline.DESCRIPTOR.fields)
CHALLENGER_FIELDS = tuple(f.name for f in pb.Challenger.DESCRIPTOR.fields)
MODEL_FIELDS = ("name", "version", "segment")
COVERAGE_FIELDS = tuple(f.name for f in pb.Coverage.DESCRIPTOR.fields)
OPTION_FIELDS = tuple(f.name for f in pb.Options.DESCRIPTOR.fields)


# Model names become Prometheus label values: short, and from a charset every tool quotes alike.
MAX_MODEL_LABEL = 128
MODEL_LABEL_CHARS = "A-Za-z0-9_.:/-"
_MODEL_LABEL = re.compile(f"[{MODEL_LABEL_CHARS}]*")


@dataclass(frozen=True, slots=True)
class ModelRef:
    """The model a request names (``model.name``, ``model.version``, ``model.segment``)."""

    name: str
    version: str = ""
    segment: str = ""


def model_ref(name: str, version: str = "", segment: str = "") -> ModelRef:
    """A checked ``ModelRef``: each part at most 128 characters of [A-Za-z0-9_.:/-]; the name is
    required (refused as malformed when empty, as a missing field is)."""
    if not name:
        raise MalformedRequestError("model.name", "is required when model is given")
    for key, value in (("name", name), ("version", version), ("segment", segment)):
        if len(value) > MAX_MODEL_LABEL:
            raise InvalidInputError(
                f"model.{key}",
                f"expected at most {MAX_MODEL_LABEL} characters, but got {len(value)}",
            )
        allowed = _MODEL_LABEL.match(value)
        assert allowed is not None  # the pattern matches the empty prefix of anything
        if allowed.end() < len(value):
            bad = value[allowed.end()]
            raise InvalidInputError(
                f"model.{key}",
                f"expected only the characters {MODEL_LABEL_CHARS}, but got {bad!r} at"
                f" position {allowed.end()} of {value!r}",
            )
    return ModelRef(name, version, segment)


def _given(record: Any) -> dict[str, Any]:
    """A record's fields that were sent (not None), as the core takes them."""
    values = ((item.name, getattr(record, item.name)) for item in fields(record))
    return {name: value for name, value in values if value is not None}


@dataclass(frozen=True, slots=True)
class Baseline:
    """The drift baseline: its summary numbers as sent, or its rows (numpy arrays); the core
    checks which were given and their values (``core.check_baseline``), naming the field."""

    roc_auc: Any = None
    roc_auc_variance: Any = None
    n_positive: Any = None
    n_negative: Any = None
    labels: Column | None = None
    scores: Column | None = None
    weights: Column | None = None

    def given(self) -> dict[str, Any]:
        """The fields that were sent, as ``core.evaluate``'s ``baseline`` mapping."""
        return _given(self)


@dataclass(frozen=True, slots=True)
class Challenger:
    """A second model's scores on the same rows, for the paired comparison."""

    scores: Column | None = None

    def given(self) -> dict[str, Any]:
        """As ``core.evaluate``'s ``challenger`` mapping (``scores`` None when none was sent:
        the core names the missing field)."""
        return {"scores": self.scores}


@dataclass(frozen=True, slots=True)
class Coverage:
    """The label coverage of the window, as sent: the core checks the values."""

    n_predictions: Any = None
    label_delay_seconds: Any = None

    def given(self) -> dict[str, Any]:
        """The fields that were sent, as ``core.evaluate``'s ``coverage`` mapping."""
        return _given(self)


@dataclass(frozen=True, slots=True)
class Header:
    """What a stream says once, and a whole request besides its rows: the task and how to
    evaluate it."""

    task: str
    options: dict[str, Any] = field(default_factory=dict)
    classes: tuple[str, ...] | None = None
    model: ModelRef | None = None
    baseline: Baseline | None = None
    # The width of row-major score matrices sent flat (protobuf, raw bytes).
    n_classes: int | None = None
    coverage: Coverage | None = None
    # The AUC monitor's state as the last window returned it, and this window's id.
    monitor_state: bytes | None = None
    window: str | None = None
    # A stream's: each segment's monitor state, by name (a whole request's are its Segments').
    segment_monitor_states: dict[str, bytes] | None = None


# Detection: per image, the targets and the predictions as ``core.evaluate`` takes them.
Images = tuple[tuple[dict[str, Any], ...], tuple[dict[str, Any], ...]]


@dataclass(frozen=True, slots=True)
class Batch:
    """Rows; columns are numpy arrays (or None when absent), or, for task detection, images.
    Values are checked by the core."""

    labels: Column | None = None
    scores: Column | None = None
    predictions: Column | None = None
    weights: Column | None = None
    label_names: tuple[str, ...] | None = None
    images: Images | None = None
    # A stream batch's segments (a whole request's are the Request's).
    segments: Segments | None = None

    @property
    def has_rows(self) -> bool:
        """Some row column carries a value (images aside)."""
        columns = (self.labels, self.label_names, self.scores, self.predictions, self.weights)
        return any(column is not None and len(column) > 0 for column in columns)

    @property
    def is_empty(self) -> bool:
        """No column carries a value and no image is sent (a stream message without rows)."""
        return not self.has_rows and (self.images is None or not self.images[0])

    @property
    def truth(self) -> Column | tuple[str, ...] | None:
        """The labels: numbers, or names (string labels)."""
        return self.labels if self.labels is not None else self.label_names


@dataclass(frozen=True, slots=True)
class Segments:
    """The segment of each row (each image for detection), as sent: names (``segments``), or
    integer codes into ``names`` (``segment_codes`` with ``segment_names``, a
    dictionary-encoded column). ``values`` None: the request sent segment fields without
    segments, which the core refuses naming the field. The core checks the values
    (``core._segments``), naming ``segments``; the codecs check types and sizes."""

    values: tuple[str, ...] | Column | None = None
    names: tuple[str, ...] | None = None
    fold: bool = False
    monitor_states: dict[str, bytes] | None = None

    @property
    def count_bound(self) -> int:
        """At most this many distinct segments: the names of a coded column, else one a row."""
        if self.values is None:
            return 0
        return len(self.names) if self.names is not None else len(self.values)


@dataclass(frozen=True, slots=True)
class Request:
    """One whole evaluation request."""

    header: Header
    batch: Batch
    challenger: Challenger | None = None
    segments: Segments | None = None
