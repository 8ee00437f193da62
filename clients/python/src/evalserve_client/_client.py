"""``Client`` and ``AsyncClient``: ``evaluate`` and ``list_metrics`` over gRPC (``host:port``,
``grpc://``, ``grpcs://`` for TLS) or REST (``http://``, ``https://``), with deadlines, retries
of these idempotent calls and automatic streaming of large inputs of every task (with a progress
line on stderr).

The two classes share everything but the I/O: ``_Base`` builds a call (the request, whether it
streams, its deadline and progress) and maps errors; each class sends it, sync or awaited.
"""

from __future__ import annotations

import asyncio
import os
import random
import ssl
import time
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, TypeVar, cast

import grpc
import httpx
import orjson

from evalserve_client import _retry, _status, _wire
from evalserve_client._errors import (
    DeadlineExceeded,
    EvalserveError,
    InvalidArgument,
    TooLarge,
    Unavailable,
)
from evalserve_client._monitor_store import MonitorStates
from evalserve_client._monitoring import Track
from evalserve_client._progress import ProgressLine, shown
from evalserve_client._proto.evalserve.v1 import evaluation_pb2_grpc as pb_grpc
from evalserve_client._result import EvaluationResult, MetricInfo

__all__ = ["AsyncClient", "Client"]

MAX_MESSAGE = 256 * 1024 * 1024
CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE),
    ("grpc.max_receive_message_length", MAX_MESSAGE),
    # gRPC keeps a call's messages for its retries only up to 256 KiB by default, and does not
    # retry a larger call at all: keep any message this client sends (four at once)
    ("grpc.per_rpc_retry_buffer_size", MAX_MESSAGE),
    ("grpc.retry_buffer_size", 4 * MAX_MESSAGE),
]
JSON = {"content-type": "application/json"}
NDJSON = {"content-type": "application/x-ndjson"}
T = TypeVar("T")


@dataclass(frozen=True)
class _Target:
    rest: bool
    address: str  # base URL for REST, host:port for gRPC
    tls: bool = False  # gRPC over TLS (REST: the URL's scheme says)


def _parse(target: str) -> _Target:
    if target.startswith(("http://", "https://")):
        return _Target(True, target.rstrip("/"))
    if target.startswith("grpcs://"):
        return _Target(False, target.removeprefix("grpcs://"), tls=True)
    return _Target(False, target.removeprefix("grpc://"))


def _grpc_error(error: grpc.RpcError) -> EvalserveError:
    code: grpc.StatusCode = error.code()
    details: str = error.details() or ""
    name = code.name.lower()
    # (key, value) pairs: a tuple of namedtuples (sync) or an aio Metadata, iterated alike
    trailers = cast(Sequence[tuple[str, str | bytes]], error.trailing_metadata() or ())
    decoded = _status.details(trailers)
    if code is grpc.StatusCode.UNAVAILABLE:
        return Unavailable(details, code=name, retry_after=decoded.retry_after)
    if code is grpc.StatusCode.RESOURCE_EXHAUSTED and decoded.retry_after is not None:
        # the server's memory is busy now, not a limit: retried as REST's 503 is
        return Unavailable(details, code=name, retry_after=decoded.retry_after)
    if code is grpc.StatusCode.DEADLINE_EXCEEDED:
        return DeadlineExceeded(details, code=name)
    # The service's BadRequest detail names the field; its message is "field: description".
    field, message = decoded.violations[0] if decoded.violations else (None, details)
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
    field = field or None  # no field: None on both transports
    if response.status_code == 413:
        return TooLarge(message, field=field, code=code)
    if response.status_code in (502, 503, 504):
        hint = _retry.retry_after(response.headers.get("retry-after"))
        return Unavailable(message, field=field, code=code, retry_after=hint)
    if 400 <= response.status_code < 500:
        return InvalidArgument(message, field=field, code=code)
    return EvalserveError(message, field=field, code=code)


