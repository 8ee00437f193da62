"""AUC drift against a baseline (unpaired) and champion vs challenger (paired): DeLong tests.

Drift: the baseline is a reference payload (labels and scores: its AUC and DeLong variance are
computed here), or a summary: its AUC with its variance, or with its class counts (then the
variance is Hanley & McNeil's 1982 formula). The statistic is (AUC - AUC_baseline) / sqrt(V +
V_baseline). Against a payload the p-value is pROC's unpaired ``roc.test``: Student's t with
Welch-Satterthwaite degrees of freedom; against a summary, where no such degrees exist, the
normal distribution.

Challenger: a second model's scores on the same rows. The DeLong covariance of the two AUCs
comes from the rows' placement values under each model; z = (AUC_challenger - AUC) /
sqrt(V + V_challenger - 2 Cov), normal p-value (pROC's ``roc.test(paired = TRUE)``).

Below ``drift_min_samples`` positives or negatives the result has ``status`` "insufficient_data"
and no verdict (``significant`` None): a test on a handful of rows only raises false alarms.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalserve.core._distributions import normal_two_sided_p, t_two_sided_p
from evalserve.core._errors import InvalidInputError
from evalserve.core._inner import inner
from evalserve.core._options import Options
from evalserve.core._result_parts import Comparison, DriftTest
from evalserve.core._validation import BinaryInputs, binary_inputs, finite_floats, same_length
from evalserve.core.binary._delong import Placements, placements
from evalserve.core.binary._sweep import sweep_of_rows

__all__ = [
    "BASELINE_FIELDS",
    "BaselineEstimate",
    "baseline_estimate",
    "comparison_test",
    "drift_against",
    "drift_test",
    "too_few",
]

Floats = NDArray[np.float64]

PAYLOAD_FIELDS = ("labels", "scores", "weights")
SUMMARY_FIELDS = ("roc_auc", "roc_auc_variance", "n_positive", "n_negative")
BASELINE_FIELDS = PAYLOAD_FIELDS + SUMMARY_FIELDS
# A paired variance below this share of V1 + V2 is rounding left by the subtraction.
CANCELLATION = 1e-12


@dataclass(frozen=True, slots=True)
class BaselineEstimate:
    """The baseline's AUC and the variance of its estimate (0: known exactly), how they were
    had (``method``), why the baseline is too small for a verdict (``short``, "" when it is
    not), and a payload baseline's rows (positives + negatives, for the t test's degrees of
    freedom; None for a summary)."""

    auc: float
    variance: float
    method: str
    short: str = ""
    rows: float | None = None


def drift_test(
    current: Placements | None, baseline: Mapping[str, Any], options: Options
) -> DriftTest:
    """The drift entry for ``roc_auc``; ``current`` is None when the current AUC is undefined."""
    return drift_against(current, baseline_estimate(baseline, options), options)


def baseline_estimate(baseline: Mapping[str, Any], options: Options) -> BaselineEstimate:
    """The baseline's AUC and variance, from a payload (DeLong) or a summary; refuses a
    baseline that names unknown fields or mixes the two."""
    if not isinstance(baseline, Mapping):
        raise InvalidInputError("baseline", f"expected an object, but got {baseline!r}")
    unknown = sorted(set(baseline) - set(BASELINE_FIELDS))
    if unknown:
        raise InvalidInputError(
            f"baseline.{unknown[0]}", f"unknown field; expected one of {list(BASELINE_FIELDS)}"
        )
    given = {name for name, value in baseline.items() if value is not None}
    if given & set(PAYLOAD_FIELDS):
        if given & set(SUMMARY_FIELDS):
            raise InvalidInputError(
                "baseline", "send either a payload (labels, scores) or a summary (roc_auc ...)"
            )
        return _from_payload(baseline, options)
    return _from_summary(baseline, options)


def drift_against(
    current: Placements | None, estimate: BaselineEstimate, options: Options
) -> DriftTest:
    """The drift test of the current AUC against the baseline's estimate."""
    short = too_few(current, options) or estimate.short
    if current is None or short:
        return _drift(estimate.auc, estimate.method, _insufficient(short or ""))
    v_current, v_reference = current.variance, estimate.variance
    total = v_current + v_reference
    df = math.inf
    if estimate.rows is not None:
        # pROC's unpaired roc.test: Welch-Satterthwaite degrees of freedom with one term per
        # curve, each with that curve's total rows (in units of weight) minus one.
        denominator = v_current**2 / (current.positives + current.negatives - 1.0) + (
            v_reference**2 / (estimate.rows - 1.0)
        )
        df = total * total / denominator if denominator > 0 else math.inf
    verdict = _verdict(current.auc - estimate.auc, total, options, df=df)
    return _drift(estimate.auc, estimate.method, verdict)


