"""Task regression's state for the ``Accumulator``: ``RegressionStats`` (``_stats.py``), the
statistic ``compute_regression`` itself goes through, so a merged state and all rows at once
end in the same ``regression_output``."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalserve.core._errors import InvalidInputError
from evalserve.core._options import Options
from evalserve.core._result import TaskOutput
from evalserve.core._state import (
    Arrays,
    StateKind,
    Waiting,
    array_of,
    check_masses,
    count_of,
    flag_of,
    joined_weights,
)
from evalserve.core._state_format import Later
from evalserve.core.regression._absolute import AbsoluteErrors
from evalserve.core.regression._moments import OVERFLOWED, Moments
from evalserve.core.regression._pairs import PAIR_BYTES, DistinctPairs
from evalserve.core.regression._rows import regression_predictions, regression_rows
from evalserve.core.regression._sample import SAMPLE_ROWS, PairSample, row_keys
from evalserve.core.regression._stats import JointStats, RegressionStats
from evalserve.core.regression._suite import regression_output

__all__ = ["REGRESSION_STATE", "RegressionState"]

# The scalars of ``to_arrays``: four counts, a flag and twenty-two floats, 8 bytes each as the
# byte format pads them.
_COUNTS = ("n_rows", "n_kept", "zero_label_row")
_SUMS = ("weight", "sse", "absolute_sum", "percentage_sum", "smape_sum")
_MOMENTS = ("labels", "residuals")
_SAMPLE = ("keys", "labels", "predictions", "weights")
# The joint statistics (``JointStats``): absent from a state written before they were kept.
_JOINT_SUMS = ("positive_sum", "negative_sum", "log_sum")
_JOINT_FLOATS = ("prediction_min", "prediction_max", "cross")
_JOINT = (
    *_JOINT_SUMS, "log_refused_row", *_JOINT_FLOATS,
    "predictions.mean", "predictions.mean_low", "predictions.m2",
)  # fmt: skip
_PAIRS = ("labels", "predictions", "masses")
FIXED_BYTES = 8 * (len(_COUNTS) + 1 + len(_SUMS) + 2 + 3 * len(_MOMENTS) + len(_JOINT))
ENTRY_BYTES = 16  # a distinct |y - ŷ| and its weight (a state written before the pairs)
# Counts beyond 2^53 are no longer exact as float64 sums of unit weights.
_MAX_ROWS = 2**53
# Weights summed in another order (per distinct |error|, or all at once) agree far closer.
_WEIGHT_AGREEMENT = 1e-6


# Batches' absolute errors wait as they came until they outnumber three times the distinct
# errors held, and at least this many: then one sort folds them all in.
MIN_PENDING = 1 << 20


@dataclass(frozen=True, slots=True, eq=False)
class RawPairs:
    """A batch's pairs (y, ŷ) (of its rows of positive weight) and their weights (None:
    ones), unsorted: sorted with the other waiting batches' in one sort."""

    labels: NDArray[np.float64]
    predictions: NDArray[np.float64]
    weights: NDArray[np.float64] | None

    @property
    def entries(self) -> int:
        return int(self.labels.size)

    def sample(self, limit: int) -> NDArray[np.float64]:
        # One number per pair for the estimate of the distinct pairs: the pair's key (a hash
        # of its bits), as a float.
        keys = row_keys(self.labels[:limit], self.predictions[:limit], None)
        return keys.astype(np.float64)

    @property
    def nbytes(self) -> int:
        extra = 0 if self.weights is None else self.weights.nbytes
        return self.labels.nbytes + self.predictions.nbytes + extra


