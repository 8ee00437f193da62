"""Quantile, logarithmic and agreement metrics: pinball_loss_{q}, mean_squared_log_error,
pearson_r, spearman_r and concordance_correlation.

* ``pinball_loss_{q}`` (Koenker & Bassett 1978, the check function of quantile regression;
  scikit-learn's ``mean_pinball_loss(alpha=q)``): mean_w(q max(r, 0) + (1 - q) max(-r, 0)),
  r = y - ŷ, for each q of ``options.quantiles``. Read from the two sums of the positive and
  negative residuals, it is exact for every q, whatever the options a state was built with.
* ``mean_squared_log_error``: mean_w((ln(1 + y) - ln(1 + ŷ))²), scikit-learn's; where it
  raises (a label or prediction <= -1, scikit-learn 1.9's rule), None with the row.
* ``pearson_r``: C / sqrt(M2(y) M2(ŷ)), C the cross moment (``_moments.py``).
* ``spearman_r`` (Spearman 1904): Pearson's r of the ranks, ties at their average rank
  (scipy's ``spearmanr``), frequency weights: a row of weight w ranks as w copies of it.
* ``concordance_correlation`` (Lin 1989): 2 s_xy / (s_x² + s_y² + (x̄ - ȳ)²) with Lin's
  population moments (divided by n = W): 2C / (M2(y) + M2(ŷ) + W (mean_w(y - ŷ))²).

The three correlations are None with a reason for fewer than two rows of positive weight and
for constant labels or predictions (Pearson's and Spearman's r are 0/0 there; for one constant
column Lin's formula would give 0, and 0/0 for two: the column says nothing about agreement,
and the three stay alike).
"""

from __future__ import annotations

import math

import numpy as np

from evalserve.core._result import MetricSink
from evalserve.core.regression._moments import Moments, co_moment
from evalserve.core.regression._pairs import DistinctPairs
from evalserve.core.regression._pointwise import OVERFLOW, put, underflows
from evalserve.core.regression._stats import JointStats, RegressionStats

__all__ = [
    "CORRELATIONS",
    "OLDER_STATE",
    "correlations",
    "log_error",
    "pinball_losses",
    "pinball_name",
]

CORRELATIONS = ("pearson_r", "spearman_r", "concordance_correlation")
OLDER_STATE = (
    "the state was written by an earlier evalserve, which did not keep what this metric needs"
)
FEW_ROWS = "needs at least 2 rows of positive weight, got {n}"
CONSTANT = "{column} are constant (zero variance): the correlation is undefined"
UNDERFLOW = "the variance of the {column} underflows float64 (they differ by under 1e-154)"


def pinball_name(q: float) -> str:
    """pinball_loss_0.9 for q = 0.9: q as ``head_metric_names`` writes k (whole numbers as
    integers, others by their exact repr), so distinct q never share a name."""
    label = str(int(q)) if float(q).is_integer() and abs(q) < 1e15 else repr(float(q))
    return f"pinball_loss_{label}"


def pinball_losses(
    sink: MetricSink, joint: JointStats | None, weight: float, quantiles: tuple[float, ...]
) -> None:
    """pinball_loss_{q} = (q sum w max(r, 0) + (1 - q) sum w max(-r, 0)) / W per q."""
    for q in quantiles:
        name = pinball_name(q)
        if joint is None:
            sink.undefine(name, OLDER_STATE)
        else:
            put(sink, name, (q * joint.positive_sum + (1 - q) * joint.negative_sum) / weight)


def log_error(sink: MetricSink, joint: JointStats | None, weight: float) -> None:
    """mean_squared_log_error = sum w (ln(1 + y) - ln(1 + ŷ))² / W."""
    name = "mean_squared_log_error"
    if joint is None:
        sink.undefine(name, OLDER_STATE)
    elif joint.log_refused_row >= 0:
        sink.undefine(
            name,
            f"a label or prediction is <= -1 at row {joint.log_refused_row}: ln(1 + x) is "
            "undefined there (scikit-learn raises)",
        )
    else:
        put(sink, name, joint.log_sum / weight)


def correlations(sink: MetricSink, stats: RegressionStats) -> None:
    """pearson_r, spearman_r and concordance_correlation, or each None with its reason."""
    joint = stats.joint
    if joint is None:
        for name in CORRELATIONS:
            sink.undefine(name, OLDER_STATE)
        return
    reason = _undefined(stats, joint)
    if reason is not None:
        for name in CORRELATIONS:
            sink.undefine(name, reason)
        return
    m2_y, m2_y_hat, cross = stats.labels.m2, joint.predictions.m2, joint.cross
    sink.set("pearson_r", _bounded(cross / math.sqrt(m2_y) / math.sqrt(m2_y_hat)))
    if stats.pairs is None:
        sink.undefine("spearman_r", OLDER_STATE)
    else:
        sink.set("spearman_r", rank_correlation(stats.pairs))
    difference = stats.residuals.mean_value  # mean_w(y - ŷ), more accurate than ȳ - ŷ̄
    spread = m2_y + m2_y_hat + stats.weight * difference * difference
    put(sink, "concordance_correlation", _bounded(2 * cross / spread))


def _undefined(stats: RegressionStats, joint: JointStats) -> str | None:
    """Why the correlations are undefined, or None."""
    if stats.n_kept < 2:
        return FEW_ROWS.format(n=stats.n_kept)
    columns = (
        ("labels", stats.label_min, stats.label_max, stats.labels.m2),
        ("predictions", joint.prediction_min, joint.prediction_max, joint.predictions.m2),
    )
    for column, low, high, _ in columns:
        # Equal values are found by comparing them, as r2 does: their M2 may round to 1e-33.
        if low == high:
            return CONSTANT.format(column=column.capitalize())
    for column, _, _, m2 in columns:
        if underflows(m2):
            return UNDERFLOW.format(column=column)
    if math.isinf(stats.labels.m2) or math.isinf(joint.predictions.m2):
        return OVERFLOW
    if math.isinf(joint.cross) or math.isinf(stats.residuals.m2):
        return OVERFLOW
    return None


def _bounded(value: float) -> float:
    """A correlation in [-1, 1] (rounding may carry it a few eps past an end)."""
    return min(1.0, max(-1.0, value))


def rank_correlation(pairs: DistinctPairs) -> float:
    """Spearman's rho of the distinct pairs under their weights: the weighted Pearson r of the
    two columns' average ranks (``DistinctPairs.ranks``). Call with both columns not
    constant."""
    label_ranks, prediction_ranks = pairs.ranks()
    masses = pairs.masses
    total = float(np.sum(masses))
    shares = masses / total
    x = Moments.of(label_ranks, masses, total, shares)
    y = Moments.of(prediction_ranks, masses, total, shares)
    cross = co_moment(label_ranks, prediction_ranks, x, y, masses)
    return _bounded(cross / math.sqrt(x.m2) / math.sqrt(y.m2))
