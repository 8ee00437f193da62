"""The REST API's surface: its media types and its OpenAPI description (``/docs``).

The schemas come from ``service.rest_models``; the routes (``service.rest``) parse nothing
through them, so the description is declared here, route by route.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from evalserve.core import TASKS
from evalserve.service import rest_models

__all__ = [
    "CATALOG_DOC",
    "EVALUATE_DOC",
    "HTML",
    "JSON",
    "NDJSON",
    "NDJSON_TYPES",
    "PROTOBUF",
    "PROTOBUF_TYPES",
    "STREAM_DOC",
    "OpenApiApp",
]

JSON = "application/json"
HTML = "text/html"
PROTOBUF = "application/x-protobuf"
NDJSON = "application/x-ndjson"
PROTOBUF_TYPES = frozenset({PROTOBUF, "application/protobuf", "application/vnd.google.protobuf"})
NDJSON_TYPES = frozenset(
    {NDJSON, "application/ndjson", "application/jsonl", "application/jsonlines"}
)

ERRORS_DOC: dict[int | str, dict[str, Any]] = {
    status: {"model": rest_models.ErrorBody, "description": description}
    for status, description in (
        (400, "malformed body (bad JSON, protobuf or types, unknown field) or stream protocol"),
        (413, "body, rows, classes or a stream's state over a configured limit"),
        (408, "the body did not arrive in time, or a stream sent no batch for too long"),
        (415, "a Content-Type the endpoint does not read"),
        (422, "values that cannot be evaluated (lengths, NaN, labels, weights, options)"),
        (500, "internal error"),
        (
            503,
            "busy (max_inflight_requests or max_inflight_per_client evaluations in flight) or "
            "shutting down; retry after Retry-After s",
        ),
    )
}
PROTOBUF_BODY = {"schema": {"type": "string", "format": "binary"}}
CATALOG_DOC: dict[str, Any] = {
    "response_model": rest_models.MetricCatalog,
    "responses": {
        status: {"model": rest_models.ErrorBody, "description": description}
        for status, description in (
            (400, "a query parameter other than `task`"),
            (422, "a task that is not one of the enum, or `task` given twice"),
        )
    },
    "openapi_extra": {
        "parameters": [
            {
                "name": "task",
                "in": "query",
                "required": False,
                "description": "only the metrics of this task (default: every task's); "
                "another value is refused with 422, field `task`",
                "schema": {"type": "string", "enum": list(TASKS)},
            }
        ]
    },
}


def _ref(model: type[Any]) -> dict[str, str]:
    return {"$ref": rest_models.SCHEMA_REF.format(model=model.__name__)}


def _evaluate_doc(message: str, request_content: dict[str, Any]) -> dict[str, Any]:
    return {
        "response_model": None,
        "responses": {
            200: {
                "model": rest_models.EvaluateResponse,
                "description": "the result; protobuf (evalserve.v1.EvaluateResponse) when the "
                "request was protobuf or Accept prefers application/x-protobuf; the HTML "
                "report of the result (one self-contained page: metrics, intervals, charts) "
                "when Accept prefers text/html",
                "content": {
                    PROTOBUF: PROTOBUF_BODY,
                    HTML: {"schema": {"type": "string", "description": "an HTML page"}},
                },
            },
            **ERRORS_DOC,
        },
        "openapi_extra": {
            "requestBody": {"required": True, "description": message, "content": request_content}
        },
    }


EVALUATE_DOC = _evaluate_doc(
    "an evalserve.v1.EvaluateRequest, as JSON or as protobuf",
    {JSON: {"schema": _ref(rest_models.EvaluateRequest)}, PROTOBUF: PROTOBUF_BODY},
)
STREAM_DOC = _evaluate_doc(
    "NDJSON: the header line first (StreamHeaderLine, with task), then one batch per line "
    "(StreamBatchLine). Errors name the line; `batch k` of the use case is the k-th non-empty "
    "line.",
    {
        NDJSON: {
            "schema": {
                "oneOf": [
                    _ref(rest_models.StreamHeaderLine),
                    _ref(rest_models.StreamBatchLine),
                ]
            }
        }
    },
)


class OpenApiApp(FastAPI):
    """FastAPI, with the request schemas of ``rest_models`` in the OpenAPI components."""

    def openapi(self) -> dict[str, Any]:
        if self.openapi_schema is None:
            schema = super().openapi()  # cached in self.openapi_schema, completed here
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            components.update(rest_models.request_schemas())
        assert self.openapi_schema is not None
        return self.openapi_schema