@dataclass(frozen=True, slots=True, eq=False)
class RegressionState:
    """The statistic of the rows added so far: fixed sums and moments, and the distinct pairs
    (y, ŷ) with their weight; the latest batches' pairs may still wait in ``raw`` (their sums
    are in ``stats`` already)."""

    stats: RegressionStats
    raw: Waiting[RawPairs] = field(default_factory=Waiting)

    @property
    def n_rows(self) -> int:
        return self.stats.n_rows

    @property
    def size(self) -> int:
        return self.stats.distinct + self.raw.entries

    @property
    def nbytes(self) -> int:
        stats = self.stats
        sample = stats.sample
        entry = ENTRY_BYTES if stats.pairs is None else PAIR_BYTES
        return (
            FIXED_BYTES
            + entry * stats.distinct
            + (0 if sample is None else sample.nbytes)
            + self.raw.nbytes
        )

    @property
    def weightless(self) -> bool:
        return self.stats.n_kept == 0

    def for_result(self) -> RegressionState:
        return self.compact()

    def compact(self) -> RegressionState:
        if not self.raw.parts:
            return self
        parts = self.raw.parts
        labels = np.concatenate([part.labels for part in parts])
        predictions = np.concatenate([part.predictions for part in parts])
        weights = joined_weights([(part.labels.size, part.weights) for part in parts])
        stats = self.stats
        held = stats.distinct
        if stats.pairs is not None:
            pairs = stats.pairs.merge(DistinctPairs.of_rows(labels, predictions, weights))
            stats = replace(stats, pairs=pairs)
        else:  # a state written before the pairs were held: its |errors| only
            with np.errstate(over="ignore", invalid="ignore"):
                absolute = np.abs(labels - predictions)
            errors = stats.error_distribution().merge(AbsoluteErrors.of_rows(absolute, weights))
            stats = replace(stats, errors=errors)
        return RegressionState(stats, self.raw.emptied(held, stats.distinct))

    def check_merge(self, other: RegressionState) -> None:
        pass  # any two states merge

    def merge(self, other: RegressionState) -> RegressionState:
        merged = RegressionState(self.stats.merge(other.stats), self.raw.joined(other.raw))
        if merged.raw.due(merged.stats.distinct, MIN_PENDING):
            return merged.compact()
        return merged

    def to_bytes_arrays(self) -> tuple[Arrays, dict[str, Later]]:
        return self.to_arrays(), {}

    def to_arrays(self) -> Arrays:
        stats = self.compact().stats
        arrays: Arrays = {name: np.array(getattr(stats, name), dtype=np.int64) for name in _COUNTS}
        arrays["weighted"] = np.array(stats.weighted)
        for name in (*_SUMS, "label_min", "label_max"):
            arrays[name] = np.array(getattr(stats, name), dtype=np.float64)
        for prefix in _MOMENTS:
            moments: Moments = getattr(stats, prefix)
            for part in ("mean", "mean_low", "m2"):
                arrays[f"{prefix}.{part}"] = np.array(getattr(moments, part), dtype=np.float64)
        joint, pairs = stats.joint, stats.pairs
        if joint is not None:
            for name in (*_JOINT_SUMS, *_JOINT_FLOATS):
                arrays[name] = np.array(getattr(joint, name), dtype=np.float64)
            arrays["log_refused_row"] = np.array(joint.log_refused_row, dtype=np.int64)
            for part in ("mean", "mean_low", "m2"):
                value = getattr(joint.predictions, part)
                arrays[f"predictions.{part}"] = np.array(value, dtype=np.float64)
        if pairs is not None:
            arrays["pairs.labels"] = pairs.labels
            arrays["pairs.predictions"] = pairs.predictions
            arrays["pairs.masses"] = pairs.masses
        else:
            errors = stats.error_distribution()
            arrays["errors.values"] = errors.values
            arrays["errors.masses"] = errors.masses
        if stats.sample is not None:  # unknown in a state of format version 1
            for name in _SAMPLE:
                arrays[f"sample.{name}"] = getattr(stats.sample, name)
        return arrays

    def output(self, options: Options, classes: tuple[str, ...] | None) -> TaskOutput:
        return regression_output(self.compact().stats, options)


def _of_batch(
    y_true: Any,
    y_score: Any,
    y_pred: Any,
    sample_weight: Any,
    options: Options,
    classes: tuple[str, ...] | None,
) -> RegressionState:
    predictions = regression_predictions(y_score, y_pred, classes)
    rows = regression_rows(y_true, predictions, sample_weight)
    stats = RegressionStats.of_rows(rows, pairs=False)
    if stats.n_kept == 0:
        return RegressionState(stats)
    weights = rows.weights.copy() if rows.weighted else None
    raw = RawPairs(rows.labels.copy(), rows.predictions.copy(), weights)
    return RegressionState(stats, Waiting.of(raw))


# --- reading a state back: every array checked against what a state can hold ----------------


def _bad(message: str) -> InvalidInputError:
    return InvalidInputError("state", message)


def _float_of(arrays: Mapping[str, NDArray[Any]], name: str) -> float:
    return float(array_of(arrays, name, np.float64, 0))


def _finite_of(arrays: Mapping[str, NDArray[Any]], name: str) -> float:
    value = _float_of(arrays, name)
    if not math.isfinite(value):
        raise _bad(f"array {name!r} is {value}, expected a finite number")
    return value


def _sum_of(arrays: Mapping[str, NDArray[Any]], name: str) -> float:
    """A sum of non-negative terms: >= 0, infinite only where float64 overflowed."""
    value = _float_of(arrays, name)
    if not value >= 0:  # also refuses NaN
        raise _bad(f"array {name!r} is {value}, expected a sum >= 0")
    return value