@contextmanager
def _grpc_errors() -> Iterator[None]:
    try:
        yield
    except grpc.RpcError as error:
        raise _grpc_error(error) from error


@contextmanager
def _rest_errors() -> Iterator[None]:
    try:
        yield
    except httpx.TimeoutException as error:
        raise DeadlineExceeded(str(error), code="deadline_exceeded") from error
    except httpx.TransportError as error:
        raise Unavailable(str(error) or type(error).__name__, code="unavailable") from error


def _body(response: httpx.Response) -> dict[str, Any]:
    if response.status_code != 200:
        raise _rest_error(response)
    body: dict[str, Any] = response.json()
    return body


def _catalog(entries: list[dict[str, Any]]) -> list[MetricInfo]:
    return [MetricInfo.from_dict(entry) for entry in entries]


def _query(task: str | None) -> dict[str, str]:
    """The query of ``GET /v1/metrics``."""
    return {} if task is None else {"task": task}


async def _async_iter(items: Iterable[T]) -> AsyncIterator[T]:
    # batches built one at a time as the transport asks, as the sync client's iterators are
    for item in items:
        yield item


@dataclass(frozen=True)
class _Call:
    """One evaluation, ready to send (and to send again on a retry)."""

    request: _wire.Request
    stream: bool
    timeout: float
    progress: bool

    def progress_line(self) -> ProgressLine | None:
        if not self.progress:
            return None
        return ProgressLine(self.request.n_rows, unit=self.request.unit)


def _segmented(request: _wire.Request) -> bool:
    return bool(request.segments or request.segment_codes or request.segment_names)


def _monitored(answer: dict[str, Any], track: Track) -> EvaluationResult:
    result = EvaluationResult.from_dict(
        answer, window=track.window, monitor_restarted=track.restarted
    )
    if not track.segment_restarted:
        return result
    segments = {
        name: replace(each, monitor_restarted=track.segment_restarted.get(name))
        for name, each in result.segments.items()
    }
    return replace(result, segments=segments)


def _headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    """Headers sent with every call (an API gateway's token, a request id): HTTP headers over
    REST, call metadata over gRPC, whose keys are lowercase."""
    checked: dict[str, str] = {}
    for key, value in (headers or {}).items():
        name = key.lower()
        if not name or not all(c.isascii() and (c.isalnum() or c in "-_.") for c in name):
            raise ValueError(f"header {key!r}: a name of letters, digits, '-', '_' or '.'")
        if name.endswith("-bin") or name.startswith("grpc-") or name in _RESERVED_HEADERS:
            raise ValueError(f"header {key!r}: reserved for the transport")
        if not value.isascii() or not value.isprintable():
            raise ValueError(f"header {key!r}: the value must be printable ASCII")
        checked[name] = value
    return checked


_RESERVED_HEADERS = {"content-type", "content-length", "te", "host", "user-agent"}