def _from_payload(baseline: Mapping[str, Any], options: Options) -> BaselineEstimate:
    rows = binary_inputs(
        baseline.get("labels"), baseline.get("scores"), None, baseline.get("weights"),
        prefix="baseline.", positive_label=options.positive_label,
    )  # fmt: skip
    reference_sweep = sweep_of_rows(rows.labels, rows.scores, rows.weights)
    if reference_sweep.n_positive == 0 or reference_sweep.n_negative == 0:
        raise InvalidInputError(
            "baseline.labels", "the baseline needs both classes to have an AUC, but has one"
        )
    reference = placements(reference_sweep)
    return BaselineEstimate(
        reference.auc,
        reference.variance,
        "delong-unpaired",
        too_few(reference, options, "the baseline"),
        reference.positives + reference.negatives,
    )


def _from_summary(baseline: Mapping[str, Any], options: Options) -> BaselineEstimate:
    auc = _summary_number(baseline, "roc_auc", low=0.0, high=1.0)
    if auc is None:
        raise InvalidInputError(
            "baseline.roc_auc", "is required (or send a payload: labels and scores)"
        )
    variance = _summary_number(baseline, "roc_auc_variance", low=0.0, high=0.25)
    n_positive = _summary_number(baseline, "n_positive", low=1.0, high=1e15)
    n_negative = _summary_number(baseline, "n_negative", low=1.0, high=1e15)
    if variance is not None:
        if n_positive is not None or n_negative is not None:
            raise InvalidInputError(
                "baseline", "send roc_auc_variance or n_positive and n_negative, not both"
            )
        return BaselineEstimate(auc, variance, "delong-unpaired-summary")
    if n_positive is None or n_negative is None:
        raise InvalidInputError(
            "baseline", "with roc_auc, send roc_auc_variance or both n_positive and n_negative"
        )
    least = options.drift_min_samples
    short = ""
    if min(n_positive, n_negative) < least:
        short = (
            f"the baseline has {n_positive:g} positives and {n_negative:g} negatives;"
            f" a verdict needs at least {least:g} of each (option drift_min_samples)"
        )
    variance = _hanley_mcneil(auc, n_positive, n_negative)
    return BaselineEstimate(auc, variance, "delong-unpaired-hanley-mcneil", short)


def _summary_number(
    baseline: Mapping[str, Any], name: str, *, low: float, high: float
) -> float | None:
    value = baseline.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidInputError(f"baseline.{name}", f"expected a finite number, but got {value!r}")
    if not low <= value <= high:
        raise InvalidInputError(
            f"baseline.{name}", f"expected a number in [{low:g}, {high:g}], but got {value}"
        )
    return float(value)


def _hanley_mcneil(auc: float, n_positive: float, n_negative: float) -> float:
    """Hanley & McNeil (1982): the variance of an AUC from its class counts alone."""
    q1, q2 = auc / (2.0 - auc), 2.0 * auc * auc / (1.0 + auc)
    spread = auc * (1.0 - auc)
    spread += (n_positive - 1.0) * (q1 - auc * auc) + (n_negative - 1.0) * (q2 - auc * auc)
    return max(spread, 0.0) / (n_positive * n_negative)


