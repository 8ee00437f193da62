"""The JSON codec's decoding side: a parsed JSON document (``service.json_parse``) to the
request records (``service.records``), straight to numpy (no pydantic lists of millions of
floats). Types and sizes are checked here, each error naming the field; the values themselves
(labels 0/1, finite scores, lengths, options) are the core's to check, as for protobuf.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from dataclasses import replace
from itertools import chain
from typing import Any

import numpy as np
import orjson

from evalserve.core import TASKS, InvalidInputError
from evalserve.service.config import Settings
from evalserve.service.errors import MalformedRequestError
from evalserve.service.limits import (
    SCAN_ITEMS,
    check_boxes,
    check_classes,
    check_compute,
    check_curve_points,
    check_names,
    check_rows,
    checked_segments,
)
from evalserve.service.records import (
    BASELINE_COLUMNS,
    BASELINE_FIELDS,
    BASELINE_SUMMARY,
    BATCH_FIELDS,
    CHALLENGER_FIELDS,
    COLUMNS,
    COVERAGE_FIELDS,
    FOLD_FIELD,
    HEADER_FIELDS,
    IMAGE_FIELDS,
    MODEL_FIELDS,
    OPTION_FIELDS,
    OPTIONAL_COLUMNS,
    REQUEST_FIELDS,
    Baseline,
    Batch,
    Challenger,
    Column,
    Coverage,
    Header,
    Images,
    ModelRef,
    Request,
    Segments,
    model_ref,
)
from evalserve.service.shapes import detection_image, float64_column, with_task_matrices

__all__ = [
    "batch_from_json",
    "catalog_task_from_query",
    "header_from_json",
    "json_kind",
    "request_from_json",
    "stream_line_from_json",
]


def json_kind(value: Any) -> str:
    """How a JSON value is named in error messages: "an object", "null", "a number", ..."""
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else "a number"
    )


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


def request_from_json(body: Any, settings: Settings) -> Request:
    """A whole ``POST /v1/evaluate`` JSON body; its matrices shaped and its compute checked."""
    body = _object("body", body)
    _unknown("", body, REQUEST_FIELDS)
    challenger = body.get("challenger")
    header = header_from_json(body, settings)
    batch = with_task_matrices(header, batch_from_json(body, settings), settings)
    check_compute(header, batch, settings)
    return Request(
        header=header,
        batch=batch,
        challenger=None if challenger is None else _challenger_from_json(challenger, settings),
        segments=_segments_from_json(body, settings),
    )


def _segments_from_json(body: Mapping[str, Any], settings: Settings) -> Segments | None:
    """Types only (strings, whole numbers, a boolean, base64 text); sizes in
    ``checked_segments``; the core checks the values."""
    fold = body.get("fold_segments")
    if fold is not None and not isinstance(fold, bool):
        raise MalformedRequestError(
            "fold_segments", f"expected a boolean, but got {json_kind(fold)}"
        )
    states = body.get("segment_monitor_states")
    if states is not None:
        states = {
            name: _base64_from_json(f"segment_monitor_states.{name}", state)
            for name, state in _object("segment_monitor_states", states).items()
        }
    return checked_segments(
        _json_strings("segments", body.get("segments")),
        _json_codes("segment_codes", body.get("segment_codes")),
        _json_strings("segment_names", body.get("segment_names")),
        bool(fold),
        states,
        settings,
    )


def _json_strings(name: str, value: Any) -> tuple[str, ...] | None:
    """An array of strings; empty or null: absent."""
    if value is None:
        return None
    if not isinstance(value, list):
        raise MalformedRequestError(
            name, f"expected an array of strings, but got {json_kind(value)}"
        )
    bad = next((row for row, item in enumerate(value) if not isinstance(item, str)), None)
    if bad is not None:
        raise MalformedRequestError(
            name, f"expected an array of strings, but row {bad} is {json_kind(value[bad])}"
        )
    return tuple(value) or None


def _json_codes(name: str, value: Any) -> Column | None:
    """An array of whole numbers (a dictionary-encoded column's codes); empty or null:
    absent."""
    if value is None:
        return None
    if not isinstance(value, list):
        raise MalformedRequestError(
            name, f"expected an array of whole numbers, but got {json_kind(value)}"
        )
    bad = next(
        (row for row, item in enumerate(value) if type(item) is not int),  # not bool, not float
        None,
    )
    if bad is not None:
        raise MalformedRequestError(
            name, f"expected an array of whole numbers, but row {bad} is {value[bad]!r}"[:200]
        )
    try:
        codes = np.asarray(value, dtype=np.int64)
    except OverflowError:
        raise MalformedRequestError(name, "expected whole numbers within 64 bits") from None
    return codes if codes.size else None


def stream_line_from_json(line: Any, settings: Settings) -> tuple[Header | None, Batch]:
    """One NDJSON line of a stream: a header line has ``task``; every line may hold rows and
    their segments."""
    line = _object("line", line)
    if FOLD_FIELD in line:
        raise MalformedRequestError(
            FOLD_FIELD,
            "a stream does not fold segments (folding needs every row at once): send at most "
            "max_segments distinct segments, or a one-shot request with fold_segments",
        )
    _unknown("", line, (*HEADER_FIELDS, *BATCH_FIELDS))
    header = header_from_json(line, settings) if "task" in line else None
    if header is None:
        for name in HEADER_FIELDS:
            if name in line:
                raise MalformedRequestError(name, "belongs in the header line (the one with task)")
    else:
        header = replace(header, segment_monitor_states=_segment_states_from_json(line, settings))
    batch = batch_from_json(line, settings)
    segments = checked_segments(
        _json_strings("segments", line.get("segments")),
        _json_codes("segment_codes", line.get("segment_codes")),
        _json_strings("segment_names", line.get("segment_names")),
        False,
        None,
        settings,
    )
    return header, batch if segments is None else replace(batch, segments=segments)


def _segment_states_from_json(
    body: Mapping[str, Any], settings: Settings
) -> dict[str, bytes] | None:
    """``segment_monitor_states``: base64 text by segment name (names checked as
    ``checked_segments`` checks them); empty or null: absent."""
    states = body.get("segment_monitor_states")
    if states is None:
        return None
    decoded = {
        name: _base64_from_json(f"segment_monitor_states.{name}", state)
        for name, state in _object("segment_monitor_states", states).items()
    }
    if decoded:
        check_names("segment_monitor_states", tuple(decoded), settings, array=False)
    return decoded or None


def header_from_json(body: Mapping[str, Any], settings: Settings) -> Header:
    task = body.get("task")
    if task is None:
        raise MalformedRequestError("task", f"is required; expected one of {list(TASKS)}")
    if not isinstance(task, str) or task not in TASKS:
        raise MalformedRequestError("task", f"expected one of {list(TASKS)}, but got {task!r}")
    options = _object("options", body.get("options") or {})
    _unknown("options", options, OPTION_FIELDS)
    classes = _json_names("classes", body.get("classes"), settings)
    if classes is not None:
        check_classes("classes", len(classes), settings)
    n_classes = body.get("n_classes")
    model = None if body.get("model") is None else _model_from_json(body["model"])
    baseline = None if body.get("baseline") is None else _baseline_from_json(body, settings)
    if n_classes is not None and (
        isinstance(n_classes, bool) or not isinstance(n_classes, int) or n_classes < 1
    ):
        raise MalformedRequestError(
            "n_classes", f"expected a positive integer, but got {n_classes!r}"
        )
    check_classes("n_classes", n_classes, settings)
    check_curve_points(options, settings)
    return Header(
        task=task,
        options=dict(options),
        classes=classes,
        model=model,
        baseline=baseline,
        n_classes=n_classes,
        coverage=None if body.get("coverage") is None else _coverage_from_json(body["coverage"]),
        monitor_state=_monitor_state_from_json(body.get("monitor_state")),
        window=_window_from_json(body.get("window")),
    )


def _monitor_state_from_json(value: Any) -> bytes | None:
    """The monitor's state: base64 text (the core reads and checks the bytes)."""
    return None if value is None else _base64_from_json("monitor_state", value)


def _base64_from_json(name: str, value: Any) -> bytes:
    if not isinstance(value, str):
        raise MalformedRequestError(name, f"expected base64 text, but got {json_kind(value)}")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise MalformedRequestError(name, "is not valid base64") from None


def _window_from_json(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise MalformedRequestError("window", f"expected a string, but got {json_kind(value)}")
    return value


def batch_from_json(body: Mapping[str, Any], settings: Settings) -> Batch:
    columns: dict[str, Any] = {}
    for name in COLUMNS:
        raw = _json_raw(f"{name}_f64", body.get(f"{name}_f64"), settings)
        labels = body.get(name)
        if name == "labels" and isinstance(labels, list) and labels and isinstance(labels[0], str):
            columns["label_names"] = _json_names("labels", labels, settings)
            continue
        column = _packed_or_raw(name, _json_column(name, labels, settings), raw)
        if name in OPTIONAL_COLUMNS and column is not None and column.size == 0:
            column = None  # as in protobuf, where an empty repeated field is an absent one
        columns[name] = column
    if "label_names" in body:
        columns["label_names"] = _json_names("label_names", body["label_names"], settings)
    if body.get("images") is not None:
        columns["images"] = _images_from_json(body["images"], settings)
    return Batch(**columns)


def _model_from_json(value: Any) -> ModelRef:
    raw = _object("model", value)
    _unknown("model", raw, MODEL_FIELDS)
    for key, item in raw.items():
        if not isinstance(item, str):
            raise MalformedRequestError(
                f"model.{key}", f"expected a string, but got {json_kind(item)}"
            )
    return model_ref(*(raw.get(key, "") for key in MODEL_FIELDS))


def _coverage_from_json(value: Any) -> Coverage:
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
    return Coverage(**raw)


def _baseline_from_json(body: Mapping[str, Any], settings: Settings) -> Baseline:
    raw = _object("baseline", body["baseline"])
    _unknown("baseline", raw, BASELINE_FIELDS)
    values = {k: v for k, v in raw.items() if k in BASELINE_SUMMARY and v is not None}
    for name in BASELINE_COLUMNS:
        where = f"baseline.{name}"
        column = _packed_or_raw(
            where,
            _json_column(where, raw.get(name), settings),
            _json_raw(f"{where}_f64", raw.get(f"{name}_f64"), settings),
        )
        if column is not None and column.size:
            values[name] = column
    return Baseline(**values)


def _challenger_from_json(value: Any, settings: Settings) -> Challenger:
    raw = _object("challenger", value)
    _unknown("challenger", raw, CHALLENGER_FIELDS)
    scores = _packed_or_raw(
        "challenger.scores",
        _json_column("challenger.scores", raw.get("scores"), settings),
        _json_raw("challenger.scores_f64", raw.get("scores_f64"), settings),
    )
    return Challenger(scores)


def _json_column(name: str, value: Any, settings: Settings) -> Column | None:
    if value is None:
        return None
    if isinstance(value, np.ndarray):  # read straight to float64 by ``parse_json``
        check_rows(name, value.size, settings)
        return value
    if not isinstance(value, list):
        raise MalformedRequestError(
            name, f"expected an array of numbers, but got {json_kind(value)}"
        )
    check_rows(name, len(value), settings)
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
        raise MalformedRequestError(name, _not_numbers(value)) from None
    return array


def _not_numbers(values: list[Any]) -> str:
    """What is wrong with a column that is no numbers (or arrays of them), in JSON's words:
    the first row (from 0) that is no number, and in an array of arrays its column."""
    for row, value in enumerate(values):
        where, item = f"row {row}", value
        if type(value) is list:
            column = next((j for j, v in enumerate(value) if not _is_number(v)), None)
            if column is None:
                continue
            where, item = f"row {row}, column {column}", value[column]
        elif _is_number(value):
            continue
        if item is None:
            return f"{where} is null; every row needs a number (leave out rows that have none)"
        if isinstance(item, bool):
            return f"{where} is {str(item).lower()}, a boolean; send 1 or 0 instead"
        shown = f" ({orjson.dumps(item).decode()[:40]})" if isinstance(item, str) else ""
        return f"expected numbers, but {where} is {json_kind(item)}{shown}"
    return "expected numbers or equal-length arrays of numbers"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


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
    check_rows(name, len(value), settings)
    names = tuple(value)
    check_names(name, names, settings)
    return names


def _json_raw(name: str, value: Any, settings: Settings) -> Column | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise MalformedRequestError(name, f"expected base64 text, but got {json_kind(value)}")
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise MalformedRequestError(name, "is not valid base64") from None
    return float64_column(name, raw, settings)


def _packed_or_raw(name: str, packed: Column | None, raw: Column | None) -> Column | None:
    """A column sent as numbers or as ``<name>_f64`` bytes: the one that holds values."""
    if packed is not None and raw is not None and (packed.size or raw.size):
        raise MalformedRequestError(name, f"send {name} or {name}_f64, not both")
    if raw is not None and raw.size:
        return raw
    return packed


def _images_from_json(value: Any, settings: Settings) -> Images:
    if not isinstance(value, list):
        raise MalformedRequestError("images", f"expected an array, but got {json_kind(value)}")
    check_rows("images", len(value), settings)
    targets, predictions = [], []
    for index, raw in enumerate(value):
        where = f"images[{index}]"
        image = _object(where, raw)
        _unknown(where, image, IMAGE_FIELDS)
        columns = {
            name: _json_column(f"{where}.{name}", image.get(name), settings)
            for name in IMAGE_FIELDS[1:]
        }
        check_boxes(where, columns, settings)
        target, prediction = detection_image(columns)
        targets.append(target)
        predictions.append(prediction)
    return tuple(targets), tuple(predictions)


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
