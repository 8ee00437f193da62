"""The per-sample statistic of multilabel rows: what the ``samples`` averages, label ranking
average precision (LRAP), coverage error and the warnings need, as weighted sums.

Each of those is a function of something small per row:

* precision, recall, F1, Jaccard, subset accuracy, the Hamming errors, and whether the row has
  no true or no predicted label: of the row's cell counts (TP, FP, FN), integers up to k;
* coverage: an integer in 1..k (rows with a true label);
* LRAP: one value in (0, 1] (rows with a true label), computed from the row alone.

So the statistic holds, per distinct (TP, FP, FN), the rows' total weight and their number; per
coverage 1..k, the total weight; per distinct LRAP value, the total weight. Every average is a
sum over these groups in their sorted order, so it comes out the same whatever the batches:
to the bit with counts or integer weights, where every total is exact. Only rows of weight
> 0 enter (as in every weighted average); the rows of weight zero count only in ``n_rows``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalserve.core.multilabel._inputs import MultilabelInputs
from evalserve.core.multilabel._ranking import rank_samples

__all__ = ["SampleStats", "sample_stats"]

Floats = NDArray[np.float64]
Ints = NDArray[np.int64]


@dataclass(frozen=True, slots=True, eq=False)
class SampleStats:
    """Rows of weight > 0 grouped three ways.

    ``cells``: the distinct (TP, FP, FN) of the rows (m x 3, in lexicographic order), with the
    rows' total ``weight`` and their number ``rows``; ``coverage[c - 1]``: the weight of the
    rows of coverage c; ``lrap``: the distinct LRAP values (ascending) and ``lrap_weight``.
    """

    cells: Ints
    weight: Floats
    rows: Ints
    coverage: Floats
    lrap: Floats
    lrap_weight: Floats

    @property
    def size(self) -> int:
        """Groups held: distinct cell counts and distinct LRAP values."""
        return int(self.weight.size + self.lrap.size)

    def merge(self, other: SampleStats) -> SampleStats:
        """The statistic of both row sets (same number of labels)."""
        cells, (weight, rows) = _grouped_cells(
            np.concatenate((self.cells, other.cells)),
            self.coverage.size,
            [np.concatenate((self.weight, other.weight)), np.concatenate((self.rows, other.rows))],
        )
        lrap, (lrap_weight,) = _grouped(
            np.concatenate((self.lrap, other.lrap)),
            [np.concatenate((self.lrap_weight, other.lrap_weight))],
        )
        return SampleStats(
            cells,
            weight,
            rows,
            self.coverage + other.coverage,
            lrap,
            lrap_weight,
        )


def sample_stats(rows: MultilabelInputs) -> SampleStats:
    """The statistic of validated rows."""
    labels, predicted, scores, weights = rows.labels, rows.predicted, rows.scores, rows.weights
    if weights is not None and not (weights > 0).all():
        live = weights > 0
        labels, predicted, scores, weights = (
            labels[live], predicted[live], scores[live], weights[live],
        )  # fmt: skip
    n_rows, n_labels = labels.shape
    cells = np.empty((n_rows, 3), dtype=np.int64)
    cells[:, 0] = np.count_nonzero(labels & predicted, axis=1)
    cells[:, 1] = np.count_nonzero(predicted & ~labels, axis=1)
    cells[:, 2] = np.count_nonzero(labels & ~predicted, axis=1)
    unit = np.ones(n_rows) if weights is None else weights
    cells, (weight, count) = _grouped_cells(
        cells, n_labels, [unit, np.ones(n_rows, dtype=np.int64)]
    )
    if n_rows == 0:  # a batch of weight-zero rows
        nothing = np.empty(0)
        no_rows = np.empty(0, dtype=np.int64)
        return SampleStats(cells, nothing, no_rows, np.zeros(n_labels), nothing, nothing)
    ranking = rank_samples(labels, scores)
    kept = ranking.n_true > 0
    kept_weights = unit[kept]
    coverage = np.bincount(
        ranking.coverage[kept].astype(np.intp) - 1, weights=kept_weights, minlength=n_labels
    )
    lrap, (lrap_weight,) = _grouped(
        ranking.precision_sum[kept] / ranking.n_true[kept], [kept_weights]
    )
    return SampleStats(
        cells,
        weight,
        count,
        coverage.astype(np.float64, copy=False),
        lrap,
        lrap_weight,
    )


def _grouped_cells(
    cells: Ints, n_labels: int, sums: list[NDArray[Any]]
) -> tuple[Ints, list[NDArray[Any]]]:
    """The distinct rows of (TP, FP, FN) ``cells`` (each count in 0..k) in lexicographic order,
    and per distinct row the sum of each of ``sums``. A row is one integer key in base k + 1
    (same order); a table of every key replaces the sort when there are no more keys than
    rows."""
    if cells.shape[0] == 0:
        return cells, sums
    base = n_labels + 1
    if base**3 >= 1 << 62:  # about two million labels and more: the rows themselves as keys
        rows, group = np.unique(cells, axis=0, return_inverse=True)
        return rows.astype(np.int64), _sums(group.ravel(), rows.shape[0], sums)
    keys = (cells[:, 0] * base + cells[:, 1]) * base + cells[:, 2]
    if base**3 <= max(keys.size, 1 << 12):
        present = np.bincount(keys, minlength=base**3) > 0
        distinct = np.flatnonzero(present)
        group = (np.cumsum(present) - 1)[keys]
    else:
        distinct, group = _distinct(keys)
    rows = np.empty((distinct.size, 3), dtype=np.int64)
    rows[:, 1], rows[:, 2] = np.divmod(distinct, base)
    rows[:, 0], rows[:, 1] = np.divmod(rows[:, 1], base)
    return rows, _sums(group, distinct.size, sums)


def _grouped(values: Floats, sums: list[NDArray[Any]]) -> tuple[Floats, list[NDArray[Any]]]:
    """The distinct ``values`` (ascending) and, per distinct value, the sum of each of
    ``sums``."""
    if values.size == 0:
        return values, sums
    distinct, group = _distinct(values)
    return distinct, _sums(group, distinct.size, sums)


def _distinct(values: NDArray[Any]) -> tuple[NDArray[Any], NDArray[np.intp]]:
    distinct = np.unique(values)
    return distinct, np.searchsorted(distinct, values)


def _sums(group: NDArray[np.intp], n_groups: int, sums: list[NDArray[Any]]) -> list[NDArray[Any]]:
    """Per group, the sum of each of ``sums``, added one by one in the order the rows came (the
    same additions whichever way the groups were found)."""
    return [
        np.bincount(group, weights=values, minlength=n_groups).astype(values.dtype)
        for values in sums
    ]