def _moments_of(arrays: Mapping[str, NDArray[Any]], prefix: str) -> Moments:
    mean = _finite_of(arrays, f"{prefix}.mean")
    low = _finite_of(arrays, f"{prefix}.mean_low")
    m2 = _sum_of(arrays, f"{prefix}.m2")
    if math.isinf(m2) and (mean, low) != (0.0, 0.0):
        raise _bad(f"array {prefix!r}: an overflowed M2 keeps mean 0 (got {mean} + {low})")
    return OVERFLOWED if math.isinf(m2) else Moments(mean, low, m2)


def _errors_of(arrays: Mapping[str, NDArray[Any]], n_kept: int, weighted: bool) -> AbsoluteErrors:
    values = array_of(arrays, "errors.values", np.float64, 1)
    masses = array_of(arrays, "errors.masses", np.float64, 1, length=values.size)
    if values.size == 0 or values.size > n_kept:
        raise _bad(
            f"array 'errors.values' holds {values.size} distinct errors, expected 1 to the "
            f"{n_kept} rows of positive weight"
        )
    # Strictly ascending from >= 0 (NaN fails every comparison): infinity, where y - ŷ
    # overflowed, can only come last.
    if not (values[0] >= 0 and (values[1:] > values[:-1]).all()):
        raise _bad("array 'errors.values' is not a strictly ascending set of |errors| >= 0")
    check_masses("errors.masses", masses)
    if not (masses > 0).all():
        raise _bad("array 'errors.masses' holds a weight of 0 (weight-0 rows leave no trace)")
    if not weighted and not (masses == np.round(masses)).all():
        raise _bad("array 'errors.masses' holds a fraction, but no batch carried weights")
    return AbsoluteErrors(values, masses)


def _differs(arrays: Mapping[str, NDArray[Any]], state: RegressionState) -> bool:
    """Whether ``arrays`` hold other values than ``state`` (its row count aside)."""
    for name, value in state.to_arrays().items():
        got = arrays.get(name)
        if got is None and (name.startswith(("sample.", "pairs.")) or name in _JOINT):
            continue  # an earlier state had no sample, no joint statistics and no pairs
        if got is None or got.shape != value.shape or got.dtype != value.dtype:
            return True
        if name != "n_rows" and not np.array_equal(got, value):
            return True
    return False


def _from_arrays(
    arrays: Mapping[str, NDArray[Any]], options: Options, classes: tuple[str, ...] | None
) -> RegressionState:
    if classes is not None:
        raise _bad("a regression state has no class names")
    n_rows, n_kept = count_of(arrays, "n_rows"), count_of(arrays, "n_kept")
    if n_rows > _MAX_ROWS:
        raise _bad(f"array 'n_rows' is {n_rows}, more rows than float64 counts exactly (2^53)")
    if not 0 <= n_kept <= n_rows or n_rows == 0:
        raise _bad(f"{n_kept} rows of positive weight out of {n_rows}: expected 0 to {n_rows}")
    if n_kept == 0:  # rows of weight zero only
        weightless = RegressionStats.weightless(n_rows, weighted=True)
        if not flag_of(arrays, "weighted") or _differs(arrays, RegressionState(weightless)):
            raise _bad("holds values, but none of its rows has a weight above zero")
        return RegressionState(weightless)
    zero_row = int(array_of(arrays, "zero_label_row", np.int64, 0))
    if not -1 <= zero_row < n_rows:
        raise _bad(f"array 'zero_label_row' is {zero_row}, expected -1 or a row below {n_rows}")
    weighted = flag_of(arrays, "weighted")
    weight = _finite_of(arrays, "weight")
    if not weight > 0:
        raise _bad(f"array 'weight' is {weight}, expected a total weight > 0")
    sse, absolute, percentage, smape = (
        _sum_of(arrays, name) for name in ("sse", "absolute_sum", "percentage_sum", "smape_sum")
    )
    if smape > 2 * weight * (1 + _WEIGHT_AGREEMENT):
        raise _bad(f"array 'smape_sum' is {smape}, over 2 per unit of weight ({weight})")
    low, high = _finite_of(arrays, "label_min"), _finite_of(arrays, "label_max")
    if low > high:
        raise _bad(f"labels range from {low} to {high}: the minimum is above the maximum")
    if zero_row >= 0 and not low <= 0 <= high:
        raise _bad(f"a label 0 at row {zero_row}, but the labels range from {low} to {high}")
    joint, pairs, errors = None, None, None
    if "pairs.masses" in arrays:
        joint = _joint_of(arrays, n_rows, low, high)
        pairs = _pairs_of(arrays, n_kept, weighted, (low, high), joint)
        masses = pairs.masses
    else:  # written before the pairs and the joint statistics were kept
        errors = _errors_of(arrays, n_kept, weighted)
        masses = errors.masses
    total = float(np.sum(masses))
    if not weighted and (n_kept != n_rows or weight != n_kept or total != n_kept):
        raise _bad(
            f"unweighted counts do not add up: {n_rows} rows, {n_kept} kept, total weight "
            f"{weight}, {total} in the distinct errors"
        )
    if abs(total - weight) > _WEIGHT_AGREEMENT * weight:
        raise _bad(f"the errors' weights add up to {total}, the state's total weight is {weight}")
    stats = RegressionStats(
        n_rows=n_rows, n_kept=n_kept, weighted=weighted, weight=weight, sse=sse,
        absolute_sum=absolute, percentage_sum=percentage, smape_sum=smape, label_min=low,
        label_max=high, zero_label_row=zero_row, labels=_moments_of(arrays, "labels"),
        residuals=_moments_of(arrays, "residuals"), errors=errors,
        sample=_sample_of(arrays, n_kept, weighted, low, high, joint), joint=joint, pairs=pairs,
    )  # fmt: skip
    if joint is not None:
        _check_signed_sums(joint, absolute)
    return RegressionState(stats)


