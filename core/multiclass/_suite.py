"""``compute_multiclass``: every multiclass metric of one request, in two halves.

Rows to statistics (``_stats``): check the rows (``_inputs``); hard predictions (sent, or the
argmax of the scores) give the confusion matrix (``_confusion``); the true-class score of each
row gives the rank table of top-k accuracy (``_topk``) and, with the rows' squares and top
scores, the sums of the probability metrics (``_probability``); one sweep over the score
columns gives the one-vs-rest, one-vs-one and micro ranking statistics (``_ranking``).

Statistics to metrics (``multiclass_output``): the confusion matrix's metrics, top-k accuracy,
the probability metrics, each class's ranking metrics through task binary's functions
(``_per_class``), Hand & Till's averages (``_ovo``), the micro averages (``_micro``) and the
curves. The ``Accumulator``'s state (``_state``) builds the same statistics from its batches
and shares this half, so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalserve.core._options import Options
from evalserve.core._result import Curve, MetricSink, TaskOutput
from evalserve.core.multiclass._catalog import CONVENTIONS, METRIC_NAMES
from evalserve.core.multiclass._confusion import class_counts, describe, hard_metrics
from evalserve.core.multiclass._inputs import multiclass_inputs
from evalserve.core.multiclass._macro_curve import class_roc_curves, macro_roc_curve
from evalserve.core.multiclass._micro import micro_metrics
from evalserve.core.multiclass._operating import operating_macros, operating_order
from evalserve.core.multiclass._ovo import ovo_metrics
from evalserve.core.multiclass._per_class import (
    ClassRanking,
    class_ranking,
    class_rows,
    ranking_averages,
)
from evalserve.core.multiclass._probability import PROBABILITY_METRICS, probability_metrics
from evalserve.core.multiclass._stats import MulticlassStats, stats_of_rows
from evalserve.core.multiclass._topk import top_k_metrics

__all__ = ["compute_multiclass", "multiclass_output"]


def compute_multiclass(
    y_true: Any,
    y_score: Any,
    *,
    y_pred: Any = None,
    sample_weight: Any = None,
    classes: Sequence[str] | None = None,
    options: Options,
) -> TaskOutput:
    """All multiclass metrics, per-class rows and curves; raises ``InvalidInputError`` naming
    the field (labels, scores, predictions, weights, classes) for input it cannot evaluate."""
    inputs = multiclass_inputs(y_true, y_score, y_pred, sample_weight, classes)
    return multiclass_output(stats_of_rows(inputs, options), options)


def multiclass_output(stats: MulticlassStats, options: Options) -> TaskOutput:
    """Every metric, per-class row and curve from the statistics (of one request, or of an
    ``Accumulator``'s batches)."""
    sink = MetricSink()
    sink.set("n_samples", stats.n_rows)
    classes, matrix, ranking = stats.classes, stats.matrix, stats.ranking
    n_classes = len(classes)
    total = float(ranking.class_mass.sum())
    counts = class_counts(matrix, options.beta)
    hard_metrics(sink, matrix, counts, classes, level=options.confidence_level)
    top_k_metrics(sink, options.top_k, stats.ranks, total, n_classes)
    if isinstance(stats.probability, str):
        for name in PROBABILITY_METRICS:
            sink.undefine(name, stats.probability)
    else:
        micro = ranking.micro
        probability_metrics(sink, stats.probability, micro.values, micro.mass, total)
    slots = ranking.slots or (None,) * n_classes
    rankings = [
        class_ranking(class_stats, options, class_slots)
        for class_stats, class_slots in zip(ranking.one_vs_rest, slots, strict=True)
    ]
    ranking_averages(sink, rankings, ranking.class_mass, classes)
    operating_macros(
        sink,
        [r.operating for r in rankings],
        ranking.class_mass > 0,
        lambda index: describe(classes, index),
        options,
    )
    micro_metrics(sink, ranking.micro)
    ovo_metrics(sink, ranking.pairs, ranking.class_mass)
    _interval_warnings(sink, rankings, classes)
    curves = _curves(matrix, rankings, options.max_curve_points)
    _order_metrics(sink)
    return TaskOutput(sink, class_rows(classes, counts, rankings), curves, dict(CONVENTIONS))


def _interval_warnings(
    sink: MetricSink, rankings: list[ClassRanking], classes: tuple[str, ...]
) -> None:
    missing = np.array(
        [index for index, r in enumerate(rankings) if r.interval_reason is not None],
        dtype=np.intp,
    )
    if missing.size:
        reason = rankings[int(missing[0])].interval_reason
        sink.warn(f"no roc_auc interval for {describe(classes, missing)}: {reason}")


def _curves(
    matrix: NDArray[np.float64], rankings: list[ClassRanking], max_points: int
) -> dict[str, Curve]:
    if max_points == 0:
        return {}
    n_classes = matrix.shape[0]
    curves: dict[str, Curve] = {
        "confusion_matrix": {
            "matrix": matrix.ravel().copy(),
            "shape": np.array([n_classes, n_classes], dtype=np.float64),
        }
    }
    averaged = [r.sweep for r in rankings if r.sweep is not None]
    if averaged:
        curves["roc_macro"] = macro_roc_curve(averaged, max_points)
        curves["roc_per_class"] = class_roc_curves(
            [(index, r.sweep) for index, r in enumerate(rankings) if r.sweep is not None],
            max_points,
        )
    return curves


def _order_metrics(sink: MetricSink) -> None:
    """Metrics in catalog order (top_{k}_accuracy in k order at its place)."""
    order = {name: index for index, name in enumerate(METRIC_NAMES)}
    top_k = order["top_{k}_accuracy"]

    def position(name: str) -> tuple[int, int]:
        if name.startswith("top_") and name.endswith("_accuracy"):
            return top_k, int(name[4:-9])
        template = operating_order(name)
        if template is not None:  # in the options' order (the sort is stable)
            return order.get(template, len(order)), 0
        return order.get(name, len(order)), 0

    sink.metrics = dict(sorted(sink.metrics.items(), key=lambda item: position(item[0])))
