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
* the sums of the positive and of the negative residuals, sum w max(r, 0) and
  sum w max(-r, 0): the pinball loss at every quantile level q is q times the first plus
  1 - q times the second, over W, so the state needs no option to hold them;
* sum w (ln(1 + y) - ln(1 + ŷ))² (mean_squared_log_error) and the first row whose label or
  prediction is <= -1, where it is undefined;
* the weighted mean and M2 of the predictions, their smallest and largest value, and the cross
  moment C = sum w (y - ȳ)(ŷ - ŷ̄) merged by the same pairwise update (pearson_r and
  concordance_correlation);
* the distinct pairs (y, ŷ) with their weight (``_pairs.py``): spearman_r's joint ranks, and
  the distribution of |r| (max_error and the weighted median, exact). A state written before
  the pairs were held (``pairs`` None) keeps the distinct |r| instead (``errors``) and leaves
  the metrics of the pairs and of the sums above undefined.

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
* pinball_loss_{q} and mean_squared_log_error are ratios of sums of non-negative terms (1e-12
  relative); pearson_r and concordance_correlation are C over terms that bound |C| (1e-12 of
  1); spearman_r comes from the same distinct pairs whichever the split, with their weights
  added in another order (exact for integer weights).
* Labels or residuals whose spread is a few ulps of their mean (|mean| / sd near 1/eps, 4.5e15)
  are at the limit of float64: there M2 is only as accurate as the corrected two-pass sum
  allows, the same way for both.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from evalserve.core.regression._absolute import AbsoluteErrors
from evalserve.core.regression._moments import (
    Moments,
    co_moment,
    merged_co_moment,
    weighted_sum,
)
from evalserve.core.regression._pairs import DistinctPairs
from evalserve.core.regression._rows import RegressionRows
from evalserve.core.regression._sample import PairSample

__all__ = ["EPS", "JointStats", "RegressionStats", "smape_terms"]

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
    # The distinct |errors|: only in a state written before the pairs were held (None else).
    errors: AbsoluteErrors | None
    # A sample of the rows (labels, predictions, weights) for the residual plots; None where
    # unknown (a state written before the format held one).
    sample: PairSample | None
    # The statistics of the newer metrics and the distinct pairs: None in a state written
    # before they were held.
    joint: JointStats | None
    pairs: DistinctPairs | None

    @classmethod
    def of_rows(cls, rows: RegressionRows, *, pairs: bool = True) -> RegressionStats:
        """The statistic of checked rows (all of them of positive weight); without ``pairs``
        the distinct pairs are left empty (an accumulator builds them later, with other
        batches')."""
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
            label_moments = Moments.of(labels, weights, total, shares)
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
                labels=label_moments,
                residuals=Moments.of(residual, weights, total, shares),
                errors=None,
                sample=PairSample.of_rows(labels, predictions, weights),
                joint=JointStats.of_rows(rows, residual, label_moments, total, shares),
                pairs=DistinctPairs.of_rows(labels, predictions, weights)
                if pairs
                else DistinctPairs.empty(),
            )

    @classmethod
    def weightless(cls, n_rows: int, weighted: bool) -> RegressionStats:
        """The statistic of ``n_rows`` rows of weight zero (a batch of an accumulator may weigh
        nothing): no value, every sum zero."""
        nothing = Moments(0.0, 0.0, 0.0)
        return cls(
            n_rows=n_rows, n_kept=0, weighted=weighted, weight=0.0, sse=0.0, absolute_sum=0.0,
            percentage_sum=0.0, smape_sum=0.0, label_min=0.0, label_max=0.0, zero_label_row=-1,
            labels=nothing, residuals=nothing, errors=None, sample=PairSample.empty(),
            joint=JointStats.weightless(), pairs=DistinctPairs.empty(),
        )  # fmt: skip

    def error_distribution(self) -> AbsoluteErrors:
        """The distinct |y - ŷ| with their weights: from the pairs, or as an older state held
        them."""
        if self.pairs is not None:
            return self.pairs.absolute_errors()
        assert self.errors is not None  # a state holds the one or the other
        return self.errors

    @property
    def distinct(self) -> int:
        """The entries of the distribution held: distinct pairs, or distinct |errors|."""
        if self.pairs is not None:
            return self.pairs.size
        assert self.errors is not None
        return self.errors.size

    def merge(self, other: RegressionStats) -> RegressionStats:
        """The statistic of this state's rows followed by ``other``'s: associative, and
        commutative in every metric (up to the rounding of float sums); only the row that
        MAPE's reason names follows the order."""
        if self.n_kept == 0 or other.n_kept == 0:
            held = other if self.n_kept == 0 else self
            zero = held.zero_label_row
            offset = self.n_rows if held is other else 0
            if zero >= 0:
                zero += offset
            return replace(
                held,
                n_rows=self.n_rows + other.n_rows,
                weighted=self.weighted or other.weighted,
                zero_label_row=zero,
                # Rows of weight zero hold no pair and no sum: the held side's stay as they are.
                joint=None if held.joint is None else held.joint.shifted(offset),
            )
        zero = self.zero_label_row
        if zero < 0 and other.zero_label_row >= 0:
            zero = self.n_rows + other.zero_label_row
        weight, other_weight = self.weight, other.weight
        pairs, errors = None, None
        if self.pairs is not None and other.pairs is not None:
            pairs = self.pairs.merge(other.pairs)
        else:  # an older state: the distinct |errors| only
            errors = self.error_distribution().merge(other.error_distribution())
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
            errors=None if pairs is not None else errors,
            sample=None
            if self.sample is None or other.sample is None
            else self.sample.merge(other.sample),
            joint=None
            if self.joint is None or other.joint is None
            else self.joint.merge(other.joint, self, other),
            pairs=pairs,
        )


