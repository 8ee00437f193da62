"""Thinning curves for transport: fewer points, same shape, metrics untouched.

Metrics are always computed on the exact curve; only the arrays sent back are thinned.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from evalserve.core._search import bisect_left

__all__ = ["sample_along"]

Floats = NDArray[np.float64]
Indices = NDArray[np.intp]


def sample_along(arc_at: Callable[[Indices], Floats], size: int, max_points: int) -> Indices:
    """Indices of at most ``max_points`` of ``size`` points, evenly spaced along a strictly
    increasing arc length ``arc_at(index)``, first and last included (only the last when there
    is room for one).

    For a threshold sweep the arc is TPR + FPR (the L1 length of the ROC curve), so steep and
    flat stretches of a curve are sampled alike, and the ROC and PR curves share thresholds.
    """
    if size <= max_points:
        return np.arange(size)
    if max_points == 1:
        return np.array([size - 1], dtype=np.intp)
    ends = arc_at(np.array([0, size - 1], dtype=np.intp))
    marks = np.linspace(ends[0], ends[1], max_points)
    return np.unique(bisect_left(arc_at, size, marks))
