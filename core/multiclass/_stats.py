"""The statistics every multiclass metric is computed from, and how rows give them.

``MulticlassStats`` is the first half's output and the second half's input of
``compute_multiclass``: the confusion matrix, the rank table of top-k accuracy, the sums of the
probability metrics (or why there are none), and the ranking statistics (one-vs-rest,
one-vs-one, micro). ``evaluate`` builds them straight from the rows (``stats_of_rows``); the
``Accumulator`` state (``_state``) builds the same statistics from what it kept of its batches,
and both hand them to the same ``multiclass_output``. Every part is a sum over rows taken
exactly or on integers, so both paths give the same statistics: bit for bit with counts or
integer weights (below 2**53), to rounding with float weights.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from evalserve.core._options import Options
from evalserve.core.multiclass._confusion import confusion_matrix
from evalserve.core.multiclass._inputs import MulticlassInputs
from evalserve.core.multiclass._probability import (
    ProbabilityCheck,
    ProbabilitySums,
    probability_check,
    probability_sums,
)
from evalserve.core.multiclass._ranking import RankingStats, ranking_stats, true_class_scores
from evalserve.core.multiclass._topk import rank_counts, rank_table, table_depth

__all__ = ["MulticlassStats", "RowStats", "row_stats", "stats_of_rows"]

Floats = NDArray[np.float64]
Indices = NDArray[np.intp]


@dataclass(frozen=True, slots=True, eq=False)
class MulticlassStats:
    """``matrix``: the k x k confusion matrix (true class x predicted class); ``ranks``: the
    rank table of top-k accuracy (``_topk.rank_table``); ``probability``: the sums of the
    probability metrics, or the reason they are undefined; ``ranking``: the one-vs-rest,
    one-vs-one and micro ranking statistics."""

    n_rows: int
    classes: tuple[str, ...]
    matrix: Floats
    ranks: Floats
    probability: ProbabilitySums | str
    ranking: RankingStats


@dataclass(frozen=True, slots=True, eq=False)
class RowStats:
    """What rows give beside the ranking statistics; the sums are empty when the rows are not
    probabilities (``check``)."""

    matrix: Floats
    ranks: Floats
    check: ProbabilityCheck
    sums: ProbabilitySums


def row_stats(
    inputs: MulticlassInputs, true_scores: Floats, options: Options, *, ties: bool = True
) -> RowStats:
    """The confusion matrix, rank table and probability sums of validated rows
    (``true_scores``: each row's score of its true class; ``ties`` False: no row has another
    class scored equal to its true class)."""
    scores, labels, weights = inputs.scores, inputs.labels, inputs.weights
    n_classes = inputs.n_classes
    top = np.asarray(scores.argmax(axis=1), dtype=np.intp)  # ties go to the lowest index
    predicted = top if inputs.predicted is None else inputs.predicted
    matrix = confusion_matrix(labels, predicted, weights, n_classes)
    above, equal = rank_counts(scores, true_scores, ties=ties)
    depth = table_depth(options.top_k, n_classes)
    ranks = rank_table(above, equal, weights, n_classes, depth)
    del above, equal
    check = probability_check(scores, inputs.low, inputs.high, weights)
    bins = options.calibration_bins
    if check.problem(n_classes) is None:
        sums = probability_sums(scores, top, labels, weights, bins)
    else:
        sums = ProbabilitySums.empty(bins)
    return RowStats(matrix, ranks, check, sums)


def stats_of_rows(inputs: MulticlassInputs, options: Options) -> MulticlassStats:
    """The statistics of validated rows (one request). The ranking sweep goes first: it
    tells the rank table whether any row ties its true class with another."""
    true_scores = true_class_scores(inputs.scores, inputs.labels)
    ranking = ranking_stats(inputs, true_scores, options)
    rows = row_stats(inputs, true_scores, options, ties=ranking.cross_ties)
    problem = rows.check.problem(inputs.n_classes)
    return MulticlassStats(
        n_rows=inputs.n_rows,
        classes=inputs.classes,
        matrix=rows.matrix,
        ranks=rows.ranks,
        probability=rows.sums if problem is None else problem,
        ranking=ranking,
    )