class _Base:
    def __init__(
        self,
        target: str,
        *,
        timeout: float = 60.0,
        retries: int = 3,
        backoff: float = 0.2,
        max_backoff: float = 5.0,
        retry_deadline: float = 30.0,
        stream_threshold: int = 1_000_000,
        chunk_rows: int = 250_000,
        progress: bool | None = None,
        headers: Mapping[str, str] | None = None,
        root_certificates: bytes | None = None,
        monitor_states: MonitorStates | str | os.PathLike[str] | None = None,
    ) -> None:
        self._target = _parse(target)
        if monitor_states is None or isinstance(monitor_states, MonitorStates):
            self.monitor_states = monitor_states or MonitorStates()
        else:
            self.monitor_states = MonitorStates(monitor_states)
        self.headers = _headers(headers)
        self._roots = root_certificates
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.retry_deadline = retry_deadline
        self._policy = _retry.Policy(retries, backoff, max_backoff, retry_deadline)
        # what the retries wait with and draw their jitter from (tests put fakes here)
        self._clock: Callable[[], float] = time.monotonic
        self._random: Callable[[], float] = random.random
        self.stream_threshold = stream_threshold
        self.chunk_rows = chunk_rows
        self.progress = progress
        self._connect()

    def _connect(self) -> None:
        raise NotImplementedError

    def _call(
        self,
        task: str,
        y_true: Any,
        y_score: Any,
        *,
        timeout: float | None,
        progress: bool | None,
        **fields: Any,
    ) -> _Call:
        """``fields``: the other arguments of ``evaluate``, as ``_wire.build`` takes them."""
        request = _wire.build(task, y_true, y_score, **fields)
        # a challenger has no place in a stream's header, and streams take no segments yet:
        # such a request goes in one message
        one_message = request.challenger is not None or _segmented(request)
        stream = not one_message and request.size > self.stream_threshold
        progress = self.progress if progress is None else progress
        return _Call(request, stream, self._deadline(timeout), shown(progress, stream))

    def _channel_options(self) -> list[tuple[str, int | str]]:
        # Unary calls are retried by the channel (gRPC's retry policy, _retry.service_config).
        # The channel reconnects on the client's backoff, not gRPC's default (1 s, growing to
        # 120 s): a server back up during the retries is reached by the next one, since a call
        # on a channel still waiting to reconnect fails at once.
        return [
            *CHANNEL_OPTIONS,
            ("grpc.enable_retries", 1),
            ("grpc.service_config", _retry.service_config(self._policy)),
            ("grpc.initial_reconnect_backoff_ms", max(1, round(1000 * self.backoff))),
            ("grpc.max_reconnect_backoff_ms", max(1, round(1000 * self._max_backoff()))),
        ]

    def _max_backoff(self) -> float:
        return max(self.backoff, self.max_backoff)

    def _schedule(self, grpc_unary: bool) -> _retry.Schedule:
        """The retries of one call; of a gRPC unary call, which the channel's retry policy
        retries, each of the loop's attempts counts as the policy's attempts."""
        per_call = _retry.grpc_attempts(self._policy) if grpc_unary else 1
        return _retry.Schedule(self._policy, self._clock, self._random, per_call)

    def _grpc_unary(self, call: _Call | None) -> bool:
        """Whether gRPC's retry policy retries this call within its deadline."""
        return self._http is None and (call is None or not call.stream)

    _http: httpx.Client | httpx.AsyncClient | None = None

    def _verify(self) -> ssl.SSLContext | bool:
        """httpx's ``verify``: the given CA certificates instead of the system's, if any."""
        if self._roots is None:
            return True
        return ssl.create_default_context(cadata=self._roots.decode("ascii"))

    def _credentials(self) -> grpc.ChannelCredentials:
        return grpc.ssl_channel_credentials(root_certificates=self._roots)

    def _metadata(self) -> tuple[tuple[str, str], ...]:
        return tuple(self.headers.items())

    def _deadline(self, timeout: float | None) -> float:
        return self.timeout if timeout is None else timeout


