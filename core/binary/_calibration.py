"""Probability metrics: log loss, Brier score, expected calibration error (lower is better).

They need scores that are probabilities. The core never guesses (no sigmoid on scores outside
[0, 1], unlike torchmetrics): outside [0, 1] the three are undefined, with a reason.
"""

from __future__ import annotations

import numpy as np

from evalserve.core._result import MetricSink
from evalserve.core.binary._ranked import Hits, Ranked

__all__ = ["calibration_metrics"]

NOT_PROBABILITIES = "scores are not probabilities (some lie outside [0, 1])"
# As scikit-learn's log_loss: probabilities are clipped to [eps, 1 - eps], eps of float64.
EPS = float(np.finfo(np.float64).eps)


def calibration_metrics(sink: MetricSink, ranked: Ranked, hit: Hits, *, bins: int) -> None:
    scores = ranked.thresholds  # descending
    if scores[-1] < 0 or scores[0] > 1:
        for name in ("log_loss", "brier_score", "expected_calibration_error"):
            sink.undefine(name, NOT_PROBABILITIES)
        return
    total = ranked.positives + ranked.negatives
    # Positives only sit at the hits; negatives are almost everywhere, so their part works in
    # one scratch buffer.
    pos_loss = float(np.dot(hit.pos, np.log(np.clip(hit.thresholds, EPS, 1 - EPS))))
    scratch = np.clip(scores, EPS, 1 - EPS)
    np.negative(scratch, out=scratch)
    np.log1p(scratch, out=scratch)
    sink.set("log_loss", -(pos_loss + float(np.dot(ranked.neg, scratch))) / total)
    np.multiply(scores, scores, out=scratch)
    brier = float(np.dot(ranked.neg, scratch)) + float(np.dot(hit.pos, (1 - hit.thresholds) ** 2))
    sink.set("brier_score", brier / total)
    sink.set("expected_calibration_error", _ece(ranked, bins) / total)


def _ece(ranked: Ranked, bins: int) -> float:
    """sum over bins of |observed positives - sum of scores|; bin i holds [i/B, (i+1)/B), the
    last bin also 1.0. Scores are sorted, so each bin is a run of the descending sweep."""
    edges = np.arange(bins + 1) / bins
    # Thresholds at or above each edge, top edge first: a prefix of the descending sweep.
    prefix = ranked.size - np.searchsorted(ranked.ascending, edges[::-1], side="left")
    prefix[0] = 0  # nothing lies above the last bin: 1.0 belongs to it
    prefix[-1] = ranked.size  # every score is >= 0
    gap = 0.0
    for start, stop in zip(prefix[:-1].tolist(), prefix[1:].tolist(), strict=True):
        if stop == start:
            continue
        scores = ranked.thresholds[start:stop]
        expected = float(np.dot(ranked.pos[start:stop], scores))
        expected += float(np.dot(ranked.neg[start:stop], scores))
        observed = float(ranked.tps[stop - 1]) - (float(ranked.tps[start - 1]) if start else 0.0)
        gap += abs(observed - expected)
    return gap