def comparison_test(
    champion: Placements | None, rows: BinaryInputs, challenger: Mapping[str, Any], options: Options
) -> Comparison:
    """The paired DeLong test of the challenger's AUC against the champion's, on ``rows``."""
    if not isinstance(challenger, Mapping):
        raise InvalidInputError("challenger", f"expected an object, but got {challenger!r}")
    unknown = sorted(set(challenger) - {"scores"})
    if unknown:
        raise InvalidInputError(f"challenger.{unknown[0]}", "unknown field; expected 'scores'")
    scores = finite_floats("challenger.scores", challenger.get("scores"))
    same_length("challenger.scores", scores.size, rows.labels.size)
    other_sweep = sweep_of_rows(rows.labels, scores, rows.weights)
    if champion is None:
        return _comparison(None, _insufficient("only one class is present"))
    other = placements(other_sweep)
    short = too_few(champion, options)
    if short:
        return _comparison(other.auc, _insufficient(short))
    covariance = _covariance(champion, rows.scores, other, scores, rows)
    scale = champion.variance + other.variance
    variance = scale - 2.0 * covariance
    if variance <= CANCELLATION * scale:
        variance = 0.0  # V1 + V2 - 2 Cov is 0 in exact arithmetic: rounding is not spread
    return _comparison(
        other.auc, _verdict(other.auc - champion.auc, variance, options, df=math.inf)
    )


def _covariance(
    first: Placements, first_scores: Floats, second: Placements, second_scores: Floats,
    rows: BinaryInputs,
) -> float:  # fmt: skip
    """DeLong's covariance of two AUCs on the same rows, from each row's placement values."""
    weights = rows.weights if rows.weights is not None else np.ones(rows.labels.size)
    positive = rows.labels
    negative = ~positive
    s10 = inner(
        weights[positive] * (first.v10_at(first_scores[positive]) - first.auc),
        second.v10_at(second_scores[positive]) - second.auc,
    ) / (first.positives - 1.0)
    s01 = inner(
        weights[negative] * (first.v01_at(first_scores[negative]) - first.auc),
        second.v01_at(second_scores[negative]) - second.auc,
    ) / (first.negatives - 1.0)
    return float(s10) / first.positives + float(s01) / first.negatives


def too_few(placed: Placements | None, options: Options, whose: str = "the data") -> str:
    least = options.drift_min_samples
    if placed is None:
        return f"{whose} has only one class: no AUC"
    if min(placed.positives, placed.negatives) < least:
        return (
            f"{whose} has {placed.positives:g} positives and {placed.negatives:g} negatives;"
            f" a verdict needs at least {least:g} of each (option drift_min_samples)"
        )
    return ""


@dataclass(frozen=True, slots=True)
class _Verdict:
    """The outcome of a test, shared by the drift test and the comparison."""

    status: str
    delta: float | None = None
    z: float | None = None
    df: float | None = None
    p_value: float | None = None
    significant: bool | None = None
    std_error: float | None = None
    reason: str | None = None


def _drift(baseline: float, method: str, verdict: _Verdict) -> DriftTest:
    return DriftTest(
        baseline=baseline, method=method, status=verdict.status, delta=verdict.delta,
        z=verdict.z, df=verdict.df, p_value=verdict.p_value, significant=verdict.significant,
        std_error=verdict.std_error, reason=verdict.reason,
    )  # fmt: skip


def _comparison(challenger: float | None, verdict: _Verdict) -> Comparison:
    return Comparison(
        challenger=challenger, method="delong-paired", status=verdict.status,
        delta=verdict.delta, z=verdict.z, df=verdict.df, p_value=verdict.p_value,
        significant=verdict.significant, std_error=verdict.std_error, reason=verdict.reason,
    )  # fmt: skip


def _insufficient(reason: str) -> _Verdict:
    return _Verdict(status="insufficient_data", reason=reason)


def _verdict(delta: float, variance: float, options: Options, *, df: float) -> _Verdict:
    std_error = math.sqrt(max(variance, 0.0))
    if std_error == 0.0:
        if delta != 0.0:
            return _Verdict(
                status="undefined", delta=delta, std_error=0.0,
                reason="the standard error of the difference is 0 (no spread in either AUC)",
            )  # fmt: skip
        z, p_value = 0.0, 1.0  # identical curves, as pROC
    else:
        z = delta / std_error
        p_value = t_two_sided_p(z, df) if math.isfinite(df) else normal_two_sided_p(z)
    return _Verdict(
        status="ok",
        delta=delta,
        z=z,
        df=df if math.isfinite(df) else None,
        p_value=p_value,
        significant=p_value < options.alpha,
        std_error=std_error,
    )
