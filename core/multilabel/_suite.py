"""``compute_multilabel``: every multilabel metric of one request, per-label rows and warnings.

Steps: check the rows (:mod:`._inputs`), count the cells of the hard predictions
(:mod:`._threshold`), rank the scores per label and per sample (:mod:`._ranking`), then average
and explain what was left out.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalserve.core._options import Options
from evalserve.core._result import MetricSink, TaskOutput
from evalserve.core.binary._precision_recall import pr_areas
from evalserve.core.binary._ranking import roc_auc
from evalserve.core.binary._sweep import sweep_of_rows
from evalserve.core.binary._threshold import NO_NEGATIVES, NO_POSITIVES
from evalserve.core.multilabel._catalog import CONVENTIONS
from evalserve.core.multilabel._inputs import MultilabelInputs, multilabel_inputs
from evalserve.core.multilabel._per_label import PerLabel, label_averages
from evalserve.core.multilabel._ranking import ColumnRanking, rank_columns, rank_samples
from evalserve.core.multilabel._threshold import (
    LABEL_METRICS,
    Counts,
    SampleCounts,
    count_cells,
    threshold_metrics,
)

__all__ = ["compute_multilabel"]

Floats = NDArray[np.float64]
Bools = NDArray[np.bool_]

ONE_CLASS = "only one class is present: "
MAX_NAMES = 10  # label names listed in one warning
# The keys of a per_class row between "class" and "undefined", in order.
ROW_METRICS = (*LABEL_METRICS, "support", "roc_auc", "average_precision")


def compute_multilabel(
    y_true: Any,
    y_score: Any = None,
    *,
    y_pred: Any = None,
    sample_weight: Any = None,
    classes: Any = None,
    options: Options,
) -> TaskOutput:
    """Every multilabel metric of the catalog for n x k 0/1 ``y_true``, n x k ``y_score`` and/or
    n x k 0/1 ``y_pred``. Raises ``InvalidInputError`` naming the field for bad input."""
    rows = multilabel_inputs(
        y_true, y_score, y_pred, sample_weight, classes, threshold=options.threshold
    )
    sink = MetricSink()
    n_rows, n_labels = rows.labels.shape
    sink.set("n_samples", n_rows)
    label_counts, sample_counts = count_cells(rows)
    per_label = threshold_metrics(sink, label_counts, sample_counts, n_labels)
    support = label_counts.tp + label_counts.fn
    ranked = rank_columns(rows.labels, rows.scores, rows.weights)
    per_label.update(_label_ranking_metrics(sink, rows, ranked, support))
    _sample_ranking_metrics(sink, rows, sample_counts)
    _warn(sink, rows, label_counts, sample_counts, ranked)
    return TaskOutput(
        sink=sink,
        per_class=_per_class_rows(rows.classes, per_label, support),
        conventions=dict(CONVENTIONS),
    )


def _label_ranking_metrics(
    sink: MetricSink, rows: MultilabelInputs, ranked: ColumnRanking, support: Floats
) -> dict[str, PerLabel]:
    """ROC AUC and average precision: pooled over all cells (micro), per label, averaged."""
    no_positives = ranked.positives == 0
    no_negatives = ranked.negatives == 0
    auc_reasons = {
        int(j): ONE_CLASS + (NO_POSITIVES if no_positives[j] else NO_NEGATIVES)
        for j in np.flatnonzero(no_positives | no_negatives)
    }
    metrics = {
        "roc_auc": PerLabel(ranked.roc_auc(), ~no_positives & ~no_negatives, auc_reasons),
        "average_precision": PerLabel(
            ranked.average_precision(),
            ~no_positives,
            dict.fromkeys(np.flatnonzero(no_positives).tolist(), NO_POSITIVES),
        ),
    }
    micro = _micro_ranking(rows)
    for name, metric in metrics.items():
        value = micro[name]
        if isinstance(value, str):
            sink.undefine(f"{name}_micro", value)
        else:
            sink.set(f"{name}_micro", value)
        label_averages(sink, name, metric, support)
    return metrics


def _micro_ranking(rows: MultilabelInputs) -> dict[str, float | str]:
    """ROC AUC and AP of all n x k cells pooled, each with its row's weight, by task binary's
    own code; a string is the reason a value is undefined."""
    n_labels = rows.labels.shape[1]
    weights = None if rows.weights is None else np.repeat(rows.weights, n_labels)
    cells = sweep_of_rows(rows.labels.ravel(), rows.scores.ravel(), weights)
    positives, negatives = cells.n_positive, cells.n_negative
    micro: dict[str, float | str] = {}
    if positives > 0 and negatives > 0:
        micro["roc_auc"] = min(1.0, roc_auc(cells))
    else:
        reason = NO_POSITIVES if positives == 0 else NO_NEGATIVES
        micro["roc_auc"] = f"{ONE_CLASS}{reason} in any label cell"
    if positives > 0:
        micro["average_precision"] = min(1.0, pr_areas(cells).average_precision)
    else:
        micro["average_precision"] = f"{NO_POSITIVES} in any label cell"
    return micro


def _sample_ranking_metrics(
    sink: MetricSink, rows: MultilabelInputs, samples: SampleCounts
) -> None:
    """Label ranking average precision and coverage error, over rows with a true label."""
    ranking = rank_samples(rows.labels, rows.scores)
    kept = (ranking.n_true > 0) & samples.live
    if not kept.any():
        reason = "no sample has a true label (with weight > 0)"
        sink.undefine("label_ranking_average_precision", reason)
        sink.undefine("coverage_error", reason)
        return
    weights = samples.weights[kept]
    total = float(weights.sum())
    lrap = ranking.precision_sum[kept] / ranking.n_true[kept]
    sink.set("label_ranking_average_precision", float(np.dot(weights, lrap)) / total)
    sink.set("coverage_error", float(np.dot(weights, ranking.coverage[kept])) / total)


def _names(classes: tuple[str, ...], mask: Bools) -> str:
    """Quoted label names, the first ``MAX_NAMES`` of them and a count of the rest."""
    index = np.flatnonzero(mask)
    shown = ", ".join(repr(classes[j]) for j in index[:MAX_NAMES])
    rest = index.size - MAX_NAMES
    return f"{shown} and {rest} more" if rest > 0 else shown


def _warn(
    sink: MetricSink,
    rows: MultilabelInputs,
    labels: Counts,
    samples: SampleCounts,
    ranked: ColumnRanking,
) -> None:
    """Say which labels and how many samples the averages left out, and why."""
    classes = rows.classes
    absent = (labels.tp + labels.fn) == 0
    if absent.any():
        sink.warn(
            f"labels with no positives: {_names(classes, absent)}; their recall, roc_auc and "
            "average_precision are undefined, and every macro and weighted average leaves "
            "them out"
        )
    always = ~absent & (ranked.negatives == 0)
    if always.any():
        sink.warn(
            f"labels positive in every row: {_names(classes, always)}; their roc_auc is "
            "undefined, and roc_auc_macro and roc_auc_weighted leave them out"
        )
    unpredicted = ~absent & ((labels.tp + labels.fp) == 0)
    if unpredicted.any():
        sink.warn(
            f"labels never predicted: {_names(classes, unpredicted)}; their precision is "
            "undefined, and precision_macro and precision_weighted leave them out"
        )
    live = samples.live
    total = int(live.sum())
    no_true = live & (samples.n_true == 0)
    no_predicted = live & (samples.n_predicted == 0)
    ranking = "recall_samples, label_ranking_average_precision and coverage_error"
    for mask, what, left_out in (
        (no_true, "no true label", ranking),
        (no_predicted, "no predicted label", "precision_samples"),
        (no_true & no_predicted, "no true and no predicted label", "f1_samples, jaccard_samples"),
    ):
        count = int(mask.sum())
        if count:
            have = "has" if count == 1 else "have"
            sink.warn(f"{count} of {total} samples {have} {what}; left out of {left_out}")


def _per_class_rows(
    classes: tuple[str, ...], per_label: dict[str, PerLabel], support: Floats
) -> list[dict[str, Any]]:
    per_class = []
    for j, name in enumerate(classes):
        row: dict[str, Any] = {"class": name}
        undefined: dict[str, str] = {}
        for metric in ROW_METRICS:
            if metric == "support":
                row["support"] = float(support[j])
                continue
            row[metric] = per_label[metric].value(j)
            if row[metric] is None:
                undefined[metric] = per_label[metric].reasons[j]
        row["undefined"] = undefined
        row["intervals"] = {}
        per_class.append(row)
    return per_class
