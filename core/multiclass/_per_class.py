"""Per-class one-vs-rest metrics and their averages.

Each class's statistic (on class slots, ``_ranking``) goes through task binary's own
functions: ``roc_auc``, ``average_precision`` (step-wise), ``ks_statistic`` and
DeLong's interval from ``placements``. A class absent from labels, or the only class present,
has no ranking metrics: they are None with the reason, and the class is left out of the macro
averages and named in ``warnings``. Each class's operating points (``_operating``) go in its row
the way task binary writes them for the class's one-vs-rest rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from evalserve.core._options import Options
from evalserve.core._result import MetricSink
from evalserve.core._result_parts import ClassRow, Interval
from evalserve.core.binary._delong import placements
from evalserve.core.binary._intervals import auc_interval
from evalserve.core.binary._precision_recall import average_precision
from evalserve.core.binary._ranking import ks_statistic, roc_auc
from evalserve.core.binary._stats import BinaryStats
from evalserve.core.binary._sweep import Sweep, sweep_of
from evalserve.core.multiclass._confusion import (
    ABSENT,
    NEITHER,
    NEVER_PREDICTED,
    ClassCounts,
    describe,
)
from evalserve.core.multiclass._operating import SlotScores, class_operating

__all__ = ["ClassRanking", "class_ranking", "class_rows", "ranking_averages"]

Floats = NDArray[np.float64]

RANKING = ("roc_auc", "average_precision", "ks_statistic")
NO_POSITIVES = "class absent from labels (no positives)"
NO_NEGATIVES = "every row is of this class (no negatives)"


@dataclass(slots=True)
class ClassRanking:
    """One class's ranking metrics (None with ``reason`` when undefined)."""

    values: dict[str, float | None]
    reason: str | None = None
    sweep: Sweep | None = None
    interval: Interval | None = None
    interval_reason: str | None = None
    undefined: dict[str, str] = field(default_factory=dict)
    operating: MetricSink = field(default_factory=MetricSink)


def class_ranking(
    stats: BinaryStats, options: Options, slots: SlotScores | None = None
) -> ClassRanking:
    """One class's ranking metrics and operating points; ``slots``: the scores behind its
    statistic's class slots (None when the statistic is on scores)."""
    positives, negatives = float(stats.pos.sum()), float(stats.neg.sum())
    if positives == 0 or negatives == 0:
        reason = NO_POSITIVES if positives == 0 else NO_NEGATIVES
        operating = class_operating(sweep_of(stats), slots, options)
        return ClassRanking(
            dict.fromkeys(RANKING),
            reason,
            undefined=dict.fromkeys(RANKING, reason),
            operating=operating,
        )
    sweep = sweep_of(stats)
    operating = class_operating(sweep, slots, options)
    values: dict[str, float | None] = {
        "roc_auc": roc_auc(sweep),
        "average_precision": average_precision(sweep),
        "ks_statistic": ks_statistic(sweep),
    }
    interval = auc_interval(placements(sweep), options.confidence_level, options.auc_interval)
    if isinstance(interval, str):
        return ClassRanking(values, sweep=sweep, interval_reason=interval, operating=operating)
    return ClassRanking(values, sweep=sweep, interval=interval, operating=operating)


def ranking_averages(
    sink: MetricSink,
    rankings: list[ClassRanking],
    class_mass: Floats,
    classes: tuple[str, ...],
) -> None:
    """roc_auc_ovr_{macro,weighted} and average_precision_{macro,weighted} over the classes
    with both positives and negatives."""
    defined = np.array([ranking.reason is None for ranking in rankings])
    absent = np.flatnonzero(class_mass <= 0)
    if absent.size:
        sink.warn(
            f"{describe(classes, absent)} absent from labels: roc_auc, average_precision, "
            "ks_statistic and recall undefined, left out of the macro averages"
        )
    alone = np.flatnonzero(~defined & (class_mass > 0))
    if alone.size:
        sink.warn(
            f"{describe(classes, alone)} is the only class present in labels: the one-vs-rest "
            "ranking metrics are undefined"
        )
    for metric, name in (("roc_auc", "roc_auc_ovr"), ("average_precision", "average_precision")):
        if not defined.any():
            reason = "no class has both positives and negatives in labels"
            sink.undefine(f"{name}_macro", reason)
            sink.undefine(f"{name}_weighted", reason)
            continue
        values = np.array(
            [r.values[metric] for r in rankings if r.reason is None], dtype=np.float64
        )
        weight = class_mass[defined]
        sink.set(f"{name}_macro", float(values.mean()))
        sink.set(f"{name}_weighted", float(np.dot(weight, values) / weight.sum()))


def class_rows(
    classes: tuple[str, ...], counts: ClassCounts, rankings: list[ClassRanking]
) -> list[ClassRow]:
    """``TaskOutput.per_class``: one row per class, in score-column order."""
    rows = []
    reasons = {"precision": NEVER_PREDICTED, "recall": ABSENT, "f1": NEITHER, "f_beta": NEITHER}
    for index, name in enumerate(classes):
        metrics: dict[str, float | None] = {}
        undefined: dict[str, str] = {}
        for metric, reason in reasons.items():
            value = float(getattr(counts, metric)[index])
            if np.isnan(value):
                metrics[metric] = None
                undefined[metric] = reason
            else:
                metrics[metric] = value
        metrics["support"] = float(counts.support[index])
        ranking = rankings[index]
        metrics.update(ranking.values)
        undefined.update(ranking.undefined)
        metrics.update(ranking.operating.metrics)
        undefined.update(ranking.operating.undefined)
        intervals = {} if ranking.interval is None else {"roc_auc": ranking.interval}
        rows.append(ClassRow(name, metrics, undefined, intervals))
    return rows
