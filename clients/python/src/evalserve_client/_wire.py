"""Requests and answers on the wire: one neutral request (numpy columns + header fields), encoded
as a protobuf message or stream for gRPC, or as JSON / NDJSON for REST, and the answers decoded
back to the JSON shape of the service.

A stream (every task) is a header, then batches of whole rows, or of whole images for detection.
Its size is counted in values of the widest column, so a batch weighs about the same whatever
the task: a row counts 1 (binary, regression) or its class count (a row of a multiclass or
multilabel matrix), an image its boxes, ground truth and predicted (at least 1). The stream
threshold and the batch size are in that unit; a batch always holds at least one row or image.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson
from numpy.typing import NDArray

from evalserve_client._errors import InvalidArgument
from evalserve_client._proto.evalserve.v1 import evaluation_pb2 as pb

COLUMNS = ("labels", "scores", "predictions", "weights")
OnRows = Callable[[int], None]  # told the rows (images) of each batch once the transport took it
F64 = np.dtype("<f8")
# The columns that hold an n x k matrix, per task (the others hold one value a row).
MATRIX_COLUMNS = {"multiclass": ("scores",), "multilabel": ("labels", "scores", "predictions")}


@dataclass
class Request:
    """A validated-enough request: flat float64 columns (matrices row-major, their width in
    ``n_classes`` when given as 2-D arrays), string labels in ``label_names``, the rest as given.

    ``n_rows`` counts the rows (detection: the images); ``widths`` the values a row of each
    column holds, and ``width`` the class count of the task's matrices when it is known (from a
    2-D column, the class names, or for multiclass the ratio of scores to labels): a stream's
    header carries it as ``n_classes`` and its batches split the matrices on row boundaries."""

    task: str
    columns: dict[str, NDArray[np.float64]] = field(default_factory=dict)
    label_names: list[str] | None = None
    n_classes: int | None = None
    classes: list[str] | None = None
    options: dict[str, Any] | None = None
    model: dict[str, str] | None = None
    baseline: dict[str, Any] | None = None
    coverage: dict[str, Any] | None = None
    challenger: dict[str, Any] | None = None
    images: list[dict[str, Any]] | None = None
    # the AUC monitor's state from the model's last window, and this window's id
    monitor_state: bytes | None = None
    window: str | None = None
    # the segment of each row, as names or as codes into segment_names; each segment's monitor
    # state from its last window, by name
    segments: list[str] | None = None
    segment_codes: list[int] | None = None
    segment_names: list[str] | None = None
    fold_segments: bool = False
    segment_monitor_states: dict[str, bytes] | None = None
    n_rows: int = 0
    widths: dict[str, int] = field(default_factory=dict)
    width: int | None = None

    @property
    def unit(self) -> str:
        """What ``n_rows`` counts, as a progress line names it."""
        return "images" if self.images is not None else "rows"

    @property
    def size(self) -> int:
        """What the stream threshold counts: values of the widest column, or boxes."""
        if self.images is not None:
            return sum(image_sizes(self.images))
        return self.n_rows * self.row_size

    @property
    def row_size(self) -> int:
        """The values of a row of the widest column."""
        return max(1, *self.widths.values())


def _flat(values: Any, request: Request) -> NDArray[np.float64]:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim == 2:
        request.n_classes = int(array.shape[1])
    return np.ascontiguousarray(array.reshape(-1), dtype=F64)


def _floats(values: Any) -> NDArray[np.float64]:
    return np.ascontiguousarray(np.asarray(values, dtype=np.float64).reshape(-1), dtype=F64)


def image_sizes(images: Sequence[Mapping[str, Any]]) -> list[int]:
    """The size of each image in a stream: its boxes, ground truth and predicted, at least 1 (so
    a batch of images without boxes stays bounded too)."""
    return [max(1, (len(i["gt_boxes"]) + len(i["pred_boxes"])) // 4) for i in images]


def _detection_images(targets: Sequence[Any], predictions: Sequence[Any]) -> list[dict[str, Any]]:
    images = []
    for index, (target, predicted) in enumerate(zip(targets, predictions, strict=True)):
        images.append(
            {
                "image_id": str(target.get("image_id", index)),
                "gt_boxes": _floats(target["boxes"]),
                "gt_classes": [int(c) for c in np.asarray(target["classes"]).reshape(-1)],
                "pred_boxes": _floats(predicted["boxes"]),
                "pred_classes": [int(c) for c in np.asarray(predicted["classes"]).reshape(-1)],
                "pred_scores": _floats(predicted["scores"]),
            }
        )
    return images


def _known(where: str, values: Mapping[str, Any], message: Any) -> dict[str, Any]:
    """``values`` without their None (default) entries; a name the proto ``message`` lacks is
    refused here, with the server's message (gRPC could not encode it)."""
    known = sorted(message.DESCRIPTOR.fields_by_name)
    sent = {key: value for key, value in values.items() if value is not None}
    for key in sent:
        if key not in known:
            raise InvalidArgument(
                f"unknown field; expected one of {known}", field=f"{where}.{key}", code="malformed"
            )
    return sent


