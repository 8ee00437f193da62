"""Task binary with segments: the overall result and every segment's, from one grouping.

Evaluating each segment as a request of its own would gather each segment's rows column by
column (a random-access pass over every column per segment) and split each segment by label
again. Here the rows are grouped once, by (label, segment), with one sort of small keys
(``core/_grouping.py``): the scores are gathered once, each segment's negatives and positives
are then contiguous pieces in their input order, and the negatives (positives) of all segments one
block. Each piece is sorted in place: the segment's class, exactly as its own request sorts it
(the same values in the same order). The overall classes are the two blocks, their segments'
sorted runs side by side, sorted once more (numpy has no k-way merge; its sort of sorted runs
costs no more than a merge would here). With weights, the overall classes come from the rows
in their input order, as without segments, so that tied scores sum their weights in the same
order and the overall result equals the unsegmented one bit for bit.

A request with hard predictions or a challenger takes the general path (each segment's rows
evaluated as a request of their own).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalserve.core._errors import InvalidInputError
from evalserve.core._grouping import grouped
from evalserve.core._options import Options
from evalserve.core._result import EvaluationResult
from evalserve.core._segments import Segmentation, segment_options, segment_result
from evalserve.core._task_spec import MonitorRequest
from evalserve.core._validation import binary_inputs
from evalserve.core.binary._classes import (
    ClassScores,
    classes_of_rows,
    unweighted_class,
    weighted_class,
)
from evalserve.core.binary._result import binary_result
from evalserve.core.binary._sweep import sweep

__all__ = ["evaluate_binary_segments"]

Floats = NDArray[np.float64]

# The all-zero weights of a segment: the error its own request would raise.
_WEIGHTLESS = InvalidInputError("weights", "all weights are zero; nothing to evaluate")


def evaluate_binary_segments(
    y_true: Any,
    y_score: Any,
    y_pred: Any,
    sample_weight: Any,
    options: Options,
    classes: Sequence[str] | None,
    baseline: Mapping[str, Any] | None,
    challenger: Mapping[str, Any] | None,
    monitor: MonitorRequest | None,
    segmentation: Segmentation,
    monitors: Mapping[str, MonitorRequest | None],
) -> tuple[EvaluationResult, dict[str, EvaluationResult]] | None:
    """The overall result and each segment's (see the module's docstring)."""
    if y_pred is not None or challenger is not None or classes is not None:
        return None
    rows = binary_inputs(
        y_true, y_score, None, sample_weight, positive_label=options.positive_label
    )
    k = len(segmentation.names)
    key = rows.labels.astype(np.intp) * k + segmentation.codes
    order, bounds = grouped(key, 2 * k)  # group label * k + code
    # take without bounds checks (the order is a permutation): faster than indexing.
    scores = np.take(rows.scores, order, mode="clip")
    weights = None if rows.weights is None else np.take(rows.weights, order, mode="clip")
    del order
    pieces = []
    for i in range(k):
        negatives = _piece(scores, weights, bounds[i], bounds[i + 1])
        positives = _piece(scores, weights, bounds[k + i], bounds[k + i + 1])
        size = bounds[i + 1] - bounds[i] + bounds[k + i + 1] - bounds[k + i]
        held = weights is None or bool(
            weights[bounds[i] : bounds[i + 1]].any()
            or weights[bounds[k + i] : bounds[k + i + 1]].any()
        )
        pieces.append((positives, negatives, size, held))
    if weights is None:
        overall_classes = (
            unweighted_class(scores[bounds[k] :].copy()),
            unweighted_class(scores[: bounds[k]].copy()),
        )
    else:
        overall_classes = classes_of_rows(rows.labels, rows.scores, rows.weights)
    del scores, weights
    n = int(rows.labels.size)
    overall = binary_result(sweep(*overall_classes), n, options, None, baseline, None, monitor)
    options = segment_options(options)
    results = {}
    for name, (positives, negatives, size, held) in zip(segmentation.names, pieces, strict=True):
        results[name] = segment_result(
            "binary", name, size,
            functools.partial(
                _result, positives, negatives, size, held, options, baseline, monitors.get(name)
            ),
        )  # fmt: skip
    return overall, results


def _piece(scores: Floats, weights: Floats | None, start: int, stop: int) -> ClassScores:
    """One class of one segment from its rows' contiguous piece (sorted in place)."""
    if weights is None:
        return unweighted_class(scores[start:stop])
    return weighted_class(scores[start:stop], weights[start:stop])


def _result(
    positives: ClassScores,
    negatives: ClassScores,
    size: int,
    held: bool,
    options: Options,
    baseline: Mapping[str, Any] | None,
    monitor: MonitorRequest | None,
) -> EvaluationResult:
    if not held:
        raise _WEIGHTLESS
    return binary_result(sweep(positives, negatives), size, options, None, baseline, None, monitor)
