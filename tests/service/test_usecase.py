"""``streams.StreamAccumulator``: the batches of a stream of any task, merged through the core's
``Accumulator``, give the answer of the whole; a bad batch is refused naming it (``batch 3.
scores``) and leaves the stream as it was; the state's cap counts bytes of the state, not rows or
repeats across batches."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from evalserve.core import Accumulator, InvalidInputError, StateTooLargeError, evaluate
from evalserve.service.config import Settings
from evalserve.service.errors import (
    MalformedRequestError,
    PayloadTooLargeError,
    StreamProtocolError,
    describe,
)
from evalserve.service.records import Baseline, Batch, Coverage, Header
from evalserve.service.streams import StreamAccumulator
from tests.contract.doors import assert_close

HEADER = Header(task="binary", options={})
CLASSES = ("cat", "dog", "bird")
IMAGE: dict[str, Any] = {"boxes": np.array([[0.0, 0.0, 10.0, 10.0]]), "classes": np.array([0.0])}
FOUND: dict[str, Any] = {
    "boxes": np.array([[1.0, 1.0, 10.0, 10.0], [20.0, 20.0, 30.0, 30.0]]),
    "classes": np.array([0.0, 1.0]),
    "scores": np.array([0.9, 0.4]),
}


def _batch(labels: np.ndarray[Any, Any], scores: np.ndarray[Any, Any], **columns: Any) -> Batch:
    return Batch(labels=labels.astype(np.float64), scores=scores, **columns)


def _images(n: int) -> Batch:
    return Batch(images=((IMAGE,) * n, (FOUND,) * n))


def _stream(header: Header, batches: list[Batch], **settings: Any) -> StreamAccumulator:
    stream = StreamAccumulator(header, Settings(**settings))
    for batch in batches:
        stream.add(batch)
    return stream


def _refusal(stream: StreamAccumulator, batch: Batch) -> InvalidInputError | Exception:
    with pytest.raises((InvalidInputError, StreamProtocolError, MalformedRequestError)) as error:
        stream.add(batch)
    return error.value


# --- binary -----------------------------------------------------------------------------------


def test_binary_batches_merge_to_the_answer_of_the_whole() -> None:
    rng = np.random.default_rng(5)
    labels = (rng.random(10_000) < 0.3).astype(np.float64)
    scores = np.round(rng.random(10_000), 3)
    parts = np.array_split(np.arange(10_000), 37)
    stream = _stream(HEADER, [_batch(labels[part], scores[part]) for part in parts])
    assert stream.n_rows == 10_000
    assert stream.finish().to_dict() == evaluate("binary", labels, scores).to_dict()


LABELS = np.arange(1000) % 2
SCORES = np.linspace(0.0, 1.0, 1000)
# The binary state of 1000 distinct scores, as the core measures it; the cap is 1.5 times that.
CAP = Accumulator("binary").update(LABELS, SCORES).nbytes * 3 // 2


def test_repeated_scores_do_not_count_twice_against_the_cap() -> None:
    """100 batches of the same 1000 scores hold 1000 distinct scores: under a cap of 1.5 times
    their state, although the levels together may hold more before they are merged."""
    stream = _stream(HEADER, [_batch(LABELS, SCORES)] * 100, max_stream_state_bytes=CAP)
    assert stream.finish().to_dict()["n_samples"] == 100_000


def test_a_batch_over_the_state_cap_is_refused_and_the_stream_goes_on() -> None:
    first = _batch(LABELS, SCORES)
    stream = _stream(HEADER, [first], max_stream_state_bytes=CAP)
    with pytest.raises(StateTooLargeError) as error:
        stream.add(_batch(LABELS, SCORES + 2.0))  # 1000 more distinct scores
    assert error.value.field == "batch 2"
    for says in (f"max_stream_state_bytes ({CAP} bytes)", "round continuous scores", "split"):
        assert says in error.value.message
    info = describe(error.value)
    assert info is not None
    assert (info.http_status, info.grpc_status.name, info.code) == (
        413, "RESOURCE_EXHAUSTED", "too_large",
    )  # fmt: skip
    # The refused batch left nothing behind: a later one is merged, the answer is of the two.
    stream.add(first)
    assert stream.n_batches == 3
    both = np.concatenate([SCORES, SCORES])
    expected = evaluate("binary", np.concatenate([LABELS, LABELS]), both).to_dict()
    assert stream.finish().to_dict() == expected


def test_the_row_limit_names_the_batch() -> None:
    stream = _stream(HEADER, [_batch(np.arange(6) % 2, np.arange(6) / 6)], max_stream_rows=10)
    with pytest.raises(PayloadTooLargeError) as error:
        stream.add(_batch(np.arange(6) % 2, np.arange(6) / 6))
    assert (error.value.field, error.value.message) == (
        "batch 2", "the stream is over the limit of 10 rows",
    )  # fmt: skip
    assert stream.n_rows == 6


@pytest.mark.parametrize(
    ("batch", "field", "says"),
    [
        pytest.param(
            Batch(label_names=("a", "b"), scores=np.array([0.1, 0.2])),
            "batch 2.labels",
            "set options.positive_label",
            id="names",
        ),
        pytest.param(
            _batch(np.array([0, 2]), np.array([0.1, 0.2])), "batch 2.labels", "0 or 1", id="label-2"
        ),
        pytest.param(
            _batch(np.array([0, 1]), np.array([0.1, 0.2]), predictions=np.array([0, 1])),
            "batch 2.predictions",
            "every batch",
            id="predictions-in-some",
        ),
        pytest.param(
            Batch(labels=np.array([0.0, 1.0]), predictions=np.array([0.0, 1.0])),
            "batch 2.predictions",
            "every batch",
            id="scores-in-some",
        ),
        pytest.param(_images(1), "batch 2.images", "detection", id="images"),
    ],
)
def test_a_bad_binary_batch_names_itself(batch: Batch, field: str, says: str) -> None:
    stream = _stream(HEADER, [_batch(np.array([0, 1, 1]), np.array([0.2, 0.7, 0.4]))])
    error = _refusal(stream, batch)
    assert getattr(error, "field", None) == field
    assert says in str(error)
    stream.add(_batch(np.array([1, 0]), np.array([0.9, 0.1])))  # the stream goes on
    assert stream.finish().n_samples == 5


@pytest.mark.parametrize(
    ("header", "field", "says"),
    [
        pytest.param(
            Header(task="binary", classes=("n", "p")),
            "classes",
            "no class names",
            id="classes-for-binary",
        ),
        pytest.param(
            Header(task="regression", classes=("a",)),
            "classes",
            "no class names",
            id="classes-for-regression",
        ),
        pytest.param(
            Header(task="multiclass", baseline=Baseline(roc_auc=0.9)),
            "baseline",
            "binary",
            id="baseline-for-multiclass",
        ),
        pytest.param(
            Header(task="binary", baseline=Baseline(roc_auc=0.9)),
            "baseline",
            "roc_auc_variance",
            id="baseline-incomplete",
        ),
        pytest.param(
            Header(task="binary", coverage=Coverage(n_predictions=0)),
            "coverage.n_predictions",
            "at least 1",
            id="coverage",
        ),
        pytest.param(
            Header(task="binary", options={"beta": 0.0}), "options.beta", "(0, 10000]", id="option"
        ),
    ],
)
def test_the_header_is_checked_before_any_batch(header: Header, field: str, says: str) -> None:
    with pytest.raises(InvalidInputError) as error:
        StreamAccumulator(header, Settings())
    assert error.value.field == field
    assert says in error.value.message


def test_a_stream_without_rows_says_so() -> None:
    stream = _stream(HEADER, [Batch(), _batch(np.array([]), np.array([]))])
    with pytest.raises(StreamProtocolError, match="header but no rows"):
        stream.finish()


# --- every task -------------------------------------------------------------------------------


def _multiclass(n: int, seed: int) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, n)
    scores = np.round(rng.dirichlet([1.0, 1.0, 1.0], n) + 0.3 * np.eye(3)[labels], 2)
    return labels, scores


def test_multiclass_names_flat_scores_and_one_row_batches() -> None:
    labels, scores = _multiclass(40, seed=1)
    names = tuple(CLASSES[i] for i in labels)
    header = Header(task="multiclass", classes=CLASSES, options={"top_k": [1, 2]})
    batches = [
        Batch(label_names=names[:1], scores=scores[:1].reshape(-1)),  # flat: width of classes
        Batch(),
        Batch(label_names=names[1:15], scores=scores[1:15]),
        *(Batch(label_names=names[i : i + 1], scores=scores[i]) for i in range(15, 40)),
    ]
    got = _stream(header, batches).finish().to_dict()
    expected = evaluate(
        "multiclass", list(names), scores, classes=CLASSES, options={"top_k": [1, 2]}
    )
    assert_close(got, expected.to_dict())


def test_multiclass_width_from_the_ratio_and_a_batch_of_another_width() -> None:
    labels, scores = _multiclass(10, seed=2)
    header = Header(task="multiclass")
    stream = _stream(header, [_batch(labels[:5], scores[:5].reshape(-1))])  # width 15 / 5 = 3
    error = _refusal(stream, _batch(labels[5:7], scores[5:7, :2].reshape(-1)))  # 4 / 2 = 2
    assert isinstance(error, StreamProtocolError)
    assert error.field == "batch 2.scores"
    assert "expected 3 columns, as the stream's first batch has, but got 2" in error.message
    stream.add(_batch(labels[5:], scores[5:]))
    assert_close(stream.finish().to_dict(), evaluate("multiclass", labels, scores).to_dict())


def test_multiclass_unknown_class_name_in_a_later_batch() -> None:
    _, scores = _multiclass(4, seed=3)
    header = Header(task="multiclass", classes=CLASSES)
    stream = _stream(header, [Batch(label_names=("cat", "dog"), scores=scores[:2])])
    error = _refusal(stream, Batch(label_names=("bird", "cow"), scores=scores[2:]))
    assert getattr(error, "field", None) == "batch 2.labels"
    assert "cow" in str(error)


def test_multiclass_predictions_in_some_batches() -> None:
    labels, scores = _multiclass(4, seed=4)
    stream = _stream(Header(task="multiclass"), [_batch(labels[:2], scores[:2])])
    error = _refusal(stream, _batch(labels[2:], scores[2:], predictions=np.array([0.0, 1.0])))
    assert isinstance(error, StreamProtocolError)
    assert error.field == "batch 2.predictions"
    # scores are no optional column of multiclass: refused as in one payload, not as a column
    # sent in some batches only
    required = _refusal(stream, Batch(labels=labels[2:].astype(np.float64)))
    assert getattr(required, "field", "").startswith("batch 3.")
    assert "every batch" not in str(required)


def test_multilabel_flat_matrices_of_the_header_width() -> None:
    rng = np.random.default_rng(6)
    labels = (rng.random((30, 3)) < 0.5).astype(np.float64)
    scores = np.round(rng.random((30, 3)), 2)
    header = Header(task="multilabel", n_classes=3)
    batches = [
        Batch(labels=labels[i : i + 10].reshape(-1), scores=scores[i : i + 10].reshape(-1))
        for i in range(0, 30, 10)
    ]
    got = _stream(header, batches).finish().to_dict()
    assert_close(got, evaluate("multilabel", labels, scores).to_dict())
    stream = _stream(header, batches[:1])
    error = _refusal(stream, Batch(labels=labels[0, :2], scores=scores[0, :2]))
    assert isinstance(error, MalformedRequestError)
    assert error.field == "batch 2.scores"
    assert "rows of 3 values" in error.message


def test_regression_batches_and_a_batch_without_predictions() -> None:
    rng = np.random.default_rng(7)
    labels = rng.normal(size=50)
    predictions = labels + rng.normal(scale=0.3, size=50)
    header = Header(task="regression")
    batches = [
        Batch(labels=labels[i : i + 7], predictions=predictions[i : i + 7]) for i in range(0, 50, 7)
    ]
    got = _stream(header, batches).finish().to_dict()
    assert_close(got, evaluate("regression", labels, y_pred=predictions).to_dict())
    stream = _stream(header, batches[:2])
    error = _refusal(stream, Batch(labels=labels[:3]))
    assert getattr(error, "field", None) == "batch 3.predictions"


def test_detection_counts_images_and_refuses_rows() -> None:
    header = Header(task="detection", classes=("person", "car"))
    stream = _stream(header, [_images(2), Batch(), _images(1)])
    assert stream.n_rows == 3
    rows = _refusal(stream, _batch(np.array([0.0, 1.0]), np.array([0.1, 0.2])))
    assert getattr(rows, "field", None) == "batch 4.images"
    both = _refusal(stream, Batch(labels=np.array([1.0]), images=_images(1).images))
    assert getattr(both, "field", None) == "batch 5.labels"
    result = stream.finish()
    expected = evaluate("detection", [IMAGE] * 3, [FOUND] * 3, classes=("person", "car"))
    assert_close(result.to_dict(), expected.to_dict())
    assert result.n_samples == 3
    limited = _stream(header, [_images(2)], max_stream_rows=3)
    with pytest.raises(PayloadTooLargeError, match="limit of 3 images"):
        limited.add(_images(2))
    assert StreamAccumulator(header, Settings()).n_rows == 0
    with pytest.raises(StreamProtocolError, match="header but no images"):
        _stream(header, [Batch(images=((), ()))]).finish()
