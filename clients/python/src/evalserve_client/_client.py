"""``Client`` and ``AsyncClient``: one ``evaluate`` over gRPC (``host:port``, ``grpc://``) or
REST (``http://``, ``https://``), with deadlines, retries of idempotent calls and automatic
streaming of large binary inputs."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
import httpx
import orjson

from evalserve_client import _wire
from evalserve_client._errors import (
    DeadlineExceeded,
    EvalserveError,
    InvalidArgument,
    TooLarge,
    Unavailable,
)
from evalserve_client._proto.evalserve.v1 import evaluation_pb2_grpc as pb_grpc
from evalserve_client._result import EvaluationResult

__all__ = ["AsyncClient", "Client"]

MAX_MESSAGE = 256 * 1024 * 1024


@dataclass(frozen=True)
class _Target:
    rest: bool
    address: str  # base URL for REST, host:port for gRPC


def _parse(target: str) -> _Target:
    if target.startswith(("http://", "https://")):
        return _Target(True, target.rstrip("/"))
    return _Target(False, target.removeprefix("grpc://"))


def _grpc_error(error: grpc.RpcError) -> EvalserveError:
    code: grpc.StatusCode = error.code()
    details: str = error.details() or ""
    name = code.name.lower()
    if code is grpc.StatusCode.UNAVAILABLE:
        return Unavailable(details, code=name)
    if code is grpc.StatusCode.DEADLINE_EXCEEDED:
        return DeadlineExceeded(details, code=name)
    # the service's message is "field: description" (its BadRequest detail names the field)
    field, sep, message = details.partition(": ")
    if not sep or " " in field:
        field, message = "", details
    kinds: dict[grpc.StatusCode, type[EvalserveError]] = {
        grpc.StatusCode.RESOURCE_EXHAUSTED: TooLarge,
        grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    }
    kind = kinds.get(code, EvalserveError)
    return kind(message, field=field or None, code=name)


def _rest_error(response: httpx.Response) -> EvalserveError:
    try:
        error = response.json()["error"]
        field, code, message = error.get("field"), error.get("code", ""), error["message"]
    except (ValueError, KeyError, TypeError):
        field, code, message = None, str(response.status_code), response.text
    if response.status_code == 413:
        return TooLarge(message, field=field, code=code)
    if response.status_code in (502, 503, 504):
        return Unavailable(message, field=field, code=code)
    if 400 <= response.status_code < 500:
        return InvalidArgument(message, field=field, code=code)
    return EvalserveError(message, field=field, code=code)


def _ndjson(lines: Iterator[dict[str, Any]]) -> Iterator[bytes]:
    for line in lines:
        yield orjson.dumps(line) + b"\n"


class _Base:
    def __init__(
        self,
        target: str,
        *,
        timeout: float = 60.0,
        retries: int = 3,
        backoff: float = 0.2,
        stream_threshold: int = 1_000_000,
        chunk_rows: int = 250_000,
    ) -> None:
        self._target = _parse(target)
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.stream_threshold = stream_threshold
        self.chunk_rows = chunk_rows

    def _request(
        self,
        task: str,
        y_true: Any,
        y_score: Any,
        *,
        y_pred: Any,
        sample_weight: Any,
        options: Mapping[str, Any] | None,
        classes: Sequence[str] | None,
        model: Mapping[str, str] | None,
        baseline: Mapping[str, Any] | None,
        challenger: Mapping[str, Any] | None,
    ) -> tuple[_wire.Request, bool]:
        request = _wire.build(
            task, y_true, y_score, y_pred=y_pred, sample_weight=sample_weight, options=options,
            classes=classes, model=model, baseline=baseline, challenger=challenger,
        )  # fmt: skip
        # streams take binary rows; a challenger has no place in a stream's header
        stream = task == "binary" and challenger is None and request.n_rows > self.stream_threshold
        return request, stream

    def _delay(self, attempt: int) -> float:
        return float(self.backoff * 2**attempt)


class Client(_Base):
    """A synchronous client. ``Client("localhost:50051")`` speaks gRPC,
    ``Client("http://localhost:8000")`` REST. Use as a context manager or call ``close()``."""

    def __init__(self, target: str, **settings: Any) -> None:
        super().__init__(target, **settings)
        self._http: httpx.Client | None = None
        self._channel: grpc.Channel | None = None
        self._stub: pb_grpc.EvaluationServiceStub | None = None
        if self._target.rest:
            self._http = httpx.Client(base_url=self._target.address)
        else:
            options = [("grpc.max_send_message_length", MAX_MESSAGE),
                       ("grpc.max_receive_message_length", MAX_MESSAGE)]  # fmt: skip
            self._channel = grpc.insecure_channel(self._target.address, options=options)
            self._stub = pb_grpc.EvaluationServiceStub(self._channel)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
        if self._channel is not None:
            self._channel.close()

    def evaluate(
        self,
        task: str,
        y_true: Any,
        y_score: Any = None,
        *,
        y_pred: Any = None,
        sample_weight: Any = None,
        options: Mapping[str, Any] | None = None,
        classes: Sequence[str] | None = None,
        model: Mapping[str, str] | None = None,
        baseline: Mapping[str, Any] | None = None,
        challenger: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> EvaluationResult:
        """Evaluate as ``core.evaluate`` does, on the server; raises ``EvalserveError``."""
        request, stream = self._request(
            task, y_true, y_score, y_pred=y_pred, sample_weight=sample_weight, options=options,
            classes=classes, model=model, baseline=baseline, challenger=challenger,
        )  # fmt: skip
        deadline = self.timeout if timeout is None else timeout
        for attempt in range(self.retries + 1):
            try:
                return EvaluationResult.from_dict(self._once(request, stream, deadline))
            except Unavailable:
                if attempt == self.retries:
                    raise
                time.sleep(self._delay(attempt))
        raise AssertionError("unreachable")

    def _once(self, request: _wire.Request, stream: bool, timeout: float) -> dict[str, Any]:
        if self._http is not None:
            try:
                if stream:
                    lines = _ndjson(_wire.to_ndjson(request, self.chunk_rows))
                    response = self._http.post(
                        "/v1/evaluate/stream", content=lines, timeout=timeout,
                        headers={"content-type": "application/x-ndjson"},
                    )  # fmt: skip
                else:
                    response = self._http.post(
                        "/v1/evaluate", content=orjson.dumps(_wire.to_json(request)),
                        timeout=timeout, headers={"content-type": "application/json"},
                    )  # fmt: skip
            except httpx.TimeoutException as error:
                raise DeadlineExceeded(str(error), code="deadline_exceeded") from error
            except httpx.TransportError as error:
                raise Unavailable(str(error) or type(error).__name__, code="unavailable") from error
            if response.status_code != 200:
                raise _rest_error(response)
            body: dict[str, Any] = response.json()
            return body
        assert self._stub is not None
        try:
            if stream:
                answer = self._stub.EvaluateStream(
                    _wire.to_proto_stream(request, self.chunk_rows), timeout=timeout
                )
            else:
                answer = self._stub.Evaluate(_wire.to_proto(request), timeout=timeout)
        except grpc.RpcError as error:
            raise _grpc_error(error) from error
        return _wire.from_proto(answer)


class AsyncClient(_Base):
    """The asyncio client: the same targets and ``evaluate``, awaited (grpc.aio, httpx)."""

    def __init__(self, target: str, **settings: Any) -> None:
        super().__init__(target, **settings)
        self._http: httpx.AsyncClient | None = None
        self._channel: grpc.aio.Channel | None = None
        self._stub: pb_grpc.EvaluationServiceAsyncStub | None = None
        if self._target.rest:
            self._http = httpx.AsyncClient(base_url=self._target.address)
        else:
            options = [("grpc.max_send_message_length", MAX_MESSAGE),
                       ("grpc.max_receive_message_length", MAX_MESSAGE)]  # fmt: skip
            self._channel = grpc.aio.insecure_channel(self._target.address, options=options)
            self._stub = pb_grpc.EvaluationServiceStub(self._channel)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._http is not None:
            await self._http.aclose()
        if self._channel is not None:
            await self._channel.close()

    async def evaluate(
        self,
        task: str,
        y_true: Any,
        y_score: Any = None,
        *,
        y_pred: Any = None,
        sample_weight: Any = None,
        options: Mapping[str, Any] | None = None,
        classes: Sequence[str] | None = None,
        model: Mapping[str, str] | None = None,
        baseline: Mapping[str, Any] | None = None,
        challenger: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> EvaluationResult:
        """Evaluate as ``core.evaluate`` does, on the server; raises ``EvalserveError``."""
        request, stream = self._request(
            task, y_true, y_score, y_pred=y_pred, sample_weight=sample_weight, options=options,
            classes=classes, model=model, baseline=baseline, challenger=challenger,
        )  # fmt: skip
        deadline = self.timeout if timeout is None else timeout
        for attempt in range(self.retries + 1):
            try:
                return EvaluationResult.from_dict(await self._once(request, stream, deadline))
            except Unavailable:
                if attempt == self.retries:
                    raise
                await asyncio.sleep(self._delay(attempt))
        raise AssertionError("unreachable")

    async def _once(self, request: _wire.Request, stream: bool, timeout: float) -> dict[str, Any]:
        if self._http is not None:
            try:
                if stream:
                    content = b"".join(_ndjson(_wire.to_ndjson(request, self.chunk_rows)))
                    response = await self._http.post(
                        "/v1/evaluate/stream", content=content, timeout=timeout,
                        headers={"content-type": "application/x-ndjson"},
                    )  # fmt: skip
                else:
                    response = await self._http.post(
                        "/v1/evaluate", content=orjson.dumps(_wire.to_json(request)),
                        timeout=timeout, headers={"content-type": "application/json"},
                    )  # fmt: skip
            except httpx.TimeoutException as error:
                raise DeadlineExceeded(str(error), code="deadline_exceeded") from error
            except httpx.TransportError as error:
                raise Unavailable(str(error) or type(error).__name__, code="unavailable") from error
            if response.status_code != 200:
                raise _rest_error(response)
            body: dict[str, Any] = response.json()
            return body
        assert self._stub is not None
        try:
            if stream:
                answer = await self._stub.EvaluateStream(
                    iter(list(_wire.to_proto_stream(request, self.chunk_rows))), timeout=timeout
                )
            else:
                answer = await self._stub.Evaluate(_wire.to_proto(request), timeout=timeout)
        except grpc.RpcError as error:
            raise _grpc_error(error) from error
        return _wire.from_proto(answer)