class Client(_Base):
    """A synchronous client. ``Client("localhost:50051")`` speaks gRPC (``grpcs://host:port``
    over TLS), ``Client("http://localhost:8000")`` REST (``https://`` over TLS). Use as a
    context manager or call ``close()``.

    Settings (keywords): ``timeout`` (s, each attempt's deadline; over gRPC a unary call's
    deadline, which its transparent retries share), ``retries`` (retries after the first attempt
    of a call the server could not take: UNAVAILABLE, RESOURCE_EXHAUSTED with a retry hint,
    HTTP 502/503/504 or no connection),
    ``backoff`` and ``max_backoff`` (s: retry n waits a random time up to
    ``min(max_backoff, backoff * 2**n)``, and at least the server's ``Retry-After`` or
    ``RetryInfo``), ``retry_deadline`` (s: no retry starts later than this after the first
    attempt, so a call lasts at most about ``retry_deadline + timeout``; gRPC unary calls are
    retried by the channel's retry policy, up to 5 attempts within each call's ``timeout``, the
    loop adding calls only for ``retries`` above 4), ``stream_threshold`` (an input larger
    than this streams, whatever its task) and ``chunk_rows`` (the size of a batch): both count
    values of the widest column, that is rows (binary, regression), rows times classes
    (multiclass and multilabel matrices) or boxes (detection, whose batches hold whole images),
    and a batch holds at least one row or image; ``progress`` (a progress line on
    stderr for streamed uploads: None shows it when stderr is a terminal), ``headers`` (sent with
    every call: HTTP headers over REST, metadata over gRPC, e.g. a gateway's authorization),
    ``root_certificates`` (PEM bytes of the CAs to trust instead of the system's, for
    ``https://`` and ``grpcs://``: TLS to a server with a private CA), ``monitor_states``
    (where the AUC monitor's state of each model is kept between calls: a ``MonitorStates``, or
    the path of its JSON file; by default in memory, for this client's life).

    A binary ``evaluate`` with a ``model`` and a ``baseline`` feeds that model's AUC monitor:
    the client sends the state it kept from the model's last window and keeps the answer's,
    so calling it every hour is all a monitor needs (``_monitoring`` says what happens when
    the baseline changes or the server refuses a state). ``window`` names the window (its end
    time, say); without it the call makes one id, which its retries reuse."""

    _http: httpx.Client | None = None
    _channel: grpc.Channel | None = None
    _stub: pb_grpc.EvaluationServiceStub

    def _connect(self) -> None:
        if self._target.rest:
            self._http = httpx.Client(
                base_url=self._target.address, headers=self.headers, verify=self._verify()
            )
        else:
            options, address = self._channel_options(), self._target.address
            self._channel = (
                grpc.secure_channel(address, self._credentials(), options=options)
                if self._target.tls
                else grpc.insecure_channel(address, options=options)
            )
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
        coverage: Mapping[str, Any] | None = None,
        window: str | None = None,
        segments: Any = None,
        segment_codes: Any = None,
        segment_names: Sequence[str] | None = None,
        fold_segments: bool = False,
        timeout: float | None = None,
        progress: bool | None = None,
    ) -> EvaluationResult:
        """Evaluate as ``evalserve.evaluate`` does, on the server; raises ``EvalserveError``.
        With a ``model`` and a ``baseline`` (binary), the model's AUC monitor goes on.

        ``segments`` (a name per row, or per image for detection), or ``segment_codes`` with
        ``segment_names``, adds each segment's own result in ``result.segments``
        (``fold_segments``: fold the smallest past the server's cap into ``__other__``); with
        a monitored model each segment keeps its own monitor state. A segmented request is
        sent in one message, never streamed."""
        call = self._call(
            task, y_true, y_score, y_pred=y_pred, sample_weight=sample_weight, options=options,
            classes=classes, model=model, baseline=baseline, challenger=challenger,
            coverage=coverage, window=window, segments=segments, segment_codes=segment_codes,
            segment_names=segment_names, fold_segments=fold_segments, timeout=timeout,
            progress=progress,
        )  # fmt: skip
        track = Track.start(self.monitor_states, call.request, window)
        if track is None:
            return EvaluationResult.from_dict(self._send(call))
        while True:
            sent = replace(call, request=track.request(call.request))
            try:
                answer = self._send(sent)
            except InvalidArgument as error:
                if track.refused(error):
                    continue
                raise
            if track.settle(answer):
                return _monitored(answer, track)

    def _send(self, call: _Call) -> dict[str, Any]:
        return self._retried(lambda: self._evaluate(call), self._grpc_unary(call))

    def list_metrics(
        self, task: str | None = None, *, timeout: float | None = None
    ) -> list[MetricInfo]:
        """The server's metric catalog: every metric it can return, or those of ``task``
        (an unknown task raises ``InvalidArgument``, field ``task``)."""
        deadline = self._deadline(timeout)
        entries = self._retried(lambda: self._list_metrics(task, deadline), self._grpc_unary(None))
        return _catalog(entries)

    def _retried(self, attempt: Callable[[], T], grpc_unary: bool) -> T:
        """``attempt()`` until it is not Unavailable or the schedule says stop (``grpc_unary``:
        the channel retries each attempt itself, see ``_schedule``)."""
        schedule = self._schedule(grpc_unary)
        while True:
            try:
                return attempt()
            except Unavailable as error:
                retried = error.code.upper() in _retry.CHANNEL_RETRIED  # by the channel
                pause = schedule.pause(error.retry_after, retried)
                if pause is None:
                    raise
            self._sleep(pause)

    def _sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def _evaluate(self, call: _Call) -> dict[str, Any]:
        request, line = call.request, call.progress_line()
        try:
            if self._http is not None:
                with _rest_errors():
                    if call.stream:
                        lines = _wire.to_ndjson(request, self.chunk_rows, line)
                        response = self._http.post(
                            "/v1/evaluate/stream", content=lines, timeout=call.timeout,
                            headers=NDJSON,
                        )  # fmt: skip
                    else:
                        response = self._http.post(
                            "/v1/evaluate", content=orjson.dumps(_wire.to_json(request)),
                            timeout=call.timeout, headers=JSON,
                        )  # fmt: skip
                return _body(response)
            with _grpc_errors():
                if call.stream:
                    messages = _wire.to_proto_stream(request, self.chunk_rows, line)
                    answer = self._stub.EvaluateStream(
                        messages, timeout=call.timeout, metadata=self._metadata()
                    )
                else:
                    answer = self._stub.Evaluate(
                        _wire.to_proto(request), timeout=call.timeout, metadata=self._metadata()
                    )
            return _wire.from_proto(answer)
        finally:
            if line is not None:
                line.close()

    def _list_metrics(self, task: str | None, timeout: float) -> list[dict[str, Any]]:
        if self._http is not None:
            with _rest_errors():
                response = self._http.get("/v1/metrics", params=_query(task), timeout=timeout)
            entries: list[dict[str, Any]] = _body(response)["metrics"]
            return entries
        with _grpc_errors():
            answer = self._stub.ListMetrics(
                _wire.catalog_request(task), timeout=timeout, metadata=self._metadata()
            )
        return _wire.catalog_from_proto(answer)


