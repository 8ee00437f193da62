"""Operating points of an answer: the metrics that the list options ``recall_at_precision``,
``precision_at_recall``, ``tpr_at_fpr``, ``specificity_at_sensitivity`` and ``flagged_share``
ask for, read by option and target instead of by name.

The server names each metric after its option and target, the target written as the core
writes it (``format_target``): ``recall_at_precision_0.95`` and
``recall_at_precision_0.95_threshold``; ``flagged_share_0.05_threshold``,
``flagged_share_0.05_actual``, ``precision_at_flagged_share_0.05`` and
``recall_at_flagged_share_0.05``. Multiclass and multilabel answers carry them in each class
row, and their macro average in ``metrics`` as ``{name}_macro``. The TypeScript client
(clients/typescript/src/operating-points.ts) reads them the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "OPERATING_OPTIONS",
    "FlaggedShare",
    "OperatingOption",
    "OperatingPoint",
    "format_target",
    "read_flagged_share",
    "read_operating_point",
]

OperatingOption = Literal[
    "recall_at_precision", "precision_at_recall", "tpr_at_fpr", "specificity_at_sensitivity"
]
OPERATING_OPTIONS: tuple[OperatingOption, ...] = (
    "recall_at_precision",
    "precision_at_recall",
    "tpr_at_fpr",
    "specificity_at_sensitivity",
)
# The tasks whose answers hold the operating points per class, averaged in ``{name}_macro``.
_PER_CLASS_TASKS = ("multiclass", "multilabel")


def format_target(target: float) -> str:
    """A target as metric names write it: a whole number without ".0" (``1``), any other as
    Python's ``repr`` of the float (``0.95``, ``0.001``, ``1e-05``), so that distinct targets
    never share a name."""
    number = float(target)
    if number.is_integer() and abs(number) < 1e15:
        return str(int(number))
    return repr(number)


@dataclass(frozen=True)
class OperatingPoint:
    """One operating point: ``value`` (the recall of ``recall_at_precision``, say) at the
    ``threshold`` that reaches it, and the value's ``interval`` when the server sent one. Where
    no threshold meets the target, ``value`` and ``threshold`` are None and ``reason`` says
    why (the answer's ``undefined``). ``name`` is the value's metric in the answer (with its
    ``_macro`` suffix when read from a multiclass or multilabel answer's metrics);
    ``class_name`` the class row it was read from, or None."""

    option: OperatingOption
    target: float
    name: str
    value: float | None
    threshold: float | None
    interval: dict[str, Any] | None
    reason: str | None
    class_name: str | None = None


@dataclass(frozen=True)
class FlaggedShare:
    """An alert budget: the lowest ``threshold`` that flags at most ``share`` of the rows (in
    sample weight), the share it really ``flagged``, and the ``precision`` and ``recall``
    there. Undefined values are None, with ``reason`` from the answer's ``undefined``."""

    share: float
    threshold: float | None
    flagged: float | None
    precision: float | None
    recall: float | None
    reason: str | None
    class_name: str | None = None


@dataclass(frozen=True)
class _Source:
    """Where the metrics are read: an answer's metrics or one class row, and the suffix of
    their names there."""

    metrics: Mapping[str, Any]
    undefined: Mapping[str, str]
    intervals: Mapping[str, Any]
    suffix: str
    class_name: str | None

    def value(self, name: str, option: str, target: float) -> float | None:
        full = name + self.suffix
        if full not in self.metrics and full not in self.undefined:
            where = "" if self.class_name is None else f" of class {self.class_name!r}"
            raise KeyError(
                f"{full}{where} is not in the answer: send options={{{option!r}: "
                f"[{format_target(target)}]}} to a server that answers it"
            )
        value = self.metrics.get(full)
        return None if value is None else float(value)

    def reason(self, *names: str) -> str | None:
        for name in names:
            reason = self.undefined.get(name + self.suffix)
            if reason is not None:
                return reason
        return None


def _source(body: Mapping[str, Any], metrics: Mapping[str, Any], class_name: str | None) -> _Source:
    if class_name is None:
        suffix = "_macro" if body.get("task") in _PER_CLASS_TASKS else ""
        return _Source(metrics, body.get("undefined", {}), body.get("intervals", {}), suffix, None)
    rows = body.get("per_class", [])
    for row in rows:
        if row.get("class") == class_name:
            return _Source(row, row.get("undefined", {}), row.get("intervals", {}), "", class_name)
    names = [row.get("class") for row in rows]
    raise KeyError(f"no class {class_name!r} in the answer's per_class; its classes: {names}")


def _target(target: float) -> float:
    if isinstance(target, bool) or not isinstance(target, int | float):
        raise TypeError(f"expected a number as the target, but got {target!r}")
    return float(target)


def read_operating_point(
    body: Mapping[str, Any],
    metrics: Mapping[str, Any],
    option: str,
    target: float,
    class_name: str | None = None,
) -> OperatingPoint:
    """The operating point of ``option`` at ``target`` in an answer's ``body`` (REST JSON,
    its ``metrics`` as the result holds them)."""
    if option == "flagged_share":
        raise ValueError("flagged_share is an alert budget: read it with flagged_share(target)")
    if option not in OPERATING_OPTIONS:
        raise ValueError(f"expected one of {list(OPERATING_OPTIONS)}, but got {option!r}")
    number = _target(target)
    source = _source(body, metrics, class_name)
    name = f"{option}_{format_target(number)}"
    value = source.value(name, option, number)
    sent = source.metrics.get(f"{name}_threshold{source.suffix}")
    threshold = None if sent is None else float(sent)
    undefined = value is None or threshold is None
    return OperatingPoint(
        option=option,  # one of OPERATING_OPTIONS, checked above
        target=number,
        name=name + source.suffix,
        value=value,
        threshold=threshold,
        interval=source.intervals.get(name + source.suffix),
        reason=source.reason(name, f"{name}_threshold") if undefined else None,
        class_name=class_name,
    )


def read_flagged_share(
    body: Mapping[str, Any],
    metrics: Mapping[str, Any],
    share: float,
    class_name: str | None = None,
) -> FlaggedShare:
    """The alert budget ``share`` (a target of the option ``flagged_share``) in an answer."""
    number = _target(share)
    source = _source(body, metrics, class_name)
    label = format_target(number)
    names = (
        f"flagged_share_{label}_threshold",
        f"flagged_share_{label}_actual",
        f"precision_at_flagged_share_{label}",
        f"recall_at_flagged_share_{label}",
    )
    threshold, flagged, precision, recall = (
        source.value(name, "flagged_share", number) for name in names
    )
    undefined = None in (threshold, flagged, precision, recall)
    return FlaggedShare(
        share=number,
        threshold=threshold,
        flagged=flagged,
        precision=precision,
        recall=recall,
        reason=source.reason(*names) if undefined else None,
        class_name=class_name,
    )
