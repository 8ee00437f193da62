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
from evalserve.core.regression._absolute import AbsoluteErrors
from evalserve.core.regression._moments import OVERFLOWED, Moments
from evalserve.core.regression._rows import regression_predictions, regression_rows
from evalserve.core.regression._sample import SAMPLE_ROWS, PairSample, row_keys
from evalserve.core.regression._stats import RegressionStats
from evalserve.core.regression._suite import regression_output

__all__ = ["REGRESSION_STATE", "RegressionState"]

# The scalars of ``to_arrays``: three counts, a flag and thirteen floats, 8 bytes each as the
# byte format pads them.
_COUNTS = ("n_rows", "n_kept", "zero_label_row")
_SUMS = ("weight", "sse", "absolute_sum", "percentage_sum", "smape_sum")
_MOMENTS = ("labels", "residuals")
_SAMPLE = ("keys", "labels", "predictions", "weights")
FIXED_BYTES = 8 * (len(_COUNTS) + 1 + len(_SUMS) + 2 + 3 * len(_MOMENTS))
ENTRY_BYTES = 16  # a distinct |y - ŷ| and its weight
# Counts beyond 2^53 are no longer exact as float64 sums of unit weights.
_MAX_ROWS = 2**53
# Weights summed in another order (per distinct |error|, or all at once) agree far closer.
_WEIGHT_AGREEMENT = 1e-6


# Batches' absolute errors wait as they came until they outnumber three times the distinct
# errors held, and at least this many: then one sort folds them all in.
MIN_PENDING = 1 << 20


@dataclass(frozen=True, slots=True, eq=False)
class RawErrors:
    """A batch's absolute errors (of its rows of positive weight) and their weights (None:
    ones), unsorted: sorted with the other waiting batches' in one sort."""

    absolute: NDArray[np.float64]
    weights: NDArray[np.float64] | None

    @property
    def entries(self) -> int:
        return int(self.absolute.size)

    def sample(self, limit: int) -> NDArray[np.float64]:
        return self.absolute[:limit]

    @property
    def nbytes(self) -> int:
        return self.absolute.nbytes + (0 if self.weights is None else self.weights.nbytes)


@dataclass(frozen=True, slots=True, eq=False)
class RegressionState:
    """The statistic of the rows added so far: fixed sums and moments, and the distinct
    absolute errors with their weight; the latest batches' errors may still wait in ``raw``
    (their sums are in ``stats`` already)."""

    stats: RegressionStats
    raw: Waiting[RawErrors] = field(default_factory=Waiting)

    @property
    def n_rows(self) -> int:
        return self.stats.n_rows

    @property
    def size(self) -> int:
        return self.stats.errors.size + self.raw.entries

    @property
    def nbytes(self) -> int:
        sample = self.stats.sample
        return (
            FIXED_BYTES
            + ENTRY_BYTES * self.stats.errors.size
            + (0 if sample is None else sample.nbytes)
            + self.raw.nbytes
        )

    @property
    def weightless(self) -> bool:
        return self.stats.n_kept == 0

    def compact(self) -> RegressionState:
        if not self.raw.parts:
            return self
        parts = self.raw.parts
        absolute = np.concatenate([part.absolute for part in parts])
        weights = joined_weights([(part.absolute.size, part.weights) for part in parts])
        errors = self.stats.errors.merge(AbsoluteErrors.of_rows(absolute, weights))
        raw = self.raw.emptied(self.stats.errors.size, errors.size)
        return RegressionState(replace(self.stats, errors=errors), raw)

    def check_merge(self, other: RegressionState) -> None:
        pass  # any two states merge

    def merge(self, other: RegressionState) -> RegressionState:
        merged = RegressionState(self.stats.merge(other.stats), self.raw.joined(other.raw))
        if merged.raw.due(merged.stats.errors.size, MIN_PENDING):
            return merged.compact()
        return merged

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
        arrays["errors.values"] = stats.errors.values
        arrays["errors.masses"] = stats.errors.masses
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
    stats = RegressionStats.of_rows(rows, errors=False)
    if stats.n_kept == 0:
        return RegressionState(stats)
    with np.errstate(over="ignore", invalid="ignore"):
        absolute = np.abs(rows.labels - rows.predictions)
    weights = rows.weights.copy() if rows.weighted else None
    return RegressionState(stats, Waiting.of(RawErrors(absolute, weights)))


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
        if got is None and name.startswith("sample."):
            continue  # format version 1 had no sample
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
    errors = _errors_of(arrays, n_kept, weighted)
    total = float(np.sum(errors.masses))
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
        sample=_sample_of(arrays, n_kept, weighted, low, high),
    )  # fmt: skip
    return RegressionState(stats)


def _sample_of(
    arrays: Mapping[str, NDArray[Any]], n_kept: int, weighted: bool, low: float, high: float
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
    check_masses("sample.weights", weights)
    if not (weights > 0).all() or (not weighted and not (weights == 1).all()):
        raise _bad("array 'sample.weights' holds a weight the rows cannot have")
    sample = PairSample(keys, labels, predictions, weights)
    if not np.array_equal(keys, row_keys(labels, predictions, weights)) or not sample.is_ordered():
        raise _bad("the sample's keys or order are not those of its rows")
    return sample


SIZE_DOC = (
    f"A fixed {FIXED_BYTES} bytes: counts, the sum of the weights, the sums of squared, "
    "absolute, percentage and symmetric percentage errors, the labels' range, and the weighted "
    "mean and centred sum of squares of the labels and of the residuals (merged by Chan, "
    "Golub & LeVeque's pairwise update). Then, for an exact max_error and weighted median, "
    f"each distinct absolute error |y - ŷ| with its weight ({ENTRY_BYTES} bytes): continuous "
    "predictions make nearly every row a distinct error (16 bytes a row), while errors on a "
    "grid of 0.001 up to 1,000 hold at most 1,000,001 entries (16 MB) whatever the number of "
    "rows. And a sample of at most 1,000 rows (32 bytes each: a key, the label, the "
    "prediction and the weight) for the residual plots, the same rows however the data was "
    "split. Merged batches give what all the rows at once give: n_samples, max_error, the "
    "median and every reason exactly, the other metrics to 1e-12 relative (the sums are "
    "pairwise, a few eps times log2 of the rows apart), except where a metric is a difference "
    "of near-equal numbers: r2, adjusted_r2 and explained_variance near 0 agree to 1e-12 of "
    "SSE/SST, aic, bic and mallows_cp near 0 to 1e-12 of their terms. The row that mape's "
    "reason names counts the rows in the order they were added (a merged accumulator's after "
    "this one's). Between folds, batches' absolute errors wait unsorted (8 bytes a row, 16 "
    "with weights): while folds compact repeated errors, until they outweigh the distinct "
    "errors held (at least 4,096); while the errors are distinct, up to three times those "
    "held, or a million."
)

REGRESSION_STATE = StateKind(of_batch=_of_batch, from_arrays=_from_arrays, size_doc=SIZE_DOC)
