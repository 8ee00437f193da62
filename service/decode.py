"""The edge: JSON objects and protobuf messages in, plain validated inputs out.

Both transports decode through here, straight to numpy (no pydantic lists of millions of
floats, no ``json_format.ParseDict``), so the same bad field gets the same error on both. The
checks of the values themselves (labels 0/1, finite scores, lengths, options) are the core's
(``core._validation``, ``core.parse_options``): one validation layer.
"""

from __future__ import annotations

import base64
import binascii
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import numpy as np
import orjson
import simdjson
from google.protobuf.message import Message
from numpy.typing import NDArray

from evalserve.core import OPTIONS, TASKS, InvalidInputError, task_spec
from evalserve.service.config import Settings
from evalserve.service.errors import MalformedRequestError, PayloadTooLargeError
from evalserve.v1 import evaluation_pb2 as pb

__all__ = [
    "Batch",
    "Header",
    "Images",
    "ModelRef",
    "ProtoColumns",
    "Request",
    "batch_from_json",
    "batch_from_proto",
    "catalog_task_from_proto",
    "catalog_task_from_query",
    "header_from_json",
    "header_from_proto",
    "json_kind",
    "model_ref",
    "parse_json",
    "request_from_json",
    "request_from_proto",
    "stream_line_from_json",
]

Column = NDArray[Any]
COLUMNS = ("labels", "scores", "predictions", "weights")
OPTIONAL_COLUMNS = ("predictions", "weights")
HEADER_FIELDS = ("task", "classes", "options", "model", "baseline", "n_classes", "coverage")
REQUEST_FIELDS = (
    *HEADER_FIELDS,
    *COLUMNS,
    "label_names",
    *(f"{name}_f64" for name in COLUMNS),
    "challenger",
    "images",
)
IMAGE_FIELDS = tuple(f.name for f in pb.DetectionImage.DESCRIPTOR.fields)
BASELINE_COLUMNS = ("labels", "scores", "weights")
BASELINE_SUMMARY = ("roc_auc", "roc_auc_variance", "n_positive", "n_negative")
BASELINE_FIELDS = tuple(f.name for f in pb.Baseline.DESCRIPTOR.fields)
CHALLENGER_FIELDS = tuple(f.name for f in pb.Challenger.DESCRIPTOR.fields)
BATCH_FIELDS = (*COLUMNS, "label_names", *(f"{name}_f64" for name in COLUMNS), "images")
MODEL_FIELDS = ("name", "version", "segment")
COVERAGE_FIELDS = tuple(f.name for f in pb.Coverage.DESCRIPTOR.fields)
OPTION_FIELDS = tuple(f.name for f in pb.Options.DESCRIPTOR.fields)
TASK_NAMES = {pb.Task.Value(f"TASK_{task.upper()}"): task for task in TASKS}


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


@dataclass(frozen=True, slots=True)
class Header:
    """What a stream says once: the task and how to evaluate it."""

    task: str
    options: dict[str, Any] = field(default_factory=dict)
    classes: tuple[str, ...] | None = None
    model: ModelRef | None = None
    # The drift baseline: summary numbers as sent, payload columns as numpy arrays (checked by
    # the core, which names the field).
    baseline: dict[str, Any] | None = None
    # Columns of row-major score matrices sent flat (protobuf, raw bytes).
    n_classes: int | None = None
    # Label coverage of the window (n_predictions, label_delay_seconds), checked by the core.
    coverage: dict[str, Any] | None = None


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

    @property
    def has_rows(self) -> bool:
        """Some row column carries a value (images aside)."""
        columns = (self.labels, self.label_names, self.scores, self.predictions, self.weights)
        return any(column is not None and len(column) > 0 for column in columns)

    @property
    def is_empty(self) -> bool:
        """No column carries a value and no image is sent (a stream message without rows)."""
        return not self.has_rows and (self.images is None or not self.images[0])


@dataclass(frozen=True, slots=True)
class Request:
    header: Header
    batch: Batch
    challenger: dict[str, Any] | None = None


# --- JSON ------------------------------------------------------------------------------------


