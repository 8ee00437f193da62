"""One entry of the metric catalog, and the builder each task's ``_catalog`` writes its entries
with.

An entry describes one metric of one task: the same name can mean different things in two tasks
(multiclass ``brier_score`` sums over classes and lies in [0, 2]; binary's lies in [0, 1]), so
the catalog is keyed by (task, name) and every entry carries its task's own definition.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "COUNT",
    "NON_NEGATIVE",
    "SIGNED_UNIT",
    "UNBOUNDED",
    "UNIT",
    "UP_TO_ONE",
    "EntryBuilder",
    "MetricInfo",
    "MetricRange",
    "entry_builder",
]


@dataclass(frozen=True, slots=True)
class MetricRange:
    """The closed interval every defined value of a metric lies in. ``None`` is an unbounded
    end: ``MetricRange(0, None)`` is [0, ∞), ``MetricRange(None, None)`` the whole real line
    (thresholds, which are scores)."""

    lower: float | None
    upper: float | None

    def __post_init__(self) -> None:
        if self.lower is not None and self.upper is not None and self.lower > self.upper:
            raise ValueError(f"empty range [{self.lower}, {self.upper}]")

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, int | float) or math.isnan(value):
            return False
        above = self.lower is None or value >= self.lower
        below = self.upper is None or value <= self.upper
        return above and below

    def __str__(self) -> str:
        lower = "(-∞" if self.lower is None else f"[{self.lower:g}"
        upper = "∞)" if self.upper is None else f"{self.upper:g}]"
        return f"{lower}, {upper}"


UNIT = MetricRange(0, 1)
SIGNED_UNIT = MetricRange(-1, 1)
UP_TO_ONE = MetricRange(None, 1)
NON_NEGATIVE = MetricRange(0, None)
COUNT = NON_NEGATIVE  # counts and sums of (non-negative) sample weights
UNBOUNDED = MetricRange(None, None)


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricInfo:
    """A metric of one task.

    ``higher_is_better`` is None for counts and thresholds, which have no direction. ``name``
    may be a template (``precision_at_{k}``): ``catalog_entry`` resolves the concrete names.
    ``conventions`` are the (key, text) pairs of the task's ``conventions`` (sent with every
    result) that the metric follows where references disagree; ``reference`` says what the
    value is checked against and ``test`` is the pytest node id of the test that checks it.
    """

    name: str
    task: str
    definition: str
    higher_is_better: bool | None
    range: MetricRange
    aliases: tuple[str, ...]
    conventions: tuple[tuple[str, str], ...]
    reference: str
    test: str

    @property
    def tasks(self) -> tuple[str, ...]:
        """``(task,)``: kept for code written when one entry served several tasks."""
        return (self.task,)

    @property
    def convention(self) -> str:
        """The conventions as one text: ``key: text; key: text``."""
        return "; ".join(f"{key}: {text}" for key, text in self.conventions)

    @property
    def is_template(self) -> bool:
        return "{k}" in self.name


class EntryBuilder(Protocol):
    def __call__(
        self,
        name: str,
        higher_is_better: bool | None,
        value_range: MetricRange,
        definition: str,
        *,
        aliases: tuple[str, ...] = (),
        conventions: tuple[str, ...] = (),
        reference: str,
        test: str,
    ) -> MetricInfo: ...


def entry_builder(task: str, task_conventions: Mapping[str, str]) -> EntryBuilder:
    """The entry builder of one task's ``_catalog``: convention keys are looked up in the task's
    ``conventions`` (a key it lacks fails at import), so an entry quotes the very text every
    result of the task carries."""

    def entry(
        name: str,
        higher_is_better: bool | None,
        value_range: MetricRange,
        definition: str,
        *,
        aliases: tuple[str, ...] = (),
        conventions: tuple[str, ...] = (),
        reference: str,
        test: str,
    ) -> MetricInfo:
        return MetricInfo(
            name=name,
            task=task,
            definition=definition,
            higher_is_better=higher_is_better,
            range=value_range,
            aliases=aliases,
            conventions=tuple((key, task_conventions[key]) for key in conventions),
            reference=reference,
            test=test,
        )

    return entry