@dataclass(frozen=True, slots=True, eq=False)
class JointStats:
    """The sums and moments of pinball_loss_{q}, mean_squared_log_error, pearson_r and
    concordance_correlation (see the module)."""

    positive_sum: float  # sum w max(r, 0)
    negative_sum: float  # sum w max(-r, 0)
    log_sum: float  # sum w (ln(1 + y) - ln(1 + ŷ))² over the rows where both are > -1
    log_refused_row: int  # the first row whose y or ŷ is <= -1; -1: none
    prediction_min: float
    prediction_max: float
    predictions: Moments
    cross: float  # C = sum w (y - ȳ)(ŷ - ŷ̄); math.inf where it overflowed

    @classmethod
    def of_rows(
        cls,
        rows: RegressionRows,
        residual: Floats,
        label_moments: Moments,
        total: float,
        shares: Floats | float,
    ) -> JointStats:
        """Of checked rows of positive weight (call under ``np.errstate(all="ignore")``)."""
        labels, predictions = rows.labels, rows.predictions
        weights = rows.weights if rows.weighted else None
        refused = (labels <= -1) | (predictions <= -1)
        logs = np.log1p(np.where(refused, 0.0, labels)) - np.log1p(
            np.where(refused, 0.0, predictions)
        )
        prediction_moments = Moments.of(predictions, weights, total, shares)
        return cls(
            positive_sum=weighted_sum(weights, np.maximum(residual, 0.0)),
            negative_sum=weighted_sum(weights, np.maximum(-residual, 0.0)),
            log_sum=weighted_sum(weights, logs * logs),
            log_refused_row=rows.request_row(int(np.argmax(refused))) if refused.any() else -1,
            prediction_min=float(predictions.min()),
            prediction_max=float(predictions.max()),
            predictions=prediction_moments,
            cross=co_moment(labels, predictions, label_moments, prediction_moments, weights),
        )

    @classmethod
    def weightless(cls) -> JointStats:
        nothing = Moments(0.0, 0.0, 0.0)
        return cls(0.0, 0.0, 0.0, -1, 0.0, 0.0, nothing, 0.0)

    def shifted(self, rows: int) -> JointStats:
        """The same, its refused row counted after ``rows`` earlier rows."""
        if self.log_refused_row < 0 or rows == 0:
            return self
        return replace(self, log_refused_row=self.log_refused_row + rows)

    def merge(
        self, other: JointStats, stats: RegressionStats, other_stats: RegressionStats
    ) -> JointStats:
        """Of this state's rows followed by ``other``'s; ``stats`` and ``other_stats`` are the
        two statistics they belong to (their weights, label moments and row counts), both
        with rows of positive weight."""
        weight, other_weight = stats.weight, other_stats.weight
        refused = self.log_refused_row
        if refused < 0 and other.log_refused_row >= 0:
            refused = stats.n_rows + other.log_refused_row
        deltas = (
            stats.labels.delta(other_stats.labels),
            self.predictions.delta(other.predictions),
        )
        return JointStats(
            positive_sum=self.positive_sum + other.positive_sum,
            negative_sum=self.negative_sum + other.negative_sum,
            log_sum=self.log_sum + other.log_sum,
            log_refused_row=refused,
            prediction_min=min(self.prediction_min, other.prediction_min),
            prediction_max=max(self.prediction_max, other.prediction_max),
            predictions=self.predictions.merge(other.predictions, weight, other_weight),
            cross=merged_co_moment(self.cross, other.cross, deltas, weight, other_weight),
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
