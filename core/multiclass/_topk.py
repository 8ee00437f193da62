"""Top-k accuracy with ties counted pro rata.

A row's true class has ``g`` classes scored strictly above it and ``e`` classes (itself
included) scored equal. Under a random order of the tied classes its rank is g + U, U uniform
on 1..e, so it is in the top k with probability min(1, max(0, (k - g) / e)): that is what the
row counts. Rows without ties count 0 or 1, as everywhere; a constant model gets k / classes,
not the 1 that "fewer than k scored strictly higher" would give it.

A row's count depends only on (g, e): the rows are summed into a table of their weight per
(g, e) (exact with counts or integer weights, and mergeable), and each top-k accuracy is the
table's inner product with the counts. scikit-learn's ``top_k_accuracy_score`` breaks ties by
class index (highest first); the two agree whenever no tie straddles the k-th place.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from evalserve.core._inner import inner
from evalserve.core._result import MetricSink

__all__ = ["rank_counts", "rank_table", "table_depth", "top_k_metrics"]

Floats = NDArray[np.float64]

# Rows per block: the comparison masks of a block stay in cache.
_ROW_BLOCK = 4096


def rank_counts(
    scores: NDArray[np.float64], true_scores: Floats, *, ties: bool = True
) -> tuple[Floats, Floats]:
    """Per row, (classes scored strictly above the true class, classes scored equal to it);
    ``ties`` False: the caller knows that no other class is scored equal to a row's true
    class (every row counts 1 equal, itself).

    The row counts are einsum's row sums of the comparison mask read as int8: with few classes
    per row much faster than a reduction along the rows or a product with ones (exact: small
    integers). Most blocks have no ties: one count of the equality mask shows it (every row
    equal to itself only), and their rows count 1 equal."""
    n_rows, width = scores.shape
    above = np.empty(n_rows)
    equal = np.ones(n_rows)
    mask = np.empty((min(n_rows, _ROW_BLOCK), width), dtype=np.bool_)
    for start in range(0, n_rows, _ROW_BLOCK):
        stop = min(n_rows, start + _ROW_BLOCK)
        block = scores[start:stop]
        true = true_scores[start:stop, None]
        rows = mask[: stop - start]
        np.greater(block, true, out=rows)
        _row_counts(rows, above[start:stop])
        if ties:
            np.equal(block, true, out=rows)
            if np.count_nonzero(rows) > stop - start:  # a row ties with another class
                _row_counts(rows, equal[start:stop])
    return above, equal


def _row_counts(mask: NDArray[np.bool_], out: Floats) -> None:
    np.einsum("ij->i", mask.view(np.int8), out=out, dtype=np.float64)


def table_depth(ks: tuple[int, ...], n_classes: int) -> int:
    """Rows of the rank table: the largest k asked for that has a value (k <= classes)."""
    return max((k for k in ks if k <= n_classes), default=0)


def rank_table(
    above: Floats, equal: Floats, weights: Floats | None, n_classes: int, depth: int
) -> Floats:
    """``table[g, e - 1]``: the weight of the rows with ``g`` < ``depth`` classes scored above
    their true class and ``e`` scored equal (itself included). A row with ``depth`` or more
    classes above is in no top k asked for, and is left out."""
    # Cell g * classes + e, with every g >= depth in row ``depth`` (dropped): small integers,
    # exact in float64.
    cell = np.minimum(above, depth)
    cell *= n_classes
    cell += equal
    size = (depth + 1) * n_classes + 1
    counts = np.bincount(cell.astype(np.intp), weights=weights, minlength=size)
    return counts[1 : depth * n_classes + 1].astype(np.float64).reshape(depth, n_classes)


def top_k_metrics(
    sink: MetricSink, ks: tuple[int, ...], table: Floats, total: float, n_classes: int
) -> None:
    """``top_{k}_accuracy`` from the rank table (``rank_table``) and the total weight."""
    depth = table.shape[0]
    above = np.arange(depth, dtype=np.float64)[:, None]
    equal = np.arange(1, n_classes + 1, dtype=np.float64)[None, :]
    for k in ks:
        name = f"top_{k}_accuracy"
        if k > n_classes:
            sink.undefine(
                name,
                f"k = {k} is more than the {n_classes} classes (every row would count as a hit)",
            )
            continue
        hit = np.clip((k - above) / equal, 0.0, 1.0)
        sink.set(name, inner(table.ravel(), hit.ravel()) / total)
