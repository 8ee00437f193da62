"""Evaluate a Dask DataFrame: states built on the workers, merged on the workers, one result.

    from evalserve.dask import evaluate
    result = evaluate(dataframe, task="binary", label="label", score="score")

Each partition becomes the ``Accumulator`` state of its rows on the worker that holds it; the
states are merged by a tree reduction on the workers (``split_every`` states per merge), and
only the final state, a few bytes per distinct score, reaches the client, which computes the
result from it. The answer is the in-process one (``evalserve.evaluate`` on all rows): states
merge exactly, and with integer weights bit for bit.

``method="ranges"`` (task binary) is the exact path for data whose distinct scores do not fit
one machine: each partition is read and checked once and kept on its worker while the score
axis is cut into ranges at a sample's quantiles, then split into every range by one task; each
range's pieces are joined and kept on a worker, and each range is summarised there with the
class totals of the ranges above it (:mod:`evalserve.core.ranges`); the client adds up one
small summary per range. No worker and
not the client ever holds all distinct scores, and no step grows with the rows on the client.

``progress`` (a ``distributed.Client`` open): a callback told, on the client, how many
partitions are done and their rows as the cluster computes (``evalserve evaluate --engine
dask`` draws it as a line on a terminal).

``segment="COLUMN"`` (method tree): each partition's state holds one state per segment, the
merges keep their union, and the result has ``result.segments`` as ``evaluate(...,
segments=...)`` has. The ranges method takes no segments; folding (``fold_segments``) needs
every row at once and is ``evaluate``'s and ``evalserve evaluate``'s.

Needs the ``dask`` extra: ``pip install 'evalserve[dask]'``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import operator
import os
import sys
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar, cast

import dask
import dask.dataframe as dd
import dask.threaded
import numpy as np
import pyarrow as pa
from dask.base import compute, get_scheduler, persist
from dask.delayed import Delayed, delayed
from dask.highlevelgraph import HighLevelGraph, MaterializedLayer
from dask.sizeof import sizeof
from dask.typing import Key
from numpy.typing import NDArray

from evalserve.core import (
    REGISTRY,
    Accumulator,
    EvaluationResult,
    InvalidInputError,
    Options,
    parse_options,
    task_spec,
    using_threads,
)
from evalserve.core._segments import DEFAULT_MAX_SEGMENTS
from evalserve.core.ranges import (
    Bests,
    RangeBatch,
    RangeClasses,
    RangeFinish,
    RangePass,
    RangeRows,
    RangeTotals,
    bests_of,
    combine_ranges,
    range_batch,
    range_classes,
    range_context,
    range_cuts,
    range_finish,
    range_pass,
    range_totals,
    split_batch,
)
from evalserve.offline import (
    ColumnError,
    ColumnSpec,
    MonitorFile,
    OfflineError,
    Plan,
    Progress,
    emit,
    plan,
    render,
)
from evalserve.offline._files import FileError, sources
from evalserve.offline._run import segment_error
from evalserve.offline._segments import segment_codes
from evalserve.service.memory import retain_freed_memory

__all__ = ["evaluate", "run_files"]

F = TypeVar("F", bound=Callable[..., Any])


def _one_thread(task: F) -> F:
    """A task of the cluster's: its sorts use one thread (the cluster's workers and their
    threads are the parallelism here; an evaluation's own threads would oversubscribe them)."""

    @functools.wraps(task)
    def run(*args: Any, **kwargs: Any) -> Any:
        with using_threads(1):
            return task(*args, **kwargs)

    return cast(F, run)


