"""REST answers of errors: the one error table (``service.errors.describe``) as
``{"error": {"code", "field", "message"}}`` with its HTTP status, and the app's exception
handlers. A refusal's answer (busy, shutting down) is built once per kind."""

from __future__ import annotations

import functools
import logging
from typing import Any

import orjson
from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from evalserve.core import InvalidInputError
from evalserve.service.errors import ErrorInfo, ServiceError, describe
from evalserve.service.rest_api import PROTOBUF_TYPES

__all__ = [
    "error_response",
    "install_error_handlers",
    "internal_response",
    "json_response",
    "log_internal",
    "refusal",
]

logger = logging.getLogger("evalserve.service.rest")

JSON = "application/json"


def json_response(content: Any, status_code: int = 200) -> Response:
    return Response(orjson.dumps(content), status_code=status_code, media_type=JSON)


def error_response(status_code: int, code: str, field: str, message: str) -> Response:
    body = {"error": {"code": code, "field": field, "message": message}}
    return json_response(body, status_code)


def log_internal(method: str, path: str, exc: Exception) -> None:
    logger.error("unexpected error on %s %s", method, path, exc_info=exc)


def internal_response() -> Response:
    return error_response(500, "internal", "", "internal error; the request was not evaluated")


async def _service_error(request: Request, exc: Exception) -> Response:
    # A protobuf request's message names enums by their wire names, as gRPC's does.
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    info = describe(exc, protobuf=media_type in PROTOBUF_TYPES)
    if info is None:
        return await _internal_error(request, exc)
    return _described_response(info)


def _described_response(info: ErrorInfo) -> Response:
    response = error_response(info.http_status, info.code, info.field, info.message)
    if info.retry_after is not None:
        response.headers["retry-after"] = f"{info.retry_after:g}"
    return response


@functools.lru_cache(maxsize=16)
def refusal(info: ErrorInfo) -> tuple[int, tuple[tuple[bytes, bytes], ...], bytes]:
    """The status, headers and body of a refusal, built once per kind: busy, client busy,
    shutting down (each a fixed message and Retry-After while the server runs); the
    memory-busy message tells sizes, which vary: the oldest drop out."""
    response = _described_response(info)
    return response.status_code, tuple(response.raw_headers), bytes(response.body)


async def _internal_error(request: Request, exc: Exception) -> Response:
    log_internal(request.method, request.url.path, exc)
    return internal_response()


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code, field = {404: ("not_found", "path"), 405: ("method_not_allowed", "method")}.get(
        exc.status_code, ("http_error", "")
    )
    response = error_response(exc.status_code, code, field, str(exc.detail))
    response.headers.update(exc.headers or {})
    return response


async def _validation_error(request: Request, exc: Exception) -> Response:
    # Unreachable by design (no route declares a parsed parameter); kept so that no FastAPI
    # error shape can leak if one ever does.
    assert isinstance(exc, RequestValidationError)
    first = exc.errors()[0] if exc.errors() else {}
    field = ".".join(str(part) for part in first.get("loc", ()))
    return error_response(400, "malformed", field, str(first.get("msg", "invalid request")))


async def _client_disconnect(request: Request, exc: Exception) -> Response:
    logger.info("client left during %s %s", request.method, request.url.path)
    return Response(status_code=400)  # nobody is listening


def install_error_handlers(app: FastAPI) -> None:
    """Every error the app raises answers in the error shape, never FastAPI's own."""
    for kind in (ServiceError, InvalidInputError):
        app.add_exception_handler(kind, _service_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(ClientDisconnect, _client_disconnect)
