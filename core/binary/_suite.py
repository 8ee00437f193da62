"""Every binary metric, derived from one ``BinaryStats``: ``_update`` builds the statistic,
``compute`` here turns it into numbers (the torchmetrics ``_update``/``_compute`` split)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from core._curves import thin
from core._options import Options
from core._result import MetricSink
from core.binary._calibration import calibration_metrics
from core.binary._precision_recall import (
    average_precision,
    head_counts,
    interpolated_aps,
    pr_auc_trapezoid,
    pr_curve,
    precision_series,
)
from core.binary._ranked import Ranked, rank
from core.binary._ranking import ks, optimal_thresholds, partial_roc_auc, roc_auc, roc_curve
from core.binary._stats import BinaryStats
from core.binary._threshold import NO_NEGATIVES, NO_POSITIVES, confusion_metrics

__all__ = ["RANKING_METRICS", "compute", "head_metric_names"]

Floats = NDArray[np.float64]
Curves = dict[str, dict[str, Floats]]

RANKING_METRICS = (
    "roc_auc",
    "roc_auc_partial",
    "average_precision",
    "pr_auc_trapezoid",
    "ap_11_point",
    "ap_all_point",
    "break_even_point",
    "ks_statistic",
    "ks_threshold",
    "optimal_threshold_youden",
    "optimal_threshold_f1",
)


def head_metric_names(k: float) -> tuple[str, str]:
    label = f"{k:g}"
    return f"precision_at_{label}", f"recall_at_{label}"


def compute(
    stats: BinaryStats, options: Options, *, predictions: BinaryStats | None = None
) -> tuple[MetricSink, Curves]:
    """All binary metrics and curves. ``predictions`` (the statistic of hard 0/1 predictions)
    replaces the threshold rule for the confusion counts when the caller sent them."""
    sink = MetricSink()
    sink.set("n_samples", stats.n_rows)
    ranked = rank(stats)
    if predictions is None:
        tp, fp = ranked.counts_at(options.threshold)
    else:
        tp, fp = rank(predictions).counts_at(0.5)
    confusion_metrics(
        sink,
        tp,
        fp,
        ranked.negatives - fp,
        ranked.positives - tp,
        beta=options.beta,
    )
    curves: Curves = {}
    if ranked.positives == 0 or ranked.negatives == 0:
        reason = NO_POSITIVES if ranked.positives == 0 else NO_NEGATIVES
        reason = f"only one class is present: {reason}"
        for name in _ranking_names(options):
            sink.undefine(name, reason)
        sink.warn(f"ranking metrics are undefined: {reason}")
        _head_metrics(sink, ranked, options)
    else:
        curves = _ranking_metrics(sink, ranked, options)
    calibration_metrics(sink, stats, bins=options.calibration_bins)
    return sink, curves


def _ranking_names(options: Options) -> list[str]:
    return [n for n in RANKING_METRICS if n != "roc_auc_partial" or options.max_fpr is not None]


def _ranking_metrics(sink: MetricSink, ranked: Ranked, options: Options) -> Curves:
    sink.set("roc_auc", roc_auc(ranked))
    fpr, tpr, roc_thresholds = roc_curve(ranked)
    if options.max_fpr is not None:
        sink.set("roc_auc_partial", partial_roc_auc(fpr, tpr, options.max_fpr))
    precision = precision_series(ranked)
    sink.set("average_precision", average_precision(ranked, precision))
    pr_precision, pr_recall, pr_thresholds = pr_curve(ranked, precision)
    sink.set("pr_auc_trapezoid", pr_auc_trapezoid(pr_recall, pr_precision))
    eleven, all_point = interpolated_aps(ranked, precision)
    sink.set("ap_11_point", eleven)
    sink.set("ap_all_point", all_point)
    # Break-even point as R-precision: precision at k = P, where precision equals recall.
    sink.set("break_even_point", head_counts(ranked, ranked.positives) / ranked.positives)
    statistic, threshold = ks(ranked)
    sink.set("ks_statistic", statistic)
    sink.set("ks_threshold", threshold)
    youden, f1 = optimal_thresholds(ranked)
    sink.set("optimal_threshold_youden", youden)
    sink.set("optimal_threshold_f1", f1)
    _head_metrics(sink, ranked, options)
    if options.max_curve_points == 0:
        return {}
    roc_keep = thin(fpr, tpr, options.max_curve_points)
    pr_keep = thin(pr_recall, pr_precision, options.max_curve_points)
    return {
        "roc": {"fpr": fpr[roc_keep], "tpr": tpr[roc_keep], "thresholds": roc_thresholds[roc_keep]},
        "pr": {
            "precision": pr_precision[pr_keep],
            "recall": pr_recall[pr_keep],
            "thresholds": pr_thresholds[pr_keep],
        },
    }


def _head_metrics(sink: MetricSink, ranked: Ranked, options: Options) -> None:
    total = ranked.positives + ranked.negatives
    for k in options.head_k:
        precision_name, recall_name = head_metric_names(k)
        cut = k
        if k > total:
            sink.warn(f"head_k {k:g} exceeds the total sample weight {total:g}; capped at it")
            cut = total
        hits = head_counts(ranked, cut)
        sink.set(precision_name, hits / cut)
        sink.ratio(recall_name, hits, ranked.positives, NO_POSITIVES)
