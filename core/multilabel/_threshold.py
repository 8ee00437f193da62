"""Metrics of the hard predictions: subset accuracy, Hamming loss, and precision, recall, F1 and
Jaccard with the four averages of scikit-learn (``micro``, ``macro``, ``weighted``,
``samples``).

All of them come from three n x k cell masks (true positive, false positive, false negative):
their weighted column sums are the per-label counts, their row sums the per-sample counts
(grouped by :mod:`._samples`: rows with the same counts share one entry and their weight).

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
from evalserve.core.multilabel._samples import SampleStats

__all__ = ["LABEL_METRICS", "Counts", "label_counts", "sample_counts", "threshold_metrics"]

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
    over all labels, or per group of samples (counts of one row's cells)."""

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


def label_counts(rows: MultilabelInputs) -> Counts:
    """Per label, the (weighted) numbers of true positive, false positive and false negative
    cells."""
    labels, predicted = rows.labels, rows.predicted
    cells = (labels & predicted, predicted & ~labels, labels & ~predicted)
    if rows.weights is None:
        return Counts(*(np.count_nonzero(cell, axis=0).astype(np.float64) for cell in cells))
    return Counts(*(rows.weights @ cell.astype(np.float64) for cell in cells))


def sample_counts(samples: SampleStats) -> Counts:
    """The (TP, FP, FN) of each group of rows of ``samples``."""
    return Counts(*(samples.cells[:, column].astype(np.float64) for column in range(3)))


def threshold_metrics(
    sink: MetricSink, labels: Counts, samples: SampleStats, n_labels: int
) -> dict[str, PerLabel]:
    """Write every hard-prediction metric into ``sink``; return the per-label values."""
    weights = samples.weight
    counts = sample_counts(samples)
    errors = counts.fp + counts.fn
    total = float(weights.sum())
    sink.set("subset_accuracy", float(weights[errors == 0].sum()) / total)
    sink.set("hamming_loss", float((weights * errors).sum()) / (n_labels * total))
    support = labels.tp + labels.fn
    per_label = labels.metrics()
    pooled = Counts(*(np.array([part.sum()]) for part in (labels.tp, labels.fp, labels.fn)))
    micro_metrics = pooled.metrics()
    per_sample = counts.metrics()
    for name in LABEL_METRICS:
        micro = micro_metrics[name]
        if micro.defined[0]:
            sink.set(f"{name}_micro", float(micro.values[0]))
        else:
            sink.undefine(f"{name}_micro", f"{micro.reasons[0]} over all labels")
        label_averages(sink, name, per_label[name], support)
        kept = per_sample[name].defined
        if kept.any():
            kept_weights = weights[kept]
            average = (kept_weights * per_sample[name].values[kept]).sum() / kept_weights.sum()
            sink.set(f"{name}_samples", float(average))
        else:
            sink.undefine(f"{name}_samples", SAMPLE_REASONS[name])
    return per_label
