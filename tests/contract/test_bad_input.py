"""Bad input: one clear error, the same on every door, and nothing else breaks.

``CASES`` is the one table. Each case is written once, transport-neutral (the JSON body, a
stream's lines, or raw bytes; see ``tests/contract/doors.py``), with what must come back: the
HTTP status, the gRPC code, the field the error names, and a fragment the message says. It runs
through every door that can carry it: REST JSON, REST protobuf and gRPC ``Evaluate`` for a
request; NDJSON and gRPC ``EvaluateStream`` for a stream. A case only one encoding can express
says so (``only``): wrong types, unknown options and malformed JSON are JSON's; non-finite packed
numbers, unknown enum values and corrupt messages are protobuf's.

After the whole table, both services still answer ``/healthz``, ``/readyz``, gRPC health and a
good request on every door.

Fields of a stream are named per line on REST (``line 3.scores``; line 1 is the header) and per
message on gRPC (``batch 3.scores``, ``header``); ``grpc_field`` says so where they differ. A
message over the size limit is refused by gRPC itself before the service sees it, so it names
no field there (``grpc_field=None``); its message still names the limit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import grpc
import pytest

from evalserve.core import evaluate
from evalserve.service.errors import in_protobuf_words
from tests.contract.doors import (
    JSON,
    NDJSON,
    PROTOBUF,
    Refusal,
    assert_still_serving,
    f64,
    grpc_raw_evaluate,
    grpc_refusal,
    json_body,
    ndjson_body,
    post,
    proto_request,
    proto_stream,
    rest_refusal,
)
from tests.contract.servers import Service
from tests.core.test_worked_examples import FAWCETT_LABELS, FAWCETT_SCORES

INVALID = grpc.StatusCode.INVALID_ARGUMENT
EXHAUSTED = grpc.StatusCode.RESOURCE_EXHAUSTED
NAN = float("nan")
INF = float("inf")

Door = Literal["rest-json", "rest-protobuf", "grpc", "rest-ndjson", "grpc-stream"]
REQUEST_DOORS: tuple[Door, ...] = ("rest-json", "rest-protobuf", "grpc")
STREAM_DOORS: tuple[Door, ...] = ("rest-ndjson", "grpc-stream")
GRPC_DOORS = ("grpc", "grpc-stream")
PROTOBUF_DOORS = ("rest-protobuf", "grpc", "grpc-stream")

_DEFAULT = object()


@dataclass(frozen=True)
class Bad:
    """One bad input and the refusal it must get on every door that can carry it."""

    request: Mapping[str, Any] | Sequence[Mapping[str, Any]] | bytes
    http: int
    grpc: grpc.StatusCode
    field: str
    says: str = ""
    grpc_field: str | object | None = _DEFAULT  # when gRPC names the field otherwise
    only: Literal["json", "protobuf"] | None = None  # the one encoding that can express it
    stream: bool = False
    server: Literal["service", "limited", "capped"] = "service"
    xfail: Mapping[Door, str] = dataclasses.field(default_factory=dict)
    # False where JSON and protobuf cannot say the same thing, so the messages differ too.
    same_message: bool = True

    def doors(self) -> tuple[Door, ...]:
        if self.stream:
            return STREAM_DOORS[:1] if self.only == "json" else STREAM_DOORS
        if self.only == "json":
            return ("rest-json",)
        if self.only == "protobuf":
            return ("rest-protobuf", "grpc")
        return REQUEST_DOORS

    def expected_field(self, door: Door) -> str | None:
        if door in GRPC_DOORS and self.grpc_field is not _DEFAULT:
            assert self.grpc_field is None or isinstance(self.grpc_field, str)
            return self.grpc_field
        return self.field


def fawcett(**fields: Any) -> dict[str, Any]:
    """The Fawcett request with some fields replaced (None removes one)."""
    body = {"task": "binary", "labels": FAWCETT_LABELS, "scores": FAWCETT_SCORES, **fields}
    return {k: v for k, v in body.items() if v is not None}


def options(**values: Any) -> dict[str, Any]:
    return fawcett(options=values)


def rows(n: int, **fields: Any) -> dict[str, Any]:
    """A batch (or body) of ``n`` good rows."""
    return {"labels": [i % 2 for i in range(n)], "scores": [i / n for i in range(n)], **fields}


HEADER = {"task": "binary"}
SUMMARY = {"roc_auc": 0.8, "roc_auc_variance": 0.001}
# A good monitor state: the first window of the Fawcett rows against SUMMARY.
STATE = evaluate("binary", FAWCETT_LABELS, FAWCETT_SCORES, baseline=SUMMARY).monitor_state
MULTICLASS_ROWS = {"labels": [0, 2], "scores": [[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]}
MULTILABEL_ROWS = {"labels": [[1, 0, 1], [0, 1, 0]], "scores": [[0.9, 0.2, 0.7], [0.1, 0.8, 0.4]]}
IMAGE = {"gt_boxes": [[0, 0, 10, 10]], "gt_classes": [0], "pred_boxes": [[1, 1, 10, 10]],
         "pred_classes": [0], "pred_scores": [0.9]}  # fmt: skip
BIG = 5000  # rows: 80 KB of raw labels and scores, over the limited service's 64 KiB
OPTION = 422, INVALID

CASES: dict[str, Bad] = {
    # --- lengths and emptiness
    "length-mismatch-scores": Bad(fawcett(scores=FAWCETT_SCORES[:-1]), 422, INVALID, "scores",
                                  "expected 20 values"),
    "length-mismatch-weights": Bad(fawcett(weights=[1.0] * 19), 422, INVALID, "weights",
                                   "expected 20 values"),
    "length-mismatch-predictions": Bad(fawcett(predictions=[1.0] * 21), 422, INVALID,
                                       "predictions", "expected 20 values"),
    "length-mismatch-raw-columns": Bad({"task": "binary", "labels_f64": f64([0, 1, 1]),
                                        "scores_f64": f64([0.1, 0.9])}, 422, INVALID, "scores",
                                       "expected 3 values"),
    # protobuf has no empty-but-present column: there, empty columns are absent ("required").
    "empty-columns": Bad(fawcett(labels=[], scores=[]), 422, INVALID, "labels",
                         same_message=False),
    "no-rows-at-all": Bad(HEADER, 422, INVALID, "labels", "required"),
    "no-scores-or-predictions": Bad(fawcett(scores=None), 422, INVALID, "scores", "required"),
    # --- numbers that are not finite
    "nan-score-raw": Bad(fawcett(scores=None, scores_f64=f64([NAN, *FAWCETT_SCORES[1:]])),
                         422, INVALID, "scores", "finite"),
    "inf-score-raw": Bad(fawcett(scores=None, scores_f64=f64([*FAWCETT_SCORES[:-1], INF])),
                         422, INVALID, "scores", "row 19 is inf"),
    "minus-inf-weight-raw": Bad(fawcett(weights_f64=f64([1.0] * 19 + [-INF])), 422, INVALID,
                                "weights", "finite"),
    "nan-score-packed": Bad(fawcett(scores=[NAN, *FAWCETT_SCORES[1:]]), 422, INVALID, "scores",
                            "finite", only="protobuf"),
    # --- labels and predictions
    "label-2": Bad(fawcett(labels=[2, *FAWCETT_LABELS[1:]]), 422, INVALID, "labels",
                   "0 or 1"),
    "label-minus-1": Bad(fawcett(labels=[*FAWCETT_LABELS[:-1], -1]), 422, INVALID, "labels",
                         "row 19 is -1"),
    "label-half": Bad(fawcett(labels=[0.5, *FAWCETT_LABELS[1:]]), 422, INVALID, "labels",
                      "0 or 1"),
    "label-names-for-binary": Bad(fawcett(labels=["p", "n"] * 10), 422, INVALID, "labels",
                                  "got names ('p', 'n'): set options.positive_label to the "
                                  "name of the positive class (for example 'p'), or send 1 "
                                  "for the positive class and 0 for the other"),
    # --- options.positive_label: labels read as scikit-learn's pos_label
    "positive-label-three-names": Bad(
        fawcett(labels=["yes", "no", "maybe", "no"] * 5, options={"positive_label": "yes"}),
        422, INVALID, "labels",
        "expected two distinct labels for task 'binary', but row 2 is 'maybe', a third after "
        "'yes' and 'no'",
    ),
    "positive-label-none-of-two": Bad(
        fawcett(labels=["no", "maybe"] * 10, options={"positive_label": "yes"}), 422, INVALID,
        "options.positive_label", "is 'yes', but the labels are 'no' and 'maybe': expected one "
        "of them",
    ),
    "positive-label-name-for-numbers": Bad(
        options(positive_label="yes"), 422, INVALID, "options.positive_label",
        "the labels are numbers, so expected a number, but got 'yes'",
    ),
    "positive-label-three-numbers": Bad(
        fawcett(labels=[1, 2, 3, 2] * 5, options={"positive_label": "1"}), 422, INVALID,
        "labels", "row 2 is 3, a third after 1 and 2",
    ),
    "positive-label-empty": Bad(options(positive_label=""), *OPTION, "options.positive_label",
                                "expected a string of 1 to 256 characters"),
    "positive-label-too-long": Bad(options(positive_label="y" * 257), *OPTION,
                                   "options.positive_label",
                                   "expected a string of 1 to 256 characters"),
    "positive-label-object": Bad(options(positive_label={"name": "yes"}), *OPTION,
                                 "options.positive_label", "expected a string or a number",
                                 only="json"),
    "stream-positive-label-third-name-in-batch-3": Bad(
        [{**HEADER, "options": {"positive_label": "yes"}},
         {"labels": ["yes", "no"], "scores": [0.9, 0.1]},
         {"labels": ["no", "yes", "maybe"], "scores": [0.2, 0.3, 0.4]}],
        422, INVALID, "line 3.labels", "row 2 is 'maybe', a third after 'yes' and 'no'",
        grpc_field="batch 3.labels", stream=True,
    ),
    "stream-label-names-for-binary-without-the-option": Bad(
        [HEADER, {"labels": ["yes", "no"], "scores": [0.9, 0.1]}], 422, INVALID,
        "line 2.labels", "set options.positive_label", grpc_field="batch 2.labels", stream=True,
    ),
    "prediction-outside-0-1": Bad(fawcett(predictions=[3.0] * 20), 422, INVALID,
                                  "predictions", "0 or 1"),
    # --- weights
    "negative-weight": Bad(fawcett(weights=[1.0] * 19 + [-1.0]), 422, INVALID, "weights",
                           "non-negative"),
    "all-zero-weights": Bad(fawcett(weights=[0.0] * 20), 422, INVALID, "weights", "zero"),
    "huge-weight": Bad(fawcett(weights=[1e300] + [1.0] * 19), 422, INVALID, "weights",
                       "row 0"),
    "tiny-weight": Bad(fawcett(weights=[1.0] * 19 + [1e-300]), 422, INVALID, "weights",
                       "row 19"),
    # --- options out of range
    "threshold-inf": Bad(options(threshold=INF), *OPTION, "options.threshold", "finite",
                         only="protobuf"),
    "threshold-nan": Bad(options(threshold=NAN), *OPTION, "options.threshold", "finite",
                         only="protobuf"),
    "threshold-string": Bad(options(threshold="high"), *OPTION, "options.threshold",
                            "expected a number", only="json"),
    "beta-0": Bad(options(beta=0.0), *OPTION, "options.beta", "(0, 10000]"),
    "beta-negative": Bad(options(beta=-1.0), *OPTION, "options.beta", "(0, 10000]"),
    "beta-huge": Bad(options(beta=1e5), *OPTION, "options.beta", "(0, 10000]"),
    "head-k-0": Bad(options(head_k=[5, 0]), *OPTION, "options.head_k", "k > 0"),
    "head-k-negative": Bad(options(head_k=[-5]), *OPTION, "options.head_k", "k > 0"),
    "head-k-65-values": Bad(options(head_k=list(range(1, 66))), *OPTION, "options.head_k",
                            "at most 64"),
    "head-k-inf": Bad(options(head_k=[INF]), *OPTION, "options.head_k", "finite",
                      only="protobuf"),
    "top-k-0": Bad(options(top_k=[0]), *OPTION, "options.top_k", "[1, 1000000]"),
    "top-k-huge": Bad(options(top_k=[2_000_000]), *OPTION, "options.top_k", "[1, 1000000]"),
    "top-k-fraction": Bad(options(top_k=[1.5]), *OPTION, "options.top_k", "integer",
                          only="json"),
    "max-fpr-0": Bad(options(max_fpr=0.0), *OPTION, "options.max_fpr", "(0, 1]"),
    "max-fpr-above-1": Bad(options(max_fpr=1.5), *OPTION, "options.max_fpr", "(0, 1]"),
    "confidence-level-0": Bad(options(confidence_level=0.0), *OPTION,
                              "options.confidence_level", "(0, 1)"),
    "confidence-level-1": Bad(options(confidence_level=1.0), *OPTION,
                              "options.confidence_level", "(0, 1)"),
    "confidence-level-95": Bad(options(confidence_level=95.0), *OPTION,
                               "options.confidence_level", "(0, 1)"),
    "auc-interval-unknown": Bad(options(auc_interval="exact"), *OPTION, "options.auc_interval",
                                "'wald'"),
    "alpha-1": Bad(options(alpha=1.0), *OPTION, "options.alpha", "(0, 1)"),
    "drift-min-samples-1": Bad(options(drift_min_samples=1), *OPTION,
                               "options.drift_min_samples", "[2, 1e12]"),
    "bootstrap-replicates-1": Bad(options(bootstrap_replicates=1), *OPTION,
                                  "options.bootstrap_replicates", "at least 2"),
    "bootstrap-replicates-huge": Bad(options(bootstrap_replicates=10**6), *OPTION,
                                     "options.bootstrap_replicates", "[0, 100000]"),
    "max-curve-points-1": Bad(options(max_curve_points=1), *OPTION, "options.max_curve_points",
                              "at least 2"),
    "max-curve-points-negative": Bad(options(max_curve_points=-1), *OPTION,
                                     "options.max_curve_points", "[0, 100000]"),
    "max-curve-points-huge": Bad(options(max_curve_points=10**7), *OPTION,
                                 "options.max_curve_points", "[0, 100000]"),
    "segment-curve-points-1": Bad(options(segment_curve_points=1), *OPTION,
                                  "options.segment_curve_points", "at least 2"),
    "calibration-bins-0": Bad(options(calibration_bins=0), *OPTION, "options.calibration_bins",
                              "[1, 10000]"),
    "n-params-negative": Bad(options(n_params=-3), *OPTION, "options.n_params", "integer"),
    "unknown-option": Bad(options(treshold=0.5), 400, INVALID, "options.treshold",
                          "unknown field", only="json"),
    # --- the task
    "unknown-task-name": Bad(fawcett(task="ranking"), 400, INVALID, "task", "ranking",
                             only="json"),
    # JSON: a number where a task name belongs; protobuf: an enum value this server lacks.
    "unknown-task-number": Bad(fawcett(task=99), 400, INVALID, "task", "99",
                               same_message=False),
    # JSON lists the task names, protobuf the enum's wire names.
    "unspecified-task": Bad(fawcett(task=None), 400, INVALID, "task", "required",
                            same_message=False),
    # binary rows sent as multiclass: one score per row is a matrix of one column
    "multiclass-with-one-score-per-row": Bad(fawcett(task="multiclass"), 422, INVALID, "scores",
                                             "at least 2 columns"),
    # --- drift baseline and challenger
    "baseline-auc-without-variance-or-counts": Bad(fawcett(baseline={"roc_auc": 0.9}), 422,
                                                   INVALID, "baseline", "roc_auc_variance"),
    "baseline-auc-out-of-range": Bad(
        fawcett(baseline={"roc_auc": 1.5, "roc_auc_variance": 0.001}), 422, INVALID,
        "baseline.roc_auc", "[0, 1]",
    ),
    "baseline-negative-variance": Bad(
        fawcett(baseline={"roc_auc": 0.8, "roc_auc_variance": -0.001}), 422, INVALID,
        "baseline.roc_auc_variance", "[0, 0.25]",
    ),
    "baseline-variance-and-counts": Bad(
        fawcett(baseline={"roc_auc": 0.8, "roc_auc_variance": 0.001, "n_positive": 50,
                          "n_negative": 50}), 422, INVALID, "baseline", "not both",
    ),
    "baseline-summary-and-payload": Bad(
        fawcett(baseline={"roc_auc": 0.8, "roc_auc_variance": 0.001, "labels": [0, 1],
                          "scores": [0.2, 0.4]}), 422, INVALID, "baseline", "either",
    ),
    "baseline-payload-one-class": Bad(
        fawcett(baseline={"labels": [1, 1, 1], "scores": [0.1, 0.2, 0.3]}), 422, INVALID,
        "baseline.labels", "both classes",
    ),
    "baseline-payload-length-mismatch": Bad(
        fawcett(baseline={"labels": [0, 1, 1], "scores": [0.1, 0.2]}), 422, INVALID,
        "baseline.scores", "expected 3 values",
    ),
    "baseline-payload-label-2": Bad(
        fawcett(baseline={"labels": [0, 2], "scores": [0.1, 0.2]}), 422, INVALID,
        "baseline.labels", "0 or 1",
    ),
    "coverage-fewer-predictions-than-rows": Bad(
        fawcett(coverage={"n_predictions": 19}), 422, INVALID, "coverage.n_predictions",
        "at least the 20 labelled rows",
    ),
    "coverage-zero-predictions": Bad(fawcett(coverage={"n_predictions": 0}), 422, INVALID,
                                     "coverage.n_predictions", "at least 1"),
    "coverage-negative-delay": Bad(fawcett(coverage={"label_delay_seconds": -1.5}), 422,
                                   INVALID, "coverage.label_delay_seconds", ">= 0"),
    "coverage-empty": Bad(fawcett(coverage={}), 422, INVALID, "coverage", "at least one of",
                          only="json"),
    "coverage-unknown-field": Bad(fawcett(coverage={"n_labels": 30}), 400, INVALID,
                                  "coverage.n_labels", "unknown field", only="json"),
    "coverage-predictions-not-whole": Bad(fawcett(coverage={"n_predictions": 30.5}), 400,
                                          INVALID, "coverage.n_predictions", "whole number",
                                          only="json"),
    "stream-coverage-fewer-predictions-than-rows": Bad(
        [{**HEADER, "coverage": {"n_predictions": 5}}, rows(4), rows(4)], 422, INVALID,
        "coverage.n_predictions", "at least the 8 labelled rows", stream=True,
    ),
    "stream-coverage-negative-delay": Bad(
        [{**HEADER, "coverage": {"label_delay_seconds": -1}}, rows(4)], 422, INVALID,
        "line 1.coverage.label_delay_seconds", ">= 0", grpc_field="coverage.label_delay_seconds",
        stream=True,
    ),
    "monitor-state-damaged": Bad(
        fawcett(baseline=SUMMARY, monitor_state=b"not a monitor state"), 422, INVALID,
        "monitor_state", "not an evalserve monitor state",
    ),
    "monitor-state-without-baseline": Bad(fawcett(monitor_state=STATE), 422, INVALID,
                                          "monitor_state", "needs a baseline"),
    "monitor-state-of-another-baseline": Bad(
        fawcett(baseline={"roc_auc": 0.9, "roc_auc_variance": 0.001}, monitor_state=STATE), 422,
        INVALID, "monitor_state", "start a new monitor",
    ),
    "monitor-state-not-base64": Bad(fawcett(baseline=SUMMARY, monitor_state="@@"), 400, INVALID,
                                    "monitor_state", "base64", only="json"),
    "window-too-long": Bad(fawcett(baseline=SUMMARY, window="w" * 200), 422, INVALID, "window",
                           "at most 128 characters"),
    "stream-monitor-state-damaged": Bad(
        [{**HEADER, "baseline": SUMMARY, "monitor_state": b"\x00" * 40}, rows(4)], 422, INVALID,
        "line 1.monitor_state", "not an evalserve monitor state", grpc_field="monitor_state",
        stream=True,
    ),
    "baseline-unknown-field": Bad(fawcett(baseline={"auc": 0.9}), 400, INVALID,
                                  "baseline.auc", "unknown field", only="json"),
    "challenger-length-mismatch": Bad(fawcett(challenger={"scores": FAWCETT_SCORES[:-2]}), 422,
                                      INVALID, "challenger.scores", "expected 20 values"),
    "challenger-not-finite": Bad(
        fawcett(challenger={"scores_f64": f64([*FAWCETT_SCORES[:-1], INF])}), 422, INVALID,
        "challenger.scores", "finite",
    ),
    "challenger-unknown-field": Bad(fawcett(challenger={"score": FAWCETT_SCORES}), 400,
                                    INVALID, "challenger.score", "unknown field", only="json"),
    # --- malformed bodies and wrong types
    "malformed-json": Bad(b'{"task": "binary", "labels": [0, 1', 400, INVALID, "body",
                          "not valid JSON", only="json"),
    "json-not-an-object": Bad(b"[0, 1]", 400, INVALID, "body", "expected an object",
                              only="json"),
    # What Python's json.dumps writes for float("nan"): named, with its field and row.
    "json-nan-literal": Bad(b'{"task": "binary", "labels": [1, 0], "scores": [0.5, NaN]}', 400,
                            INVALID, "scores", "row 1 is NaN, which JSON does not have",
                            only="json"),
    "json-infinity-literal-in-options": Bad(
        b'{"task": "binary", "labels": [1], "scores": [0.5], "options": {"threshold": -Infinity}}',
        400, INVALID, "options.threshold", "is -Infinity, which JSON does not have", only="json",
    ),
    "json-null-label": Bad(fawcett(labels=[1, None, *FAWCETT_LABELS[2:]]), 400, INVALID,
                           "labels", "row 1 is null; every row needs a number", only="json"),
    "json-null-in-a-score-matrix": Bad(
        {"task": "multiclass", "labels": [0, 1], "scores": [[0.5, 0.5], [0.5, None]]}, 400,
        INVALID, "scores", "row 1, column 1 is null", only="json",
    ),
    "corrupt-protobuf": Bad(b"\xff\xff\xff\xff", 400, INVALID, "body", "protobuf",
                            only="protobuf"),
    "truncated-protobuf": Bad(
        proto_request(fawcett()).SerializeToString()[:-3], 400, INVALID, "body", "protobuf",
        only="protobuf",
    ),
    "labels-a-string": Bad(fawcett(labels="0101"), 400, INVALID, "labels", "array",
                           only="json"),
    "scores-with-an-object": Bad(fawcett(scores=[0.1, {"a": 1}] * 10), 400, INVALID, "scores",
                                 "row 1", only="json"),
    "scores-2-d": Bad(fawcett(scores=[[0.1, 0.9]] * 20), 422, INVALID, "scores", "1-d",
                      only="json"),
    "options-an-array": Bad(fawcett(options=[0.5]), 400, INVALID, "options",
                            "expected an object", only="json"),
    "model-name-a-number": Bad(fawcett(model={"name": 7}), 400, INVALID, "model.name",
                               "expected a string", only="json"),
    "unknown-field": Bad(fawcett(lables=[1]), 400, INVALID, "lables", "unknown field",
                         only="json"),
    "bad-base64": Bad(fawcett(scores=None, scores_f64="not base64!"), 400, INVALID,
                      "scores_f64", "base64", only="json"),
    # --- the raw form of a column
    "scores-packed-and-raw": Bad(fawcett(scores_f64=f64(FAWCETT_SCORES)), 400, INVALID,
                                 "scores", "not both"),
    "labels-packed-and-raw": Bad(fawcett(labels_f64=f64(FAWCETT_LABELS)), 400, INVALID,
                                 "labels", "not both"),
    "raw-bytes-not-a-multiple-of-8": Bad(fawcett(scores=None, scores_f64=b"\0" * 159), 400,
                                         INVALID, "scores_f64", "159 bytes"),
    # --- the model
    "model-without-name": Bad(fawcett(model={"version": "7"}), 400, INVALID, "model.name",
                              "required"),
    "model-with-empty-name": Bad(fawcett(model={"name": "", "segment": "eu"}), 400, INVALID,
                                 "model.name", "required"),
    # Model names become Prometheus label values: at most 128 characters of [A-Za-z0-9_.:/-].
    "model-name-with-a-space": Bad(fawcett(model={"name": "fraud model"}), 422, INVALID,
                                   "model.name", "' ' at position 5"),
    "model-version-too-long": Bad(fawcett(model={"name": "fraud", "version": "7" * 129}), 422,
                                  INVALID, "model.version", "at most 128 characters"),
    "model-segment-with-a-brace": Bad(fawcett(model={"name": "fraud", "segment": "eu}"}), 422,
                                      INVALID, "model.segment", "'}'"),
    # --- segments (one-shot requests; streams below)
    "segments-of-the-wrong-length": Bad(fawcett(segments=["de", "fr"] * 9), 422, INVALID,
                                        "segments", "one segment per row (20), but got 18"),
    "segments-over-max-segments": Bad(fawcett(segments=[f"s{i % 4}" for i in range(20)]), 422,
                                      INVALID, "segments",
                                      "at most 3 distinct segments, but got 4",
                                      server="limited"),
    "segments-over-the-default-max-segments": Bad(
        {**HEADER, **rows(202), "segments": [f"s{i % 101}" for i in range(202)]}, 422, INVALID,
        "segments", "at most 100 distinct segments, but got 101: send fewer, or fold",
    ),
    "segment-name-empty": Bad(fawcett(segments=["de"] * 19 + [""]), 422, INVALID, "segments",
                              "the segment name at row 19 is empty"),
    "segment-name-reserved": Bad(fawcett(segments=["de"] * 19 + ["__other__"]), 422, INVALID,
                                 "segments", "reserved"),
    # Refused as the codec reads it: a segment's name becomes a Prometheus label value.
    "segment-name-of-200000-characters": Bad(
        fawcett(segments=["de"] * 19 + ["x" * 200_000]), 422, INVALID, "segments",
        "at most 128 characters (max_label_chars), but row 19 has 200000",
    ),
    "segment-code-out-of-range": Bad(
        fawcett(segment_codes=[0, 1] * 9 + [1, 2], segment_names=["de", "fr"]), 422, INVALID,
        "segments", "the code at row 19 is 2, not one of the 2 segment_names",
    ),
    "segment-code-negative": Bad(
        fawcett(segment_codes=[-1] + [0] * 19, segment_names=["de"]), 422, INVALID, "segments",
        "the code at row 0 is -1",
    ),
    "segment-codes-of-the-wrong-length": Bad(
        fawcett(segment_codes=[0, 1], segment_names=["de", "fr"]), 422, INVALID, "segments",
        "one integer code per row (20)",
    ),
    "segment-codes-without-names": Bad(fawcett(segment_codes=[0] * 20), 400, INVALID,
                                       "segment_names", "required with segment_codes"),
    "segment-names-not-distinct": Bad(
        fawcett(segment_codes=[0] * 20, segment_names=["de", "de"]), 422, INVALID,
        "segment_names", "distinct",
    ),
    "segments-and-segment-codes": Bad(
        fawcett(segments=["de"] * 20, segment_codes=[0] * 20, segment_names=["de"]), 400,
        INVALID, "segments", "not both",
    ),
    "segment-monitor-state-of-an-unknown-segment": Bad(
        fawcett(segments=["de"] * 20, baseline=SUMMARY, segment_monitor_states={"fr": STATE}),
        422, INVALID, "segment_monitor_states", "names a segment the rows lack: 'fr'",
    ),
    "segment-monitor-state-damaged": Bad(
        fawcett(segments=["de"] * 20, baseline=SUMMARY,
                segment_monitor_states={"de": b"not a monitor state"}),
        422, INVALID, "segment_monitor_states.de", "not an evalserve monitor state",
    ),
    "segment-monitor-states-without-segments": Bad(
        fawcett(baseline=SUMMARY, segment_monitor_states={"de": STATE}), 422, INVALID,
        "segment_monitor_states", "only a request with segments",
    ),
    "segments-with-a-model-segment": Bad(
        fawcett(segments=["de"] * 20, model={"name": "fraud", "segment": "eu"}), 422, INVALID,
        "model.segment", "leave model.segment empty",
    ),
    "segments-not-strings": Bad(fawcett(segments=[1] * 20), 400, INVALID, "segments",
                                "expected an array of strings", only="json"),
    "segment-codes-not-whole": Bad(
        fawcett(segment_codes=[0.5] * 20, segment_names=["de"]), 400, INVALID, "segment_codes",
        "whole numbers", only="json",
    ),
    # --- segments on streams: each batch's own; errors name the line (REST) or batch (gRPC)
    "stream-segments-in-some-batches-only": Bad(
        [HEADER, rows(4, segments=["de", "fr"] * 2), rows(4)], 422, INVALID, "line 3.segments",
        "this accumulator's batches carry segments: every batch must",
        grpc_field="batch 3.segments", stream=True,
    ),
    "stream-segments-after-batches-without": Bad(
        [HEADER, rows(4), rows(4, segments=["de", "fr"] * 2)], 422, INVALID, "line 3.segments",
        "earlier batches carry no segments", grpc_field="batch 3.segments", stream=True,
    ),
    "stream-segment-name-reserved-in-batch-3": Bad(
        [HEADER, rows(4, segments=["de"] * 4), rows(4, segments=["de", "__other__"] * 2)], 422,
        INVALID, "line 3.segments", "reserved", grpc_field="batch 3.segments", stream=True,
    ),
    "stream-segment-code-out-of-range-in-batch-3": Bad(
        [HEADER, rows(2, segments=["de", "fr"]),
         rows(2, segment_codes=[0, 1], segment_names=["de"])],
        422, INVALID, "line 3.segments", "the code at row 1 is 1, not one of the 1 segment_names",
        grpc_field="batch 3.segments", stream=True,
    ),
    "stream-segments-over-max-segments-across-batches": Bad(
        [HEADER, rows(4, segments=["a", "b"] * 2), rows(4, segments=["b", "c"] * 2),
         rows(4, segments=["c", "d"] * 2)],
        422, INVALID, "line 4.segments", "at most 3 distinct segments, but the batches have 4",
        grpc_field="batch 4.segments", stream=True, server="limited",
    ),
    "stream-fold-segments": Bad(
        [{**HEADER, "fold_segments": True}, rows(2, segments=["de", "fr"])], 400, INVALID,
        "line 1.fold_segments", "a stream does not fold segments", stream=True, only="json",
    ),
    "stream-segment-monitor-states-in-a-batch": Bad(
        [HEADER, rows(2, segments=["de", "fr"], segment_monitor_states={"de": STATE})], 400,
        INVALID, "line 2.segment_monitor_states", "belongs in the header line", stream=True,
        only="json",
    ),
    "stream-segment-monitor-state-of-an-unknown-segment": Bad(
        [{**HEADER, "baseline": SUMMARY, "segment_monitor_states": {"fr": STATE}},
         rows(4, segments=["de"] * 4)],
        422, INVALID, "segment_monitor_states", "names a segment the rows lack: 'fr'",
        stream=True,
    ),
    "stream-segments-with-a-model-segment": Bad(
        [{**HEADER, "model": {"name": "fraud", "segment": "eu"}}, rows(2, segments=["a", "b"])],
        422, INVALID, "line 2.model.segment", "leave model.segment empty",
        grpc_field="model.segment", stream=True,
    ),
    # --- limits
    # --- the other tasks
    "multiclass-unknown-class-name": Bad(
        {"task": "multiclass", "classes": ["cat", "dog"], "labels": ["cat", "cow"],
         "scores": [[0.9, 0.1], [0.2, 0.8]]},
        422, INVALID, "labels", "cow",
    ),
    "multiclass-score-width-differs-from-classes": Bad(
        {"task": "multiclass", "classes": ["cat", "dog", "bird"], "labels": [0, 1],
         "scores": [[0.9, 0.1], [0.2, 0.8]]},
        422, INVALID, "scores", "3", same_message=False,
    ),
    "multiclass-label-outside-the-classes": Bad(
        {"task": "multiclass", "labels": [0, 5], "scores": [[0.9, 0.1], [0.2, 0.8]]},
        422, INVALID, "labels", "5",
    ),
    "multiclass-too-many-classes": Bad(
        {"task": "multiclass", "labels": [0, 1], "scores": [[0.1, 0.2, 0.3, 0.4]] * 2},
        413, EXHAUSTED, "scores", "limit of 3", server="limited", only="json",
    ),
    "multilabel-widths-disagree": Bad(
        {"task": "multilabel", "labels": [[1, 0, 1], [0, 1, 0]],
         "scores": [[0.9, 0.1], [0.2, 0.8]]},
        422, INVALID, "scores", "3", same_message=False,
    ),
    "multilabel-label-2": Bad(
        {"task": "multilabel", "labels": [[1, 0], [2, 1]], "scores": [[0.9, 0.1], [0.2, 0.8]]},
        422, INVALID, "labels", "0 or 1",
    ),
    "multilabel-score-matrix-too-wide": Bad(
        {"task": "multilabel", "labels": [[1, 0, 1, 0]], "scores": [[0.9, 0.1, 0.5, 0.5]]},
        413, EXHAUSTED, "scores", "limit of 3", server="limited", only="json",
    ),
    # protobuf sends the matrix flat, with its width: the width is what is over the limit
    "multilabel-n-classes-too-many": Bad(
        {"task": "multilabel", "labels": [[1, 0, 1, 0]], "scores": [[0.9, 0.1, 0.5, 0.5]]},
        413, EXHAUSTED, "n_classes", "limit of 3", server="limited", only="protobuf",
    ),
    "regression-length-mismatch": Bad(
        {"task": "regression", "labels": [1.0, 2.0, 3.0], "predictions": [1.0, 2.0]}, 422,
        INVALID, "predictions", "3",
    ),
    "regression-no-predictions": Bad({"task": "regression", "labels": [1.0, 2.0]}, 422, INVALID,
                                     "predictions", "required"),
    "detection-box-corners-swapped": Bad(
        {"task": "detection", "images": [{"gt_boxes": [[0, 0, 10, 10]], "gt_classes": [0],
                                          "pred_boxes": [[10, 0, 0, 10]], "pred_classes": [0],
                                          "pred_scores": [0.9]}]},
        422, INVALID, "images[0].pred_boxes", "x2",
    ),
    "detection-without-images": Bad({"task": "detection"}, 422, INVALID, "images", "required"),
    "images-for-binary": Bad(
        fawcett(images=[{"gt_boxes": [[0, 0, 1, 1]], "gt_classes": [0]}]), 422, INVALID,
        "images", "task 'detection'",
    ),
    "too-many-classes": Bad(fawcett(classes=[f"c{i}" for i in range(1001)]), 413, EXHAUSTED,
                            "classes", "1001 classes"),
    "too-many-classes-small-limit": Bad(fawcett(classes=["a", "b", "c", "d"]), 413, EXHAUSTED,
                                        "classes", "limit of 3", server="limited"),
    "body-over-the-size-limit": Bad(
        {"task": "binary", "labels_f64": f64([0.0] * BIG), "scores_f64": f64([0.5] * BIG)},
        413, EXHAUSTED, "body", "65536", grpc_field=None, server="limited",
    ),
    "too-many-rows": Bad({**HEADER, **rows(2001)}, 413, EXHAUSTED, "labels", "limit of 2000",
                         server="limited"),
    "too-many-rows-raw": Bad({"task": "binary", "labels_f64": f64([0.0] * 2001),
                              "scores": [0.5]}, 413, EXHAUSTED, "labels_f64", "limit of 2000",
                             server="limited"),
    # --- amplification: a small request that would make the server allocate or compute a lot
    "label-name-over-max-label-chars": Bad(
        fawcett(labels=["n"] * 19 + ["p" * 9]), 422, INVALID, "labels",
        "at most 8 characters (max_label_chars), but row 19 has 9", server="limited",
    ),
    "multiclass-label-name-over-max-label-chars": Bad(
        {"task": "multiclass", "labels": ["cat", "dog" * 3], "scores": [[0.9, 0.1], [0.2, 0.8]]},
        422, INVALID, "labels", "row 1 has 9", server="limited",
    ),
    "class-name-over-max-label-chars": Bad(
        {"task": "multiclass", "classes": ["cat", "dog", "x" * 9], "labels": [0, 2],
         "scores": [[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]},
        422, INVALID, "classes", "row 2 has 9", server="limited",
    ),
    # The probe, at the default cap: the rows at the width of the longest would be 80 MB.
    "label-name-of-20000-characters": Bad(
        {"task": "binary", "labels": ["n"] * 999 + ["p" * 20_000], "scores": [0.5] * 1000},
        422, INVALID, "labels", "at most 128 characters (max_label_chars), but row 999",
    ),
    "class-name-of-20000-characters": Bad(
        {"task": "multiclass", "classes": ["cat", "d" * 20_000], "labels": [0, 1],
         "scores": [[0.9, 0.1], [0.2, 0.8]]},
        422, INVALID, "classes", "at most 128 characters (max_label_chars), but row 1",
    ),
    # The IoU of an image grows with its boxes squared: past the default cap before any IoU.
    "detection-boxes-over-the-default-cap": Bad(
        {"task": "detection", "images": [{"gt_boxes": [[0, 0, 10, 10]] * 2001,
                                          "gt_classes": [0] * 2001}]},
        413, EXHAUSTED, "images[0].gt_boxes", "2001 boxes is over the limit of 2000",
    ),
    # 41 names at the width of the longest (8 characters, 4 bytes each): 1 312 bytes > 1 024
    "label-array-over-max-label-array-bytes": Bad(
        {"task": "multiclass", "labels": ["a"] * 40 + ["abcdefgh"],
         "scores": [[0.5, 0.5]] * 41},
        413, EXHAUSTED, "labels", "1312 bytes", server="limited",
    ),
    # A string among numbers would make numpy build a string array of every row.
    "string-among-the-scores": Bad(
        fawcett(scores=[*FAWCETT_SCORES[:-1], "9" * 20_000]), 400, INVALID, "scores",
        "row 19", only="json",
    ),
    "string-in-a-score-matrix": Bad(
        {"task": "multiclass", "labels": [0, 1], "scores": [[0.5, 0.5], [0.5, "9" * 20_000]]},
        400, INVALID, "scores", "row 1, column 1 is a string", only="json",
    ),
    "ground-truth-boxes-over-max-boxes-per-image": Bad(
        {"task": "detection", "images": [{**IMAGE, "gt_boxes": [[0, 0, 10, 10]] * 4,
                                          "gt_classes": [0] * 4}]},
        413, EXHAUSTED, "images[0].gt_boxes", "4 boxes is over the limit of 3 per image",
        server="limited",
    ),
    "predicted-boxes-over-max-boxes-per-image": Bad(
        {"task": "detection", "images": [IMAGE, {**IMAGE, "pred_boxes": [[1, 1, 10, 10]] * 4,
                                                 "pred_classes": [0] * 4,
                                                 "pred_scores": [0.9] * 4}]},
        413, EXHAUSTED, "images[1].pred_boxes", "max_boxes_per_image", server="limited",
    ),
    "predicted-scores-over-max-boxes-per-image": Bad(
        {"task": "detection", "images": [{**IMAGE, "pred_boxes": [], "pred_classes": [],
                                          "pred_scores": [0.9] * 4}]},
        413, EXHAUSTED, "images[0].pred_scores", "4 boxes", server="limited",
    ),
    # Three images of 3 predictions x 1 box of their class: 9 pairs, over the budget of 8;
    # a 4th class-0 box in other images' classes counts for nothing.
    "detection-pairs-over-max-detection-pairs": Bad(
        {"task": "detection", "images": [{
            "gt_boxes": [[0, 0, 10, 10]] * 2, "gt_classes": [0, 1],
            "pred_boxes": [[1, 1, 10, 10]] * 3, "pred_classes": [0] * 3,
            "pred_scores": [0.9, 0.8, 0.7]}] * 3},
        413, EXHAUSTED, "images", "9 same-class (prediction, box) pairs", server="limited",
    ),
    "stream-detection-pairs-over-max-detection-pairs": Bad(
        [{"task": "detection"}, {"images": [IMAGE]},
         {"images": [{**IMAGE, "pred_boxes": [[1, 1, 10, 10]] * 3, "pred_classes": [0] * 3,
                      "pred_scores": [0.9] * 3}] * 3}],
        413, EXHAUSTED, "line 3", "max_detection_pairs", grpc_field="batch 3", stream=True,
        server="limited",
    ),
    # 10 000 replicates x 20 rows = 200 000, over the limited service's budget of 100 000
    "bootstrap-over-max-bootstrap-work": Bad(
        options(bootstrap_replicates=10_000), 413, EXHAUSTED, "options.bootstrap_replicates",
        "10000 bootstrap replicates x 20 rows = 200000", server="limited",
    ),
    "max-curve-points-over-the-service-limit": Bad(
        options(max_curve_points=51), 413, EXHAUSTED, "options.max_curve_points",
        "51 is over the limit of 50 curve points", server="limited",
    ),
    "segment-curve-points-over-the-service-limit": Bad(
        options(segment_curve_points=51), 413, EXHAUSTED, "options.segment_curve_points",
        "51 is over the limit of 50 curve points", server="limited",
    ),
    "response-over-max-response-bytes": Bad(
        {**HEADER, **rows(200), "options": {"max_curve_points": 50}}, 413, EXHAUSTED,
        "response", "max_response_bytes", server="limited",
        same_message=False,  # JSON and protobuf answers differ in size
    ),
    "stream-label-name-over-max-label-chars": Bad(
        [{"task": "multiclass"}, MULTICLASS_ROWS,
         {**MULTICLASS_ROWS, "labels": ["cat", "dog" * 3]}],
        422, INVALID, "line 3.labels", "row 1 has 9", grpc_field="batch 3.labels", stream=True,
        server="limited",
    ),
    "stream-class-name-over-max-label-chars": Bad(
        [{"task": "multiclass", "classes": ["a", "b", "c" * 9]}, MULTICLASS_ROWS],
        422, INVALID, "line 1.classes", "row 2 has 9", grpc_field="classes", stream=True,
        server="limited",
    ),
    "stream-label-array-over-max-label-array-bytes": Bad(
        [{"task": "multiclass", "classes": ["a", "abcdefgh"]},
         {"labels": ["a"] * 40 + ["abcdefgh"], "scores": [[0.5, 0.5]] * 41}],
        413, EXHAUSTED, "line 2.labels", "max_label_array_bytes", grpc_field="batch 2.labels",
        stream=True, server="limited",
    ),
    "stream-boxes-over-max-boxes-per-image": Bad(
        [{"task": "detection"}, {"images": [IMAGE]},
         {"images": [{**IMAGE, "gt_boxes": [[0, 0, 10, 10]] * 4, "gt_classes": [0] * 4}]}],
        413, EXHAUSTED, "line 3.images[0].gt_boxes", "max_boxes_per_image",
        grpc_field="batch 3.images[0].gt_boxes", stream=True, server="limited",
    ),
    # 20 000 replicates: batch 2 brings the stream to 4 rows (80 000), batch 3 to 8 (160 000)
    "stream-bootstrap-over-max-bootstrap-work": Bad(
        [{"task": "binary", "options": {"bootstrap_replicates": 20_000}}, rows(4), rows(4)],
        413, EXHAUSTED, "line 3", "20000 bootstrap replicates x 8 rows", grpc_field="batch 3",
        stream=True, server="limited",
    ),
    "stream-max-curve-points-over-the-service-limit": Bad(
        [{"task": "binary", "options": {"max_curve_points": 51}}, rows(2)], 413, EXHAUSTED,
        "line 1.options.max_curve_points", "limit of 50", grpc_field="options.max_curve_points",
        stream=True, server="limited",
    ),
    "stream-response-over-max-response-bytes": Bad(
        [{"task": "binary", "options": {"max_curve_points": 50}}, rows(100), rows(100)],
        413, EXHAUSTED, "response", "max_response_bytes", stream=True, server="limited",
    ),
    # --- streams
    "stream-no-header": Bad([rows(4), HEADER], 400, INVALID, "line 1", "header",
                            grpc_field="header", stream=True),
    "stream-header-twice": Bad([HEADER, rows(4), HEADER], 400, INVALID, "line 3", "header",
                               grpc_field="header", stream=True),
    "stream-empty": Bad([], 400, INVALID, "line 1", "empty", grpc_field="header",
                        stream=True),
    "stream-header-only": Bad([HEADER], 400, INVALID, "rows", "no rows", stream=True),
    "stream-batch-length-mismatch": Bad(
        [HEADER, rows(4), {"labels": [0, 1, 1], "scores": [0.2, 0.3]}], 422, INVALID,
        "line 3.scores", "expected 3 values", grpc_field="batch 3.scores", stream=True,
    ),
    "stream-batch-empty-labels": Bad(
        [HEADER, rows(4), {"labels": [], "scores": [0.3, 0.7]}], 422, INVALID, "line 3.labels",
        grpc_field="batch 3.labels", stream=True,
    ),
    "stream-batch-label-2": Bad([HEADER, {"labels": [0, 2], "scores": [0.1, 0.2]}], 422,
                                INVALID, "line 2.labels", "0 or 1",
                                grpc_field="batch 2.labels", stream=True),
    "stream-batch-nan-raw": Bad(
        [HEADER, {"labels": [0, 1], "scores_f64": f64([0.1, NAN])}], 422, INVALID,
        "line 2.scores", "finite", grpc_field="batch 2.scores", stream=True,
    ),
    "stream-batch-raw-not-a-multiple-of-8": Bad(
        [HEADER, {"labels": [0, 1], "scores_f64": b"\0" * 9}], 400, INVALID,
        "line 2.scores_f64", "9 bytes", grpc_field="batch 2.scores_f64", stream=True,
    ),
    "stream-predictions-in-some-batches": Bad(
        [HEADER, rows(2, predictions=[0, 1]), rows(2)], 400, INVALID, "line 3.predictions",
        "every batch", grpc_field="batch 3.predictions", stream=True,
    ),
    "stream-bad-option": Bad([{"task": "binary", "options": {"beta": 0.0}}, rows(2)], 422,
                             INVALID, "line 1.options.beta", "(0, 10000]",
                             grpc_field="options.beta", stream=True),
    "stream-bad-baseline-refused-at-the-header": Bad(
        [{"task": "binary", "baseline": {"roc_auc": 0.9}}, rows(2)], 422, INVALID,
        "line 1.baseline", "roc_auc_variance", grpc_field="baseline", stream=True,
    ),
    "stream-baseline-of-another-task": Bad(
        [{"task": "multiclass", "baseline": {"roc_auc": 0.9, "roc_auc_variance": 0.001}},
         MULTICLASS_ROWS], 422, INVALID, "line 1.baseline", "task 'binary'",
        grpc_field="baseline",
        stream=True,
    ),
    "stream-classes-for-binary": Bad([{"task": "binary", "classes": ["n", "p"]}, rows(2)], 422,
                                     INVALID, "line 1.classes", "no class names",
                                     grpc_field="classes", stream=True),
    # --- streams of every task: a batch that does not fit the stream's others
    "stream-multiclass-batch-of-another-width": Bad(
        [{"task": "multiclass"}, MULTICLASS_ROWS,
         {"labels": [0, 1], "scores": [[0.9, 0.1], [0.2, 0.8]]}],
        400, INVALID, "line 3.scores", "expected 3 columns, as the stream's first batch has, "
        "but got 2", grpc_field="batch 3.scores", stream=True,
    ),
    # JSON sends each batch's matrices with their own width (protobuf's width is the header's)
    "stream-multilabel-batch-of-another-width": Bad(
        [{"task": "multilabel"}, MULTILABEL_ROWS,
         {"labels": [[1, 0], [0, 1]], "scores": [[0.9, 0.1], [0.2, 0.8]]}],
        400, INVALID, "line 3.scores", "expected 3 columns", stream=True, only="json",
    ),
    "stream-multilabel-flat-batch-not-of-the-header-width": Bad(
        [{"task": "multilabel", "classes": ["a", "b", "c"]}, MULTILABEL_ROWS,
         {"labels_f64": f64([1, 0, 0, 1]), "scores_f64": f64([0.9, 0.1, 0.2, 0.8])}],
        400, INVALID, "line 3.scores", "rows of 3 values", grpc_field="batch 3.scores",
        stream=True,
    ),
    "stream-multiclass-unknown-class-name-in-a-later-batch": Bad(
        [{"task": "multiclass", "classes": ["cat", "dog", "bird"]},
         {**MULTICLASS_ROWS, "labels": ["cat", "bird"]},
         {**MULTICLASS_ROWS, "labels": ["dog", "cow"]}],
        422, INVALID, "line 3.labels", "cow", grpc_field="batch 3.labels", stream=True,
    ),
    "stream-multiclass-predictions-in-some-batches": Bad(
        [{"task": "multiclass"}, {**MULTICLASS_ROWS, "predictions": [0, 2]}, MULTICLASS_ROWS],
        400, INVALID, "line 3.predictions", "every batch", grpc_field="batch 3.predictions",
        stream=True,
    ),
    "stream-multilabel-predictions-in-some-batches": Bad(
        [{"task": "multilabel", "classes": ["a", "b", "c"]}, MULTILABEL_ROWS,
         {**MULTILABEL_ROWS, "predictions": [[1, 0, 1], [0, 1, 0]]}],
        400, INVALID, "line 3.predictions", "every batch", grpc_field="batch 3.predictions",
        stream=True,
    ),
    "stream-regression-batch-without-predictions": Bad(
        [{"task": "regression"}, {"labels": [1.0, 2.0], "predictions": [1.5, 2.5]},
         {"labels": [3.0, 4.0]}],
        422, INVALID, "line 3.predictions", "required", grpc_field="batch 3.predictions",
        stream=True,
    ),
    "stream-detection-batch-without-images": Bad(
        [{"task": "detection"}, {"images": [IMAGE]}, rows(2)], 422, INVALID, "line 3.images",
        "required", grpc_field="batch 3.images", stream=True,
    ),
    "stream-detection-batch-with-rows-and-images": Bad(
        [{"task": "detection"}, {"images": [IMAGE], "labels": [1.0]}], 422, INVALID,
        "line 2.labels", "images, not row columns", grpc_field="batch 2.labels", stream=True,
    ),
    "stream-detection-bad-box-in-a-later-batch": Bad(
        [{"task": "detection"}, {"images": [IMAGE]},
         {"images": [IMAGE, {**IMAGE, "pred_boxes": [[10, 0, 0, 10]]}]}],
        422, INVALID, "line 3.images[1].pred_boxes", "x2",
        grpc_field="batch 3.images[1].pred_boxes", stream=True,
    ),
    "stream-images-in-a-binary-stream": Bad(
        [HEADER, rows(2), {"images": [IMAGE]}], 422, INVALID, "line 3.images",
        "task 'detection'", grpc_field="batch 3.images", stream=True,
    ),
    "stream-images-in-a-multiclass-stream": Bad(
        [{"task": "multiclass"}, MULTICLASS_ROWS, {"images": [IMAGE]}], 422, INVALID,
        "line 3.images", "task 'detection'", grpc_field="batch 3.images", stream=True,
    ),
    "stream-model-without-name": Bad([{"task": "binary", "model": {"version": "1"}}, rows(2)],
                                     400, INVALID, "line 1.model.name", "required",
                                     grpc_field="model.name", stream=True),
    "stream-model-segment-with-a-space": Bad(
        [{"task": "binary", "model": {"name": "m", "segment": "eu west"}}, rows(2)], 422,
        INVALID, "line 1.model.segment", "' ' at position 2", grpc_field="model.segment",
        stream=True,
    ),
    "stream-malformed-line": Bad([HEADER, rows(2)], 400, INVALID, "line 3", "not valid JSON",
                                 only="json", stream=True),
    "stream-over-the-row-limit": Bad(
        [HEADER, *[{"labels": [0, 1] * 550, "scores": [0.5] * 1100}] * 3],  # 20 KB of NDJSON
        413, EXHAUSTED, "line 4", "limit of 3000", grpc_field="batch 4", stream=True,
        server="limited",
    ),
    # The state's cap of the capped service: 4 800 bytes (300 distinct binary scores at 16
    # bytes). 100 distinct scores fit; 500 are over it at any size of an entry of 10-48 bytes.
    "stream-binary-state-over-the-cap": Bad(
        [HEADER, {"labels": [0, 1] * 50, "scores": [k / 1000 for k in range(100)]},
         {"labels": [0, 1] * 200, "scores": [1 + k / 1000 for k in range(400)]}],
        413, EXHAUSTED, "line 3", "max_stream_state_bytes (4800 bytes)", grpc_field="batch 3",
        stream=True, server="capped",
    ),
    # 900 distinct scores (7 200 bytes as float64 alone) in the first batch
    "stream-multiclass-state-over-the-cap": Bad(
        [{"task": "multiclass"}, {"labels": [i % 3 for i in range(300)],
                                  "scores": [[k / 300, 1 + k / 300, 2 + k / 300]
                                             for k in range(300)]}],
        413, EXHAUSTED, "line 2", "round continuous scores", grpc_field="batch 2", stream=True,
        server="capped",
    ),
    "stream-multilabel-state-over-the-cap": Bad(
        [{"task": "multilabel", "classes": ["a", "b", "c"]},
         {"labels": [[k % 2, (k // 2) % 2, 1] for k in range(300)],
          "scores": [[k / 300, 1 + k / 300, 2 + k / 300] for k in range(300)]}],
        413, EXHAUSTED, "line 2", "max_stream_state_bytes", grpc_field="batch 2", stream=True,
        server="capped",
    ),
    "stream-over-the-size-limit": Bad(
        [HEADER, {"labels_f64": f64([0.0] * BIG), "scores_f64": f64([0.5] * BIG)}], 413,
        EXHAUSTED, "body", "65536", grpc_field=None, stream=True, server="limited",
    ),
}  # fmt: skip

# A line that is not JSON can only be written as bytes; the table keeps its lines readable.
RAW_LINES = {"stream-malformed-line": b'{"labels": [0, 1], "scores": [0.1,\n'}


def _params() -> Iterator[Any]:
    for name, case in CASES.items():
        for door in case.doors():
            reason = case.xfail.get(door)
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            yield pytest.param(name, door, id=f"{name}-{door}", marks=marks)


def test_the_table() -> None:
    assert len(CASES) >= 40
    everywhere = [name for name, case in CASES.items() if len(case.doors()) > 1]
    assert len(everywhere) >= 40, "most cases run on more than one door"
    for name, case in CASES.items():
        assert case.field, name
        assert 400 <= case.http < 500, name
        assert case.grpc in (INVALID, EXHAUSTED), name
        assert (case.http == 413) == (case.grpc == EXHAUSTED), name


def _refusal(service: Service, case: Bad, door: Door, name: str) -> Refusal:
    request = case.request
    if door == "rest-json":
        content = request if isinstance(request, bytes) else json_body(_mapping(request))
        return rest_refusal(post(service, "/v1/evaluate", content, JSON))
    if door == "rest-protobuf":
        if not isinstance(request, bytes):
            request = proto_request(_mapping(request)).SerializeToString()
        return rest_refusal(post(service, "/v1/evaluate", request, PROTOBUF))
    if door == "rest-ndjson":
        assert isinstance(request, list)
        content = ndjson_body(request) + RAW_LINES.get(name, b"")
        return rest_refusal(post(service, "/v1/evaluate/stream", content, NDJSON))
    try:
        if door == "grpc" and isinstance(request, bytes):
            grpc_raw_evaluate(service, request)
        elif door == "grpc":
            service.stub.Evaluate(proto_request(_mapping(request)), timeout=60)
        else:
            assert isinstance(request, list)
            service.stub.EvaluateStream(iter(proto_stream(request)), timeout=60)
    except grpc.RpcError as error:
        return grpc_refusal(error)
    raise AssertionError("the call succeeded")


def _mapping(request: Any) -> Mapping[str, Any]:
    assert isinstance(request, Mapping)
    return request


@pytest.mark.parametrize(("name", "door"), list(_params()))
def test_bad_input_gets_one_clear_error(
    request: pytest.FixtureRequest, name: str, door: Door
) -> None:
    case = CASES[name]
    service: Service = request.getfixturevalue(case.server)
    refusal = _refusal(service, case, door, name)
    expected_status = case.grpc if door in GRPC_DOORS else case.http
    assert refusal.status == expected_status, refusal
    assert refusal.field == case.expected_field(door), refusal
    # Protobuf's messages name tasks by the enum's wire names (TASK_BINARY).
    says = in_protobuf_words(case.says) if door in PROTOBUF_DOORS else case.says
    assert says in refusal.message, refusal


@pytest.mark.parametrize(
    "name",
    [
        name
        for name, case in CASES.items()
        if set(case.doors()) == set(REQUEST_DOORS) and case.grpc_field is _DEFAULT
    ],
)
def test_a_request_error_says_the_same_on_every_door(
    request: pytest.FixtureRequest, name: str
) -> None:
    """REST protobuf and gRPC decode one message alike, and JSON says what they say."""
    case = CASES[name]
    service: Service = request.getfixturevalue(case.server)
    said = {door: _refusal(service, case, door, name) for door in REQUEST_DOORS}
    assert said["rest-protobuf"].message == said["grpc"].message, said
    if case.same_message:  # with the tasks named as each encoding names them
        assert in_protobuf_words(said["rest-json"].message) == said["grpc"].message, said


def test_every_service_still_serves_after_the_table(
    service: Service, limited: Service, capped: Service
) -> None:
    """Runs after the table (pytest keeps the file's order): nothing broke."""
    for running in (service, limited, capped):
        assert_still_serving(running)
