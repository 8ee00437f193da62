"""``POST /v1/evaluate`` and ``/v1/evaluate/stream`` answer the report when Accept prefers
``text/html``, on a real server; JSON and protobuf stay as they were."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import orjson
import pytest

from evalserve.service.config import Settings
from tests.core.test_worked_examples import FAWCETT_LABELS, FAWCETT_SCORES
from tests.service.test_rest import NDJSON, PROTOBUF, ndjson, served_app

BODY = {
    "task": "binary",
    "labels": FAWCETT_LABELS,
    "scores": FAWCETT_SCORES,
    "model": {"name": "fraud", "version": "7"},
    "options": {"threshold": 0.54},
}


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    with served_app(Settings()) as running:
        yield running.client


def _post(client: httpx.Client, accept: str) -> httpx.Response:
    return client.post(
        "/v1/evaluate",
        content=orjson.dumps(BODY),
        headers={"content-type": "application/json", "accept": accept},
    )


def test_accept_text_html_answers_the_report(client: httpx.Client) -> None:
    answer = _post(client, "text/html")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/html")
    page = answer.text
    assert page.startswith("<!doctype html>")
    assert "<title>Evaluation report: fraud 7</title>" in page
    assert "threshold 0.54" in page
    as_json = _post(client, "application/json").json()
    assert f'data-value="{as_json["metrics"]["roc_auc"]!r}"' in page


@pytest.mark.parametrize(
    ("accept", "media_type"),
    [
        ("text/html;q=0.5, application/json", "application/json"),
        ("application/json;q=0.4, text/html", "text/html"),
        (f"{PROTOBUF};q=0.9, text/html;q=0.8", PROTOBUF),
        ("text/html, application/json", "text/html"),  # equal: the first named
        ("text/html;q=0", "application/json"),  # refused: the request's own format
        ("image/png", "application/json"),
    ],
)
def test_accept_is_negotiated(client: httpx.Client, accept: str, media_type: str) -> None:
    answer = _post(client, accept)
    assert answer.status_code == 200
    assert answer.headers["content-type"].split(";")[0] == media_type


def test_a_stream_answers_the_report(client: httpx.Client) -> None:
    header = {"task": "binary", "model": {"name": "daily"}}
    batch = {"labels": FAWCETT_LABELS, "scores": FAWCETT_SCORES}
    answer = client.post(
        "/v1/evaluate/stream",
        content=ndjson(header, batch, batch),
        headers={"content-type": NDJSON, "accept": "text/html"},
    )
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/html")
    assert "<title>Evaluation report: daily</title>" in answer.text
    assert "40 samples" in answer.text


def test_errors_stay_json(client: httpx.Client) -> None:
    answer = client.post(
        "/v1/evaluate",
        content=orjson.dumps({"task": "binary", "labels": [0, 1], "scores": [0.5]}),
        headers={"content-type": "application/json", "accept": "text/html"},
    )
    assert answer.status_code == 422
    assert answer.json()["error"]["field"]


def test_the_openapi_document_lists_the_html_answer(client: httpx.Client) -> None:
    document = client.get("/openapi.json").json()
    content = document["paths"]["/v1/evaluate"]["post"]["responses"]["200"]["content"]
    assert "text/html" in content


def test_the_report_draws_each_segments_curves(client: httpx.Client) -> None:
    """A report's request is evaluated with the report's options: each segment's curves at
    ``SEGMENT_POINTS`` points (the JSON answer of the same request has none), one-shot and
    streamed."""
    segmented = {**BODY, "segments": ["a", "b"] * (len(FAWCETT_LABELS) // 2)}
    as_json = client.post("/v1/evaluate", content=orjson.dumps(segmented)).json()
    assert all(not each["curves"] for each in as_json["segments"].values())
    page = client.post(
        "/v1/evaluate", content=orjson.dumps(segmented), headers={"accept": "text/html"}
    ).text
    assert "chart-s0-roc" in page and "chart-s1-roc" in page
    assert "segment_curve_points</code>" not in page
    header = {"task": "binary", "options": {"threshold": 0.54}}
    batch = {k: segmented[k] for k in ("labels", "scores", "segments")}
    streamed = client.post(
        "/v1/evaluate/stream",
        content=ndjson(header, batch),
        headers={"content-type": NDJSON, "accept": "text/html"},
    )
    assert streamed.status_code == 200, streamed.text
    assert "chart-s0-roc" in streamed.text


def test_a_baseline_payload_is_drawn_as_the_reference(client: httpx.Client) -> None:
    reference = {"labels": FAWCETT_LABELS, "scores": [s * 0.9 for s in FAWCETT_SCORES]}
    answer = client.post(
        "/v1/evaluate",
        content=orjson.dumps({**BODY, "baseline": reference}),
        headers={"content-type": "application/json", "accept": "text/html"},
    )
    assert answer.status_code == 200, answer.text
    page = answer.text
    assert "reference: the baseline&#x27;s 20 samples" in page
    assert '"series":"reference"' in page
    summary = client.post(
        "/v1/evaluate",
        content=orjson.dumps(
            {**BODY, "baseline": {"roc_auc": 0.8, "n_positive": 10, "n_negative": 10}}
        ),
        headers={"content-type": "application/json", "accept": "text/html"},
    )
    assert summary.status_code == 200, summary.text
    assert '"series":"reference"' not in summary.text  # a summary has no curves to draw
