"""Every binary metric, derived from one ``Sweep`` of the two classes' scores (built from rows,
or from the mergeable ``BinaryStats`` that ``update`` accumulates): ``compute`` turns it into
numbers (the torchmetrics ``_update``/``_compute`` split). The only sorts happen while each
class's scores are built; after them the work is linear in the hits, plus a few passes over the
negatives' scores for the probability metrics."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

from evalserve.core._options import Options
from evalserve.core._result import MetricSink
from evalserve.core._threads import Ahead, Later, threads_for
from evalserve.core.binary._bootstrap import bootstrap_intervals
from evalserve.core.binary._calibration import (
    BinSums,
    add_calibration_curve,
    calibration_metrics,
)
from evalserve.core.binary._delong import Placements, placements
from evalserve.core.binary._intervals import auc_interval, wilson_intervals
from evalserve.core.binary._ndcg import ndcg_metrics
from evalserve.core.binary._operating import (
    Classes,
    Hits,
    add_operating_points,
    target_label,
    undefine_operating,
    value_names,
    write_flagged,
)
from evalserve.core.binary._points import curve_points
from evalserve.core.binary._precision_recall import PrAreas, head_counts, pr_areas
from evalserve.core.binary._ranking import (
    f1_optimal_threshold,
    ks_and_youden,
    partial_roc_auc,
    roc_auc,
)
from evalserve.core.binary._stats import BinaryStats
from evalserve.core.binary._sweep import Sweep
from evalserve.core.binary._threshold import (
    NO_NEGATIVES,
    NO_POSITIVES,
    ONE_CLASS,
    confusion_metrics,
)

__all__ = [
    "RANKING_METRICS",
    "compute",
    "curves_of_points",
    "head_cut",
    "head_metric_names",
    "threshold_metrics",
    "undefine_ranking",
]

Floats = NDArray[np.float64]
T = TypeVar("T")
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
    """precision_at_100 for k = 100; fractional k (possible with weights) keep their exact
    repr, so distinct k never share a name: precision_at_9.5."""
    label = target_label(k)
    return f"precision_at_{label}", f"recall_at_{label}"


def compute(
    sweep: Sweep, options: Options, *, n_rows: int, predictions: Sweep | None = None
) -> tuple[MetricSink, Curves]:
    """All binary metrics and curves of ``n_rows`` rows. ``predictions`` (the sweep of hard 0/1
    predictions) replaces the threshold rule for the confusion counts when the caller sent
    them."""
    sink = MetricSink()
    with Ahead(threads_for(n_rows)) as ahead:
        curves = _compute(sink, sweep, options, n_rows, predictions, ahead)
    return sink, curves


def _compute(
    sink: MetricSink,
    sweep: Sweep,
    options: Options,
    n_rows: int,
    predictions: Sweep | None,
    ahead: Ahead,
) -> Curves:
    """``compute``: with threads to spare, the DeLong placements and the calibration sums
    start on another thread at once and are written in their usual place."""
    sink.set("n_samples", n_rows)
    if predictions is None:
        tp, fp = sweep.counts_at(options.threshold)
        counted = sweep
    else:
        tp, fp = predictions.counts_at(0.5)
        counted = predictions
    # The class totals of the same sweep as the counts: those of the scores' sweep are the same
    # weights added in another order, and a rounding apart (fn or tn could come out -1e-16).
    tn, fn = counted.n_negative - fp, counted.n_positive - tp
    positives, negatives = sweep.n_positive, sweep.n_negative
    threshold_metrics(sink, (tp, fp, tn, fn), options)
    curves: Curves = {}
    classes = Classes(sweep.positives, sweep.negatives)
    total = positives + negatives
    if positives == 0 or negatives == 0:
        calibration = ahead.start(partial(_calibration, sweep, options.calibration_bins))
        undefine_ranking(sink, positives, options)
        write_flagged(sink, options, classes, total=total, positives=positives)
    else:
        # The other thread takes the calibration sums (the longest call, needed last) and
        # the DeLong placements; this thread computes the PR areas and KS when it reaches
        # them (their temporaries are of every hit's size: one set at a time). The two
        # shares took 21 and 25 ms at 10M rows, where the other thread's four calls took 37.
        calibration = ahead.start(partial(_calibration, sweep, options.calibration_bins))
        placed = ahead.start(partial(placements, sweep))
        areas = _when_asked(partial(pr_areas, sweep))
        ks = _when_asked(partial(ks_and_youden, sweep))
        curves = _ranking_metrics(sink, sweep, options, areas, ks)
        add_operating_points(sink, Hits.of(sweep), classes, options)
        write_flagged(sink, options, classes, total=total, positives=positives)
        _ranking_intervals(sink, sweep, options, (tp, fp), n_rows, placed.result())
    _head_metrics(sink, sweep, options)
    ndcg_metrics(sink, sweep, options)
    if positives + negatives > 0:
        part, sums = calibration.result()
        sink.absorb(part)
        add_calibration_curve(curves, sums, options.max_curve_points)
    return curves


def _when_asked(call: Callable[[], T]) -> Later[T]:
    return Later(call, None)


def _calibration(sweep: Sweep, bins: int) -> tuple[MetricSink, BinSums | None]:
    """The calibration metrics in a sink of their own (possibly on another thread)."""
    sink = MetricSink()
    return sink, calibration_metrics(sink, sweep, bins=bins)


def threshold_metrics(
    sink: MetricSink, counts: tuple[float, float, float, float], options: Options
) -> None:
    """The confusion metrics at the threshold and their Wilson intervals."""
    tp, fp, tn, fn = counts
    confusion_metrics(sink, tp, fp, tn, fn, beta=options.beta)
    wilson_intervals(sink.intervals, sink, counts, options.confidence_level)


def undefine_ranking(sink: MetricSink, positives: float, options: Options) -> None:
    """Only one class is present: every ranking metric is undefined, with the reason."""
    reason = NO_POSITIVES if positives == 0 else NO_NEGATIVES
    reason = ONE_CLASS + reason
    for name in RANKING_METRICS:
        if name != "roc_auc_partial" or options.max_fpr is not None:
            sink.undefine(name, reason)
    undefine_operating(sink, options, reason)
    sink.warn(f"ranking metrics are undefined: {reason}")


def _ranking_metrics(
    sink: MetricSink,
    sweep: Sweep,
    options: Options,
    areas: Later[PrAreas],
    ks: Later[tuple[float, float, float]],
) -> Curves:
    """The ranking metrics and the curves (``areas``: ``pr_areas``, ``ks``: ``ks_and_youden``,
    possibly computed on another thread meanwhile)."""
    sink.set("roc_auc", roc_auc(sweep))
    if options.max_fpr is not None:
        sink.set("roc_auc_partial", partial_roc_auc(sweep, options.max_fpr))
    curves = {} if options.max_curve_points == 0 else _curves(sweep, options.max_curve_points)
    for name, value in areas.result()._asdict().items():
        sink.set(name, value)
    # Break-even point as R-precision: precision at k = P, where precision equals recall.
    positives = sweep.n_positive
    sink.set("break_even_point", head_counts(sweep, positives) / positives)
    statistic, ks_threshold, youden_threshold = ks.result()
    sink.set("ks_statistic", statistic)
    sink.set("ks_threshold", ks_threshold)
    sink.set("optimal_threshold_youden", youden_threshold)
    sink.set("optimal_threshold_f1", f1_optimal_threshold(sweep))
    return curves


def _ranking_intervals(
    sink: MetricSink,
    sweep: Sweep,
    options: Options,
    confusion: tuple[float, float],
    n_rows: int,
    placed: Placements,
) -> None:
    """DeLong's interval of the AUC and the bootstrap intervals (both classes present)."""
    interval = auc_interval(placed, options.confidence_level, options.auc_interval)
    if isinstance(interval, str):
        sink.warn(f"no interval for roc_auc: {interval}")
    else:
        sink.intervals["roc_auc"] = interval
    if options.bootstrap_replicates and min(sweep.n_positive, sweep.n_negative) < 2:
        sink.warn(
            "no bootstrap intervals: the bootstrap needs at least 2 positives and 2 negatives"
            " (in units of sample weight)"
        )
    elif options.bootstrap_replicates:
        exact = {name: value for name, value in sink.metrics.items() if value is not None}
        sink.intervals.update(
            bootstrap_intervals(
                BinaryStats.of_classes(
                    sweep.positives,
                    sweep.negatives,
                    n_rows,
                    weighted=sweep.positives.mass is not None or sweep.negatives.mass is not None,
                ),
                exact,
                confusion,
                replicates=options.bootstrap_replicates,
                seed=options.bootstrap_seed,
                level=options.confidence_level,
                options=options,
            )
        )
        for name in value_names(options):
            if sink.metrics.get(name) is not None and name not in sink.intervals:
                sink.warn(
                    f"no bootstrap interval for {name}: in some replicates the rows tied at "
                    "the highest score alone exceed the budget"
                )


