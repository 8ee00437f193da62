"""``compute_multiclass``: every multiclass metric of one request.

Steps: check the rows (``_inputs``); hard predictions (sent, or the argmax of the scores) give
the confusion matrix and its metrics (``_confusion``); the true-class score of each row gives
top-k accuracy (``_topk``) and the probability metrics (``_probability``); one sweep over the
score columns gives the one-vs-rest, one-vs-one and micro ranking statistics (``_ranking``),
from which task binary's functions compute each class's metrics (``_per_class``), Hand &
Till's averages follow (``_ovo``) and the micro averages (``_micro``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalserve.core._options import Options
from evalserve.core._result import Curve, MetricSink, TaskOutput
from evalserve.core.multiclass._catalog import CONVENTIONS, METRIC_NAMES
from evalserve.core.multiclass._confusion import (
    class_counts,
    confusion_matrix,
    describe,
    hard_metrics,
)
from evalserve.core.multiclass._inputs import MulticlassInputs, multiclass_inputs
from evalserve.core.multiclass._macro_curve import class_curve, macro_roc_curve
from evalserve.core.multiclass._micro import micro_metrics
from evalserve.core.multiclass._ovo import ovo_metrics
from evalserve.core.multiclass._per_class import (
    ClassRanking,
    class_ranking,
    class_rows,
    ranking_averages,
)
from evalserve.core.multiclass._probability import (
    PROBABILITY_METRICS,
    probability_metrics,
    probability_problem,
)
from evalserve.core.multiclass._ranking import ranking_stats, true_class_scores
from evalserve.core.multiclass._topk import rank_counts, top_k_metrics

__all__ = ["compute_multiclass"]

Indices = NDArray[np.intp]


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
    sink = MetricSink()
    sink.set("n_samples", inputs.n_rows)
    scores, labels, weights = inputs.scores, inputs.labels, inputs.weights
    true_scores = true_class_scores(scores, labels)
    top = _argmax(scores)
    predicted = top if inputs.predicted is None else inputs.predicted
    matrix = confusion_matrix(labels, predicted, weights, inputs.n_classes)
    counts = class_counts(matrix, options.beta)
    hard_metrics(sink, matrix, counts, inputs.classes, level=options.confidence_level)
    above, equal = rank_counts(scores, true_scores)
    top_k_metrics(sink, options.top_k, above, equal, weights, inputs.n_classes)
    problem = probability_problem(scores, inputs.low, inputs.high, weights)
    if problem is None:
        probability_metrics(
            sink, scores, true_scores, top, labels, weights, bins=options.calibration_bins
        )
    else:
        for name in PROBABILITY_METRICS:
            sink.undefine(name, problem)
    stats = ranking_stats(inputs, true_scores)
    rankings = [class_ranking(class_stats, options) for class_stats in stats.one_vs_rest]
    ranking_averages(sink, rankings, stats.class_mass, inputs.classes)
    micro_metrics(sink, stats.micro.mass, stats.micro.gap, stats.micro.tie)
    ovo_metrics(sink, stats.pairs, stats.class_mass)
    _interval_warnings(sink, rankings, inputs)
    curves = _curves(matrix, rankings, options.max_curve_points)
    _order_metrics(sink)
    return TaskOutput(sink, class_rows(inputs.classes, counts, rankings), curves, dict(CONVENTIONS))


def _argmax(scores: NDArray[np.float64]) -> Indices:
    """Each row's highest-scoring class; ties go to the lowest index (numpy's argmax)."""
    return np.asarray(scores.argmax(axis=1), dtype=np.intp)


def _interval_warnings(
    sink: MetricSink, rankings: list[ClassRanking], inputs: MulticlassInputs
) -> None:
    missing = np.array(
        [index for index, r in enumerate(rankings) if r.interval_reason is not None],
        dtype=np.intp,
    )
    if missing.size:
        reason = rankings[int(missing[0])].interval_reason
        sink.warn(f"no roc_auc interval for {describe(inputs.classes, missing)}: {reason}")


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
    averaged = [class_curve(r.sweep) for r in rankings if r.sweep is not None]
    if averaged:
        curves["roc_macro"] = macro_roc_curve(averaged, max_points)
    return curves


def _order_metrics(sink: MetricSink) -> None:
    """Metrics in catalog order (top_{k}_accuracy in k order at its place)."""
    order = {name: index for index, name in enumerate(METRIC_NAMES)}
    top_k = order["top_{k}_accuracy"]

    def position(name: str) -> tuple[int, int]:
        if name.startswith("top_") and name.endswith("_accuracy"):
            return top_k, int(name[4:-9])
        return order.get(name, len(order)), 0

    sink.metrics = dict(sorted(sink.metrics.items(), key=lambda item: position(item[0])))