def _joint_of(
    arrays: Mapping[str, NDArray[Any]], n_rows: int, low: float, high: float
) -> JointStats:
    positive, negative, logs = (_sum_of(arrays, name) for name in _JOINT_SUMS)
    refused = int(array_of(arrays, "log_refused_row", np.int64, 0))
    if not -1 <= refused < n_rows:
        raise _bad(f"array 'log_refused_row' is {refused}, expected -1 or a row below {n_rows}")
    p_low, p_high = _finite_of(arrays, "prediction_min"), _finite_of(arrays, "prediction_max")
    if p_low > p_high:
        raise _bad(f"predictions range from {p_low} to {p_high}: the minimum is above the maximum")
    if refused >= 0 and not (low <= -1 or p_low <= -1):
        raise _bad(
            f"a label or prediction <= -1 at row {refused}, but the labels range from {low} "
            f"and the predictions from {p_low}"
        )
    cross = _float_of(arrays, "cross")
    if math.isnan(cross) or cross == -math.inf:
        raise _bad(f"array 'cross' is {cross}, expected a finite number (or inf: overflow)")
    return JointStats(
        positive_sum=positive, negative_sum=negative, log_sum=logs, log_refused_row=refused,
        prediction_min=p_low, prediction_max=p_high,
        predictions=_moments_of(arrays, "predictions"), cross=cross,
    )  # fmt: skip


def _check_signed_sums(joint: JointStats, absolute: float) -> None:
    """|r| = max(r, 0) + max(-r, 0) row by row: the two sums add up to the absolute one (up to
    the order of the additions) unless one overflowed."""
    both = joint.positive_sum + joint.negative_sum
    finite = math.isfinite(both) and math.isfinite(absolute)
    if finite and abs(both - absolute) > _WEIGHT_AGREEMENT * absolute:
        raise _bad(
            f"the sums of the positive and negative residuals add up to {both}, the sum of "
            f"the absolute residuals is {absolute}"
        )


def _pairs_of(
    arrays: Mapping[str, NDArray[Any]],
    n_kept: int,
    weighted: bool,
    labels_range: tuple[float, float],
    joint: JointStats,
) -> DistinctPairs:
    """The distinct pairs, checked: finite, strictly ascending, spanning exactly the labels'
    and the predictions' ranges, of positive weight (whole when no batch carried weights)."""
    labels = array_of(arrays, "pairs.labels", np.float64, 1)
    predictions, masses = (
        array_of(arrays, f"pairs.{name}", np.float64, 1, length=labels.size)
        for name in ("predictions", "masses")
    )
    if labels.size == 0 or labels.size > n_kept:
        raise _bad(
            f"array 'pairs.labels' holds {labels.size} distinct pairs, expected 1 to the "
            f"{n_kept} rows of positive weight"
        )
    if not (np.isfinite(labels).all() and np.isfinite(predictions).all()):
        raise _bad("the pairs hold a label or prediction that is not finite")
    pairs = DistinctPairs.of_arrays(labels, predictions, masses)
    if not pairs.is_ordered():
        raise _bad("the pairs are not strictly ascending in (label, prediction)")
    spans = (
        (float(labels[0]), float(labels[-1])),
        (
            float(predictions.min()),
            float(predictions.max()),
        ),
    )
    if spans != (labels_range, (joint.prediction_min, joint.prediction_max)):
        raise _bad("the pairs' labels or predictions do not span the state's ranges")
    check_masses("pairs.masses", masses)
    if not (masses > 0).all():
        raise _bad("array 'pairs.masses' holds a weight of 0 (weight-0 rows leave no trace)")
    if not weighted and not (masses == np.round(masses)).all():
        raise _bad("array 'pairs.masses' holds a fraction, but no batch carried weights")
    return pairs


