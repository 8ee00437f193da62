"""A sample of the rows that merges exactly: the residual and predicted-against-actual plots.

The state keeps the distribution of |y - ŷ| exactly, but not the signed residuals nor the pairs
(y, ŷ), which would take a row each. The sample keeps at most ``SAMPLE_ROWS`` rows of positive
weight: those whose 64-bit key, a hash of the row's bits (y, ŷ, w), is smallest (a bottom-k
sample, Cohen & Kaplan 2007), ties broken by the values. Which rows it keeps depends on the
rows only, not on how they were split into batches or in which order states were merged: the
sample of merged states is the sample of all their rows, exactly. The keys look random, so the
kept rows are a uniform sample of the rows (not weighted: a row's weight travels with it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["SAMPLE_ROWS", "PairSample", "row_keys"]

Floats = NDArray[np.float64]
Keys = NDArray[np.int64]

SAMPLE_ROWS = 1000
ENTRY_BYTES = 32  # a key, a label, a prediction and a weight
BLOCK = 1 << 20  # rows hashed at once: the temporaries stay a few MB whatever the batch


@dataclass(frozen=True, slots=True, eq=False)
class PairSample:
    """Rows in ascending (key, label, prediction, weight) order, at most ``SAMPLE_ROWS``."""

    keys: Keys
    labels: Floats
    predictions: Floats
    weights: Floats

    @classmethod
    def empty(cls) -> PairSample:
        return cls(np.empty(0, np.int64), np.empty(0), np.empty(0), np.empty(0))

    @classmethod
    def of_rows(cls, labels: Floats, predictions: Floats, weights: Floats | None) -> PairSample:
        """The sample of rows of positive weight (``weights`` None: ones)."""
        sample = cls.empty()
        for start in range(0, labels.size, BLOCK):
            part = slice(start, start + BLOCK)
            mass = None if weights is None else weights[part]
            keys = row_keys(labels[part], predictions[part], mass)
            # Only the block's rows up to its SAMPLE_ROWS-th smallest key can be kept.
            if keys.size > SAMPLE_ROWS:
                bound = np.partition(keys, SAMPLE_ROWS - 1)[SAMPLE_ROWS - 1]
                rows = np.flatnonzero(keys <= bound)
            else:
                rows = np.arange(keys.size)
            kept = np.ones(rows.size) if mass is None else mass[rows]
            block = cls(keys[rows], labels[part][rows], predictions[part][rows], kept)
            sample = sample.merge(block)
        return sample

    @property
    def size(self) -> int:
        return int(self.keys.size)

    @property
    def nbytes(self) -> int:
        return ENTRY_BYTES * self.size

    def merge(self, other: PairSample) -> PairSample:
        """The sample of both row sets."""
        keys = np.concatenate([self.keys, other.keys])
        labels = np.concatenate([self.labels, other.labels])
        predictions = np.concatenate([self.predictions, other.predictions])
        weights = np.concatenate([self.weights, other.weights])
        if keys.size > SAMPLE_ROWS:
            # Only rows up to the SAMPLE_ROWS-th smallest key can be kept.
            bound = np.partition(keys, SAMPLE_ROWS - 1)[SAMPLE_ROWS - 1]
            within = keys <= bound
            keys, labels = keys[within], labels[within]
            predictions, weights = predictions[within], weights[within]
        order = np.lexsort((weights, predictions, labels, keys))[:SAMPLE_ROWS]
        return PairSample(keys[order], labels[order], predictions[order], weights[order])

    def is_ordered(self) -> bool:
        """Whether the rows are in the order ``merge`` leaves them in."""
        order = np.lexsort((self.weights, self.predictions, self.labels, self.keys))
        return bool(np.array_equal(order, np.arange(self.size)))


def row_keys(labels: Floats, predictions: Floats, weights: Floats | None) -> Keys:
    """Each row's key: the splitmix64 finaliser (Steele, Lea & Flood 2014) chained over the
    bits of its weight, label and prediction, as a signed 64-bit integer. ``weights`` None:
    ones, which give the keys of weight 1.0."""
    if weights is None:
        key = np.full(labels.size, _mix_scalar(_bits(1.0)), dtype=np.uint64)
    else:
        key = np.ascontiguousarray(weights, dtype=np.float64).view(np.uint64).copy()
        _mix(key)
    for column in (labels, predictions):
        key ^= np.ascontiguousarray(column, dtype=np.float64).view(np.uint64)
        _mix(key)
    return key.view(np.int64)


_GAMMA, _M1, _M2 = (
    np.uint64(c) for c in (0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB)
)


def _mix(x: NDArray[np.uint64]) -> None:
    """splitmix64's finaliser, in place (uint64 arithmetic wraps around)."""
    shifted = np.empty_like(x)
    x += _GAMMA
    for shift, factor in ((30, _M1), (27, _M2)):
        np.right_shift(x, np.uint64(shift), out=shifted)
        x ^= shifted
        x *= factor
    np.right_shift(x, np.uint64(31), out=shifted)
    x ^= shifted


def _mix_scalar(value: int) -> int:
    x = np.array([value], dtype=np.uint64)
    _mix(x)
    return int(x[0])


def _bits(value: float) -> int:
    return int(np.array([value], dtype=np.float64).view(np.uint64)[0])