def _curves(sweep: Sweep, max_points: int) -> Curves:
    kept_thresholds, tps, fps = curve_points(sweep, max_points - 1)
    return curves_of_points(kept_thresholds, tps, fps, sweep.n_positive, sweep.n_negative)


def curves_of_points(
    kept_thresholds: Floats, tps: Floats, fps: Floats, positives: float, negatives: float
) -> Curves:
    """ROC and PR points at the same thresholds, sampled along the curve, each curve led by its
    start point (threshold +inf): ROC (0, 0), PR (recall 0, precision 1)."""
    thresholds = np.concatenate(([np.inf], kept_thresholds))
    recall = np.concatenate(([0.0], tps / positives))
    fpr = np.concatenate(([0.0], fps / negatives))
    return {
        "roc": {"fpr": fpr, "tpr": recall, "thresholds": thresholds},
        "pr": {
            "precision": np.concatenate(([1.0], tps / (tps + fps))),
            "recall": recall.copy(),
            "thresholds": thresholds.copy(),
        },
        "det": _det(thresholds, fpr, tps, positives),
    }


def _det(thresholds: Floats, fpr: Floats, tps: Floats, positives: float) -> dict[str, Floats]:
    """The detection error tradeoff curve (Martin et al. 1997) at the ROC curve's points, as
    scikit-learn's ``det_curve``: from the last point without false positives to the first
    without false negatives, in ascending threshold order (FPR falling, FNR rising)."""
    first = int(np.searchsorted(fpr, 0.0, side="right")) - 1
    last = int(np.searchsorted(tps, tps[-1], side="left")) + 1  # in tps: after the start point
    fnr = np.concatenate(([1.0], (positives - tps) / positives))
    keep = slice(first, last + 1)
    return {
        "fpr": fpr[keep][::-1].copy(),
        "fnr": fnr[keep][::-1].copy(),
        "thresholds": thresholds[keep][::-1].copy(),
    }


def head_cut(k: float, total: float) -> float:
    """The head cut of ``head_k`` value ``k``: capped at the total mass."""
    return min(k, total)


def _head_metrics(sink: MetricSink, sweep: Sweep, options: Options) -> None:
    total = sweep.n_positive + sweep.n_negative
    for k in options.head_k:
        precision_name, recall_name = head_metric_names(k)
        cut = head_cut(k, total)
        if k > total:
            sink.warn(f"head_k {k:g} exceeds the total sample weight {total:g}; capped at it")
        found = head_counts(sweep, cut)
        sink.set(precision_name, found / cut)
        sink.ratio(recall_name, found, sweep.n_positive, NO_POSITIVES)
