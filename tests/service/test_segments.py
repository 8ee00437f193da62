"""Segments in the service: the Prometheus series of each segment (REST and gRPC), the memory
reservation and the response limit that count them, and the codecs' reading of the segment
fields. The answers themselves, on every door, are in ``tests/contract/test_segments.py``."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from evalserve.core import Accumulator, evaluate
from evalserve.service.budget import COST_MODEL, MemoryBudget, input_bytes
from evalserve.service.config import Settings
from evalserve.service.encode import checked_response, proto_to_json
from evalserve.service.errors import MalformedRequestError, PayloadTooLargeError
from evalserve.service.json_codec import request_from_json, stream_line_from_json
from evalserve.service.metrics import ModelSeriesStore
from evalserve.service.proto_codec import (
    request_from_proto,
    stream_batch_from_proto,
    stream_header_from_proto,
)
from evalserve.service.records import Batch, ModelRef
from evalserve.service.usecase import evaluate_request
from evalserve.v1 import evaluation_pb2 as pb
from tests.core.test_worked_examples import FAWCETT_LABELS, FAWCETT_SCORES
from tests.service.test_metrics import (
    Stack,
    evaluated,
    exported_metrics,
    fawcett,
    model_labels,
    one,
    post,
    post_stream,
    scrape,
    stack,
    values,
)

SUMMARY = {"roc_auc": 0.8, "roc_auc_variance": 0.001}
HALVES = ["de", "fr"] * 10


@pytest.fixture(scope="module")
def served() -> Iterator[Stack]:
    with stack(Settings(host="127.0.0.1", max_model_series=12)) as running:
        yield running


# --- Prometheus ---------------------------------------------------------------------------------


def test_a_request_with_segments_exports_each_segments_series(served: Stack) -> None:
    body = fawcett(model={"name": "seg-rest", "version": "3"}, segments=HALVES, baseline=SUMMARY)
    answer = evaluated(served, body)
    scraped = scrape(served)
    model = values(scraped, "evalserve_model_metric", **model_labels("seg-rest", "3"))
    assert model == exported_metrics(answer)
    for name in ("de", "fr"):
        labels = model_labels("seg-rest", "3", name)
        segment = answer["segments"][name]
        assert values(scraped, "evalserve_model_metric", **labels) == exported_metrics(segment)
        monitor = segment["monitor"]["roc_auc"]
        assert (
            one(scraped, "evalserve_model_monitor_statistic", **labels, metric="roc_auc")
            == (monitor["statistic"])
        )
        assert one(scraped, "evalserve_model_monitor_alarm", **labels, metric="roc_auc") == float(
            monitor["alarm"]
        )
        assert one(scraped, "evalserve_model_rows_total", **labels) == 10
    assert one(scraped, "evalserve_model_rows_total", **model_labels("seg-rest", "3")) == 20


def test_grpc_exports_the_same_segment_series(served: Stack) -> None:
    request = pb.EvaluateRequest(
        task=pb.TASK_BINARY, labels=FAWCETT_LABELS, scores=FAWCETT_SCORES,
        model=pb.Model(name="seg-grpc"), segment_codes=[i % 2 for i in range(20)],
        segment_names=["de", "fr"],
    )  # fmt: skip
    response = served.stub.Evaluate(request, timeout=60)
    scraped = scrape(served)
    for name in ("de", "fr"):
        answer = proto_to_json(response.segments[name])
        labels = model_labels("seg-grpc", "", name)
        assert values(scraped, "evalserve_model_metric", **labels) == exported_metrics(answer)


def test_a_model_segment_beside_segments_is_refused(served: Stack) -> None:
    body = fawcett(model={"name": "seg-both", "segment": "eu"}, segments=HALVES)
    response = post(served, body)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["field"] == "model.segment"
    assert "leave model.segment empty" in error["message"]
    assert not values(scrape(served), "evalserve_model_metric", model="seg-both")


def test_segment_series_count_against_the_cap() -> None:
    """Each segment is a label set: with a cap of 3, the model and two of its three segments
    are exported, the third counts as an overflow."""
    store = ModelSeriesStore(max_series=3, ttl_seconds=60, clock=lambda: 0.0)
    result = evaluate("binary", FAWCETT_LABELS, FAWCETT_SCORES, segments=["a", "b", "c", "d"] * 5)
    model = ModelRef("capped")
    refused = store.record(model, result)
    for name, each in result.segments.items():
        refused += store.record(ModelRef("capped", segment=name), each)
    models, overflow = store.snapshot()
    assert set(models) == {model, ModelRef("capped", segment="a"), ModelRef("capped", "", "b")}
    assert refused == overflow == 2


# --- the memory reservation and the response limit -----------------------------------------------


def _request(**fields: Any) -> Any:
    body = {"task": "binary", "labels": FAWCETT_LABELS, "scores": FAWCETT_SCORES, **fields}
    return request_from_json(body, Settings())


DECODED = 20 * 8 * 2  # the labels and scores as float64
PER_RESULT = COST_MODEL.segment_result_bytes  # no segment curves by default


def _extra(max_segments: int, **fields: Any) -> int:
    """What the reservation of the Fawcett request with ``fields`` holds over the plain one."""
    budget = MemoryBudget(1 << 40)
    plain, segmented = budget.reservation(), budget.reservation()
    evaluate_request(_request(), reservation=plain)
    evaluate_request(_request(**fields), reservation=segmented, max_segments=max_segments)
    return segmented.nbytes - plain.nbytes


def test_the_reservation_counts_the_segments() -> None:
    """Names: the column, its grouping, a copy of the input and a result for each segment
    there may be (one a row, at most max_segments); codes: one result per name."""
    names = input_bytes(Batch(), [tuple(HALVES)])
    grouping = 20 * COST_MODEL.segment_row_bytes
    assert _extra(100, segments=HALVES) == names + grouping + DECODED + 20 * PER_RESULT
    assert _extra(2, segments=HALVES) == names + grouping + DECODED + 2 * PER_RESULT
    codes = {"segment_codes": [i % 2 for i in range(20)], "segment_names": ["de", "fr"]}
    assert _extra(100, **codes) == 20 * 8 + grouping + DECODED + 2 * PER_RESULT
    curves = COST_MODEL.segment_result_bytes + 300 * COST_MODEL.segment_curve_point_bytes
    assert _extra(100, segments=HALVES, options={"segment_curve_points": 300}) == (
        names + grouping + DECODED + 20 * curves
    )


def test_the_protobuf_answer_stops_at_the_segment_over_max_response_bytes() -> None:
    result = evaluate(
        "binary", FAWCETT_LABELS, FAWCETT_SCORES, segments=[f"s{i}" for i in range(20)]
    )
    whole = checked_response(result, Settings()).ByteSize()
    one_segment = checked_response(result, Settings()).segments["s0"].ByteSize()
    assert whole > 20 * one_segment
    with pytest.raises(PayloadTooLargeError) as refused:
        checked_response(result, Settings(max_response_bytes=whole - 1))
    assert refused.value.field == "response"
    assert "fewer segments" in refused.value.message
    assert checked_response(result, Settings(max_response_bytes=whole)).ByteSize() == whole


# --- the codecs ----------------------------------------------------------------------------------


def test_both_codecs_read_the_segment_fields_alike() -> None:
    state = evaluate("binary", FAWCETT_LABELS, FAWCETT_SCORES, baseline=SUMMARY).monitor_state
    assert state is not None
    fields: dict[str, Any] = {
        "segment_codes": [i % 2 for i in range(20)],
        "segment_names": ["de", "fr"],
        "fold_segments": True,
        "segment_monitor_states": {"de": state},
    }
    message = pb.EvaluateRequest(
        task=pb.TASK_BINARY, labels=FAWCETT_LABELS, scores=FAWCETT_SCORES, **fields
    )
    from_proto = request_from_proto(message, Settings()).segments
    from_json = _request(
        **{**fields, "segment_monitor_states": {"de": base64.b64encode(state).decode()}}
    ).segments
    assert from_proto is not None and from_json is not None
    assert np.array_equal(np.asarray(from_proto.values), np.asarray(from_json.values))
    assert (from_proto.names, from_proto.fold) == (from_json.names, from_json.fold) == (
        ("de", "fr"), True,
    )  # fmt: skip
    assert from_proto.monitor_states == from_json.monitor_states == {"de": state}


@pytest.mark.parametrize(
    ("fields", "field", "says"),
    [
        ({"segments": "de"}, "segments", "expected an array of strings"),
        ({"segments": ["de"] * 19 + [None]}, "segments", "row 19 is null"),
        ({"segment_codes": [True] * 20, "segment_names": ["de"]}, "segment_codes", "whole"),
        ({"segment_codes": [2**70] * 20, "segment_names": ["de"]}, "segment_codes", "64 bits"),
        ({"segments": HALVES, "segment_names": ["de", "fr"]}, "segment_names", "segment_codes"),
        ({"segments": HALVES, "fold_segments": "yes"}, "fold_segments", "boolean"),
        (
            {"segments": HALVES, "segment_monitor_states": {"de": "@@"}},
            "segment_monitor_states.de",
            "base64",
        ),
        (
            {"segments": HALVES, "segment_monitor_states": ["de"]},
            "segment_monitor_states",
            "object",
        ),
    ],
)
def test_the_json_codec_refuses_segment_fields_of_the_wrong_type(
    fields: dict[str, Any], field: str, says: str
) -> None:
    with pytest.raises(MalformedRequestError) as refused:
        _request(**fields)
    assert refused.value.field == field
    assert says in refused.value.message


def test_an_empty_segments_array_is_an_absent_field() -> None:
    request = _request(segments=[])
    assert request.segments is None
    assert "segments" not in evaluate_request(request).to_dict()


def test_many_rows_of_segments_are_checked_against_max_rows() -> None:
    body = {"task": "binary", "labels": [0, 1], "scores": [0.2, 0.7], "segments": ["a"] * 3}
    with pytest.raises(PayloadTooLargeError) as refused:
        request_from_json(body, Settings(max_rows=2))
    assert refused.value.field == "segments"


# --- streams -------------------------------------------------------------------------------------


def test_a_stream_with_segments_exports_each_segments_series_on_both_doors(
    served: Stack,
) -> None:
    """The stream's observer path is the one-shot's: the model's series and each segment's
    (label segment = its name), the monitor's gauges included."""
    halves: list[dict[str, Any]] = [
        {"labels": FAWCETT_LABELS[:10], "scores": FAWCETT_SCORES[:10], "segments": HALVES[:10]},
        {"labels": FAWCETT_LABELS[10:], "scores": FAWCETT_SCORES[10:], "segments": HALVES[10:]},
    ]
    header = {"task": "binary", "baseline": SUMMARY, "model": {"name": "seg-stream-rest"}}
    response = post_stream(served, header, *halves)
    assert response.status_code == 200, response.text
    rest = response.json()
    assert rest == evaluated(served, fawcett(segments=HALVES, baseline=SUMMARY))
    messages = [
        pb.EvaluateStreamRequest(
            header=pb.StreamHeader(
                task=pb.TASK_BINARY, model=pb.Model(name="seg-stream-grpc"),
                baseline=pb.Baseline(roc_auc=0.8, roc_auc_variance=0.001),
            )
        ),
        *(
            pb.EvaluateStreamRequest(
                labels=half["labels"], scores=half["scores"],
                segment_codes=[0 if name == "de" else 1 for name in half["segments"]],
                segment_names=["de", "fr"],
            )
            for half in halves
        ),
    ]  # fmt: skip
    grpc_answer = proto_to_json(served.stub.EvaluateStream(iter(messages), timeout=60))
    assert grpc_answer == rest
    scraped = scrape(served)
    for model in ("seg-stream-rest", "seg-stream-grpc"):
        assert values(scraped, "evalserve_model_metric", **model_labels(model)) == (
            exported_metrics(rest)
        )
        for name in ("de", "fr"):
            labels = model_labels(model, "", name)
            segment = rest["segments"][name]
            assert values(scraped, "evalserve_model_metric", **labels) == exported_metrics(segment)
            assert one(scraped, "evalserve_model_rows_total", **labels) == 10
            assert (
                one(scraped, "evalserve_model_monitor_statistic", **labels, metric="roc_auc")
                == (segment["monitor"]["roc_auc"]["statistic"])
            )


