"""The regression error characteristic (REC) curve (Bi & Bennett 2003): for each absolute
error e, the share of the rows (by weight) whose |y - ŷ| is at most e. It is the cumulative
distribution of the absolute errors that the state already holds exactly, so it merges as the
state does; the area over it is the mean absolute error."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from evalserve.core._curves import sample_along
from evalserve.core.regression._absolute import AbsoluteErrors

__all__ = ["rec_curve"]

Floats = NDArray[np.float64]


def rec_curve(errors: AbsoluteErrors, max_points: int) -> dict[str, Floats]:
    """``absolute_error`` (ascending; infinite where y - ŷ overflowed) and ``share`` (at most
    that error, in (0, 1], the last exactly 1), thinned to ``max_points`` evenly spaced in
    share, the largest error kept."""
    cumulative = np.cumsum(errors.masses)
    share = cumulative / cumulative[-1]
    kept = sample_along(lambda index: share[index], errors.size, max_points)
    return {"absolute_error": errors.values[kept], "share": share[kept]}
