"""``compute_multilabel``: every multilabel metric of one request, per-label rows and warnings.

Two halves: check the rows (:mod:`._inputs`) and reduce them to their statistic
(:mod:`._stats`); then ``multilabel_output`` derives everything from the statistic: the
metrics of the hard predictions (:mod:`._threshold`), of the scores per label, pooled and per
sample (:mod:`._ranking`), the averages, and what they left out. The ``Accumulator`` runs the
second half on its merged statistic, so a stream and one request give the same numbers.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalserve.core._options import Options
from evalserve.core._result import MetricSink, TaskOutput
from evalserve.core._result_parts import ClassRow
from evalserve.core.binary._precision_recall import pr_areas
from evalserve.core.binary._ranking import roc_auc
from evalserve.core.binary._sweep import sweep
from evalserve.core.binary._threshold import NO_NEGATIVES, NO_POSITIVES, ONE_CLASS
from evalserve.core.multilabel._catalog import CONVENTIONS
from evalserve.core.multilabel._inputs import multilabel_inputs
from evalserve.core.multilabel._operating import label_operating, operating_macros
from evalserve.core.multilabel._per_label import PerLabel, label_averages
from evalserve.core.multilabel._ranking import ColumnRanking, rank_columns
from evalserve.core.multilabel._samples import SampleStats
from evalserve.core.multilabel._stats import MultilabelStats, multilabel_stats
from evalserve.core.multilabel._threshold import (
    LABEL_METRICS,
    Counts,
    sample_counts,
    threshold_metrics,
)

__all__ = ["compute_multilabel", "multilabel_output"]

Floats = NDArray[np.float64]
Bools = NDArray[np.bool_]

MAX_NAMES = 10  # label names listed in one warning
# The metrics of a per_class row, in order.
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
    return multilabel_output(multilabel_stats(rows), rows.classes, options)


def multilabel_output(
    stats: MultilabelStats, classes: tuple[str, ...], options: Options
) -> TaskOutput:
    """Every metric, the per-label rows and the warnings of the rows behind ``stats`` (one
    request's, or the merged batches of an ``Accumulator``); ``classes`` names the k labels;
    ``options`` the operating points asked for (``_operating``)."""
    sink = MetricSink()
    sink.set("n_samples", stats.n_rows)
    labels, samples = stats.labels, stats.samples
    per_label = threshold_metrics(sink, labels, samples, stats.n_labels)
    support = labels.tp + labels.fn
    ranked = rank_columns(stats.columns)
    per_label.update(_label_ranking_metrics(sink, stats, ranked, support))
    _sample_ranking_metrics(sink, samples)
    operating = label_operating(stats.columns, ranked, options)
    left_out = operating_macros(sink, operating, support, options)
    _warn(sink, classes, labels, samples, ranked)
    for name, mask, reason in left_out:
        sink.warn(
            f"{name}: labels {_names(classes, mask)} undefined ({reason}), left out of {name}_macro"
        )
    return TaskOutput(
        sink=sink,
        per_class=_per_class_rows(classes, per_label, support, operating),
        conventions=dict(CONVENTIONS),
    )


def _label_ranking_metrics(
    sink: MetricSink, stats: MultilabelStats, ranked: ColumnRanking, support: Floats
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
    micro = _micro_ranking(stats)
    for name, metric in metrics.items():
        value = micro[name]
        if isinstance(value, str):
            sink.undefine(f"{name}_micro", value)
        else:
            sink.set(f"{name}_micro", value)
        label_averages(sink, name, metric, support)
    return metrics


def _micro_ranking(stats: MultilabelStats) -> dict[str, float | str]:
    """ROC AUC and AP of all n x k cells pooled, each with its row's weight, by task binary's
    own code; a string is the reason a value is undefined."""
    cells = sweep(*stats.columns.pooled())
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


def _sample_ranking_metrics(sink: MetricSink, samples: SampleStats) -> None:
    """Label ranking average precision and coverage error, over rows with a true label."""
    total = float(samples.coverage.sum())
    if total == 0:
        reason = "no sample has a true label (with weight > 0)"
        sink.undefine("label_ranking_average_precision", reason)
        sink.undefine("coverage_error", reason)
        return
    lrap = float((samples.lrap * samples.lrap_weight).sum())
    coverage = np.arange(1.0, samples.coverage.size + 1.0)
    sink.set("label_ranking_average_precision", lrap / total)
    sink.set("coverage_error", float((coverage * samples.coverage).sum()) / total)


def _names(classes: tuple[str, ...], mask: Bools) -> str:
    """Quoted label names, the first ``MAX_NAMES`` of them and a count of the rest."""
    index = np.flatnonzero(mask)
    shown = ", ".join(repr(classes[j]) for j in index[:MAX_NAMES])
    rest = index.size - MAX_NAMES
    return f"{shown} and {rest} more" if rest > 0 else shown


def _warn(
    sink: MetricSink,
    classes: tuple[str, ...],
    labels: Counts,
    samples: SampleStats,
    ranked: ColumnRanking,
) -> None:
    """Say which labels and how many samples the averages left out, and why."""
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
    counts = sample_counts(samples)
    total = int(samples.rows.sum())
    no_true = (counts.tp + counts.fn) == 0
    no_predicted = (counts.tp + counts.fp) == 0
    ranking = "recall_samples, label_ranking_average_precision and coverage_error"
    for mask, what, left_out in (
        (no_true, "no true label", ranking),
        (no_predicted, "no predicted label", "precision_samples"),
        (no_true & no_predicted, "no true and no predicted label", "f1_samples, jaccard_samples"),
    ):
        count = int(samples.rows[mask].sum())
        if count:
            have = "has" if count == 1 else "have"
            sink.warn(f"{count} of {total} samples {have} {what}; left out of {left_out}")


def _per_class_rows(
    classes: tuple[str, ...],
    per_label: dict[str, PerLabel],
    support: Floats,
    operating: list[MetricSink],
) -> list[ClassRow]:
    per_class = []
    for j, name in enumerate(classes):
        metrics: dict[str, float | None] = {}
        undefined: dict[str, str] = {}
        for metric in ROW_METRICS:
            if metric == "support":
                metrics["support"] = float(support[j])
                continue
            metrics[metric] = per_label[metric].value(j)
            if metrics[metric] is None:
                undefined[metric] = per_label[metric].reasons[j]
        metrics.update(operating[j].metrics)
        undefined.update(operating[j].undefined)
        per_class.append(ClassRow(name, metrics, undefined))
    return per_class
