"""Probability metrics: log loss, Brier score, expected calibration error (lower is better).

They need scores that are probabilities. The core never guesses (no sigmoid on scores outside
[0, 1], unlike torchmetrics): outside [0, 1] the three are undefined, with a reason.
"""

from __future__ import annotations

import numpy as np

from core._result import MetricSink
from core.binary._stats import BinaryStats

__all__ = ["calibration_metrics"]

NOT_PROBABILITIES = "scores are not probabilities (some lie outside [0, 1])"
# As scikit-learn's log_loss: probabilities are clipped to [eps, 1 - eps], eps of float64.
EPS = float(np.finfo(np.float64).eps)


def calibration_metrics(sink: MetricSink, stats: BinaryStats, *, bins: int) -> None:
    scores = stats.scores
    if scores.size == 0:
        return
    if scores[0] < 0 or scores[-1] > 1:
        for name in ("log_loss", "brier_score", "expected_calibration_error"):
            sink.undefine(name, NOT_PROBABILITIES)
        return
    total = stats.positive_total + stats.negative_total
    clipped = np.clip(scores, EPS, 1 - EPS)
    loss = float(np.dot(stats.pos, -np.log(clipped))) + float(
        np.dot(stats.neg, -np.log1p(-clipped))
    )
    sink.set("log_loss", loss / total)
    brier = float(np.dot(stats.pos, (1 - scores) ** 2)) + float(np.dot(stats.neg, scores**2))
    sink.set("brier_score", brier / total)
    # ECE: equal-width bins on [0, 1] (1.0 falls in the last bin);
    # sum over bins of |observed positives - sum of scores| / total weight.
    index = np.minimum((scores * bins).astype(np.int64), bins - 1)
    observed = np.bincount(index, weights=stats.pos, minlength=bins)
    expected = np.bincount(index, weights=scores * (stats.pos + stats.neg), minlength=bins)
    sink.set("expected_calibration_error", float(np.abs(observed - expected).sum()) / total)