class AsyncClient(_Base):
    """The asyncio client: the same targets, settings and calls as ``Client``, awaited
    (grpc.aio, httpx)."""

    _http: httpx.AsyncClient | None = None
    _channel: grpc.aio.Channel | None = None
    _stub: pb_grpc.EvaluationServiceAsyncStub

    def _connect(self) -> None:
        if self._target.rest:
            self._http = httpx.AsyncClient(
                base_url=self._target.address, headers=self.headers, verify=self._verify()
            )
        else:
            options, address = self._channel_options(), self._target.address
            self._channel = (
                grpc.aio.secure_channel(address, self._credentials(), options=options)
                if self._target.tls
                else grpc.aio.insecure_channel(address, options=options)
            )
            # the generated constructor serves both channel kinds; on an aio channel its calls
            # are awaitable, which is what the async stub's type says
            stub = pb_grpc.EvaluationServiceStub(self._channel)
            self._stub = cast("pb_grpc.EvaluationServiceAsyncStub", stub)  # only in the .pyi

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
        coverage: Mapping[str, Any] | None = None,
        window: str | None = None,
        segments: Any = None,
        segment_codes: Any = None,
        segment_names: Sequence[str] | None = None,
        fold_segments: bool = False,
        timeout: float | None = None,
        progress: bool | None = None,
    ) -> EvaluationResult:
        """Evaluate as ``evalserve.evaluate`` does, on the server; raises ``EvalserveError``.
        With a ``model`` and a ``baseline`` (binary), the model's AUC monitor goes on (its
        state file, if any, is read and written in a worker thread)."""
        call = self._call(
            task, y_true, y_score, y_pred=y_pred, sample_weight=sample_weight, options=options,
            classes=classes, model=model, baseline=baseline, challenger=challenger,
            coverage=coverage, window=window, segments=segments, segment_codes=segment_codes,
            segment_names=segment_names, fold_segments=fold_segments, timeout=timeout,
            progress=progress,
        )  # fmt: skip
        states = self.monitor_states
        track = await asyncio.to_thread(Track.start, states, call.request, window)
        if track is None:
            return EvaluationResult.from_dict(await self._send(call))
        while True:
            sent = replace(call, request=track.request(call.request))
            try:
                answer = await self._send(sent)
            except InvalidArgument as error:
                if await asyncio.to_thread(track.refused, error):
                    continue
                raise
            if await asyncio.to_thread(track.settle, answer):
                return _monitored(answer, track)

    async def _send(self, call: _Call) -> dict[str, Any]:
        return await self._retried(lambda: self._evaluate(call), self._grpc_unary(call))

    async def list_metrics(
        self, task: str | None = None, *, timeout: float | None = None
    ) -> list[MetricInfo]:
        """The server's metric catalog: every metric it can return, or those of ``task``
        (an unknown task raises ``InvalidArgument``, field ``task``)."""
        deadline = self._deadline(timeout)
        attempt = self._retried(lambda: self._list_metrics(task, deadline), self._grpc_unary(None))
        return _catalog(await attempt)

    async def _retried(self, attempt: Callable[[], Awaitable[T]], grpc_unary: bool) -> T:
        """As ``Client._retried``, awaited."""
        schedule = self._schedule(grpc_unary)
        while True:
            try:
                return await attempt()
            except Unavailable as error:
                retried = error.code.upper() in _retry.CHANNEL_RETRIED  # by the channel
                pause = schedule.pause(error.retry_after, retried)
                if pause is None:
                    raise
            await self._sleep(pause)

    async def _sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    async def _evaluate(self, call: _Call) -> dict[str, Any]:
        request, line = call.request, call.progress_line()
        try:
            if self._http is not None:
                with _rest_errors():
                    if call.stream:
                        lines = _async_iter(_wire.to_ndjson(request, self.chunk_rows, line))
                        response = await self._http.post(
                            "/v1/evaluate/stream", content=lines, timeout=call.timeout,
                            headers=NDJSON,
                        )  # fmt: skip
                    else:
                        response = await self._http.post(
                            "/v1/evaluate", content=orjson.dumps(_wire.to_json(request)),
                            timeout=call.timeout, headers=JSON,
                        )  # fmt: skip
                return _body(response)
            with _grpc_errors():
                if call.stream:
                    messages = _async_iter(_wire.to_proto_stream(request, self.chunk_rows, line))
                    answer = await self._stub.EvaluateStream(
                        messages, timeout=call.timeout, metadata=self._metadata()
                    )
                else:
                    message = _wire.to_proto(request)
                    answer = await self._stub.Evaluate(
                        message, timeout=call.timeout, metadata=self._metadata()
                    )
            return _wire.from_proto(answer)
        finally:
            if line is not None:
                line.close()

    async def _list_metrics(self, task: str | None, timeout: float) -> list[dict[str, Any]]:
        if self._http is not None:
            with _rest_errors():
                response = await self._http.get("/v1/metrics", params=_query(task), timeout=timeout)
            entries: list[dict[str, Any]] = _body(response)["metrics"]
            return entries
        with _grpc_errors():
            answer = await self._stub.ListMetrics(
                _wire.catalog_request(task), timeout=timeout, metadata=self._metadata()
            )
        return _wire.catalog_from_proto(answer)