def test_a_streams_segments_count_in_its_state_budget() -> None:
    """The stream's state holds each segment's state beside the overall one: a stream whose
    state fits max_stream_state_bytes without segments is refused with them, at the batch that
    grew it past the cap, naming the line."""
    rows = {"labels": [i % 2 for i in range(40)], "scores": [i / 40 for i in range(40)]}
    plain = Accumulator("binary").update(rows["labels"], rows["scores"])
    cap = plain.nbytes + 64  # the overall state fits, not the segments' beside it
    with stack(Settings(host="127.0.0.1", max_stream_state_bytes=cap)) as running:
        assert post_stream(running, {"task": "binary", **rows}).status_code == 200
        segmented = {**rows, "segments": [f"s{i % 4}" for i in range(40)]}
        response = post_stream(running, {"task": "binary"}, segmented)
        assert response.status_code == 413, response.text
        error = response.json()["error"]
        assert error["field"] == "line 2"
        assert "max_stream_state_bytes" in error["message"]


def test_a_stream_message_does_not_fold_segments() -> None:
    with pytest.raises(MalformedRequestError) as refused:
        stream_line_from_json(
            {"task": "binary", "segments": HALVES, "fold_segments": True}, Settings()
        )
    assert refused.value.field == "fold_segments"
    assert "folding needs every row at once" in refused.value.message
    assert "fold_segments" not in {f.name for f in pb.EvaluateStreamRequest.DESCRIPTOR.fields}


