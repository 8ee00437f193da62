"""Regression input: one check of the rows, messages naming the REST fields.

``labels`` are the ground truth y, ``predictions`` the model's ŷ, ``weights`` optional
non-negative sample weights. Rows of weight zero are dropped here, once: every metric then
treats them as absent (weight 0 == row not sent), and only ``n_samples`` still counts them.
``regression_predictions`` holds the argument rules ``evaluate`` and the ``Accumulator`` share.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalserve.core._errors import InvalidInputError
from evalserve.core._validation import finite_floats, same_length, sample_weights

__all__ = ["RegressionRows", "regression_predictions", "regression_rows"]

Floats = NDArray[np.float64]
Indices = NDArray[np.intp]


@dataclass(frozen=True, slots=True)
class RegressionRows:
    """Checked rows of positive weight. ``weights`` are ones when none came (``weighted``
    False); ``row_numbers`` maps each kept row back to its index in the request (None when no
    row was dropped)."""

    labels: Floats
    predictions: Floats
    weights: Floats
    n_rows: int
    row_numbers: Indices | None
    weighted: bool = True

    @property
    def total_weight(self) -> float:
        """n of the formulas: the row count unweighted, the sum of the weights otherwise."""
        return float(np.sum(self.weights))

    def request_row(self, kept: int) -> int:
        """The request's index of kept row ``kept`` (for reasons that name a row)."""
        return kept if self.row_numbers is None else int(self.row_numbers[kept])


def regression_predictions(y_score: Any, y_pred: Any, classes: Any) -> Any:
    """The predictions of ``evaluate("regression", ...)``'s arguments: ``y_pred``, or
    ``y_score`` when ``y_pred`` is absent; both at once, or class names, are refused."""
    if y_pred is not None and y_score is not None:
        raise InvalidInputError(
            "scores", "task 'regression' takes predictions only (send them as predictions)"
        )
    if classes is not None:
        raise InvalidInputError("classes", "task 'regression' takes no class names")
    return y_pred if y_pred is not None else y_score


def regression_rows(y_true: Any, y_pred: Any, sample_weight: Any) -> RegressionRows:
    """Every check of the regression rows: finite 1-d labels and predictions of one length,
    optional weights as ``core._validation.sample_weights`` accepts them."""
    labels = finite_floats("labels", y_true)
    if y_pred is None:
        raise InvalidInputError("predictions", "is required for task 'regression'")
    predictions = finite_floats("predictions", y_pred)
    same_length("predictions", predictions.size, labels.size)
    weights = sample_weights("weights", sample_weight, labels.size)
    if weights is None:
        ones = np.ones(labels.size)
        return RegressionRows(labels, predictions, ones, labels.size, None, weighted=False)
    if weights.all():
        return RegressionRows(labels, predictions, weights, labels.size, None)
    kept = np.flatnonzero(weights)
    return RegressionRows(labels[kept], predictions[kept], weights[kept], labels.size, kept)
