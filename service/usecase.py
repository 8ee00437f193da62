"""The one use case behind both transports: evaluate a request, or a stream of batches.

Inputs are the plain values of ``service.decode``; the result is ``core.EvaluationResult``. No
transport, no HTTP or gRPC type, appears here. After a successful evaluation the use case tells
an ``EvaluationObserver`` (the Prometheus model series of ``service.metrics``) the model the
request named and the result: one place for both transports, whole requests and streams.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Protocol, TypeVar

from evalserve.core import (
    BinaryStats,
    EvaluationResult,
    InvalidInputError,
    check_baseline,
    check_coverage,
    evaluate,
    evaluate_binary_stats,
    parse_options,
)
from evalserve.core._validation import binary_inputs
from evalserve.service.config import Settings
from evalserve.service.decode import Batch, Header, ModelRef, Request
from evalserve.service.errors import BusyError, PayloadTooLargeError, StreamProtocolError

__all__ = ["EvaluationObserver", "Evaluator", "StreamAccumulator", "evaluate_request"]

T = TypeVar("T")


class EvaluationObserver(Protocol):
    """Told of every successful evaluation (``service.metrics.RequestObserver``)."""

    def evaluated(self, model: ModelRef | None, result: EvaluationResult) -> None: ...


def evaluate_request(
    request: Request, observer: EvaluationObserver | None = None
) -> EvaluationResult:
    """Evaluate one whole request (CPU-bound: call it through ``Evaluator.run``)."""
    result = _evaluate(request)
    if observer is not None:
        observer.evaluated(request.header.model, result)
    return result


def _evaluate(request: Request) -> EvaluationResult:
    header, batch = request.header, request.batch
    if header.task == "detection":
        if request.images is None:
            raise InvalidInputError("images", "is required for task 'detection'")
        if not batch.is_empty:
            raise InvalidInputError("labels", "task 'detection' takes images, not row columns")
        targets, predictions = request.images
        return evaluate(
            "detection", targets, predictions, options=header.options, classes=header.classes,
            coverage=header.coverage,
        )  # fmt: skip
    if request.images is not None:
        raise InvalidInputError(
            "images", f"only task 'detection' takes images, not {header.task!r}"
        )
    labels = batch.labels if batch.labels is not None else batch.label_names
    return evaluate(
        header.task,
        labels,
        batch.scores,
        y_pred=batch.predictions,
        sample_weight=batch.weights,
        options=header.options,
        baseline=header.baseline,
        challenger=request.challenger,
        classes=header.classes,
        coverage=header.coverage,
    )


class StreamAccumulator:
    """Merges the batches of one stream into the core's sufficient statistic: memory grows
    with the number of distinct scores, not with the rows.

    Batches are merged like a binary counter: a statistic is merged into the one below it only
    when that one is not more than twice its size, so each distinct score takes part in about
    log2(batches) merges instead of one per batch (100 batches of distinct scores: ~7, not ~50).

    The memory is bounded by ``max_stream_distinct_scores``: a stream whose scores are all
    distinct would otherwise hold every row. Past the cap the stream is refused
    (RESOURCE_EXHAUSTED) with a hint to round the scores.
    """

    def __init__(
        self, header: Header, settings: Settings, observer: EvaluationObserver | None = None
    ) -> None:
        if header.task != "binary":
            raise InvalidInputError(
                "task", f"streaming evaluates task 'binary' in this version, not {header.task!r}"
            )
        self.header = header
        self.observer = observer
        self.options = parse_options(header.options)
        if header.baseline is not None:
            check_baseline(header.baseline, self.options)  # now, not after the last batch
        if header.coverage is not None:
            check_coverage(header.coverage)  # its values now; n_predictions >= rows at the end
        self.max_rows = settings.max_stream_rows
        self.max_distinct = settings.max_stream_distinct_scores
        self.levels: list[BinaryStats] = []
        self.n_rows = 0
        self.predictions: BinaryStats | None = None
        self.n_batches = 0

    def add(self, batch: Batch) -> None:
        """Check one batch and merge it (CPU-bound)."""
        self.n_batches += 1
        where = f"batch {self.n_batches}"
        if batch.is_empty:
            return  # a message that carries no rows
        if batch.label_names is not None:
            raise InvalidInputError(f"{where}.labels", "expected 0/1 labels for task 'binary'")
        try:
            rows = binary_inputs(batch.labels, batch.scores, batch.predictions, batch.weights)
        except InvalidInputError as error:  # a refused value: 422 as in one payload, located
            raise InvalidInputError(f"{where}.{error.field}", error.message) from None
        labels, predicted = rows.labels, rows.predicted
        if (self.predictions is None) != (predicted is None) and self.n_rows:
            raise StreamProtocolError(
                f"{where}.predictions", "send predictions in every batch of a stream or in none"
            )
        if self.n_rows + labels.size > self.max_rows:
            raise PayloadTooLargeError(
                where, f"the stream is over the limit of {self.max_rows} rows"
            )
        self._push(BinaryStats.from_arrays(labels, rows.scores, rows.weights), where)
        self.n_rows += int(labels.size)
        if predicted is not None:
            base = self.predictions or BinaryStats.empty()
            self.predictions = base.update(labels, predicted.astype("float64"), rows.weights)

    def finish(self) -> EvaluationResult:
        if self.n_rows == 0:
            raise StreamProtocolError("rows", "the stream carried a header but no rows")
        result = evaluate_binary_stats(
            self._merged(),
            self.options,
            predictions=self.predictions,
            baseline=self.header.baseline,
            coverage=self.header.coverage,
        )
        if self.observer is not None:
            self.observer.evaluated(self.header.model, result)
        return result

    def _push(self, stats: BinaryStats, where: str) -> None:
        while self.levels and self.levels[-1].n_distinct <= 2 * stats.n_distinct:
            stats = self.levels.pop().merge(stats)
        self.levels.append(stats)
        if sum(level.n_distinct for level in self.levels) > self.max_distinct:
            # The levels may share scores: merge them all to count the distinct ones exactly.
            self.levels = [self._merged()]
            if self.levels[0].n_distinct > self.max_distinct:
                raise PayloadTooLargeError(
                    f"{where}.scores",
                    f"the stream holds more than {self.max_distinct} distinct scores (memory"
                    " grows with them): round the scores, for example to 6 decimals, or raise"
                    " max_stream_distinct_scores",
                )

    def _merged(self) -> BinaryStats:
        stats = BinaryStats.empty()
        for level in reversed(self.levels):  # smallest first
            stats = level.merge(stats)
        return stats


class Evaluator:
    """Runs CPU-bound evaluation off the event loop, at most ``workers`` at a time, so a big
    request never stalls health checks or other connections; and admits at most
    ``max_inflight`` evaluation requests at once (both doors), so a burst of large uploads is
    refused early (clients retry) instead of piling up in memory."""

    def __init__(self, workers: int, max_inflight: int = 16) -> None:
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="evaluate")
        self._slots = asyncio.Semaphore(workers)
        self.max_inflight = max_inflight
        self.inflight = 0
        self._count = threading.Lock()

    @contextmanager
    def admitted(self) -> Iterator[None]:
        """Hold one of the ``max_inflight`` places for a request; ``BusyError`` when none is
        free (raised at once: a request never waits for a place)."""
        with self._count:
            if self.inflight >= self.max_inflight:
                raise BusyError(self.max_inflight)
            self.inflight += 1
        try:
            yield
        finally:
            with self._count:
                self.inflight -= 1

    async def run(self, function: Callable[..., T], *args: object) -> T:
        async with self._slots:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._pool, function, *args)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=False)
