"""Segments on both stream doors: an NDJSON stream and a gRPC ``EvaluateStream`` whose batches
carry segments (names, or codes with each batch's own names) answer what the one-shot request
of all their rows answers, its ``segments`` included (exactly for binary, within 1e-12
otherwise, as any stream: ``test_same_answer.py``), for every task and for the per-segment AUC
monitor; the two stream doors answer exactly alike. Bad stream segments are in the bad-input
table (``test_bad_input.py``)."""

from __future__ import annotations

import base64
import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from tests.contract.doors import (
    HEADER_FIELDS,
    assert_still_serving,
    core_answer,
    grpc_stream,
    rest_json,
    rest_stream,
)
from tests.contract.servers import Service
from tests.contract.test_same_answer import assert_streamed
from tests.contract.test_segments import REQUESTS, SUMMARY
from tests.core.test_worked_examples import FAWCETT_LABELS, FAWCETT_SCORES

StreamDoor = Callable[[Service, Sequence[Mapping[str, Any]]], dict[str, Any]]
STREAM_DOORS: dict[str, StreamDoor] = {"rest-ndjson": rest_stream, "grpc-stream": grpc_stream}
ROW_FIELDS = ("labels", "scores", "predictions", "weights", "images")
# Streams carry no challenger: the one-shot requests without one.
STREAMED = [name for name, request in REQUESTS.items() if "challenger" not in request]


def _as_list(values: Any) -> list[Any]:
    return values.tolist() if isinstance(values, np.ndarray) else list(values)


def stream_of(request: Mapping[str, Any], batches: int = 3) -> list[dict[str, Any]]:
    """The request as a stream: its header fields on line 1, its rows split into ``batches``
    batches (the first on the header line), each with its rows' segments; coded segments
    are re-coded per batch against the names that batch holds."""
    rows = {name: _as_list(request[name]) for name in ROW_FIELDS if name in request}
    count = len(next(iter(rows.values())))
    codes = request.get("segment_codes")
    names = request.get("segments")
    bounds = np.linspace(0, count, batches + 1).astype(int)
    lines: list[dict[str, Any]] = []
    for index, (start, stop) in enumerate(itertools.pairwise(bounds)):
        line = {name: values[start:stop] for name, values in rows.items()}
        if names is not None:
            line["segments"] = list(names[start:stop])
        if codes is not None:
            held = [request["segment_names"][code] for code in codes[start:stop]]
            own = sorted(set(held), reverse=True)  # another order than the request's
            line["segment_codes"] = [own.index(name) for name in held]
            line["segment_names"] = own
        if index == 0:
            line.update({k: request[k] for k in HEADER_FIELDS if k in request})
        lines.append(line)
    return lines


@pytest.mark.parametrize("door", STREAM_DOORS)
@pytest.mark.parametrize("name", STREAMED)
def test_a_stream_answers_as_the_one_shot_request(service: Service, name: str, door: str) -> None:
    request = REQUESTS[name]
    expected = rest_json(service, request)
    assert expected == core_answer(request)
    assert len(expected["segments"]) >= 2
    got = STREAM_DOORS[door](service, stream_of(request))
    assert_streamed(got, expected)
    assert got == rest_stream(service, stream_of(request))


@pytest.mark.parametrize("door", STREAM_DOORS)
def test_codes_name_segments_per_batch(service: Service, door: str) -> None:
    """Each batch's codes index its own names: a segment that only a later batch names joins
    the union."""
    request = {"task": "binary", "labels": FAWCETT_LABELS, "scores": FAWCETT_SCORES,
               "segments": ["de"] * 10 + ["fr", "it"] * 5}  # fmt: skip
    lines: list[dict[str, Any]] = [
        {"task": "binary", "labels": FAWCETT_LABELS[:10], "scores": FAWCETT_SCORES[:10],
         "segment_codes": [0] * 10, "segment_names": ["de"]},
        {"labels": FAWCETT_LABELS[10:], "scores": FAWCETT_SCORES[10:],
         "segment_codes": [1, 0] * 5, "segment_names": ["it", "fr"]},
    ]  # fmt: skip
    answer = STREAM_DOORS[door](service, lines)
    assert sorted(answer["segments"]) == ["de", "fr", "it"]
    assert answer == rest_json(service, request)


@pytest.mark.parametrize("door", STREAM_DOORS)
def test_each_segments_monitor_carries_its_state_on_a_stream(service: Service, door: str) -> None:
    """Window 1 without states, window 2 with each segment's state from window 1 in the
    header: the one-shot answers, window by window."""
    first = {"task": "binary", "labels": FAWCETT_LABELS, "scores": FAWCETT_SCORES,
             "baseline": SUMMARY, "segments": ["de", "fr"] * 10, "window": "w1"}  # fmt: skip
    answer = STREAM_DOORS[door](service, stream_of(first, batches=4))
    assert answer == rest_json(service, first)
    states = {
        name: base64.b64decode(each["monitor_state"]) for name, each in answer["segments"].items()
    }
    second = {**first, "window": "w2", "segment_monitor_states": states}
    again = STREAM_DOORS[door](service, stream_of(second, batches=4))
    assert again == core_answer(second)
    # the states were used: without them window 2 answers otherwise
    assert again["segments"]["de"] != core_answer({**first, "window": "w2"})["segments"]["de"]


@pytest.mark.parametrize("door", STREAM_DOORS)
def test_a_stream_without_segments_has_no_segments_key(service: Service, door: str) -> None:
    request = {"task": "binary", "labels": FAWCETT_LABELS, "scores": FAWCETT_SCORES}
    assert "segments" not in STREAM_DOORS[door](service, stream_of(request))
    assert_still_serving(service)
