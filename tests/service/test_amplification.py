"""A small request must not make the decoder allocate a lot: string labels and strings among
numbers are measured before numpy stores them at the width of the longest (4 bytes a
character), and detection boxes are counted before any IoU. Peak memory is traced."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from evalserve.core import InvalidInputError
from evalserve.service.config import Settings
from evalserve.service.errors import MalformedRequestError, PayloadTooLargeError
from evalserve.service.json_codec import request_from_json
from evalserve.service.json_parse import parse_json
from evalserve.service.proto_codec import request_from_proto
from evalserve.v1 import evaluation_pb2 as pb

SETTINGS = Settings()
ROWS = 200_000
LONG = 2_500  # numpy would store every row at this width: 200 000 x 2 500 x 4 bytes = 2 GB
PEAK = 64 << 20  # bytes the refusal may trace (the body's Python strings included)


@contextmanager
def _peak_below(limit: int) -> Iterator[None]:
    tracemalloc.start()
    try:
        yield
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert peak < limit, f"traced {peak} bytes"


def _refused(kind: type[Exception], decode: Callable[[], Any]) -> Exception:
    with _peak_below(PEAK), pytest.raises(kind) as caught:
        decode()
    return caught.value


def test_a_long_string_label_among_many_is_refused_before_numpy_stores_them() -> None:
    body = {"task": "multiclass", "labels": ["a"] * ROWS + ["b" * LONG], "scores": [0.5]}
    error = _refused(InvalidInputError, lambda: request_from_json(body, SETTINGS))
    assert isinstance(error, InvalidInputError)
    assert error.field == "labels"
    assert f"row {ROWS} has {LONG}" in error.message


def test_a_long_string_label_in_protobuf_is_refused_as_in_json() -> None:
    message = pb.EvaluateRequest(
        task=pb.TASK_BINARY, label_names=["a"] * ROWS + ["b" * LONG], scores=[0.5]
    )
    error = _refused(InvalidInputError, lambda: request_from_proto(message, SETTINGS))
    assert isinstance(error, InvalidInputError)
    assert (error.field, error.message) == (
        "labels",
        f"expected names of at most 128 characters (max_label_chars), but row {ROWS} has {LONG}",
    )


def test_many_labels_at_the_width_of_the_longest_are_over_the_array_budget() -> None:
    settings = Settings(max_label_array_bytes=ROWS * 8 * 4 - 1)
    body = {"task": "multiclass", "labels": ["a"] * (ROWS - 1) + ["b" * 8], "scores": [0.5]}
    error = _refused(PayloadTooLargeError, lambda: request_from_json(body, settings))
    assert isinstance(error, PayloadTooLargeError)
    assert error.field == "labels"
    assert "max_label_array_bytes" in error.message


@pytest.mark.parametrize("nested", [False, True])
def test_a_string_among_numbers_is_malformed_before_numpy_reads_the_column(nested: bool) -> None:
    scores: list[Any] = [[0.5, 0.5]] * ROWS if nested else [0.5] * ROWS
    scores.append([0.5, "9" * LONG] if nested else "9" * LONG)
    body = {"task": "multiclass" if nested else "binary", "labels": [0] * (ROWS + 1),
            "scores": scores}  # fmt: skip
    error = _refused(MalformedRequestError, lambda: request_from_json(body, SETTINGS))
    assert isinstance(error, MalformedRequestError)
    assert error.field == "scores"


def test_a_large_body_with_a_string_among_numbers_takes_the_slow_path_and_is_refused() -> None:
    """Past FAST_JSON_BYTES simdjson cannot read the column as numbers; orjson's list then
    goes through the same check."""
    raw = b'{"task": "binary", "labels": [0], "scores": [' + b"0.5," * ROWS + b'"9"]}'
    with pytest.raises(MalformedRequestError) as caught:
        request_from_json(parse_json(raw), SETTINGS)
    assert caught.value.field == "scores"


def test_boxes_over_the_cap_are_refused_before_any_iou() -> None:
    boxes = [[0.0, 0.0, 10.0, 10.0]] * (SETTINGS.max_boxes_per_image + 1)
    image = {"gt_boxes": boxes, "gt_classes": [0] * len(boxes), "pred_boxes": boxes,
             "pred_classes": [0] * len(boxes), "pred_scores": [0.5] * len(boxes)}  # fmt: skip
    with pytest.raises(PayloadTooLargeError) as caught:
        request_from_json({"task": "detection", "images": [image]}, SETTINGS)
    assert caught.value.field == "images[0].gt_boxes"
    flat = pb.DetectionImage(pred_boxes=[1.0] * 4 * (SETTINGS.max_boxes_per_image + 1))
    with pytest.raises(PayloadTooLargeError) as caught:
        request_from_proto(pb.EvaluateRequest(task=pb.TASK_DETECTION, images=[flat]), SETTINGS)
    assert caught.value.field == "images[0].pred_boxes"


def test_bootstrap_work_counts_rows_times_replicates() -> None:
    settings = Settings(max_bootstrap_work=1_000)
    body: dict[str, Any] = {"task": "binary", "labels": [0, 1] * 50, "scores": [0.5] * 100}
    request_from_json({**body, "options": {"bootstrap_replicates": 10}}, settings)  # 1 000
    with pytest.raises(PayloadTooLargeError) as caught:
        request_from_json({**body, "options": {"bootstrap_replicates": 11}}, settings)
    assert caught.value.field == "options.bootstrap_replicates"
    # Only binary bootstraps: another task's replicates cost nothing and are not counted.
    regression = {"task": "regression", "labels": [1.0] * 100, "predictions": [1.0] * 100}
    request_from_json({**regression, "options": {"bootstrap_replicates": 11}}, settings)


def test_detection_pairs_count_each_prediction_against_its_class_only() -> None:
    """Two images of 300 predictions and 300 boxes: 180 000 pairs at most, but with three
    classes of 100 each only 60 000 meet; max_detections cuts the predictions first."""
    classes = [0.0, 1.0, 2.0] * 100
    boxes = [[0.0, 0.0, 10.0, 10.0]] * 300
    image = {"gt_boxes": boxes, "gt_classes": classes, "pred_boxes": boxes,
             "pred_classes": classes, "pred_scores": [0.5] * 300}  # fmt: skip
    body: dict[str, Any] = {"task": "detection", "images": [image, image],
                            "options": {"max_detections": 300}}  # fmt: skip
    request_from_json(body, Settings(max_detection_pairs=60_000))
    with pytest.raises(PayloadTooLargeError) as caught:
        request_from_json(body, Settings(max_detection_pairs=59_999))
    assert caught.value.field == "images"
    assert "60000 same-class" in caught.value.message
    # 30 predictions an image meet at most 30 x 300 boxes each: 18 000 in all.
    body["options"] = {"max_detections": 30}
    request_from_json(body, Settings(max_detection_pairs=18_000))
