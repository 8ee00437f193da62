"""The request limits of ``Settings``, checked as a request is decoded, before numpy or the
core allocate anything in proportion to what was sent.

Sizes (rows, class names, classes, boxes, curve points) are checked by both codecs as they read
a field; the compute a request asks for (bootstrap replicates x rows, detection IoU pairs) once
its rows are known, for a whole request and for each batch of a stream. Each refusal names the
field and the setting (413 / RESOURCE_EXHAUSTED).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from evalserve.core import OPTIONS, InvalidInputError, task_spec
from evalserve.service.config import Settings
from evalserve.service.errors import MalformedRequestError, PayloadTooLargeError
from evalserve.service.records import Batch, Column, Header, Images, Segments

__all__ = [
    "check_bootstrap_work",
    "check_boxes",
    "check_classes",
    "check_compute",
    "check_curve_points",
    "check_detection_pairs",
    "check_names",
    "check_rows",
    "checked_segments",
]

# Long lists are scanned this many items at a time: a C call over a million items holds the
# GIL (and so the event loop's health checks) for tens of milliseconds.
SCAN_ITEMS = 1 << 16
CURVE_POINTS_RANGE = OPTIONS["max_curve_points"].high or float("inf")


def check_rows(name: str, n_rows: int, settings: Settings) -> None:
    if n_rows > settings.max_rows:
        raise PayloadTooLargeError(
            name, f"{n_rows} values is over the limit of {settings.max_rows} rows per request"
        )


def check_names(
    name: str, names: tuple[str, ...], settings: Settings, *, array: bool = True
) -> None:
    """Class names, sent in ``classes`` or as string labels, measured before numpy sees them:
    numpy stores strings at the width of the longest (4 bytes a character), so one long label
    among a million short ones would make a huge array. Each name is at most
    ``max_label_chars`` (they become Prometheus label values, as model names do) and the rows
    x the longest at most ``max_label_array_bytes``. Segment names (``array`` False) become
    Prometheus label values too, but never a fixed-width array: only their length is checked."""
    if not names:
        return
    row, longest = _longest(names)
    if longest > settings.max_label_chars:
        raise InvalidInputError(
            name,
            f"expected names of at most {settings.max_label_chars} characters"
            f" (max_label_chars), but row {row} has {longest}",
        )
    size = len(names) * longest * 4
    if array and size > settings.max_label_array_bytes:
        raise PayloadTooLargeError(
            name,
            f"{len(names)} names of up to {longest} characters take {size} bytes as an array,"
            f" over the limit of {settings.max_label_array_bytes} (max_label_array_bytes);"
            " send integer labels with classes instead",
        )


def _longest(names: tuple[str, ...]) -> tuple[int, int]:
    """The position of the longest name and its length, measured a slice at a time."""
    row = longest = 0
    for start in range(0, len(names), SCAN_ITEMS):
        part = names[start : start + SCAN_ITEMS]
        lengths = np.fromiter(map(len, part), dtype=np.int64, count=len(part))
        at = int(np.argmax(lengths))
        if int(lengths[at]) > longest:
            row, longest = start + at, int(lengths[at])
    return row, longest


def check_classes(name: str, count: int | None, settings: Settings) -> None:
    if count is not None and count > settings.max_classes:
        raise PayloadTooLargeError(
            name, f"{count} classes is over the limit of {settings.max_classes}"
        )


def check_boxes(where: str, columns: Mapping[str, Column | None], settings: Settings) -> None:
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


def whole_option(options: Mapping[str, Any], name: str) -> int | None:
    """An option sent as a whole number, else None (the core names any other value)."""
    value = options.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not value.is_integer():
        return None
    return int(value)


def check_curve_points(options: Mapping[str, Any], settings: Settings) -> None:
    """The curves asked for (the overall result's and each segment's) within the server's
    limit of curve points."""
    for name in ("max_curve_points", "segment_curve_points"):
        points = whole_option(options, name)
        # Past the option's own range the core refuses it as any option out of range (422).
        if points is not None and settings.max_curve_points < points <= CURVE_POINTS_RANGE:
            raise PayloadTooLargeError(
                f"options.{name}",
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


def check_compute(header: Header, batch: Batch, settings: Settings) -> None:
    """The compute a whole request asks for: its bootstrap work and its detection pairs."""
    spec = task_spec(header.task)
    if spec.inputs.images and batch.images is not None:
        max_detections = whole_option(header.options, "max_detections") or 100
        check_detection_pairs("images", batch.images, max_detections, settings)
    truth = batch.truth
    if spec.bootstraps and truth is not None:
        replicates = whole_option(header.options, "bootstrap_replicates")
        check_bootstrap_work("options.bootstrap_replicates", replicates, len(truth), settings)


def checked_segments(
    names: tuple[str, ...] | None,
    codes: Column | None,
    listed: tuple[str, ...] | None,
    fold: bool,
    states: dict[str, bytes] | None,
    settings: Settings,
) -> Segments | None:
    """A request's segment fields as both codecs read them (``segments`` as names, or
    ``segment_codes`` with ``segment_names``; an empty list is an absent field, as protobuf
    has it), their sizes checked: rows as any column, each name at most ``max_label_chars``
    (a segment's name becomes the Prometheus label ``segment``). None when none was sent; the
    values are the core's to check (``core._segments``, naming ``segments``)."""
    if names is not None and codes is not None:
        raise MalformedRequestError("segments", "send segments or segment_codes, not both")
    if codes is not None and listed is None:
        raise MalformedRequestError(
            "segment_names", "is required with segment_codes: the names its codes index"
        )
    if names is not None and listed is not None:
        raise MalformedRequestError(
            "segment_names", "goes with segment_codes; segments holds the names themselves"
        )
    for field, column in (("segments", names), ("segment_codes", codes), ("segment_names", listed)):
        if column is not None:
            check_rows(field, len(column), settings)
    for field, given in (
        ("segments", names),
        ("segment_names", listed),
        ("segment_monitor_states", None if states is None else tuple(states)),
    ):
        if given is not None:
            check_names(field, given, settings, array=False)
    if names is None and codes is None and listed is None and states is None and not fold:
        return None
    return Segments(names if names is not None else codes, listed, fold, states)
