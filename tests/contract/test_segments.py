"""Segments on every one-shot door: REST JSON, REST protobuf (answered as protobuf and as JSON)
and gRPC ``Evaluate`` answer what ``core.evaluate`` answers, its ``segments`` included, for
every task, names and codes, folding and the per-segment AUC monitor. Bad segments are in the
bad-input table (``test_bad_input.py``)."""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from typing import Any

import grpc
import numpy as np
import pytest

from evalserve.core import evaluate
from tests.contract.doors import (
    JSON,
    PROTOBUF,
    assert_still_serving,
    core_answer,
    grpc_evaluate,
    grpc_refusal,
    json_body,
    post,
    proto_request,
    rest_json,
    rest_protobuf,
    rest_refusal,
)
from tests.contract.servers import Service
from tests.core.test_worked_examples import FAWCETT_LABELS, FAWCETT_SCORES

Door = Callable[[Service, Mapping[str, Any]], dict[str, Any]]
DOORS: dict[str, Door] = {
    "rest-json": rest_json,
    "rest-protobuf": rest_protobuf,
    "rest-protobuf-answered-as-protobuf": lambda s, r: rest_protobuf(s, r, accept=PROTOBUF),
    "rest-json-answered-as-protobuf": lambda s, r: rest_json(s, r, accept=PROTOBUF),
    "grpc": grpc_evaluate,
}
COUNTRIES = ["de", "fr", "it", "es"]
SUMMARY = {"roc_auc": 0.8, "roc_auc_variance": 0.001}


def _rows(n: int, key: int) -> dict[str, Any]:
    rng = np.random.default_rng(key)
    labels = np.arange(n) % 2
    return {"labels": labels.astype(float), "scores": rng.normal(labels * 1.2, 1.0)}


MULTICLASS = {
    "task": "multiclass",
    "classes": ["cat", "dog", "fox"],
    "labels": [i % 3 for i in range(12)],
    "scores": [[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.2, 0.7], [0.4, 0.4, 0.2]] * 3,
}
IMAGE = {"gt_boxes": [[0, 0, 10, 10]], "gt_classes": [0], "pred_boxes": [[1, 1, 10, 10]],
         "pred_classes": [0], "pred_scores": [0.9]}  # fmt: skip
REQUESTS: dict[str, dict[str, Any]] = {
    "binary-names": {
        "task": "binary",
        **_rows(400, 1),
        "segments": [COUNTRIES[i % 4] for i in range(400)],
        "options": {"max_curve_points": 20},
    },
    "binary-codes-weights-challenger": {
        "task": "binary",
        **_rows(300, 2),
        "weights": [1.0 + i % 3 for i in range(300)],
        "challenger": {"scores": _rows(300, 3)["scores"]},
        "segment_codes": [(i * 7) % 3 for i in range(300)],
        "segment_names": ["a", "b", "c"],
        "options": {"max_curve_points": 0},
    },
    # one segment whose rows weigh nothing: no metrics and an insufficient_data warning
    "binary-a-segment-of-zero-weight": {
        "task": "binary",
        "labels": FAWCETT_LABELS,
        "scores": FAWCETT_SCORES,
        "weights": [0.0] * 5 + [1.0] * 15,
        "segments": ["empty"] * 5 + ["full"] * 15,
    },
    "multiclass": {**MULTICLASS, "segments": ["x", "y"] * 6},
    "regression": {
        "task": "regression",
        "labels": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        "predictions": [1.1, 2.2, 2.9, 4.2, 4.8, 6.5],
        "segments": ["u", "v", "u", "v", "u", "v"],
    },
    "detection": {"task": "detection", "images": [IMAGE] * 3, "segments": ["a", "b", "a"]},
}


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("name", REQUESTS)
def test_every_door_answers_the_cores_segments(service: Service, name: str, door: str) -> None:
    request = REQUESTS[name]
    expected = core_answer(request)
    assert set(expected["segments"]) >= {"a", "b"} or len(expected["segments"]) >= 2
    assert DOORS[door](service, request) == expected


