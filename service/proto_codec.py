"""The protobuf codec's decoding side: ``evalserve.v1`` messages to the request records
(``service.records``), straight to numpy. Large columns may have been decoded apart from the
message, a slice at a time (``service.proto_parse``): they come in ``ProtoColumns``. Types are
the proto's; sizes are checked here and values by the core, as for JSON.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from google.protobuf.message import Message

from evalserve.core import TASKS, InvalidInputError
from evalserve.service.config import Settings
from evalserve.service.errors import MalformedRequestError
from evalserve.service.limits import (
    check_boxes,
    check_classes,
    check_compute,
    check_curve_points,
    check_names,
    check_rows,
    checked_segments,
)
from evalserve.service.proto_parse import NO_COLUMNS, ProtoColumns
from evalserve.service.records import (
    BASELINE_COLUMNS,
    BASELINE_SUMMARY,
    COLUMNS,
    IMAGE_FIELDS,
    Baseline,
    Batch,
    Challenger,
    Column,
    Coverage,
    Header,
    Images,
    Request,
    model_ref,
)
from evalserve.service.shapes import detection_image, float64_column, with_task_matrices
from evalserve.v1 import evaluation_pb2 as pb

__all__ = [
    "batch_from_proto",
    "catalog_task_from_proto",
    "header_from_proto",
    "request_from_proto",
]

TASK_NAMES = {pb.Task.Value(f"TASK_{task.upper()}"): task for task in TASKS}
# The tasks as a protobuf client names them, for messages.
_WIRE_TASKS = ", ".join(pb.Task.Name(number) for number in TASK_NAMES)


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
        return float64_column(f"{where}{name}_f64", raw, settings)
    if len(packed):
        check_rows(f"{where}{name}", len(packed), settings)
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
        check_rows("label_names", len(names), settings)
        check_names("labels", names, settings)  # string labels, as the core names them
        columns["label_names"] = names
    if len(message.images):
        check_rows("images", len(message.images), settings)
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
            "task", f"expected one of {_WIRE_TASKS}, but got unknown enum value {message.task}"
        )
    if task is None:
        raise MalformedRequestError("task", f"is required; expected one of {_WIRE_TASKS}")
    classes = tuple(message.classes) or None
    if classes is not None:
        check_classes("classes", len(classes), settings)
        check_names("classes", classes, settings)
    model = None
    if message.HasField("model"):
        model = model_ref(message.model.name, message.model.version, message.model.segment)
    baseline = None
    if message.HasField("baseline"):
        baseline = _baseline_from_proto(message.baseline, settings, decoded.part("baseline"))
    n_classes = message.n_classes if message.HasField("n_classes") else None
    if n_classes is not None and n_classes < 1:
        raise MalformedRequestError(
            "n_classes", f"expected a positive integer, but got {n_classes}"
        )
    check_classes("n_classes", n_classes, settings)
    options = _options_from_proto(message.options)
    check_curve_points(options, settings)
    return Header(
        task=task,
        options=options,
        classes=classes,
        model=model,
        baseline=baseline,
        n_classes=n_classes,
        coverage=Coverage(**_fields(message.coverage)) if message.HasField("coverage") else None,
        monitor_state=message.monitor_state or None,
        window=message.window or None,
    )


def _baseline_from_proto(
    message: pb.Baseline, settings: Settings, decoded: ProtoColumns
) -> Baseline:
    values = {name: value for name, value in _fields(message).items() if name in BASELINE_SUMMARY}
    for name in BASELINE_COLUMNS:
        column = _proto_column(message, name, settings, where="baseline.", columns=decoded)
        if column is not None and column.size:
            values[name] = column
    return Baseline(**values)


def _fields(message: Message) -> dict[str, Any]:
    return {
        descriptor.name: list(value) if descriptor.is_repeated else value
        for descriptor, value in message.ListFields()
    }


def request_from_proto(
    message: pb.EvaluateRequest, settings: Settings, decoded: ProtoColumns = NO_COLUMNS
) -> Request:
    """A whole ``EvaluateRequest``; ``decoded``: its columns decoded apart from it
    (``service.proto_parse.parse``), if any."""
    challenger = None
    if message.HasField("challenger"):
        scores = _proto_column(
            message.challenger,
            "scores",
            settings,
            where="challenger.",
            columns=decoded.part("challenger"),
        )
        challenger = Challenger(scores)
    header = header_from_proto(message, settings, decoded)
    batch = with_task_matrices(header, batch_from_proto(message, settings, decoded), settings)
    check_compute(header, batch, settings)
    codes = message.segment_codes
    return Request(
        header=header,
        batch=batch,
        challenger=challenger,
        segments=checked_segments(
            tuple(message.segments) or None,
            np.asarray(codes, dtype=np.int64) if len(codes) else None,
            tuple(message.segment_names) or None,
            message.fold_segments,
            dict(message.segment_monitor_states) or None,
            settings,
        ),
    )


def stream_header_from_proto(
    message: pb.StreamHeader, settings: Settings, decoded: ProtoColumns = NO_COLUMNS
) -> Header:
    """A stream's header, its segments' monitor states included."""
    header = header_from_proto(message, settings, decoded)
    states = dict(message.segment_monitor_states) or None
    if states is not None:
        check_names("segment_monitor_states", tuple(states), settings, array=False)
    return replace(header, segment_monitor_states=states)


def stream_batch_from_proto(
    message: pb.EvaluateStreamRequest, settings: Settings, decoded: ProtoColumns = NO_COLUMNS
) -> Batch:
    """A stream message's rows with their segments, if any (a stream does not fold)."""
    batch = batch_from_proto(message, settings, decoded)
    codes = message.segment_codes
    segments = checked_segments(
        tuple(message.segments) or None,
        np.asarray(codes, dtype=np.int64) if len(codes) else None,
        tuple(message.segment_names) or None,
        False,
        None,
        settings,
    )
    return batch if segments is None else replace(batch, segments=segments)


def _images_from_proto(messages: Any, settings: Settings) -> Images:
    targets, predictions = [], []
    for index, image in enumerate(messages):
        columns: dict[str, Column | None] = {}
        for name in IMAGE_FIELDS[1:]:
            values = getattr(image, name)
            check_rows(f"images[{index}].{name}", len(values), settings)
            columns[name] = np.asarray(values, dtype=np.float64) if len(values) else None
        check_boxes(f"images[{index}]", columns, settings)
        target, prediction = detection_image(columns)
        targets.append(target)
        predictions.append(prediction)
    return tuple(targets), tuple(predictions)


def catalog_task_from_proto(message: pb.ListMetricsRequest) -> str | None:
    """The task of a ``ListMetricsRequest``: None (every task) for TASK_UNSPECIFIED."""
    if message.task == pb.TASK_UNSPECIFIED:
        return None
    task = TASK_NAMES.get(message.task)
    if task is None:
        # proto3 enums are open: a newer client may send a value this server does not know.
        raise InvalidInputError(
            "task", f"expected one of {_WIRE_TASKS}, but got unknown enum value {message.task}"
        )
    return task