def _held_bytes(value: object) -> int:
    """The bytes of the arrays a ranges object holds (its dataclass fields, nested ones and
    tuples of them)."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, tuple | list):
        return sum(_held_bytes(each) for each in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sum(_held_bytes(getattr(value, each.name)) for each in dataclasses.fields(value))
    return 0


# What a partition's rows, a range's pieces and a range's classes weigh, for the scheduler: by
# default Dask counts such objects as a few dozen bytes, so it would move a range's classes to
# another worker for its next pass as readily as a number, and place a range's join without
# regard to where its pieces are.
for _kind in (RangeBatch, RangeRows, RangeClasses):
    sizeof.register(_kind)(lambda value: 64 + _held_bytes(value))


ProgressCallback = Callable[[str, int, int, int], None]
"""``progress(step, partitions_done, partitions, rows_done)``; ``step``: ``"reading"`` (the
ranges method's first pass: each partition read, checked and sampled for the cut points) or
``"evaluating"``."""

SPLIT_EVERY = 8
RETRIES = 3  # a task whose worker died runs again elsewhere (Dask reschedules it)


def evaluate(
    dataframe: dd.DataFrame,
    *,
    task: str = "binary",
    label: str | Sequence[str] | None = None,
    score: str | Sequence[str] | None = None,
    weight: str | None = None,
    prediction: str | None = None,
    classes: Sequence[str] | None = None,
    options: Mapping[str, Any] | None = None,
    method: str = "tree",
    ranges: int | None = None,
    split_every: int = SPLIT_EVERY,
    max_state_bytes: int | None = None,
    retries: int = RETRIES,
    baseline: Mapping[str, Any] | None = None,
    monitor_state: bytes | None = None,
    window: str | None = None,
    segment: str | None = None,
    max_segments: int | None = DEFAULT_MAX_SEGMENTS,
    segment_monitor_states: Mapping[str, bytes] | None = None,
    progress: ProgressCallback | None = None,
) -> EvaluationResult:
    """The result of ``evaluate(task, ...)`` on every row of ``dataframe``.

    Columns as in ``evalserve evaluate`` (``label``, ``score``, ``weight`` when present; a
    list of names or a prefix for the score columns of multiclass and multilabel).
    ``method``: ``"tree"`` (every task) or ``"ranges"`` (task binary: ``ranges`` score
    ranges, default one per 10M rows, at least two per cluster thread, up to 64).
    ``max_state_bytes`` caps each state a worker builds (``StateTooLargeError`` past it).
    ``baseline``, ``monitor_state`` and ``window`` (method tree, task binary): the drift test
    and the AUC monitor, as in ``evaluate``.
    ``segment`` (method tree): the column naming each row's segment; ``max_segments`` and
    ``segment_monitor_states`` as in ``evaluate``. ``progress`` (needs a ``distributed.Client``):
    called on the client as each partition's rows are done (``ProgressCallback``). Computes on
    the current Dask scheduler (a ``distributed.Client`` when one is open)."""
    spec = ColumnSpec(
        task=task,
        label=_names(label),
        score=_names(score),
        weight=weight,
        prediction=prediction,
        classes=None if classes is None else tuple(classes),
        segment=segment,
    )
    if segment is None and segment_monitor_states is not None:
        raise InvalidInputError("segment_monitor_states", "only a run with segments takes it")
    if split_every < 2:
        raise InvalidInputError("split_every", f"expected at least 2, got {split_every}")
    if ranges is not None and ranges < 1:
        raise InvalidInputError("ranges", f"expected at least 1, got {ranges}")
    table_plan = plan(spec, [str(name) for name in dataframe.columns])
    Accumulator(task, options, table_plan.classes)  # options and classes checked here, once
    frame = dataframe[table_plan.columns]
    if method == "tree":
        final, counts = _tree(
            frame, table_plan, options, split_every, max_state_bytes, max_segments,
            counted=progress is not None,
        )  # fmt: skip
        (state,) = _compute([final], counts, retries, progress, "evaluating")
        accumulator = Accumulator.from_bytes(state)
        return accumulator.result(
            baseline=baseline, monitor_state=monitor_state, window=window,
            segment_monitor_states=segment_monitor_states,
        )  # fmt: skip
    if method != "ranges":
        raise InvalidInputError("method", f"expected 'tree' or 'ranges', got {method!r}")
    if segment is not None:
        raise InvalidInputError(
            "segments", "the ranges method does not take segments; use method tree"
        )
    for name, value in (("baseline", baseline), ("monitor_state", monitor_state)):
        if value is not None:
            raise InvalidInputError(name, "is taken by method 'tree' only")
    if not task_spec(task).ranges:
        with_ranges = ", ".join(repr(spec.name) for spec in REGISTRY if spec.ranges)
        raise InvalidInputError("method", f"the ranges path takes task {with_ranges}, not {task!r}")
    return _ranges(frame, table_plan, options, ranges, max_state_bytes, retries, progress)


def _names(value: str | Sequence[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


# --- the tree: one state per partition, merged on the workers -----------------------------------


def _tree(
    frame: dd.DataFrame,
    table_plan: Plan,
    options: Mapping[str, Any] | None,
    split_every: int,
    cap: int | None,
    max_segments: int | None = DEFAULT_MAX_SEGMENTS,
    *,
    counted: bool = False,
) -> tuple[Delayed, list[Delayed]]:
    """The merged state, and with ``counted`` each partition's rows, known once its state is
    built (for the progress line)."""
    parts = frame.to_delayed()
    if counted:
        pairs = [
            delayed(_counted_state, pure=True, nout=2)(
                part, index, table_plan, options, cap, max_segments=max_segments
            )
            for index, part in enumerate(parts)
        ]
        states, counts = [pair[0] for pair in pairs], [pair[1] for pair in pairs]
        return _reduced(states, split_every, cap, max_segments), counts
    states = [
        delayed(_partition_state, pure=True)(
            part, index, table_plan, options, cap, max_segments=max_segments
        )
        for index, part in enumerate(parts)
    ]
    return _reduced(states, split_every, cap, max_segments), []


def _reduced(
    states: list[Delayed],
    split_every: int,
    cap: int | None,
    max_segments: int | None = DEFAULT_MAX_SEGMENTS,
) -> Delayed:
    if not states:
        raise InvalidInputError("dataframe", "has no partitions")
    while len(states) > 1:
        states = [
            delayed(_merged, pure=True)(cap, max_segments, *states[i : i + split_every])
            for i in range(0, len(states), split_every)
        ]
    return states[0]


def _accumulator(
    table_plan: Plan,
    options: Mapping[str, Any] | None,
    cap: int | None,
    max_segments: int | None = DEFAULT_MAX_SEGMENTS,
) -> Accumulator:
    return Accumulator(
        table_plan.task, options, table_plan.classes, max_state_bytes=cap,
        max_segments=max_segments,
    )  # fmt: skip


def _in_partition(error: InvalidInputError, index: int) -> InvalidInputError:
    """A partition's bad rows, said of the partition."""
    message = f"partition {index}: {error.message} (rows count from the partition's first row)"
    return InvalidInputError(error.field, message)


@_one_thread
def _partition_state(
    part: Any,
    index: int,
    table_plan: Plan,
    options: Mapping[str, Any] | None,
    cap: int | None,
    *,
    max_segments: int | None = DEFAULT_MAX_SEGMENTS,
) -> bytes:
    """The state of one partition's rows as bytes; bad rows raise ``InvalidInputError``
    naming the partition and the row in it."""
    try:
        accumulator = _accumulator(table_plan, options, cap, max_segments)
        arguments = table_plan.arguments(lambda name: _column(part, name))
        if table_plan.segment is None:
            accumulator.update(**arguments)
        else:
            codes, names = _segments(part, table_plan.segment)
            try:
                accumulator.update(**arguments, segments=codes, segment_names=names)
            except InvalidInputError as error:
                raise segment_error(error, codes) from None
    except InvalidInputError as error:
        raise _in_partition(error, index) from None
    return accumulator.to_bytes()


def _counted_state(
    part: Any,
    index: int,
    table_plan: Plan,
    options: Mapping[str, Any] | None,
    cap: int | None,
    *,
    max_segments: int | None = DEFAULT_MAX_SEGMENTS,
) -> tuple[bytes, Done]:
    """``_partition_state``, and the partition done with its rows (``Done``)."""
    state = _partition_state(part, index, table_plan, options, cap, max_segments=max_segments)
    return state, (1, len(part))


def _compute(
    targets: list[Delayed | list[Delayed]],
    counts: list[Delayed],
    retries: int,
    progress: ProgressCallback | None,
    step: str,
) -> tuple[Any, ...]:
    """``compute(*targets)``; with ``progress``, told as each of ``counts`` (a partition done
    with its rows, a ``Done``, once its work is done) arrives. On a ``distributed`` client the
    graph is submitted, then ``targets`` and ``counts`` are emptied (the caller's lists), so
    that the client holds no task of it but the targets: what they depend on (persisted
    partitions) is freed on the workers as soon as its last dependent is done. An error of
    the cluster's is raised as ``compute`` raises it."""
    client = _client()
    if client is None:
        if progress is not None:
            raise InvalidInputError("progress", "needs a distributed.Client")
        return tuple(compute(*targets, retries=retries))
    flat, shape = _flattened(targets)
    futures = client.compute([*flat, *counts], retries=retries)
    watched = Watched(len(counts), len(counts))
    flat.clear()
    targets.clear()
    counts.clear()
    return _gathered(client, futures, watched, shape, progress, step)


Done = tuple[int, int]
"""What a count of the progress line says: partitions done, and their rows."""


@dataclasses.dataclass(frozen=True)
class Watched:
    """The progress line's counts among a computation's futures (its last ``futures``), and
    the partitions they count in all."""

    futures: int
    partitions: int


@dataclasses.dataclass
class Graph:
    """A task graph written out key by key (Dask's custom-graph form: a task is a tuple of a
    function and its arguments, keys among them), the keys of its targets (a key, or a list
    of keys), the keys of the progress line's counts (each a ``Done``), the partitions they
    count in all, and the worker some tasks are to run on (``placed``: on a ``distributed``
    client, a restriction that yields to another worker when that one is gone)."""

    tasks: dict[Key, Any]
    targets: list[Key | list[Key]]
    counts: list[Key]
    partitions: int = 0
    placed: dict[Key, str] = dataclasses.field(default_factory=dict)


def _compute_graph(
    graph: Graph, retries: int, progress: ProgressCallback | None, step: str
) -> tuple[Any, ...]:
    """``_compute`` of a written-out graph (``Graph``): its targets' values. The graph's tasks
    are emptied once submitted, so that the client holds no task of it but the targets'."""
    client = _client()
    flat, shape = _flattened(graph.targets)
    watched = Watched(len(graph.counts), graph.partitions)
    if client is None:
        if progress is not None:
            raise InvalidInputError("progress", "needs a distributed.Client")
        scheduler = get_scheduler() or dask.threaded.get
        values = iter(scheduler(graph.tasks, flat))
        return _shaped(values, shape)
    futures = client.get(_placed(graph), [*flat, *graph.counts], sync=False, retries=retries)
    graph.tasks.clear()
    return _gathered(client, futures, watched, shape, progress, step)


def _placed(graph: Graph) -> Any:
    """The graph's tasks for ``Client.get``: with its placements, a high-level graph of one
    layer whose annotations restrict each placed task to its worker, loosely (Dask moves it
    when the worker is gone), and leave the others to the scheduler."""
    if not graph.placed:
        return graph.tasks
    placed = graph.placed

    def workers(key: Key) -> list[str] | None:
        return [placed[key]] if key in placed else None

    def loose(key: Key) -> bool | None:
        return True if key in placed else None

    name = f"evalserve-ranges-{uuid.uuid4().hex}"
    layer = MaterializedLayer(
        graph.tasks, annotations={"workers": workers, "allow_other_workers": loose}
    )
    return HighLevelGraph({name: layer}, {name: set()})


def _gathered(
    client: Any,
    futures: list[Any],
    watched: Watched,
    shape: list[int | None],
    progress: ProgressCallback | None,
    step: str,
) -> tuple[Any, ...]:
    """The values of ``futures`` but the progress line's counts (the last ``watched.futures``,
    each a ``Done``, told to ``progress`` as they arrive), in the targets' ``shape``."""
    from distributed import as_completed

    wanted = len(futures) - watched.futures
    if progress is not None:
        done, rows = 0, 0
        progress(step, done, watched.partitions, rows)
        for future in as_completed(futures[wanted:]):
            if future.status != "finished":
                break  # failed: gathering the targets raises its error
            parts, more = future.result()
            done, rows = done + int(parts), rows + int(more)
            progress(step, done, watched.partitions, rows)
    return _shaped(iter(client.gather(futures[:wanted])), shape)


def _shaped(values: Iterator[Any], shape: list[int | None]) -> tuple[Any, ...]:
    """``values`` in the targets' ``shape``: one value, or a list of ``size``."""
    return tuple(
        next(values) if size is None else [next(values) for _ in range(size)] for size in shape
    )


def _client() -> Any:
    """The current ``distributed`` client when it is the scheduler Dask computes on (not when
    ``dask.config`` names a local one), else None."""
    try:
        from distributed import get_client
    except ImportError:
        return None
    try:
        client = get_client()
    except ValueError:
        return None
    return client if get_scheduler() == client.get else None


def _flattened(targets: Sequence[Any]) -> tuple[list[Any], list[int | None]]:
    """The targets' items in one list, and the targets' shape for ``_shaped``: None for one
    item, the size of a list."""
    flat = [
        each for target in targets for each in (target if isinstance(target, list) else [target])
    ]
    return flat, [len(target) if isinstance(target, list) else None for target in targets]


@_one_thread
def _range_batch(
    part: Any,
    table_plan: Plan,
    positive_label: str | None,
    partition_info: Mapping[str, Any] | None = None,
) -> RangeBatch:
    """One partition's rows, checked (``range_batch``), in the task that reads them (Dask
    runs it as ``map_partitions``, fused with the read, and tells it its ``partition_info``);
    bad rows raise ``InvalidInputError`` naming the partition and the row in it."""
    index = 0 if partition_info is None else int(partition_info["number"])
    try:
        if table_plan.prediction is not None:
            raise InvalidInputError("predictions", "the ranges path takes scores only")
        arguments = table_plan.arguments(lambda name: _column(part, name))
        return range_batch(
            arguments["y_true"], arguments["y_score"], arguments.get("sample_weight"),
            positive_label=positive_label,
        )  # fmt: skip
    except InvalidInputError as error:
        raise _in_partition(error, index) from None


@_one_thread
def _split(
    cuts: Sequence[float], partitions: Sequence[int], *batches: RangeBatch
) -> tuple[Any, ...]:
    """Partitions (``partitions``: their positions; ``batches``: their rows) split into
    every range, each once whatever the number of ranges (``split_batch``): per range, each
    partition's piece with its position; then the partitions done (``Done``)."""
    splits = [split_batch(batch, cuts) for batch in batches]
    pieces = tuple(
        tuple((p, split[j]) for p, split in zip(partitions, splits, strict=True))
        for j in range(len(cuts) + 1)
    )
    return (*pieces, (len(batches), sum(batch.n_rows for batch in batches)))


def _segments(part: Any, name: str) -> tuple[Any, list[str]]:
    """A partition's segment column as codes into its distinct names (a categorical column's
    codes as they are, other columns dictionary-encoded by Arrow)."""
    values = part[name]
    if values.isna().any():
        row = int(np.flatnonzero(values.isna().to_numpy())[0])
        raise InvalidInputError("segments", f"row {row} is missing (NaN or null)")
    return segment_codes(pa.Array.from_pandas(values))


def _column(part: Any, name: str) -> Any:
    values = part[name]
    if values.isna().any():
        row = int(np.flatnonzero(values.isna().to_numpy())[0])
        raise InvalidInputError(name, f"row {row} is missing (NaN or null)")
    return values.to_numpy()


@_one_thread
def _merged(cap: int | None, max_segments: int | None, *states: bytes) -> bytes:
    accumulator = Accumulator.from_bytes(states[0], max_state_bytes=cap)
    accumulator.max_segments = max_segments  # the bytes do not carry the cap
    for state in states[1:]:
        accumulator = accumulator.merge(Accumulator.from_bytes(state, max_state_bytes=cap))
    return accumulator.to_bytes()


# The scores the client samples to cut the ranges: spread over the partitions, at least
# MIN_PART_SAMPLE from each.
CUT_SAMPLE = 200_000
MIN_PART_SAMPLE = 64
# The rows a range holds by default: 160 MB of state with distinct scores, a pass's arrays a
# few times that.
RANGE_ROWS = 10_000_000
# The rows one split task takes (whole partitions, one at least): a worker holds a split's
# partitions and their pieces at once, so not all of its partitions' (their pages would be
# fresh ones each time, not those the last split let go).
SPLIT_ROWS = 4_000_000


# --- the ranges: each worker one stretch of the score axis --------------------------------------


def _ranges(
    frame: dd.DataFrame,
    table_plan: Plan,
    options: Mapping[str, Any] | None,
    ranges: int | None,
    cap: int | None,
    retries: int,
    progress: ProgressCallback | None = None,
) -> EvaluationResult:
    parsed = parse_options(options)
    # Each partition is read and checked by one task (the check fused with the read), and its
    # rows stay on its worker (persisted) while the client takes the cut points from their
    # samples; then each worker's partitions are split into every range, a run of them a task.
    checked = frame.map_partitions(
        _range_batch, table_plan, parsed.positive_label, meta=frame._meta, enforce_metadata=False
    )
    batches = list(persist(*checked.to_delayed(), retries=retries))
    _read(batches, retries, progress)
    groups, threads = _groups(batches)
    cuts, rows = _cuts(batches, groups, ranges, retries, threads)
    graph = _range_graph(batches, groups, rows, cuts, parsed, cap, counted=progress is not None)
    batches.clear()  # the client lets go of the rows: freed once split (``_compute_graph``)
    got_totals, got_passes, got_finishes, got_bests = _compute_graph(
        graph, retries, progress, "evaluating"
    )
    contexts = [range_context(got_totals, j, parsed) for j in range(len(got_totals))]
    return combine_ranges(got_totals, contexts, got_passes, got_finishes, got_bests, parsed)


def _range_graph(
    batches: list[Delayed],
    groups: list[Group],
    rows: Sequence[int],
    cuts: list[float],
    parsed: Options,
    cap: int | None,
    *,
    counted: bool,
) -> Graph:
    """The ranges' tasks after the cuts, as one task graph written out key by key (``Graph``:
    its targets are (totals, passes, finishes, bests), and with ``counted`` each split's
    partitions done with their rows, for the progress line). Ranges (low, high], from the
    highest scores down: the order the passes take them in.

    Each run of partitions (``Group.chunks``: up to ``SPLIT_ROWS`` rows) is split into every
    range by one task, on the worker that holds it. The pieces of one range split on one
    worker are taken by one task there, and each range's pieces from every worker are joined
    by one task, whose classes stay on its worker for the range's passes; each pass takes the
    range's context from every range's totals there. So the exchange costs a task per worker
    and range, not one per partition and range: at 1,000 partitions, 16 workers and 64
    ranges, 1,024 tasks where a task per piece would be 64,000.

    The graph places these tasks itself (``Graph.placed``): a run's split and a worker's
    pieces on that worker, a range's join and passes on a worker thread taken in turn forth
    and back (``_turn``), so that each thread joins and sweeps as many ranges, and as many
    high ones as low ones. Left to the scheduler, a step of many tasks over few (the pieces
    of a few splits) counts as "root-ish" there and goes to any free worker, with the whole
    split it reads.

    Written out, not called through ``dask.delayed``: a delayed call merges and culls the
    graphs of its arguments, so the graph took time quadratic in the partitions."""
    token = uuid.uuid4().hex
    pieces = len(cuts) + 1
    tasks: dict[Key, Any] = {}
    placed: dict[Key, str] = {}
    for batch in batches:
        tasks.update(batch.__dask_graph__())
    splits: list[list[Key]] = []  # each group's
    for g, group in enumerate(groups):
        splits.append([])
        for c, chunk in enumerate(group.chunks(rows)):
            splits[-1].append((f"range-split-{token}", g, c))
            tasks[splits[-1][-1]] = (_split, cuts, chunk, *(batches[p].key for p in chunk))
            placed[splits[-1][-1]] = group.worker
    slots = [group.worker for group in groups for _ in range(group.threads)]
    totals: list[Key] = [(f"range-totals-{token}", j) for j in range(pieces)]
    passes: list[Key] = [(f"range-pass-{token}", j) for j in range(pieces)]
    finishes: list[Key] = [(f"range-finish-{token}", j) for j in range(pieces)]
    bests: Key = f"range-bests-{token}"
    for j in range(pieces):
        taken: list[Key] = [(f"range-pieces-{token}", g, j) for g in range(len(groups))]
        for piece, group, held in zip(taken, groups, splits, strict=True):
            tasks[piece] = (_worker_pieces, j, *held)
            placed[piece] = group.worker
        join = (f"range-join-{token}", j)
        tasks[join] = (_range_classes, cap, parsed, *taken)
        tasks[totals[j]] = (operator.getitem, join, 1)
        tasks[passes[j]] = (_pass, join, j, parsed, totals)
        tasks[finishes[j]] = (_finish, join, j, parsed, totals, bests)
        worker = slots[_turn(j, len(slots))] if slots else ""
        for key in (join, totals[j], passes[j], finishes[j]):
            placed[key] = worker
    tasks[bests] = (_bests, totals, passes)
    counts: list[Key] = []
    if counted:
        for done, split in enumerate(each for group in splits for each in group):
            counts.append((f"range-rows-{token}", done))
            tasks[counts[-1]] = (operator.getitem, split, pieces)
            placed[counts[-1]] = placed[split]
    known = {key: worker for key, worker in placed.items() if worker}
    return Graph(tasks, [totals, passes, finishes, bests], counts, len(batches), known)


def _turn(position: int, count: int) -> int:
    """Which of ``count`` takes the range at ``position``: in turn, forth then back (0, 1,
    1, 0, 0, 1, ... for two), since the ranges' work varies along the score axis."""
    lap, at = divmod(position, count)
    return at if lap % 2 == 0 else count - 1 - at


def _worker_pieces(piece: int, *splits: tuple[Any, ...]) -> tuple[tuple[int, RangeRows], ...]:
    """Range ``piece``'s rows of each partition of ``splits`` (``_split``'s), with its
    partition."""
    return tuple(pair for split in splits for pair in split[piece])


def _read(batches: list[Delayed], retries: int, progress: ProgressCallback | None) -> None:
    """With ``progress``: the reading step told as each partition is read and checked."""
    if progress is not None:
        counts = [delayed(_rows, pure=True)(batch) for batch in batches]
        _compute([], counts, retries, progress, "reading")


def _rows(batch: RangeBatch) -> Done:
    return (1, batch.n_rows)


@dataclasses.dataclass(frozen=True)
class Group:
    """The partitions (their positions, in order) one worker holds (``""``: unknown, or a
    local scheduler), and its threads."""

    worker: str
    partitions: list[int]
    threads: int = 1

    def chunks(self, rows: Sequence[int]) -> list[list[int]]:
        """Its partitions in runs of at most ``SPLIT_ROWS`` rows (``rows``: each partition's,
        by position), a partition at least: the partitions one split takes."""
        runs: list[list[int]] = []
        held = 0
        for p in self.partitions:
            if not runs or held + rows[p] > SPLIT_ROWS:
                runs.append([])
                held = 0
            runs[-1].append(p)
            held += rows[p]
        return runs


def _groups(batches: list[Delayed]) -> tuple[list[Group], int]:
    """The partitions grouped by the worker that holds each, once every partition is read (a
    partition that failed is grouped apart: its group's first task raises its error), and the
    threads of the whole cluster; one group on a local scheduler, with this machine's CPUs."""
    client = _client()
    if client is None:
        local = [Group("", list(range(len(batches))))] if batches else []
        return local, os.cpu_count() or 1
    from distributed import futures_of, wait

    wait(futures_of(batches))
    held = client.who_has(batches)  # the futures of the persisted partitions
    threads = client.nthreads()
    by_worker: dict[str, list[int]] = {}
    for p, batch in enumerate(batches):
        workers = sorted(held.get(batch.key, ()))
        by_worker.setdefault(workers[0] if workers else "", []).append(p)
    return [
        Group(worker, parts, max(1, threads.get(worker, 1))) for worker, parts in by_worker.items()
    ], sum(threads.values())


def _cuts(
    batches: list[Delayed],
    groups: list[Group],
    count: int | None,
    retries: int,
    threads: int,
) -> tuple[list[float], list[int]]:
    """Cut points that share the work of a sample of the rows (every partition's, evenly
    spaced, taken by a task a worker: the ranges need not be even to be exact, only to share
    the work; ``range_cuts``), distinct and in ascending order; ``count`` ranges, or by
    default as many as the rows and the cluster's ``threads`` need (``_default_ranges``); and
    each partition's rows. The client holds at most about ``CUT_SAMPLE`` rows' scores and
    labels, however many rows."""
    if not batches:
        return [], []
    each = max(MIN_PART_SAMPLE, CUT_SAMPLE // len(batches))
    sampled = [
        delayed(_sample, pure=True)(each, *(batches[p] for p in group.partitions))
        for group in groups
    ]
    (samples,) = _compute([sampled], [], retries, None, "reading")
    scores = np.concatenate([values for values, _, _ in samples])
    labels = np.concatenate([positive for _, positive, _ in samples])
    rows = [0] * len(batches)
    for group, (_, _, sizes) in zip(groups, samples, strict=True):
        for p, size in zip(group.partitions, sizes, strict=True):
            rows[p] = size
    return range_cuts(scores, labels, count or _default_ranges(sum(rows), threads)), rows


def _sample(
    size: int, *batches: RangeBatch
) -> tuple[NDArray[np.float64], NDArray[np.bool_], list[int]]:
    """At most ``size`` of each partition's rows (scores and labels, evenly spaced in its
    order: ``RangeBatch.sample``), and each partition's rows (a group's: one at least)."""
    taken = [batch.sample(size) for batch in batches]
    scores = np.concatenate([values for values, _ in taken])
    labels = np.concatenate([positive for _, positive in taken])
    return scores, labels, [batch.n_rows for batch in batches]


def _default_ranges(rows: int, threads: int) -> int:
    """Enough ranges that each holds about ``RANGE_ROWS`` rows, at least two per thread of the
    cluster (``threads``: each range's join and passes are one task a step), at most 64.
    Small ranges keep a pass's arrays small (a range's sweep is several times its state); each
    range costs a few tasks and a piece from every group, so not more of them than the rows
    need."""
    wanted = -(-rows // RANGE_ROWS)
    return max(2, min(64, max(wanted, 2 * threads)))


@_one_thread
def _range_classes(
    cap: int | None, options: Options, *workers: tuple[tuple[int, RangeRows], ...]
) -> tuple[RangeClasses, RangeTotals]:
    """A range's classes, joined from its pieces (each worker's, ``_worker_pieces``; taken in
    the partitions' order, so that the answer does not depend on where they were) and kept
    on the worker for the passes, and its totals (pass 1)."""
    pieces = sorted((pair for each in workers for pair in each), key=lambda pair: pair[0])
    classes = range_classes([piece for _, piece in pieces], cap)
    return classes, range_totals(classes, options)


Joined = tuple[RangeClasses, RangeTotals]


@_one_thread
def _pass(joined: Joined, position: int, options: Options, totals: list[RangeTotals]) -> RangePass:
    """Pass 2 over range ``position`` (its context from every range's ``totals``)."""
    context = range_context(totals, position, options)
    return range_pass(joined[0].sweep(), context, options)


def _bests(totals: list[RangeTotals], passes: list[RangePass]) -> Bests | None:
    positives = sum(t.positives for t in totals)
    negatives = sum(t.negatives for t in totals)
    return bests_of(passes, positives) if positives > 0 and negatives > 0 else None


@_one_thread
def _finish(
    joined: Joined,
    position: int,
    options: Options,
    totals: list[RangeTotals],
    bests: Bests | None,
) -> RangeFinish:
    """Pass 3 over range ``position``."""
    if bests is None:
        return RangeFinish()
    context = range_context(totals, position, options)
    return range_finish(joined[0].sweep(), context, bests, position)


# --- the command line: files through Dask -------------------------------------------------------


@contextlib.contextmanager
def _progress_line() -> Iterator[ProgressCallback | None]:
    """The progress callback that draws the offline evaluator's line on stderr (partitions
    for files), ended on a line of its own when the computation ends; None (no callback, no
    futures watched) when stderr is not a terminal."""
    line = Progress(sys.stderr, files=0, unit="partition")
    if not line.enabled:
        yield None
        return

    def show(step: str, done: int, total: int, rows: int) -> None:
        if step != line.step:
            line.restart(step, total)
        line.files, line.files_done = total, done
        line.add_rows(rows - line.rows)

    try:
        yield show
    finally:
        line.close()


def run_files(
    paths: Sequence[str],
    spec: ColumnSpec,
    options: Mapping[str, Any] | None,
    *,
    scheduler: str | None = None,
    output_format: str = "json",
    method: str = "tree",
    output: str | None = None,
    baseline: Mapping[str, Any] | None = None,
    monitor: MonitorFile | None = None,
    max_segments: int | None = DEFAULT_MAX_SEGMENTS,
    fold_segments: bool = False,
    page: Mapping[str, Any] | None = None,
) -> int:
    """``evalserve evaluate --engine dask``: the files read by Dask, on the cluster at
    ``scheduler`` (or a local cluster of processes); the exit status. ``page``: the report's
    ``title`` and ``model`` (as ``offline.run``). On a terminal, a progress line on stderr
    (partitions done, rows, rows/s), ended before the result is printed."""
    from distributed import Client, LocalCluster

    try:
        if fold_segments:
            raise OfflineError(
                "--fold-segments needs every row's segment at once: the dask engine does not "
                "fold; raise --max-segments, or use the local engine"
            )
        found = sources(paths, spec.delimiter)
        kinds = {source.kind for source in found}
        if "-" in paths or len(kinds) > 1:
            raise OfflineError(
                "the dask engine reads files of one kind (all CSV or all Parquet), not stdin"
            )
        names = [source.path for source in found]
        if kinds == {"parquet"}:
            frame = dd.read_parquet(names)
        else:  # a segment column is text, whatever it looks like
            as_text = {} if spec.segment is None else {spec.segment: str}
            frame = dd.read_csv(names, dtype=as_text, sep=found[0].delimiter)
        if scheduler:
            client = Client(scheduler)
        else:
            client = Client(LocalCluster(processes=True, threads_per_worker=1))
            # Its own workers keep freed pages for the next large array, as the command's own
            # process and the server do (a fresh array faults in its pages otherwise). A task
            # runs on a thread of the worker's pool, whose glibc arena is not the main one: an
            # array over its heap size (64 MiB) is a fresh mapping there all the same. Telling
            # glibc to use one arena (MALLOC_ARENA_MAX=1 before the workers start) measured no
            # faster on 1 or 2 workers, so it is not set.
            client.run(retain_freed_memory)
        with client, _progress_line() as progress:
            result = evaluate(
                frame,
                task=spec.task,
                label=spec.label or None,
                score=spec.score or None,
                weight=spec.weight,
                prediction=spec.prediction,
                classes=spec.classes,
                options=options,
                method=method,
                baseline=baseline,
                monitor_state=None if monitor is None else monitor.read(),
                window=None if monitor is None else monitor.window,
                segment=spec.segment,
                max_segments=max_segments,
                progress=progress,
            )
        if monitor is not None and result.monitor_state is not None:
            monitor.write(result.monitor_state)
    except (OfflineError, FileError, ColumnError, InvalidInputError, OSError) as error:
        print(f"evalserve: error: {error}", file=sys.stderr)
        return 2
    page = {**(page or {}), "baseline": baseline}
    text = render(result, output_format, options=options, source=", ".join(paths), page=page)
    try:
        emit(text, output)
    except OSError as error:
        print(f"evalserve: error: {output}: {error.strerror}", file=sys.stderr)
        return 2
    return 0