def test_both_codecs_read_a_stream_messages_segments_alike() -> None:
    state = evaluate("binary", FAWCETT_LABELS, FAWCETT_SCORES, baseline=SUMMARY).monitor_state
    assert state is not None
    codes: dict[str, Any] = {
        "segment_codes": [i % 2 for i in range(20)],
        "segment_names": ["de", "fr"],
    }
    message = pb.EvaluateStreamRequest(
        header=pb.StreamHeader(task=pb.TASK_BINARY, segment_monitor_states={"de": state}),
        labels=FAWCETT_LABELS, scores=FAWCETT_SCORES,
        segment_codes=codes["segment_codes"], segment_names=codes["segment_names"],
    )  # fmt: skip
    header = stream_header_from_proto(message.header, Settings())
    batch = stream_batch_from_proto(message, Settings())
    line = {"task": "binary", "labels": FAWCETT_LABELS, "scores": FAWCETT_SCORES, **codes,
            "segment_monitor_states": {"de": base64.b64encode(state).decode()}}  # fmt: skip
    json_header, json_batch = stream_line_from_json(line, Settings())
    assert json_header is not None
    assert header.segment_monitor_states == json_header.segment_monitor_states == {"de": state}
    assert batch.segments is not None and json_batch.segments is not None
    assert np.array_equal(np.asarray(batch.segments.values), np.asarray(json_batch.segments.values))
    assert batch.segments.names == json_batch.segments.names == ("de", "fr")