def _sample_of(
    arrays: Mapping[str, NDArray[Any]],
    n_kept: int,
    weighted: bool,
    low: float,
    high: float,
    joint: JointStats | None,
) -> PairSample | None:
    """The sample, checked to be what the rows it holds make; None in a state of format
    version 1, which had none."""
    if "sample.keys" not in arrays:
        return None
    keys = array_of(arrays, "sample.keys", np.int64, 1)
    size = keys.size
    labels, predictions, weights = (
        array_of(arrays, f"sample.{name}", np.float64, 1, length=size)
        for name in ("labels", "predictions", "weights")
    )
    if size != min(SAMPLE_ROWS, n_kept):
        raise _bad(
            f"array 'sample.keys' holds {size} rows, expected {min(SAMPLE_ROWS, n_kept)} (the "
            f"{n_kept} rows of positive weight, at most {SAMPLE_ROWS})"
        )
    if not (np.isfinite(labels).all() and np.isfinite(predictions).all()):
        raise _bad("the sample holds a label or prediction that is not finite")
    if not ((labels >= low) & (labels <= high)).all():
        raise _bad(f"the sample holds a label outside the labels' range [{low}, {high}]")
    if joint is not None:
        p_low, p_high = joint.prediction_min, joint.prediction_max
        if not ((predictions >= p_low) & (predictions <= p_high)).all():
            raise _bad(
                f"the sample holds a prediction outside the predictions' range [{p_low}, {p_high}]"
            )
    check_masses("sample.weights", weights)
    if not (weights > 0).all() or (not weighted and not (weights == 1).all()):
        raise _bad("array 'sample.weights' holds a weight the rows cannot have")
    sample = PairSample(keys, labels, predictions, weights)
    if not np.array_equal(keys, row_keys(labels, predictions, weights)) or not sample.is_ordered():
        raise _bad("the sample's keys or order are not those of its rows")
    return sample


SIZE_DOC = (
    f"A fixed {FIXED_BYTES} bytes: counts, the sum of the weights, the sums of squared, "
    "absolute, percentage, symmetric percentage and squared log errors and of the positive and "
    "negative residuals (pinball_loss at every quantile level), the labels' and predictions' "
    "ranges, and the weighted mean and centred sum of squares of the labels, the predictions "
    "and the residuals with the cross moment of labels and predictions (merged by Chan, Golub "
    "& LeVeque's pairwise update). Then, for spearman_r's joint ranks and an exact max_error "
    f"and weighted median, each distinct pair (y, ŷ) with its weight ({PAIR_BYTES} bytes): "
    "continuous labels or predictions make nearly every row a distinct pair (24 bytes a row: "
    "48 MB for 2 million rows), while labels and predictions on grids hold at most the "
    "product of their distinct values whatever the number of rows. And a sample of at most "
    "1,000 rows (32 bytes each: a key, the label, the prediction and the weight) for the "
    "residual plots, the same rows however the data was split. Merged batches give what all "
    "the rows at once give: n_samples, max_error, the median and every reason exactly, "
    "spearman_r exactly for integer weights, the other metrics to 1e-12 relative (the sums "
    "are pairwise, a few eps times log2 of the rows apart), except where a metric is a "
    "difference of near-equal numbers: r2, adjusted_r2 and explained_variance near 0 agree to "
    "1e-12 of SSE/SST, aic, bic and mallows_cp near 0 to 1e-12 of their terms, the "
    "correlations to 1e-12. The rows that the reasons of mape and mean_squared_log_error name "
    "count the rows in the order they were added (a merged accumulator's after this one's). "
    "Between folds, batches' pairs wait unsorted (16 bytes a row, 24 with weights): while "
    "folds compact repeated pairs, until they outweigh the distinct pairs held (at least "
    "4,096); while the pairs are distinct, up to three times those held, or a million. A state "
    "written before the pairs were kept holds the distinct |y - ŷ| instead (16 bytes each) and "
    "leaves the metrics it lacks null with a reason."
)

REGRESSION_STATE = StateKind(of_batch=_of_batch, from_arrays=_from_arrays, size_doc=SIZE_DOC)