def _repeated(descriptor: Any) -> bool:
    """Whether a proto field is a list: ``is_repeated`` from protobuf 6 on (7 dropped
    ``label``), ``label`` before it."""
    repeated = getattr(descriptor, "is_repeated", None)
    if repeated is None:
        return bool(descriptor.label == descriptor.LABEL_REPEATED)
    return bool(repeated)


def _options(options: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The options to send, refused here only where a transport cannot carry them: a name the
    proto lacks (gRPC could not encode it) or a non-finite number, alone or in a list (JSON has
    none), with the server's own messages. A list option's single number is sent as a list."""
    if options is None:
        return None
    sent = _known("options", options, pb.Options)
    for key, value in sent.items():
        if repeated := _repeated(pb.Options.DESCRIPTOR.fields_by_name[key]):
            # a list option (top_k, recall_at_precision, quantiles, ...): a single number is a
            # list of one, as the server reads it (gRPC could not encode it otherwise)
            items = np.asarray(value).tolist() if isinstance(value, np.ndarray) else value
            sent[key] = value = list(items) if isinstance(items, list | tuple) else [items]
        for item in value if repeated else [value]:
            if isinstance(item, float) and not math.isfinite(item):
                # JSON has no such number (a list's would travel as null): the server's message
                raise InvalidArgument(
                    f"expected a finite number, but got {item}",
                    field=f"options.{key}",
                    code="invalid_argument",
                )
        if _is_text(pb.Options.DESCRIPTOR.fields_by_name[key]) and _is_number(value):
            # a string option given as a number (positive_label=2): its text, as the server
            # reads a number there (gRPC carries only the text)
            number = float(value)
            sent[key] = str(int(number)) if number.is_integer() else repr(number)
    return sent


def _is_text(field: Any) -> bool:
    return bool(field.type == field.TYPE_STRING)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(
        value, bool | np.bool_
    )


def build(
    task: str,
    y_true: Any,
    y_score: Any,
    *,
    y_pred: Any,
    sample_weight: Any,
    options: Mapping[str, Any] | None,
    classes: Sequence[str] | None,
    model: Mapping[str, str] | None,
    baseline: Mapping[str, Any] | None,
    challenger: Mapping[str, Any] | None,
    coverage: Mapping[str, Any] | None = None,
    window: str | None = None,
    segments: Any = None,
    segment_codes: Any = None,
    segment_names: Sequence[str] | None = None,
    fold_segments: bool = False,
) -> Request:
    request = Request(
        task=task,
        classes=None if classes is None else [str(c) for c in classes],
        options=_options(options),
        model=None if model is None else dict(model),
        baseline=None if baseline is None else dict(baseline),
        coverage=None if coverage is None else _known("coverage", coverage, pb.Coverage),
        challenger=None if challenger is None else dict(challenger),
        window=window,
        segments=None if segments is None else _strings(segments),
        segment_codes=None if segment_codes is None else _codes(segment_codes),
        segment_names=None if segment_names is None else _strings(segment_names),
        fold_segments=bool(fold_segments),
    )
    if task == "detection":
        request.images = _detection_images(y_true, y_score)
        request.n_rows = len(request.images)
        return request
    labels = np.asarray(y_true)
    shapes: dict[str, tuple[int, ...]] = {}
    if labels.dtype.kind in "USO" and labels.ndim == 1:
        request.label_names = [str(v) for v in labels.tolist()]
    else:
        shapes["labels"] = labels.shape
        request.columns["labels"] = _flat(labels, request)
    for name, values in (("scores", y_score), ("predictions", y_pred), ("weights", sample_weight)):
        if values is not None:
            array = np.asarray(values)
            shapes[name] = array.shape
            request.columns[name] = _flat(array, request)
    _shape_rows(request, shapes)
    return request


def _strings(values: Any) -> list[str]:
    return [str(v) for v in np.asarray(values, dtype=object).reshape(-1).tolist()]


def _codes(values: Any) -> list[int]:
    array = np.asarray(values)
    if array.dtype.kind not in "iu":
        raise InvalidArgument(
            f"expected integers, but got {array.dtype}", field="segment_codes", code="malformed"
        )
    return [int(v) for v in array.reshape(-1).tolist()]


def segment_fields(request: Request) -> dict[str, Any]:
    """The request's segment fields, as both transports name them (absent when empty)."""
    fields: dict[str, Any] = {}
    for name in ("segments", "segment_codes", "segment_names"):
        value = getattr(request, name)
        if value:
            fields[name] = value
    if request.fold_segments:
        fields["fold_segments"] = True
    if request.segment_monitor_states:
        fields["segment_monitor_states"] = request.segment_monitor_states
    return fields


def _shape_rows(request: Request, shapes: Mapping[str, tuple[int, ...]]) -> None:
    """``n_rows``, ``width`` and ``widths`` of a row task's request (see ``Request``)."""
    matrices = MATRIX_COLUMNS.get(request.task, ())
    width = request.n_classes
    if width is None and matrices and request.classes:
        width = len(request.classes)
    if request.label_names is not None:
        n_rows = len(request.label_names)
    elif len(shapes["labels"]) > 1:
        n_rows = shapes["labels"][0]
    elif "labels" in matrices and width:
        n_rows = len(request.columns["labels"]) // width  # a flat multilabel matrix
    else:
        n_rows = len(request.columns["labels"])
    scores = request.columns.get("scores")
    if width is None and request.task == "multiclass" and scores is not None and n_rows:
        ratio, rest = divmod(len(scores), n_rows)  # the server's reading of flat scores
        width = ratio if ratio > 1 and not rest else None
    request.n_rows = n_rows
    request.width = width if matrices else None
    for name, shape in shapes.items():
        if len(shape) == 2:
            request.widths[name] = int(shape[1])
        else:
            request.widths[name] = width if name in matrices and width else 1


# --- gRPC -------------------------------------------------------------------------------------


def _pb_fields(payload: Mapping[str, Any]) -> dict[str, Any]:
    """A baseline or challenger: its arrays as raw little-endian ``*_f64`` bytes."""
    out: dict[str, Any] = {}
    for key, value in payload.items():
        if value is None:
            continue
        if isinstance(value, np.ndarray | list | tuple):
            out[f"{key}_f64"] = _floats(value).tobytes()
        else:
            out[key] = value
    return out


def _task(task: str) -> pb.Task.ValueType:
    return pb.Task.Value(f"TASK_{task.upper()}")


def _n_classes(request: Request, stream: bool) -> int | None:
    """The header's ``n_classes``: a one-shot request's as given (by a 2-D column); a stream's
    whenever the width of its matrices is known, as its batches hold flat rows."""
    if request.n_classes is not None or not stream:
        return request.n_classes
    return request.width


def _header_fields(request: Request, stream: bool = False) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    if request.classes is not None:
        fields["classes"] = request.classes
    if request.options:
        fields["options"] = pb.Options(**request.options)
    if request.model is not None:
        fields["model"] = pb.Model(**request.model)
    if request.baseline is not None:
        fields["baseline"] = pb.Baseline(**_pb_fields(request.baseline))
    if request.coverage is not None:
        fields["coverage"] = _coverage_message(request.coverage)
    n_classes = _n_classes(request, stream)
    if n_classes is not None:
        fields["n_classes"] = n_classes
    if request.monitor_state is not None:
        fields["monitor_state"] = request.monitor_state
    if request.window is not None:
        fields["window"] = request.window
    return fields


def _column_part(request: Request, name: str, rows: slice | None) -> NDArray[np.float64]:
    """A column, or its values of ``rows`` (a matrix's whole rows)."""
    values = request.columns[name]
    if rows is None:
        return values
    width = request.widths.get(name, 1)
    return values[rows.start * width : rows.stop * width]


def _row_fields(request: Request, rows: slice | None = None) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for name in request.columns:
        fields[f"{name}_f64"] = _column_part(request, name, rows).tobytes()
    if request.label_names is not None:
        fields["label_names"] = request.label_names if rows is None else request.label_names[rows]
    return fields


def _proto_images(images: Sequence[Mapping[str, Any]]) -> list[pb.DetectionImage]:
    return [
        pb.DetectionImage(**{k: v.tolist() if isinstance(v, np.ndarray) else v
                             for k, v in image.items()})
        for image in images
    ]  # fmt: skip


def to_proto(request: Request) -> pb.EvaluateRequest:
    fields = {**_header_fields(request), **_row_fields(request)}
    if request.challenger is not None:
        fields["challenger"] = pb.Challenger(**_pb_fields(request.challenger))
    if request.images is not None:
        fields["images"] = _proto_images(request.images)
    fields.update(segment_fields(request))
    return pb.EvaluateRequest(task=_task(request.task), **fields)


def packed(sizes: Sequence[int], chunk_size: int) -> Iterator[slice]:
    """Consecutive slices of items whose sizes sum to at most ``chunk_size``; an item larger
    than that goes alone."""
    start, filled = 0, 0
    for index, size in enumerate(sizes):
        if index > start and filled + size > chunk_size:
            yield slice(start, index)
            start, filled = index, 0
        filled += size
    if start < len(sizes):
        yield slice(start, len(sizes))


def chunks(request: Request, chunk_size: int) -> Iterator[slice]:
    """The batches of a stream: slices of whole rows, or of whole images for detection, each
    of at most ``chunk_size`` values of the widest column (boxes), and at least one row."""
    if request.images is not None:
        yield from packed(image_sizes(request.images), chunk_size)
        return
    step = max(1, chunk_size // request.row_size)
    for start in range(0, request.n_rows, step):
        yield slice(start, min(start + step, request.n_rows))


def to_proto_stream(
    request: Request, chunk_rows: int, on_rows: OnRows | None = None
) -> Iterator[pb.EvaluateStreamRequest]:
    header = pb.StreamHeader(task=_task(request.task), **_header_fields(request, stream=True))
    yield pb.EvaluateStreamRequest(header=header)
    for rows in chunks(request, chunk_rows):
        if request.images is not None:
            yield pb.EvaluateStreamRequest(images=_proto_images(request.images[rows]))
        else:
            yield pb.EvaluateStreamRequest(**_row_fields(request, rows))
        if on_rows is not None:
            on_rows(rows.stop - rows.start)


def _fields_of(message: Any, keys: Sequence[str]) -> dict[str, Any]:
    return {
        key: getattr(message, key)
        if not message.DESCRIPTOR.fields_by_name[key].has_presence or message.HasField(key)
        else None
        for key in keys
    }


_DRIFT_KEYS = tuple(f.name for f in pb.DriftTest.DESCRIPTOR.fields)
_COMPARISON_KEYS = tuple(f.name for f in pb.Comparison.DESCRIPTOR.fields)
_MONITOR_KEYS = tuple(f.name for f in pb.MonitorVerdict.DESCRIPTOR.fields)


def _interval(interval: pb.Interval) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "lower": interval.lower,
        "upper": interval.upper,
        "level": interval.level,
        "method": interval.method,
        "std_error": interval.std_error,
    }
    for key in ("replicates", "seed"):
        if interval.HasField(key):
            entry[key] = getattr(interval, key)
    return entry


def _finite(values: Any) -> list[float | None]:
    array = np.asarray(values, dtype=np.float64)
    return [float(v) if np.isfinite(v) else None for v in array]


def from_proto(response: pb.EvaluateResponse) -> dict[str, Any]:
    """The JSON body of a protobuf answer (as the service's REST door writes it): undefined
    metrics as null, the +inf start of a threshold list as null."""
    metrics: dict[str, float | None] = dict(response.metrics)
    metrics.update(dict.fromkeys(response.undefined))
    curves: dict[str, Any] = {}
    if response.curves.HasField("roc"):
        roc = response.curves.roc
        curves["roc"] = {"fpr": _finite(roc.fpr), "tpr": _finite(roc.tpr),
                         "thresholds": _finite(roc.thresholds)}  # fmt: skip
    if response.curves.HasField("pr"):
        pr = response.curves.pr
        curves["pr"] = {"precision": _finite(pr.precision), "recall": _finite(pr.recall),
                        "thresholds": _finite(pr.thresholds)}  # fmt: skip
    for name, named in response.curves.other.items():
        curves[name] = {key: _finite(values.values) for key, values in named.arrays.items()}
    per_class = [
        {
            "class": row.class_name,
            **dict(row.metrics),
            **dict.fromkeys(row.undefined),
            "undefined": dict(row.undefined),
            "intervals": {key: _interval(value) for key, value in row.intervals.items()},
        }
        for row in response.per_class
    ]
    return {
        "task": pb.Task.Name(response.task).removeprefix("TASK_").lower(),
        "n_samples": response.n_samples,
        "metrics": metrics,
        "undefined": dict(response.undefined),
        "per_class": per_class,
        "curves": curves,
        "intervals": {k: _interval(v) for k, v in response.intervals.items()},
        "drift": {k: _fields_of(v, _DRIFT_KEYS) for k, v in response.drift.items()},
        "comparison": {k: _fields_of(v, _COMPARISON_KEYS) for k, v in response.comparison.items()},
        "conventions": dict(response.conventions),
        "warnings": list(response.warnings),
        "coverage": _coverage_json(response),
        "monitor": {k: _fields_of(v, _MONITOR_KEYS) for k, v in response.monitor.items()},
        "monitor_state": (
            base64.b64encode(response.monitor_state).decode("ascii")
            if response.monitor_state
            else None
        ),
        # each segment's answer, as the REST door gives it: only when the request had segments
        **(
            {"segments": {k: from_proto(v) for k, v in sorted(response.segments.items())}}
            if response.segments
            else {}
        ),
    }


# The tasks, in the proto's order (TASK_UNSPECIFIED is "every task" in a catalog request).
TASKS = [v.name.removeprefix("TASK_").lower() for v in pb.Task.DESCRIPTOR.values if v.number]


def catalog_request(task: str | None) -> pb.ListMetricsRequest:
    """The ``ListMetrics`` request of a catalog call. A task the proto has no value for is
    refused here, with the server's own message (REST sends any name and the server answers)."""
    if task is None:
        return pb.ListMetricsRequest()
    if task not in TASKS:
        raise InvalidArgument(
            f"expected one of {TASKS}, but got {task!r}", field="task", code="invalid_argument"
        )
    return pb.ListMetricsRequest(task=_task(task))


def _task_name(task: pb.Task.ValueType) -> str:
    return pb.Task.Name(task).removeprefix("TASK_").lower()


def _bounds(entry: pb.MetricInfo) -> dict[str, float | None] | None:
    if not entry.HasField("range"):  # a server of the first catalog version
        return None
    bounds = entry.range
    return {
        "lower": bounds.lower if bounds.HasField("lower") else None,
        "upper": bounds.upper if bounds.HasField("upper") else None,
    }


def catalog_from_proto(response: pb.ListMetricsResponse) -> list[dict[str, Any]]:
    """The entries of ``GET /v1/metrics`` from a ``ListMetrics`` answer."""
    entries = []
    for entry in response.metrics:
        tasks = [_task_name(task) for task in entry.tasks]
        task = _task_name(entry.task) if entry.task else (tasks[0] if tasks else "")
        entries.append(
            {
                "name": entry.name,
                "tasks": tasks,
                "higher_is_better": (
                    entry.higher_is_better if entry.HasField("higher_is_better") else None
                ),
                "definition": entry.definition,
                "aliases": list(entry.aliases),
                "task": task,
                "range": _bounds(entry),
                "convention": entry.convention,
                "reference": entry.reference,
                "test": entry.test,
            }
        )
    return entries


# --- REST (JSON) ------------------------------------------------------------------------------


def _b64(values: NDArray[np.float64]) -> str:
    return base64.b64encode(values.tobytes()).decode()


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Mapping):
        return {k: _jsonable(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _json_header(request: Request, stream: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {"task": request.task}
    for name in ("classes", "options", "model"):
        value = getattr(request, name)
        if value is not None:
            body[name] = _jsonable(value)
    n_classes = _n_classes(request, stream)
    if n_classes is not None:
        body["n_classes"] = n_classes
    if request.baseline is not None:
        body["baseline"] = _json_payload(request.baseline)
    if request.coverage is not None:
        body["coverage"] = request.coverage
    if request.monitor_state is not None:
        body["monitor_state"] = base64.b64encode(request.monitor_state).decode("ascii")
    if request.window is not None:
        body["window"] = request.window
    return body


def _json_payload(payload: Mapping[str, Any]) -> dict[str, Any]:
    """A baseline or challenger: its arrays as base64 ``*_f64`` (NaN-safe), numbers as given."""
    out: dict[str, Any] = {}
    for key, value in payload.items():
        if value is None:
            continue
        if isinstance(value, np.ndarray | list | tuple):
            out[f"{key}_f64"] = _b64(_floats(value))
        else:
            out[key] = _jsonable(value)
    return out


def _json_rows(request: Request, rows: slice | None = None) -> dict[str, Any]:
    # base64 f64 rather than JSON numbers: exact, compact, and NaN/inf survive to the server's
    # validation (JSON has no NaN).
    body: dict[str, Any] = {}
    for name in request.columns:
        body[f"{name}_f64"] = _b64(_column_part(request, name, rows))
    if request.label_names is not None:
        body["labels"] = request.label_names if rows is None else request.label_names[rows]
    return body


def to_json(request: Request) -> dict[str, Any]:
    body = {**_json_header(request), **_json_rows(request)}
    if request.challenger is not None:
        body["challenger"] = _json_payload(request.challenger)
    if request.images is not None:
        body["images"] = _json_images(request.images)
    segments = segment_fields(request)
    states = segments.pop("segment_monitor_states", None)
    if states is not None:
        segments["segment_monitor_states"] = {
            name: base64.b64encode(state).decode("ascii") for name, state in states.items()
        }
    return {**body, **segments}


def _json_images(images: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [
        {key: np.asarray(value).reshape(-1, 4).tolist() if key.endswith("_boxes")
         else _jsonable(value) for key, value in image.items()}
        for image in images
    ]  # fmt: skip


def to_ndjson(request: Request, chunk_rows: int, on_rows: OnRows | None = None) -> Iterator[bytes]:
    """NDJSON lines: the header, then one line a batch."""
    yield orjson.dumps(_json_header(request, stream=True)) + b"\n"
    for rows in chunks(request, chunk_rows):
        if request.images is not None:
            line = {"images": _json_images(request.images[rows])}
        else:
            line = _json_rows(request, rows)
        yield orjson.dumps(line) + b"\n"
        if on_rows is not None:
            on_rows(rows.stop - rows.start)


def _coverage_message(coverage: Mapping[str, Any]) -> pb.Coverage:
    """The request's coverage (known fields, checked by ``build``) as protobuf."""
    try:
        return pb.Coverage(**coverage)
    except (TypeError, ValueError) as error:  # a fraction for n_predictions, say
        raise InvalidArgument(str(error), field="coverage", code="malformed") from None


def _coverage_json(response: pb.EvaluateResponse) -> dict[str, Any]:
    """The coverage block as the REST door gives it: {} or n_labelled and the fields set."""
    if not response.HasField("coverage"):
        return {}
    report = response.coverage
    return {**{f.name: v for f, v in report.ListFields()}, "n_labelled": report.n_labelled}
