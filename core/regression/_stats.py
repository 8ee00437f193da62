"""The sufficient statistic of regression evaluation: every metric is a function of it.

``compute_regression`` builds it from all rows at once, the ``Accumulator`` from each batch and
merges the batches; ``regression_output`` (``_suite.py``) turns it into the metrics, one code
path for both. It holds

* counts: the rows received (weight-zero rows included, for ``n_samples``) and the rows of
  positive weight; the sum of the weights W (n of the formulas);
* sums of non-negative terms, added on merge: SSE = sum w r², sum w |r|, sum w |r| / |y|
  (MAPE), sum w 2|r| / (|y| + |ŷ|) (SMAPE), with r = y - ŷ;
* the smallest and largest label (constant labels leave r2 undefined, decided by comparing
  labels, not by a variance that rounds to 1e-33);
* the first row whose label is 0 (MAPE's reason names it), counted over the rows in the order
  they were added;
* the weighted mean and M2 of the labels (SST) and of the residuals (Var(r) for
  explained_variance), merged by Chan, Golub & LeVeque's pairwise update (``_moments.py``);
* the distinct |r| with their weight (``_absolute.py``): max_error and the weighted median,
  exact.

Accuracy of merged batches against all rows at once (``tests/core/test_regression_state.py``):

* n_samples, the labels' range, max_error, the median and every reason are the same. The
  median's "exactly half" allowance (n eps of the total weight) absorbs the order in which
  float weights are added; only a cumulative weight within rounding of that allowance could
  differ, which integer weights never produce.
* Each sum and M2 has terms of one sign, added pairwise (numpy's pairwise sum within a batch,
  a binary counter of merges across batches): within a few eps times log2 of the rows of its
  one-batch value. mse, rmse, mae, mape, smape and every ratio of them agree to 1e-12 relative.
* Differences of near-equal numbers keep that accuracy relative to the numbers, not to the
  difference: r2, adjusted_r2 and explained_variance (1 - SSE/SST) near 0 agree to 1e-12 of
  SSE/SST, aic and bic (n ln(SSE/n) + penalty) to 1e-12 of n (1 + |ln(SSE/n)|), mallows_cp
  (SSE/σ² - n + 2p) to 1e-12 of SSE/σ² + n.
* Labels or residuals whose spread is a few ulps of their mean (|mean| / sd near 1/eps, 4.5e15)
  are at the limit of float64: there M2 is only as accurate as the corrected two-pass sum
  allows, the same way for both.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from evalserve.core.regression._absolute import AbsoluteErrors
from evalserve.core.regression._moments import Moments, weighted_sum
from evalserve.core.regression._rows import RegressionRows
from evalserve.core.regression._sample import PairSample

__all__ = ["EPS", "RegressionStats", "smape_terms"]

Floats = NDArray[np.float64]

# scikit-learn's MAPE divides by max(|y|, eps), eps of float64.
EPS = float(np.finfo(np.float64).eps)


@dataclass(frozen=True, slots=True, eq=False)
class RegressionStats:
    """Everything the regression metrics need from the rows seen so far (see the module)."""

    n_rows: int
    n_kept: int
    weighted: bool
    weight: float
    sse: float
    absolute_sum: float
    percentage_sum: float
    smape_sum: float
    label_min: float
    label_max: float
    zero_label_row: int  # -1: no label of positive weight is 0
    labels: Moments
    residuals: Moments
    errors: AbsoluteErrors
    # A sample of the rows (labels, predictions, weights) for the residual plots; None where
    # unknown (a state written before the format held one).
    sample: PairSample | None

    @classmethod
    def of_rows(cls, rows: RegressionRows, *, errors: bool = True) -> RegressionStats:
        """The statistic of checked rows (all of them of positive weight); without ``errors``
        the distribution of the absolute errors is left empty (an accumulator builds it
        later, with other batches')."""
        labels, predictions = rows.labels, rows.predictions
        weights = rows.weights if rows.weighted else None
        n_kept = int(labels.size)
        if n_kept == 0:
            return cls.weightless(rows.n_rows, rows.weighted)
        # Overflow (|values| near 1e154 and above) becomes infinities here, which the metrics
        # turn into None with a reason: numpy stays quiet meanwhile (under pytest it raises).
        with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
            total = float(n_kept) if weights is None else float(np.sum(weights))
            shares = 1.0 / n_kept if weights is None else weights / total
            residual = labels - predictions
            absolute = np.abs(residual)
            zero = labels == 0
            return cls(
                n_rows=rows.n_rows,
                n_kept=n_kept,
                weighted=rows.weighted,
                weight=total,
                sse=weighted_sum(weights, residual * residual),
                absolute_sum=weighted_sum(weights, absolute),
                # As scikit-learn: |y| is floored at eps, so labels below 2.2e-16 count as eps.
                percentage_sum=weighted_sum(weights, absolute / np.maximum(np.abs(labels), EPS)),
                smape_sum=weighted_sum(weights, smape_terms(labels, predictions)),
                label_min=float(labels.min()),
                label_max=float(labels.max()),
                zero_label_row=rows.request_row(int(np.argmax(zero))) if zero.any() else -1,
                labels=Moments.of(labels, weights, total, shares),
                residuals=Moments.of(residual, weights, total, shares),
                errors=AbsoluteErrors.of_rows(absolute, weights)
                if errors
                else AbsoluteErrors(np.empty(0), np.empty(0)),
                sample=PairSample.of_rows(labels, predictions, weights),
            )

    @classmethod
    def weightless(cls, n_rows: int, weighted: bool) -> RegressionStats:
        """The statistic of ``n_rows`` rows of weight zero (a batch of an accumulator may weigh
        nothing): no value, every sum zero."""
        nothing = Moments(0.0, 0.0, 0.0)
        return cls(
            n_rows=n_rows, n_kept=0, weighted=weighted, weight=0.0, sse=0.0, absolute_sum=0.0,
            percentage_sum=0.0, smape_sum=0.0, label_min=0.0, label_max=0.0, zero_label_row=-1,
            labels=nothing, residuals=nothing,
            errors=AbsoluteErrors(np.empty(0), np.empty(0)), sample=PairSample.empty(),
        )  # fmt: skip

    def merge(self, other: RegressionStats) -> RegressionStats:
        """The statistic of this state's rows followed by ``other``'s: associative, and
        commutative in every metric (up to the rounding of float sums); only the row that
        MAPE's reason names follows the order."""
        if self.n_kept == 0 or other.n_kept == 0:
            held = other if self.n_kept == 0 else self
            zero = held.zero_label_row
            if zero >= 0 and held is other:
                zero += self.n_rows
            return replace(
                held,
                n_rows=self.n_rows + other.n_rows,
                weighted=self.weighted or other.weighted,
                zero_label_row=zero,
            )
        zero = self.zero_label_row
        if zero < 0 and other.zero_label_row >= 0:
            zero = self.n_rows + other.zero_label_row
        weight, other_weight = self.weight, other.weight
        return RegressionStats(
            n_rows=self.n_rows + other.n_rows,
            n_kept=self.n_kept + other.n_kept,
            weighted=self.weighted or other.weighted,
            weight=weight + other_weight,
            sse=self.sse + other.sse,
            absolute_sum=self.absolute_sum + other.absolute_sum,
            percentage_sum=self.percentage_sum + other.percentage_sum,
            smape_sum=self.smape_sum + other.smape_sum,
            label_min=min(self.label_min, other.label_min),
            label_max=max(self.label_max, other.label_max),
            zero_label_row=zero,
            labels=self.labels.merge(other.labels, weight, other_weight),
            residuals=self.residuals.merge(other.residuals, weight, other_weight),
            errors=self.errors.merge(other.errors),
            sample=None
            if self.sample is None or other.sample is None
            else self.sample.merge(other.sample),
        )


def smape_terms(labels: Floats, predictions: Floats) -> Floats:
    """2|y - ŷ| / (|y| + |ŷ|) per row, in [0, 2]; 0 where y = ŷ = 0 (a perfect prediction,
    not 0/0). Both are first divided by max(|y|, |ŷ|), which leaves the ratio unchanged and
    keeps |y| + |ŷ| from overflowing (or |y|/2 from underflowing) at the ends of float64."""
    scale = np.maximum(np.abs(labels), np.abs(predictions))
    nonzero = scale > 0
    scale[~nonzero] = 1.0
    y, y_hat = labels / scale, predictions / scale
    terms: Floats = 2 * np.abs(y - y_hat) / (np.abs(y) + np.abs(y_hat))
    terms[~nonzero] = 0.0
    return terms