def test_each_segment_equals_a_request_of_its_rows(service: Service) -> None:
    request = REQUESTS["binary-names"]
    answer = rest_json(service, request)
    segments = np.asarray(request["segments"])
    for country in COUNTRIES:
        rows = segments == country
        alone = {"task": "binary", "labels": request["labels"][rows],
                 "scores": request["scores"][rows], "options": request["options"]}  # fmt: skip
        assert answer["segments"][country] == rest_json(service, alone)
    without = {key: value for key, value in request.items() if key != "segments"}
    assert {k: v for k, v in answer.items() if k != "segments"} == rest_json(service, without)


@pytest.mark.parametrize("door", DOORS)
def test_fold_segments_folds_past_max_segments(service: Service, door: str) -> None:
    """103 segments, over the default max_segments of 100: with fold_segments the 99 largest
    stay and the rest (the smallest, ties by name) become __other__, a warning naming them."""
    names = [f"k{i // 2:02d}" for i in range(200)] + ["z0", "z1", "z2"]
    request = {"task": "binary", "labels": [i % 2 for i in range(203)],
               "scores": [(i * 37 % 203) / 203 for i in range(203)], "segments": names,
               "fold_segments": True, "options": {"max_curve_points": 0}}  # fmt: skip
    answer = DOORS[door](service, request)
    assert answer == core_answer(request)
    assert len(answer["segments"]) == 100
    assert answer["segments"]["__other__"]["n_samples"] == 2 + 3
    assert any("4 smallest segments folded into '__other__'" in w for w in answer["warnings"])


def test_segments_count_in_max_response_bytes(limited: Service) -> None:
    """The limited service answers at most 5 000 bytes: the request alone fits, its segments'
    responses do not (413 / RESOURCE_EXHAUSTED naming response, on every door)."""
    request = {
        "task": "binary",
        "labels": [i % 2 for i in range(20)],
        "scores": [i / 20 for i in range(20)],
        "options": {"max_curve_points": 0},
    }
    for door in ("rest-json", "rest-protobuf", "grpc"):
        assert "segments" not in DOORS[door](limited, request)
    segmented = {**request, "segments": ["a", "b", "c", "d"] * 5, "fold_segments": True}
    refusals = [
        rest_refusal(post(limited, "/v1/evaluate", json_body(segmented), JSON)),
        rest_refusal(post(limited, "/v1/evaluate", proto_request(segmented).SerializeToString(),
                          PROTOBUF)),
    ]  # fmt: skip
    with pytest.raises(grpc.RpcError) as refused:
        limited.stub.Evaluate(proto_request(segmented), timeout=60)
    refusals.append(grpc_refusal(refused.value))
    for refusal in refusals:
        assert refusal.status in (413, grpc.StatusCode.RESOURCE_EXHAUSTED), refusal
        assert refusal.field == "response", refusal
        assert "fewer segments" in refusal.message, refusal
    assert_still_serving(limited)


@pytest.mark.parametrize("door", DOORS)
def test_each_segments_monitor_carries_its_state(service: Service, door: str) -> None:
    """Window 1 without states, window 2 with each segment's state from window 1: the same
    answers as the core's, and each segment's monitor counts two windows."""
    first = {"task": "binary", "labels": FAWCETT_LABELS, "scores": FAWCETT_SCORES,
             "baseline": SUMMARY, "segments": ["de", "fr"] * 10, "window": "w1"}  # fmt: skip
    answer = DOORS[door](service, first)
    assert answer == core_answer(first)
    states = {
        name: base64.b64decode(each["monitor_state"]) for name, each in answer["segments"].items()
    }
    second = {**first, "window": "w2", "segment_monitor_states": states}
    again = DOORS[door](service, second)
    assert again == core_answer(second)
    for name in ("de", "fr"):
        alone = evaluate("binary", FAWCETT_LABELS[0 if name == "de" else 1 :: 2],
                         FAWCETT_SCORES[0 if name == "de" else 1 :: 2], baseline=SUMMARY,
                         monitor_state=states[name], window="w2")  # fmt: skip
        assert again["segments"][name]["monitor"] == alone.to_dict()["monitor"]


@pytest.mark.parametrize("door", DOORS)
def test_no_segments_means_no_segments_key(service: Service, door: str) -> None:
    request = {"task": "binary", "labels": FAWCETT_LABELS, "scores": FAWCETT_SCORES}
    assert "segments" not in DOORS[door](service, request)
