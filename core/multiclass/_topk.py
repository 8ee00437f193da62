"""Top-k accuracy with ties counted pro rata.

A row's true class has ``g`` classes scored strictly above it and ``e`` classes (itself
included) scored equal. Under a random order of the tied classes its rank is g + U, U uniform
on 1..e, so it is in the top k with probability min(1, max(0, (k - g) / e)): that is what the
row counts. Rows without ties count 0 or 1, as everywhere; a constant model gets k / classes,
not the 1 that "fewer than k scored strictly higher" would give it.

scikit-learn's ``top_k_accuracy_score`` breaks ties by class index (highest first); the two
agree whenever no tie straddles the k-th place.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from evalserve.core._result import MetricSink

__all__ = ["rank_counts", "top_k_metrics"]

Floats = NDArray[np.float64]

# Rows per block: the comparison masks of a block stay in cache.
_ROW_BLOCK = 4096


def rank_counts(scores: NDArray[np.float64], true_scores: Floats) -> tuple[Floats, Floats]:
    """Per row, (classes scored strictly above the true class, classes scored equal to it).

    The row counts are a matrix-vector product of the comparison mask with ones: with few
    classes per row that is much faster than a reduction along the rows (exact: small
    integers)."""
    n_rows, width = scores.shape
    ones = np.ones(width)
    above = np.empty(n_rows)
    equal = np.empty(n_rows)
    for start in range(0, n_rows, _ROW_BLOCK):
        stop = min(n_rows, start + _ROW_BLOCK)
        block = scores[start:stop]
        true = true_scores[start:stop, None]
        np.matmul(block > true, ones, out=above[start:stop])
        np.matmul(block == true, ones, out=equal[start:stop])
    return above, equal


def top_k_metrics(
    sink: MetricSink,
    ks: tuple[int, ...],
    above: Floats,
    equal: Floats,
    weights: Floats | None,
    n_classes: int,
) -> None:
    total = float(above.size if weights is None else weights.sum())
    for k in ks:
        name = f"top_{k}_accuracy"
        if k > n_classes:
            sink.undefine(
                name,
                f"k = {k} is more than the {n_classes} classes (every row would count as a hit)",
            )
            continue
        hit = np.clip((k - above) / equal, 0.0, 1.0)
        sink.set(name, float(hit.sum() if weights is None else np.dot(weights, hit)) / total)
