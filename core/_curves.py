"""Thinning curves for transport: fewer points, same shape, metrics untouched.

Metrics are always computed on the exact curve; only the arrays sent back are thinned.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["sample_along"]

Floats = NDArray[np.float64]
Indices = NDArray[np.intp]


def sample_along(arc: Floats, max_points: int) -> Indices:
    """Indices of at most ``max_points`` points, evenly spaced along a strictly increasing
    arc length, first and last included (only the last when there is room for one).

    For a threshold sweep the arc is TPR + FPR (the L1 length of the ROC curve), so steep and
    flat stretches of a curve are sampled alike, and the ROC and PR curves share thresholds.
    """
    if arc.size <= max_points:
        return np.arange(arc.size)
    if max_points == 1:
        return np.array([arc.size - 1], dtype=np.intp)
    marks = np.linspace(arc[0], arc[-1], max_points)
    return np.unique(np.searchsorted(arc, marks, side="left"))
