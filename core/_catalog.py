"""The metric catalog: every metric of every task, keyed by (task, name).

It is built once, here, from the entries each task's spec carries (its ``_catalog`` module's:
definitions, directions, ranges, aliases, conventions, references and tests), and cannot change
afterwards. ``GET /v1/metrics`` and gRPC ``ListMetrics`` serve it, ``docs/generate_metrics.py``
writes the metric pages from it, and ``tests/core/test_catalog.py`` fails when the core emits a
metric without an entry or an entry names a test that does not check it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

from evalserve.core._metric_info import MetricInfo
from evalserve.core._tasks import REGISTRY, TASKS, check_task

__all__ = ["CATALOG", "catalog_entries", "catalog_entry"]

_BY_TASK: Mapping[str, tuple[MetricInfo, ...]] = MappingProxyType(
    {spec.name: spec.catalog for spec in REGISTRY}
)


def _build(by_task: Mapping[str, tuple[MetricInfo, ...]]) -> Mapping[tuple[str, str], MetricInfo]:
    """The read-only mapping (task, name) -> entry, tasks in ``TASKS`` order and each task's
    entries in its own order; raises on an entry filed under another task, a name listed twice
    in a task, or an alias that is a metric name or another metric's alias in the same task."""
    if tuple(by_task) != TASKS:
        raise ValueError(f"the catalog's tasks {list(by_task)} are not {list(TASKS)}")
    catalog: dict[tuple[str, str], MetricInfo] = {}
    for task, entries in by_task.items():
        names = [entry.name for entry in entries]
        aliases = [alias for entry in entries for alias in entry.aliases]
        for entry in entries:
            if entry.task != task:
                raise ValueError(f"{entry.name}: an entry of task {entry.task!r} under {task!r}")
            if (task, entry.name) in catalog:
                raise ValueError(f"{entry.name}: listed twice in task {task!r}")
            catalog[task, entry.name] = entry
        repeated = {alias for alias in aliases if aliases.count(alias) > 1}
        named = {alias for alias in aliases if alias in names or _template_of(alias, entries)}
        if clashes := sorted(repeated | named):
            raise ValueError(f"task {task!r}: aliases {clashes} clash with metric names")
    return MappingProxyType(catalog)


def _pattern(template: str) -> re.Pattern[str]:
    """The concrete names of a template: ``precision_at_{k}`` matches precision_at_100 and
    precision_at_2.5 (k as ``head_metric_names`` writes it)."""
    return re.compile(re.escape(template).replace(r"\{k\}", r"[0-9][0-9.e+-]*"))


def _template_of(name: str, entries: tuple[MetricInfo, ...]) -> MetricInfo | None:
    return next(
        (entry for entry in entries if entry.is_template and _pattern(entry.name).fullmatch(name)),
        None,
    )


CATALOG: Mapping[tuple[str, str], MetricInfo] = _build(_BY_TASK)
# Each task's templates, compiled once: catalog_entry runs for every metric of every result.
_TEMPLATES = {
    task: tuple((_pattern(entry.name), entry) for entry in entries if entry.is_template)
    for task, entries in _BY_TASK.items()
}


def catalog_entry(name: str, task: str | None = None) -> MetricInfo | None:
    """The entry of metric ``name`` of ``task``, or None when the task has no such metric.

    Concrete names of a template resolve to it (``precision_at_100`` to ``precision_at_{k}``);
    aliases do not (they are never keys of a result). Without ``task`` the first task in
    ``TASKS`` order that has the name answers: ``accuracy`` is then binary's. An unknown task
    raises ``InvalidInputError`` naming the field ``task``.
    """
    tasks = TASKS if task is None else (check_task(task),)
    for each in tasks:
        entry = CATALOG.get((each, name))
        if entry is not None:
            return entry
        for pattern, template in _TEMPLATES[each]:
            if pattern.fullmatch(name):
                return template
    return None


def catalog_entries(task: str | None = None) -> tuple[MetricInfo, ...]:
    """Every entry (tasks in ``TASKS`` order), or the entries of ``task``; an unknown task
    raises ``InvalidInputError`` naming the field ``task``."""
    if task is None:
        return tuple(CATALOG.values())
    return _BY_TASK[check_task(task)]
