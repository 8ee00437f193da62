"""The statistic seen from the top score down: the cumulative counts every curve is made of."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from core.binary._stats import BinaryStats

__all__ = ["Ranked", "rank"]

Floats = NDArray[np.float64]


@dataclass(frozen=True, slots=True, eq=False)
class Ranked:
    """Distinct thresholds in descending order with the positive/negative mass at each, and the
    cumulative masses ``tps``/``fps`` of the rows scoring ``>=`` each threshold."""

    thresholds: Floats
    pos: Floats
    neg: Floats
    tps: Floats
    fps: Floats
    ascending: Floats

    @property
    def size(self) -> int:
        return int(self.thresholds.size)

    @property
    def positives(self) -> float:
        return float(self.tps[-1]) if self.size else 0.0

    @property
    def negatives(self) -> float:
        return float(self.fps[-1]) if self.size else 0.0

    def counts_at(self, threshold: float) -> tuple[float, float]:
        """(true positives, false positives) when ``score >= threshold`` is called positive."""
        n_at_or_above = self.size - int(np.searchsorted(self.ascending, threshold, side="left"))
        if n_at_or_above == 0:
            return 0.0, 0.0
        return float(self.tps[n_at_or_above - 1]), float(self.fps[n_at_or_above - 1])


def rank(stats: BinaryStats) -> Ranked:
    pos = np.ascontiguousarray(stats.pos[::-1])
    neg = np.ascontiguousarray(stats.neg[::-1])
    return Ranked(
        thresholds=stats.scores[::-1],
        pos=pos,
        neg=neg,
        tps=np.cumsum(pos),
        fps=np.cumsum(neg),
        ascending=stats.scores,
    )
