"""The sufficient statistic of multilabel evaluation: ``compute_multilabel`` builds it from the
rows and derives every metric from it (:mod:`._suite`), and the ``Accumulator`` merges it across
batches and shards (:mod:`._state`) before the same derivation, so the two cannot drift.

It is exact, never sketched:

* per label, task binary's statistic of its column (:mod:`._columns`), from which the per-label
  and the micro ROC AUC and average precision follow;
* per label, the (weighted) TP, FP and FN cell counts of the hard predictions;
* the per-sample quantities grouped into weighted sums (:mod:`._samples`).
"""

from __future__ import annotations

from dataclasses import dataclass

from evalserve.core.multilabel._columns import ColumnStats, column_stats
from evalserve.core.multilabel._inputs import MultilabelInputs
from evalserve.core.multilabel._samples import SampleStats, sample_stats
from evalserve.core.multilabel._threshold import Counts, label_counts

__all__ = ["MultilabelStats", "multilabel_stats"]


@dataclass(frozen=True, slots=True, eq=False)
class MultilabelStats:
    """The statistic of ``n_rows`` rows (weight-zero rows included) of k labels; ``weighted``
    says whether any of them carried sample weights."""

    n_rows: int
    weighted: bool
    labels: Counts
    columns: ColumnStats
    samples: SampleStats

    @property
    def n_labels(self) -> int:
        return self.columns.n_labels

    @property
    def size(self) -> int:
        """Entries held: the labels' distinct scores, the labels, the sample groups."""
        return self.columns.size + self.n_labels + self.samples.size

    def merge(self, other: MultilabelStats) -> MultilabelStats:
        """The statistic of both row sets (the caller checks that the label counts agree)."""
        return MultilabelStats(
            self.n_rows + other.n_rows,
            self.weighted or other.weighted,
            Counts(
                self.labels.tp + other.labels.tp,
                self.labels.fp + other.labels.fp,
                self.labels.fn + other.labels.fn,
            ),
            self.columns.merge(other.columns),
            self.samples.merge(other.samples),
        )


def multilabel_stats(rows: MultilabelInputs, *, columns: bool = True) -> MultilabelStats:
    """The statistic of validated rows; without ``columns`` the label columns' statistic is
    left empty (an accumulator builds it later, with other batches')."""
    n_labels = int(rows.labels.shape[1])
    return MultilabelStats(
        n_rows=int(rows.labels.shape[0]),
        weighted=rows.weights is not None,
        labels=label_counts(rows),
        columns=column_stats(rows.labels, rows.scores, rows.weights)
        if columns
        else ColumnStats.empty(n_labels),
        samples=sample_stats(rows),
    )
