"""The statistic seen from the top score down: the cumulative counts every curve is made of."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from evalserve.core.binary._stats import BinaryStats

__all__ = ["Hits", "Ranked", "hits", "rank"]

Floats = NDArray[np.float64]
Indices = NDArray[np.intp]


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

    def count_at_or_above(self, threshold: float) -> int:
        """How many distinct thresholds are ``>= threshold``."""
        return self.size - int(np.searchsorted(self.ascending, threshold, side="left"))

    def counts_at(self, threshold: float) -> tuple[float, float]:
        """(true positives, false positives) when ``score >= threshold`` is called positive."""
        n_at_or_above = self.count_at_or_above(threshold)
        if n_at_or_above == 0:
            return 0.0, 0.0
        return float(self.tps[n_at_or_above - 1]), float(self.fps[n_at_or_above - 1])


@dataclass(frozen=True, slots=True, eq=False)
class Hits:
    """The thresholds that add positives: the only places where recall grows and where
    precision, F1 and Youden's J can reach a new maximum. Much fewer than all thresholds when
    positives are rare."""

    index: Indices
    thresholds: Floats
    pos: Floats
    neg: Floats
    tps: Floats
    fps: Floats


def rank(stats: BinaryStats) -> Ranked:
    pos = np.ascontiguousarray(stats.pos[::-1])
    neg = np.ascontiguousarray(stats.neg[::-1])
    tps, fps = np.cumsum(pos), np.cumsum(neg)
    return Ranked(
        thresholds=stats.scores[::-1],
        pos=pos,
        neg=neg,
        tps=tps,
        fps=fps,
        ascending=stats.scores,
    )


def hits(ranked: Ranked) -> Hits:
    index = np.flatnonzero(ranked.pos)
    return Hits(
        index=index,
        thresholds=ranked.thresholds[index],
        pos=ranked.pos[index],
        neg=ranked.neg[index],
        tps=ranked.tps[index],
        fps=ranked.fps[index],
    )
