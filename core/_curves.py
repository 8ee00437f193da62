"""Thinning curves for transport: fewer points, same shape, metrics untouched.

Metrics are always computed on the exact curve; only the arrays sent back are thinned.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["thin"]

Floats = NDArray[np.float64]
Indices = NDArray[np.intp]


def thin(x: Floats, y: Floats, max_points: int) -> Indices:
    """Indices of at most ``max_points`` points of the polyline (x, y), endpoints included.

    First the points inside straight runs of equal steps are dropped (they change nothing, as
    scikit-learn's ``drop_intermediate``); if still too many remain, points are taken at equal
    steps of the L1 arc length, so steep and flat parts are sampled alike.
    """
    n = x.size
    if n <= max_points:
        return np.arange(n)
    keep = np.ones(n, dtype=np.bool_)
    keep[1:-1] = (np.diff(x, 2) != 0) | (np.diff(y, 2) != 0)
    index = np.flatnonzero(keep)
    if index.size <= max_points:
        return index
    arc = np.concatenate(([0.0], np.cumsum(np.abs(np.diff(x[index])) + np.abs(np.diff(y[index])))))
    marks = np.linspace(0.0, arc[-1], max_points)
    picked = np.unique(np.searchsorted(arc, marks, side="left").clip(0, index.size - 1))
    picked[0], picked[-1] = 0, index.size - 1
    return np.asarray(index[np.unique(picked)], dtype=np.intp)
