"""Decoded columns in the shapes the core takes: score matrices sent flat become n x k arrays,
a detection image's columns the core's target and prediction."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from evalserve.core import task_spec
from evalserve.service.config import Settings
from evalserve.service.errors import MalformedRequestError
from evalserve.service.limits import check_classes, check_rows
from evalserve.service.records import Batch, Column, Header

__all__ = ["detection_image", "float64_column", "with_task_matrices"]


def with_task_matrices(header: Header, batch: Batch, settings: Settings) -> Batch:
    """Score matrices sent flat (protobuf, raw bytes) as n x k arrays; labels and predictions
    too where the task's are matrices (multilabel). The width comes from ``n_classes``,
    ``classes`` or, where the task says so (multiclass), the ratio of scores to labels."""
    inputs = task_spec(header.task).inputs
    if not inputs.score_matrix:
        return batch
    scores = batch.scores
    if scores is not None and scores.ndim == 2:
        check_classes("scores", scores.shape[1], settings)
        return batch
    width = header.n_classes or (len(header.classes) if header.classes else None)
    rows = batch.truth
    from_scores = inputs.width_from_scores
    if width is None and from_scores and scores is not None and rows is not None and len(rows):
        width = len(scores) // len(rows) or None
    if width is None:
        if scores is None and batch.labels is not None and batch.labels.ndim == 2:
            return batch
        raise MalformedRequestError(
            "n_classes", "is required to read flat score matrices (or send classes)"
        )
    check_classes("n_classes", width, settings)
    matrices = {"scores": scores}
    if inputs.label_matrix:
        matrices |= {"labels": batch.labels, "predictions": batch.predictions}
    reshaped: dict[str, Any] = {}
    for name, values in matrices.items():
        if values is None or values.ndim == 2:
            continue
        if len(values) % width:
            raise MalformedRequestError(
                name, f"expected rows of {width} values (n x {width}), but got {len(values)}"
            )
        reshaped[name] = values.reshape(-1, width)
    return replace(batch, **reshaped)


def detection_image(
    columns: Mapping[str, Column | None],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One image's decoded columns (``gt_boxes``, ``gt_classes``, ``pred_boxes``,
    ``pred_classes``, ``pred_scores``; None when absent) as the core's target and prediction;
    flat boxes become rows of 4 (a length that is not a multiple of 4 is left to the core)."""
    target = {"boxes": _boxes(columns["gt_boxes"]), "classes": _ids(columns["gt_classes"])}
    prediction = {
        "boxes": _boxes(columns["pred_boxes"]),
        "classes": _ids(columns["pred_classes"]),
        "scores": _ids(columns["pred_scores"]),
    }
    return target, prediction


def _boxes(values: Column | None) -> Column:
    if values is None:
        return np.empty((0, 4))
    return values if values.ndim == 2 else values.reshape(-1, 4) if values.size % 4 == 0 else values


def _ids(values: Column | None) -> Column:
    return np.empty(0) if values is None else values


def float64_column(name: str, raw: bytes | memoryview, settings: Settings) -> Column:
    """A ``<column>_f64`` field: little-endian float64 bytes, read in place."""
    if len(raw) % 8:
        raise MalformedRequestError(
            name, f"expected little-endian float64 (8 bytes each), but got {len(raw)} bytes"
        )
    check_rows(name, len(raw) // 8, settings)
    return np.frombuffer(raw, dtype="<f8")
