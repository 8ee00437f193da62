"""Metrics of the hard predictions: subset accuracy, Hamming loss, and precision, recall, F1 and
Jaccard with the four averages of scikit-learn (``micro``, ``macro``, ``weighted``,
``samples``).

All of them come from three n x k cell masks (true positive, false positive, false negative):
their weighted column sums are the per-label counts, their row sums the per-sample counts.

* per label / pooled (micro): precision TP / (TP + FP), recall TP / (TP + FN), F1
  2 TP / (2 TP + FP + FN), Jaccard TP / (TP + FP + FN) (the IoU of the sets, |A & B| / |A | B|);
* per sample: the same ratios of one row's sets, |Y & P| / |P| ..., averaged with the sample
  weights over the rows where the ratio is defined.

A ratio with a zero denominator is undefined: ``None`` with its reason, and left out of every
average (see :mod:`core.multilabel._per_label`), never scored 0 or 1 as scikit-learn's
``zero_division`` does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from evalserve.core._result import MetricSink
from evalserve.core.binary._threshold import NO_POSITIVES, NO_PREDICTED_POSITIVES
from evalserve.core.multilabel._inputs import MultilabelInputs
from evalserve.core.multilabel._per_label import PerLabel, label_averages, ratio

__all__ = ["LABEL_METRICS", "Counts", "SampleCounts", "count_cells", "threshold_metrics"]

Floats = NDArray[np.float64]
Bools = NDArray[np.bool_]

LABEL_METRICS = ("precision", "recall", "f1", "jaccard")
NEITHER = "no predicted and no actual positives (0/0)"
REASONS = {
    "precision": NO_PREDICTED_POSITIVES,
    "recall": NO_POSITIVES,
    "f1": NEITHER,
    "jaccard": NEITHER,
}
SAMPLE_REASONS = {
    "precision": "no sample has a predicted label (every per-sample precision is 0/0)",
    "recall": "no sample has a true label (every per-sample recall is 0/0)",
    "f1": "no sample has a true or a predicted label (every per-sample F1 is 0/0)",
    "jaccard": "no sample has a true or a predicted label (every per-sample Jaccard is 0/0)",
}


@dataclass(frozen=True, slots=True, eq=False)
class Counts:
    """True positives, false positives and false negatives: per label (weighted sums), pooled
    over all labels, or per sample (counts of one row's cells)."""

    tp: Floats
    fp: Floats
    fn: Floats

    def metrics(self) -> dict[str, PerLabel]:
        tp, fp, fn = self.tp, self.fp, self.fn
        return {
            "precision": ratio(tp, tp + fp, REASONS["precision"]),
            "recall": ratio(tp, tp + fn, REASONS["recall"]),
            "f1": ratio(2 * tp, 2 * tp + fp + fn, REASONS["f1"]),
            "jaccard": ratio(tp, tp + fp + fn, REASONS["jaccard"]),
        }


@dataclass(frozen=True, slots=True, eq=False)
class SampleCounts:
    """Per-sample counts and the rows that take part in weighted averages (weight > 0)."""

    counts: Counts
    live: Bools
    weights: Floats

    @property
    def n_true(self) -> Floats:
        return self.counts.tp + self.counts.fn

    @property
    def n_predicted(self) -> Floats:
        return self.counts.tp + self.counts.fp


def count_cells(rows: MultilabelInputs) -> tuple[Counts, SampleCounts]:
    """Per-label counts (weighted) and per-sample counts of the three cell masks."""
    labels, predicted = rows.labels, rows.predicted
    cells = (labels & predicted, predicted & ~labels, labels & ~predicted)
    per_row = [np.count_nonzero(cell, axis=1).astype(np.float64) for cell in cells]
    if rows.weights is None:
        per_label = [np.count_nonzero(cell, axis=0).astype(np.float64) for cell in cells]
        weights = np.ones(labels.shape[0])
    else:
        per_label = [rows.weights @ cell.astype(np.float64) for cell in cells]
        weights = rows.weights
    return Counts(*per_label), SampleCounts(Counts(*per_row), weights > 0, weights)


def threshold_metrics(
    sink: MetricSink, labels: Counts, samples: SampleCounts, n_labels: int
) -> dict[str, PerLabel]:
    """Write every hard-prediction metric into ``sink``; return the per-label values."""
    weights, live = samples.weights, samples.live
    errors = samples.counts.fp + samples.counts.fn
    total = float(weights.sum())
    sink.set("subset_accuracy", float(weights[errors == 0].sum()) / total)
    sink.set("hamming_loss", float(np.dot(weights, errors)) / (n_labels * total))
    support = labels.tp + labels.fn
    per_label = labels.metrics()
    pooled = Counts(*(np.array([part.sum()]) for part in (labels.tp, labels.fp, labels.fn)))
    micro_metrics = pooled.metrics()
    per_sample = samples.counts.metrics()
    for name in LABEL_METRICS:
        micro = micro_metrics[name]
        if micro.defined[0]:
            sink.set(f"{name}_micro", float(micro.values[0]))
        else:
            sink.undefine(f"{name}_micro", f"{micro.reasons[0]} over all labels")
        label_averages(sink, name, per_label[name], support)
        kept = per_sample[name].defined & live
        if kept.any():
            average = np.dot(weights[kept], per_sample[name].values[kept]) / weights[kept].sum()
            sink.set(f"{name}_samples", float(average))
        else:
            sink.undefine(f"{name}_samples", SAMPLE_REASONS[name])
    return per_label