def _unknown(where: str, got: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    extra = sorted(set(got) - set(allowed))
    if extra:
        prefix = f"{where}." if where else ""
        raise MalformedRequestError(
            f"{prefix}{extra[0]}", f"unknown field; expected one of {sorted(allowed)}"
        )


def _object(name: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise MalformedRequestError(name, f"expected an object, but got {json_kind(value)}")
    return value


def json_kind(value: Any) -> str:
    """How a JSON value is named in error messages: "an object", "null", "a number", ..."""
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else "a number"
    )


def _json_column(name: str, value: Any, settings: Settings) -> Column | None:
    if value is None:
        return None
    if isinstance(value, np.ndarray):  # read straight to float64 by ``parse_json``
        _check_rows(name, value.size, settings)
        return value
    if not isinstance(value, list):
        raise MalformedRequestError(
            name, f"expected an array of numbers, but got {json_kind(value)}"
        )
    _check_rows(name, len(value), settings)
    try:
        if _has_text(value):
            # Before numpy sees it: one long string would make a fixed-width array of every
            # row at its width (a million rows and a 20 000-character string: 80 GB).
            raise TypeError(name)
        array = np.asarray(value)
        if array.dtype.kind not in "biuf":  # strings, nulls: numpy would read "0.5" as 0.5
            raise TypeError(array.dtype)
        array = array.astype(np.float64, copy=False)
    except (TypeError, ValueError):
        bad = next(
            (i for i, v in enumerate(value) if isinstance(v, (str, dict, bool)) or v is None),
            None,
        )
        where = f" (row {bad} is {value[bad]!r})" if bad is not None else ""
        raise MalformedRequestError(
            name, f"expected numbers or equal-length arrays of numbers{where}"
        ) from None
    return array


# Long lists are scanned this many items at a time: a C call over a million items holds the
# GIL (and so the event loop's health checks) for tens of milliseconds.
SCAN_ITEMS = 1 << 16


def _has_text(values: list[Any]) -> bool:
    """Whether a string is among the values or, one level down, in the rows of a matrix."""
    kinds: set[type] = set()
    for start in range(0, len(values), SCAN_ITEMS):
        kinds.update(map(type, values[start : start + SCAN_ITEMS]))
    if list in kinds:
        kinds |= set(map(type, chain.from_iterable(v for v in values if type(v) is list)))
    return str in kinds


def _json_names(name: str, value: Any, settings: Settings) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise MalformedRequestError(name, "expected an array of strings")
    _check_rows(name, len(value), settings)
    names = tuple(value)
    _check_names(name, names, settings)
    return names


def _check_names(name: str, names: tuple[str, ...], settings: Settings) -> None:
    """Class names, sent in ``classes`` or as string labels, measured before numpy sees them:
    numpy stores strings at the width of the longest (4 bytes a character), so one long label
    among a million short ones would make a huge array. Each name is at most
    ``max_label_chars`` (they become Prometheus label values, as model names do) and the rows
    x the longest at most ``max_label_array_bytes``."""
    if not names:
        return
    row = longest = 0
    for start in range(0, len(names), SCAN_ITEMS):
        part = names[start : start + SCAN_ITEMS]
        lengths = np.fromiter(map(len, part), dtype=np.int64, count=len(part))
        at = int(np.argmax(lengths))
        if int(lengths[at]) > longest:
            row, longest = start + at, int(lengths[at])
    if longest > settings.max_label_chars:
        raise InvalidInputError(
            name,
            f"expected names of at most {settings.max_label_chars} characters"
            f" (max_label_chars), but row {row} has {longest}",
        )
    size = len(names) * longest * 4
    if size > settings.max_label_array_bytes:
        raise PayloadTooLargeError(
            name,
            f"{len(names)} names of up to {longest} characters take {size} bytes as an array,"
            f" over the limit of {settings.max_label_array_bytes} (max_label_array_bytes);"
            " send integer labels with classes instead",
        )


def _json_raw(name: str, value: Any, settings: Settings) -> Column | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise MalformedRequestError(name, f"expected base64 text, but got {json_kind(value)}")
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise MalformedRequestError(name, "is not valid base64") from None
    return _raw_column(name, raw, settings)


def _raw_column(name: str, raw: bytes, settings: Settings) -> Column:
    if len(raw) % 8:
        raise MalformedRequestError(
            name, f"expected little-endian float64 (8 bytes each), but got {len(raw)} bytes"
        )
    _check_rows(name, len(raw) // 8, settings)
    return np.frombuffer(raw, dtype="<f8")


def _check_rows(name: str, n_rows: int, settings: Settings) -> None:
    if n_rows > settings.max_rows:
        raise PayloadTooLargeError(
            name, f"{n_rows} values is over the limit of {settings.max_rows} rows per request"
        )


def _pick(name: str, packed: Column | None, raw: Column | None) -> Column | None:
    if packed is not None and raw is not None and (packed.size or raw.size):
        raise MalformedRequestError(name, f"send {name} or {name}_f64, not both")
    if raw is not None and raw.size:
        return raw
    return packed


def batch_from_json(body: Mapping[str, Any], settings: Settings) -> Batch:
    columns: dict[str, Any] = {}
    for name in COLUMNS:
        raw = _json_raw(f"{name}_f64", body.get(f"{name}_f64"), settings)
        labels = body.get(name)
        if name == "labels" and isinstance(labels, list) and labels and isinstance(labels[0], str):
            columns["label_names"] = _json_names("labels", labels, settings)
            continue
        column = _pick(name, _json_column(name, labels, settings), raw)
        if name in OPTIONAL_COLUMNS and column is not None and column.size == 0:
            column = None  # as in protobuf, where an empty repeated field is an absent one
        columns[name] = column
    if "label_names" in body:
        columns["label_names"] = _json_names("label_names", body["label_names"], settings)
    if body.get("images") is not None:
        columns["images"] = _images_from_json(body["images"], settings)
    return Batch(**columns)


def header_from_json(body: Mapping[str, Any], settings: Settings) -> Header:
    task = body.get("task")
    if task is None:
        raise MalformedRequestError("task", f"is required; expected one of {list(TASKS)}")
    if not isinstance(task, str) or task not in TASKS:
        raise MalformedRequestError("task", f"expected one of {list(TASKS)}, but got {task!r}")
    options = _object("options", body.get("options") or {})
    _unknown("options", options, OPTION_FIELDS)
    classes = _json_names("classes", body.get("classes"), settings)
    if classes is not None and len(classes) > settings.max_classes:
        raise PayloadTooLargeError(
            "classes", f"{len(classes)} classes is over the limit of {settings.max_classes}"
        )
    model = None
    if body.get("model") is not None:
        raw_model = _object("model", body["model"])
        _unknown("model", raw_model, MODEL_FIELDS)
        for key, value in raw_model.items():
            if not isinstance(value, str):
                raise MalformedRequestError(
                    f"model.{key}", f"expected a string, but got {json_kind(value)}"
                )
        model = model_ref(*(raw_model.get(key, "") for key in MODEL_FIELDS))
    baseline = None if body.get("baseline") is None else _baseline_from_json(body, settings)
    n_classes = body.get("n_classes")
    if n_classes is not None and (
        isinstance(n_classes, bool) or not isinstance(n_classes, int) or n_classes < 1
    ):
        raise MalformedRequestError(
            "n_classes", f"expected a positive integer, but got {n_classes!r}"
        )
    _check_classes("n_classes", n_classes, settings)
    _check_curve_points(options, settings)
    return Header(
        task=task,
        options=dict(options),
        classes=classes,
        model=model,
        baseline=baseline,
        n_classes=n_classes,
        coverage=None if body.get("coverage") is None else _coverage_from_json(body["coverage"]),
    )


def _coverage_from_json(value: Any) -> dict[str, Any]:
    """Types only (a whole number, a number); the core checks the values."""
    raw = _object("coverage", value)
    _unknown("coverage", raw, COVERAGE_FIELDS)
    for key, kinds, expected in (
        ("n_predictions", (int,), "a whole number"),
        ("label_delay_seconds", (int, float), "a number"),
    ):
        item = raw.get(key)
        if item is not None and (isinstance(item, bool) or not isinstance(item, kinds)):
            raise MalformedRequestError(
                f"coverage.{key}", f"expected {expected}, but got {json_kind(item)}"
            )
    return {key: item for key, item in raw.items() if item is not None}


CURVE_POINTS_RANGE = OPTIONS["max_curve_points"].high or float("inf")


def _whole_option(options: Mapping[str, Any], name: str) -> int | None:
    """An option sent as a whole number, else None (the core names any other value)."""
    value = options.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not value.is_integer():
        return None
    return int(value)


def _check_curve_points(options: Mapping[str, Any], settings: Settings) -> None:
    points = _whole_option(options, "max_curve_points")
    # Past the option's own range the core refuses it as any option out of range (422).
    if points is not None and settings.max_curve_points < points <= CURVE_POINTS_RANGE:
        raise PayloadTooLargeError(
            "options.max_curve_points",
            f"{points} is over the limit of {settings.max_curve_points} curve points"
            " (max_curve_points)",
        )


def check_bootstrap_work(
    field: str, replicates: int | None, n_rows: int, settings: Settings
) -> None:
    """``bootstrap_replicates`` x rows within ``max_bootstrap_work``: the bootstrap redraws
    every row in each replicate, so its cost is their product."""
    if replicates is None or replicates <= 0:
        return
    work = replicates * n_rows
    if work > settings.max_bootstrap_work:
        raise PayloadTooLargeError(
            field,
            f"{replicates} bootstrap replicates x {n_rows} rows = {work} is over the compute"
            f" budget of {settings.max_bootstrap_work} (max_bootstrap_work): ask for fewer"
            " replicates",
        )


def check_detection_pairs(
    field: str, images: Images, max_detections: int, settings: Settings
) -> None:
    """The IoU pairs of ``images`` within ``max_detection_pairs``: per image, the predictions
    (at most ``max_detections``) x its ground truth, or, when that is over the budget, the
    exact count of same-class pairs (each prediction meets only its class's boxes)."""
    targets, predictions = images
    rough = [
        min(len(predicted["classes"]), max_detections) * len(target["classes"])
        for target, predicted in zip(targets, predictions, strict=True)
    ]
    if sum(rough) <= settings.max_detection_pairs:
        return
    pairs = 0
    for index, (target, predicted) in enumerate(zip(targets, predictions, strict=True)):
        if rough[index]:
            pairs += min(rough[index], _same_class_pairs(target["classes"], predicted["classes"]))
    if pairs > settings.max_detection_pairs:
        raise PayloadTooLargeError(
            field,
            f"the images need the IoU of {pairs} same-class (prediction, box) pairs, over the"
            f" compute budget of {settings.max_detection_pairs} (max_detection_pairs): send"
            " fewer boxes per request",
        )


def _same_class_pairs(truth: Column, predicted: Column) -> int:
    values, counts = np.unique(np.asarray(truth, dtype=np.float64), return_counts=True)
    classes = np.asarray(predicted, dtype=np.float64)
    at = np.searchsorted(values, classes).clip(max=values.size - 1)
    return int(counts[at][values[at] == classes].sum())


def _check_detection(header: Header, batch: Batch, settings: Settings) -> None:
    if task_spec(header.task).inputs.images and batch.images is not None:
        max_detections = _whole_option(header.options, "max_detections") or 100
        check_detection_pairs("images", batch.images, max_detections, settings)


def _check_bootstrap(header: Header, batch: Batch, settings: Settings) -> None:
    if not task_spec(header.task).bootstraps:
        return
    truth = batch.labels if batch.labels is not None else batch.label_names
    if truth is not None:
        replicates = _whole_option(header.options, "bootstrap_replicates")
        check_bootstrap_work("options.bootstrap_replicates", replicates, len(truth), settings)


def _check_classes(name: str, count: int | None, settings: Settings) -> None:
    if count is not None and count > settings.max_classes:
        raise PayloadTooLargeError(
            name, f"{count} classes is over the limit of {settings.max_classes}"
        )


def shaped(header: Header, batch: Batch, settings: Settings) -> Batch:
    """Score matrices sent flat (protobuf, raw bytes) as n x k arrays; labels and predictions
    too where the task's are matrices (multilabel). The width comes from ``n_classes``,
    ``classes`` or, where the task says so (multiclass), the ratio of scores to labels."""
    inputs = task_spec(header.task).inputs
    if not inputs.score_matrix:
        return batch
    scores = batch.scores
    if scores is not None and scores.ndim == 2:
        _check_classes("scores", scores.shape[1], settings)
        return batch
    width = header.n_classes or (len(header.classes) if header.classes else None)
    rows = batch.labels if batch.labels is not None else batch.label_names
    from_scores = inputs.width_from_scores
    if width is None and from_scores and scores is not None and rows is not None and len(rows):
        width = len(scores) // len(rows) or None
    if width is None:
        if scores is None and batch.labels is not None and batch.labels.ndim == 2:
            return batch
        raise MalformedRequestError(
            "n_classes", "is required to read flat score matrices (or send classes)"
        )
    _check_classes("n_classes", width, settings)
    matrices = {"scores": scores}
    if inputs.label_matrix:
        matrices |= {"labels": batch.labels, "predictions": batch.predictions}
    reshaped = {}
    for name, values in matrices.items():
        if values is None or values.ndim == 2:
            continue
        if len(values) % width:
            raise MalformedRequestError(
                name, f"expected rows of {width} values (n x {width}), but got {len(values)}"
            )
        reshaped[name] = values.reshape(-1, width)
    return Batch(**{**_batch_fields(batch), **reshaped})


def _batch_fields(batch: Batch) -> dict[str, Any]:
    return {name: getattr(batch, name) for name in (*COLUMNS, "label_names", "images")}


def _images_from_json(value: Any, settings: Settings) -> Images:
    if not isinstance(value, list):
        raise MalformedRequestError("images", f"expected an array, but got {json_kind(value)}")
    _check_rows("images", len(value), settings)
    targets, predictions = [], []
    for index, raw in enumerate(value):
        where = f"images[{index}]"
        image = _object(where, raw)
        _unknown(where, image, IMAGE_FIELDS)
        columns = {
            name: _json_column(f"{where}.{name}", image.get(name), settings)
            for name in IMAGE_FIELDS[1:]
        }
        _check_boxes(where, columns, settings)
        targets.append(_target(columns))
        predictions.append(_prediction(columns))
    return tuple(targets), tuple(predictions)


def _check_boxes(where: str, columns: Mapping[str, Column | None], settings: Settings) -> None:
    """At most ``max_boxes_per_image`` ground-truth and predicted boxes in one image (a box
    is 4 values of a flat column, or a row of a nested one; classes and scores one each)."""
    for name, values in columns.items():
        if values is None:
            continue
        flat_boxes = name.endswith("_boxes") and values.ndim == 1
        count = values.size // 4 if flat_boxes else len(values)
        if count > settings.max_boxes_per_image:
            raise PayloadTooLargeError(
                f"{where}.{name}",
                f"{count} boxes is over the limit of {settings.max_boxes_per_image} per image"
                " (max_boxes_per_image)",
            )


def _boxes(values: Column | None) -> Column:
    if values is None:
        return np.empty((0, 4))
    return values if values.ndim == 2 else values.reshape(-1, 4) if values.size % 4 == 0 else values


def _ids(values: Column | None) -> Column:
    return np.empty(0) if values is None else values


def _target(columns: Mapping[str, Column | None]) -> dict[str, Any]:
    return {"boxes": _boxes(columns["gt_boxes"]), "classes": _ids(columns["gt_classes"])}


def _prediction(columns: Mapping[str, Column | None]) -> dict[str, Any]:
    return {
        "boxes": _boxes(columns["pred_boxes"]),
        "classes": _ids(columns["pred_classes"]),
        "scores": _ids(columns["pred_scores"]),
    }


def _baseline_from_json(body: Mapping[str, Any], settings: Settings) -> dict[str, Any]:
    raw = _object("baseline", body["baseline"])
    _unknown("baseline", raw, BASELINE_FIELDS)
    baseline = {k: v for k, v in raw.items() if k in BASELINE_SUMMARY and v is not None}
    for name in BASELINE_COLUMNS:
        where = f"baseline.{name}"
        column = _pick(
            where,
            _json_column(where, raw.get(name), settings),
            _json_raw(f"{where}_f64", raw.get(f"{name}_f64"), settings),
        )
        if column is not None and column.size:
            baseline[name] = column
    return baseline


def _challenger_from_json(value: Any, settings: Settings) -> dict[str, Any]:
    raw = _object("challenger", value)
    _unknown("challenger", raw, CHALLENGER_FIELDS)
    scores = _pick(
        "challenger.scores",
        _json_column("challenger.scores", raw.get("scores"), settings),
        _json_raw("challenger.scores_f64", raw.get("scores_f64"), settings),
    )
    return {"scores": scores}


def request_from_json(body: Any, settings: Settings) -> Request:
    """A whole ``POST /v1/evaluate`` JSON body."""
    body = _object("body", body)
    _unknown("", body, REQUEST_FIELDS)
    challenger = body.get("challenger")
    header = header_from_json(body, settings)
    batch = shaped(header, batch_from_json(body, settings), settings)
    _check_bootstrap(header, batch, settings)
    _check_detection(header, batch, settings)
    return Request(
        header=header,
        batch=batch,
        challenger=None if challenger is None else _challenger_from_json(challenger, settings),
    )


def stream_line_from_json(line: Any, settings: Settings) -> tuple[Header | None, Batch]:
    """One NDJSON line of a stream: a header line has ``task``; every line may hold rows."""
    line = _object("line", line)
    _unknown("", line, (*HEADER_FIELDS, *BATCH_FIELDS))
    header = header_from_json(line, settings) if "task" in line else None
    if header is None:
        for name in HEADER_FIELDS:
            if name in line:
                raise MalformedRequestError(name, "belongs in the header line (the one with task)")
    return header, batch_from_json(line, settings)


# Above this size a JSON body's flat numeric columns are read by simdjson straight into float64
# buffers: about 4x faster than building a list of Python floats and converting it.
FAST_JSON_BYTES = 1 << 20
# A simdjson parser keeps its buffers (a few times the largest document it has read) for the
# next document, which halves the parse time of a 20 MB body (no fresh pages to fault in). Each
# worker thread keeps one for bodies up to this size; larger ones get a parser of their own,
# freed with the request, so an occasional huge body does not pin its memory.
REUSED_PARSER_BYTES = 64 << 20
_parsers = threading.local()


def _parser(size: int) -> simdjson.Parser:
    if size > REUSED_PARSER_BYTES:
        return simdjson.Parser()
    parser: simdjson.Parser | None = getattr(_parsers, "parser", None)
    if parser is None:
        parser = _parsers.parser = simdjson.Parser()
    return parser


def parse_json(body: bytes | bytearray) -> Any:
    """The JSON document of a request body; large flat numeric columns come as float64 arrays.

    Anything the fast paths do not take (strings, booleans, nested arrays, invalid JSON) goes
    through orjson, whose result the checks above report on exactly as before.
    """
    if len(body) >= FAST_JSON_BYTES:
        document = _parse_columns_sliced(body)
        if document is None:
            document = _parse_columns_fast(body)
        if document is not None:
            return document
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise MalformedRequestError("body", f"is not valid JSON: {error}") from None


# The sliced path parses a column this many bytes at a time: a C call that holds the GIL for
# a few milliseconds each, so the event loop thread (health checks) gets its turn in between;
# one parse of a 100 MB body would hold it for 0.3 s.
JSON_SLICE_BYTES = 512 << 10
_COLUMN_START = re.compile(rb'"(labels|scores|predictions|weights|classes)"[ \t\r\n]*:[ \t\r\n]*\[')
# Searches of the body (a byte, a column's start) run this many bytes at a time.
SEARCH_BYTES = 4 << 20
_MARKER = "\u0000evalserve-column"


def _parse_columns_sliced(body: bytes | bytearray) -> dict[str, Any] | None:
    """Top-level flat columns read in slices: numbers by simdjson into float64
    (``JSON_SLICE_BYTES`` at a time), anything else (class names) by orjson
    (``VALUE_SLICE_BYTES``); the rest of the document (small) by orjson. None when the body is
    not of that shape (then the whole-body path decides): its columns are small, or one does
    not parse in slices. An array of arrays (a score matrix) is left to orjson with the rest."""
    spans: list[tuple[str, int, int]] = []
    position = 0
    while (match := _search_column(body, position)) is not None:
        start, end = match.end(), _find(body, b"]", match.end(), len(body))
        if end < 0:
            return None
        if _find(body, b"[", start, end) >= 0:
            position = start  # an array of arrays: left to orjson with the rest
            continue
        spans.append((match.group(1).decode(), start, end))
        position = end  # not searched for column names: a column's values
    if not spans or sum(end - start for _, start, end in spans) < len(body) // 2:
        return None  # not a body of big columns: the whole-body path is as good
    document = _without(body, spans)
    if document is None:
        return None
    # A column name inside a nested object (a challenger's scores) is not a top-level column:
    # keep those spans in the document (orjson reads them) and parse it again.
    top = [span for index, span in enumerate(spans) if document.get(span[0]) == [_marker(index)]]
    if len(top) != len(spans):
        document = _without(body, top)
        if document is None or any(
            document.get(name) != [_marker(index)] for index, (name, _, _) in enumerate(top)
        ):
            return None  # the same key twice, say: not this path's shape
    for name, start, end in top:
        column = _numbers(body, start, end)
        if column is None:  # strings (class names as labels), nulls, a mix: as orjson reads them
            column = _values(body, start, end)
        if column is None:
            return None
        document[name] = column
    return document


def _search_column(body: bytes | bytearray, position: int) -> re.Match[bytes] | None:
    """The next column's start from ``position``, searched a window at a time (windows
    overlap by a column name's length; spaces longer than that around its colon are not
    found: the whole-body path reads such a body)."""
    overlap = 64
    while position < len(body):
        window = min(len(body), position + SEARCH_BYTES)
        match = _COLUMN_START.search(body, position, window)
        if match is not None or window == len(body):
            return match
        position = window - overlap
    return None


def _find(body: bytes | bytearray, byte: bytes, start: int, end: int) -> int:
    """``body.find(byte, start, end)``, a window at a time."""
    while start < end:
        window = min(end, start + SEARCH_BYTES)
        found = body.find(byte, start, window)
        if found >= 0:
            return found
        start = window
    return -1


def _slice_numbers(parser: simdjson.Parser, piece: bytes) -> Column | None:
    """A slice's numbers; the parsed document is gone when this returns (a simdjson parser
    reads its next document only then)."""
    try:
        array = parser.parse(piece)
        if not isinstance(array, simdjson.Array) or not _flat_numbers(array):
            return None
        values = np.frombuffer(array.as_buffer(of_type="d"), dtype=np.float64)
        return values if len(values) == len(array) else None
    except (ValueError, TypeError, RuntimeError):
        return None


def _marker(index: int) -> str:
    return f"{_MARKER}{index}"


def _without(body: bytes | bytearray, spans: list[tuple[str, int, int]]) -> dict[str, Any] | None:
    """The document with each span's array holding a marker string instead (orjson)."""
    rest = bytearray()
    position = 0
    for index, (_, start, end) in enumerate(spans):
        rest += body[position:start]
        rest += orjson.dumps(_marker(index))
        position = end
    rest += body[position:]
    try:
        document = orjson.loads(rest)
    except orjson.JSONDecodeError:
        return None
    return document if isinstance(document, dict) else None


def _numbers(body: bytes | bytearray, start: int, end: int) -> Column | list[Any] | None:
    """The numbers of ``body[start:end]`` (the inside of a flat array) as float64, parsed a
    slice at a time; None when it holds anything else (an empty array: ``[]``, as orjson
    gives it)."""
    if end - start < 64 and not body[start:end].strip():
        return []
    parts: list[Column] = []
    parser = _parser(JSON_SLICE_BYTES)
    position = start
    while position < end:
        cut = _cut(body, position + JSON_SLICE_BYTES, end)
        values = _slice_numbers(parser, b"[" + body[position:cut] + b"]")
        if values is None:
            return None
        parts.append(values)
        position = cut + 1
    return parts[0] if len(parts) == 1 else _joined(parts)


def _cut(body: bytes | bytearray, start: int, end: int) -> int:
    """Where a slice ends: the first comma from ``start``, or ``end``."""
    cut = body.find(b",", start, end) if start < end else -1
    return end if cut < 0 else cut


def _joined(parts: list[Column]) -> Column:
    """``np.concatenate(parts)``, a part at a time: one copy of 40 MB, its pages faulted in,
    would hold the GIL for 15 ms."""
    joined = np.empty(sum(len(part) for part in parts), dtype=np.float64)
    at = 0
    for part in parts:
        joined[at : at + len(part)] = part
        at += len(part)
    return joined


# Slices of other values are smaller: a 2 MiB slice of short strings is half a million Python
# objects, 30 ms of orjson holding the GIL; 256 KiB take about 3 ms.
VALUE_SLICE_BYTES = 256 << 10
# A cut at a comma inside a string leaves a slice that is not valid JSON (its last string
# never ends): the next comma is tried, this many times before the whole-body path takes over.
VALUE_CUT_TRIES = 8


def _values(body: bytes | bytearray, start: int, end: int) -> list[Any] | None:
    """The values of ``body[start:end]`` (the inside of an array that nests no array) as
    orjson reads them, a slice at a time: the same list as one parse of the body, without one
    C call that holds the GIL for a tenth of a second (a million strings). None when a slice
    will not parse (invalid JSON, or no cut found: the whole-body path decides)."""
    values: list[Any] = []
    position = start
    while position < end:
        cut = _value_cut(body, position + VALUE_SLICE_BYTES, end)
        piece: Any = None
        for _ in range(VALUE_CUT_TRIES):
            try:
                piece = orjson.loads(b"[" + body[position:cut] + b"]")
                break
            except orjson.JSONDecodeError:
                if cut == end:
                    return None
                cut = _value_cut(body, cut + 1, end)
        if piece is None:
            return None
        values += piece
        position = cut + 1
    return values


def _value_cut(body: bytes | bytearray, start: int, end: int) -> int:
    """The first comma from ``start`` that likely ends a value: one right after a quote (the
    end of a string, unless that quote is escaped), else any comma; ``end`` when none."""
    if start >= end:
        return end
    after_quote = body.find(b'",', start - 1, min(end, start + VALUE_SLICE_BYTES))
    return after_quote + 1 if after_quote >= 0 else _cut(body, start, end)


def _parse_columns_fast(body: bytes | bytearray) -> dict[str, Any] | None:
    try:
        # The document lives in the parser until its next parse: everything is copied out
        # (as_buffer, as_dict, as_list) before this function returns.
        root = _parser(len(body)).parse(body)
        if not isinstance(root, simdjson.Object):
            return None
        document: dict[str, Any] = {}
        for key in root.keys():  # noqa: SIM118 (a simdjson Object, not a dict)
            value = root[key]
            if key in COLUMNS and isinstance(value, simdjson.Array) and _flat_numbers(value):
                document[key] = np.frombuffer(value.as_buffer(of_type="d"), dtype=np.float64)
            elif isinstance(value, simdjson.Object):
                document[key] = value.as_dict()
            elif isinstance(value, simdjson.Array):
                document[key] = value.as_list()
            else:
                document[key] = value
    except (ValueError, TypeError, RuntimeError):
        return None  # let orjson parse it and the checks name the problem
    # as_buffer flattens nested arrays: take the document only when every "[" of the body is
    # accounted for by one array (a fast column counts one) or by a character of a string.
    opening = body.count(b"[")  # a C scan: no array of the body's size
    if opening != _brackets(document):
        return None
    return document


def _brackets(value: Any) -> int:
    if isinstance(value, np.ndarray):
        return 1
    if isinstance(value, str):
        return value.count("[")
    if isinstance(value, list):
        return 1 + sum(_brackets(item) for item in value)
    if isinstance(value, dict):
        return sum(_brackets(key) + _brackets(item) for key, item in value.items())
    return 0


def _flat_numbers(array: Any) -> bool:
    if len(array) == 0:
        return False
    first, last = array[0], array[-1]
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (first, last))


# --- protobuf ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProtoColumns:
    """The columns of a protobuf message that were decoded apart from it
    (``service.decode_proto``): packed doubles as float64 arrays and ``*_f64`` bytes as
    read-only views, by field name; those of a submessage (``baseline``, ``challenger``, a
    stream's ``header``) by its field name in ``parts``. A field not here is the message's."""

    values: Mapping[str, Column | memoryview] = field(default_factory=dict)
    parts: Mapping[str, ProtoColumns] = field(default_factory=dict)

    def value(self, message: Message, name: str) -> Any:
        """The field ``name`` of ``message``: as decoded here, else the message's own."""
        return self.values[name] if name in self.values else getattr(message, name)

    def part(self, name: str) -> ProtoColumns:
        return self.parts.get(name, NO_COLUMNS)


NO_COLUMNS = ProtoColumns()


def _proto_column(
    message: Message,
    name: str,
    settings: Settings,
    *,
    where: str = "",
    columns: ProtoColumns = NO_COLUMNS,
) -> Column | None:
    packed = columns.value(message, name)
    raw = columns.value(message, f"{name}_f64")
    if len(packed) and len(raw):
        raise MalformedRequestError(f"{where}{name}", f"send {name} or {name}_f64, not both")
    if len(raw):
        return _raw_column(f"{where}{name}_f64", raw, settings)
    if len(packed):
        _check_rows(f"{where}{name}", len(packed), settings)
        return np.asarray(packed, dtype=np.float64)
    return None


def batch_from_proto(
    message: pb.EvaluateRequest | pb.EvaluateStreamRequest,
    settings: Settings,
    decoded: ProtoColumns = NO_COLUMNS,
) -> Batch:
    """The rows of a message; ``decoded``: its columns decoded apart from it, if any."""
    columns: dict[str, Any] = {
        name: _proto_column(message, name, settings, columns=decoded) for name in COLUMNS
    }
    names = tuple(message.label_names)
    if names:
        _check_rows("label_names", len(names), settings)
        _check_names("labels", names, settings)  # string labels, as the core names them
        columns["label_names"] = names
    if len(message.images):
        _check_rows("images", len(message.images), settings)
        columns["images"] = _images_from_proto(message.images, settings)
    return Batch(**columns)


def _options_from_proto(options: pb.Options) -> dict[str, Any]:
    parsed: dict[str, Any] = {}
    for descriptor, value in options.ListFields():
        parsed[descriptor.name] = list(value) if descriptor.is_repeated else value
    return parsed


def header_from_proto(
    message: pb.EvaluateRequest | pb.StreamHeader,
    settings: Settings,
    decoded: ProtoColumns = NO_COLUMNS,
) -> Header:
    task = TASK_NAMES.get(message.task)
    if task is None and message.task != pb.TASK_UNSPECIFIED:
        # proto3 enums are open: a newer client may send a value this server does not know.
        raise MalformedRequestError(
            "task", f"expected one of {list(TASKS)}, but got unknown enum value {message.task}"
        )
    if task is None:
        raise MalformedRequestError("task", f"is required; expected one of {list(TASKS)}")
    classes = tuple(message.classes) or None
    if classes is not None and len(classes) > settings.max_classes:
        raise PayloadTooLargeError(
            "classes", f"{len(classes)} classes is over the limit of {settings.max_classes}"
        )
    if classes is not None:
        _check_names("classes", classes, settings)
    model = None
    if message.HasField("model"):
        model = model_ref(message.model.name, message.model.version, message.model.segment)
    baseline = None
    if message.HasField("baseline"):
        baseline = {
            name: value
            for name, value in _fields(message.baseline).items()
            if name in BASELINE_SUMMARY
        }
        for name in BASELINE_COLUMNS:
            column = _proto_column(
                message.baseline,
                name,
                settings,
                where="baseline.",
                columns=decoded.part("baseline"),
            )
            if column is not None and column.size:
                baseline[name] = column
    n_classes = message.n_classes if message.HasField("n_classes") else None
    if n_classes is not None and n_classes < 1:
        raise MalformedRequestError(
            "n_classes", f"expected a positive integer, but got {n_classes}"
        )
    _check_classes("n_classes", n_classes, settings)
    options = _options_from_proto(message.options)
    _check_curve_points(options, settings)
    return Header(
        task=task,
        options=options,
        classes=classes,
        model=model,
        baseline=baseline,
        n_classes=n_classes,
        coverage=_fields(message.coverage) if message.HasField("coverage") else None,
    )


def _fields(message: Message) -> dict[str, Any]:
    return {
        descriptor.name: list(value) if descriptor.is_repeated else value
        for descriptor, value in message.ListFields()
    }


def request_from_proto(
    message: pb.EvaluateRequest, settings: Settings, decoded: ProtoColumns = NO_COLUMNS
) -> Request:
    """A whole ``EvaluateRequest``; ``decoded``: its columns decoded apart from it
    (``service.decode_proto.parse``), if any."""
    challenger = None
    if message.HasField("challenger"):
        scores = _proto_column(
            message.challenger,
            "scores",
            settings,
            where="challenger.",
            columns=decoded.part("challenger"),
        )
        challenger = {"scores": scores}
    header = header_from_proto(message, settings, decoded)
    batch = shaped(header, batch_from_proto(message, settings, decoded), settings)
    _check_bootstrap(header, batch, settings)
    _check_detection(header, batch, settings)
    return Request(
        header=header,
        batch=batch,
        challenger=challenger,
    )


def _images_from_proto(messages: Any, settings: Settings) -> Images:
    targets, predictions = [], []
    for index, image in enumerate(messages):
        columns: dict[str, Column | None] = {}
        for name in IMAGE_FIELDS[1:]:
            values = getattr(image, name)
            _check_rows(f"images[{index}].{name}", len(values), settings)
            columns[name] = np.asarray(values, dtype=np.float64) if len(values) else None
        _check_boxes(f"images[{index}]", columns, settings)
        targets.append(_target(columns))
        predictions.append(_prediction(columns))
    return tuple(targets), tuple(predictions)


# --- the metric catalog's request ------------------------------------------------------------

CATALOG_PARAMETERS = ("task",)


def catalog_task_from_query(parameters: Iterable[tuple[str, str]]) -> str | None:
    """The task of ``GET /v1/metrics?task=...``: None (every task) when absent. Another query
    parameter is malformed and a repeated ``task`` invalid; the name itself is checked by the
    core (``catalog_entries``), as a request's task is."""
    tasks = []
    for name, value in parameters:
        if name not in CATALOG_PARAMETERS:
            raise MalformedRequestError(
                name, f"unknown query parameter; expected one of {list(CATALOG_PARAMETERS)}"
            )
        tasks.append(value)
    if len(tasks) > 1:
        raise InvalidInputError("task", f"expected one task, but got {len(tasks)}: {tasks}")
    return tasks[0] if tasks else None


def catalog_task_from_proto(message: pb.ListMetricsRequest) -> str | None:
    """The task of a ``ListMetricsRequest``: None (every task) for TASK_UNSPECIFIED."""
    if message.task == pb.TASK_UNSPECIFIED:
        return None
    task = TASK_NAMES.get(message.task)
    if task is None:
        # proto3 enums are open: a newer client may send a value this server does not know.
        raise InvalidInputError(
            "task", f"expected one of {list(TASKS)}, but got unknown enum value {message.task}"
        )
    return task
