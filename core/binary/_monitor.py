"""A sequential monitor of AUC degradation with a stated false-alarm rate over time.

The question: has this model's AUC fallen more than ``drift_tolerance`` (delta) below its
baseline? The null hypothesis is AUC >= baseline - delta in every window; a drop smaller than
delta is never evidence, however large the window.

Each window gives an e-value for that null from its DeLong statistic against the boundary,
z = (AUC - bound) / SE (DeLong et al. 1988): under the null z is at least standard normal in
large samples, so for an effect size lam > 0, e = exp(-lam z - lam^2 / 2) has expectation at
most 1. The e-values feed Shiryaev-Roberts detectors, R_t = (R_{t-1} + 1) e_t (Shiryaev 1963;
Roberts 1966), one per effect size of a fixed grid (a mixture: no single shift is guessed), and
the monitor alarms when their average reaches the threshold. Each R_t - t is a supermartingale
under the null, so is their average, and by optional stopping the expected number of windows
to a false alarm is at least the threshold: the e-detector of Shin, Ramdas & Rinaldo
("E-detectors: a nonparametric framework for sequential change detection", 2024), whatever
the window sizes and however long the monitor runs (Ville 1939 for the inequality behind it).

The baseline's own estimation error is shared by every window, so it is not averaged away:
the boundary is the baseline's one-sided lower confidence bound at 1 - ``BASELINE_RISK``,
minus delta, and the threshold is ``monitor_arl_windows / (1 - BASELINE_RISK)``. On the event
that the bound holds (probability at least 1 - BASELINE_RISK) the expected run length is at
least that threshold, so over the baseline's draws it is at least ``monitor_arl_windows``. A
baseline known exactly (a summary with variance 0) uses it as is.

Detectors are kept as logs (a real drop on a large window gives e-values of e^1000). A window
with too few positives or negatives (``drift_min_samples``) adds no evidence and says so. A
window id sent again (a retry, with the old state or the new one) is not counted again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from evalserve.core._distributions import normal_quantile
from evalserve.core._errors import InvalidInputError
from evalserve.core._result_parts import MonitorVerdict
from evalserve.core.binary._monitor_format import (
    MAX_RECENT,
    MAX_WINDOW_CHARS,
    MonitorState,
    decode,
    encode,
)

__all__ = ["EFFECTS", "MonitorQuestion", "MonitorStep", "monitor_window"]

# Effect sizes (in standard errors of the window's AUC) of the mixture, equally weighted.
EFFECTS = (0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
_LAMBDAS = np.array(EFFECTS)
_LOG_WEIGHT = -math.log(len(EFFECTS))
# The chance that the baseline's lower bound is above its true AUC.
BASELINE_RISK = 0.01
# |z| beyond this is clipped (a window whose AUC has no spread: SE 0).
Z_LIMIT = 1e6
# The log of a detector before any window (0, kept finite: the state's JSON has no -inf).
NO_EVIDENCE = -1e9
# The statistic reported (not the one kept) is capped: exp(700) is near float's largest.
LOG_STATISTIC_LIMIT = 700.0


@dataclass(frozen=True, slots=True)
class MonitorQuestion:
    """What the monitor tests: the baseline's AUC and its variance (0: known exactly), the
    tolerance and the run length to hold."""

    baseline: float
    baseline_variance: float
    tolerance: float
    arl: float

    @property
    def bound(self) -> float:
        """The null's boundary: the baseline's lower confidence bound, minus the tolerance."""
        spread = math.sqrt(max(self.baseline_variance, 0.0))
        return self.baseline - normal_quantile(1 - BASELINE_RISK) * spread - self.tolerance

    @property
    def threshold(self) -> float:
        if self.baseline_variance > 0:
            return self.arl / (1 - BASELINE_RISK)
        return self.arl


@dataclass(frozen=True, slots=True)
class MonitorStep:
    """A window's verdict and the state to send with the next window."""

    entry: MonitorVerdict
    state: bytes


def monitor_window(
    question: MonitorQuestion,
    previous: bytes | None,
    window: str | None,
    auc: float | None,
    variance: float | None,
    too_few: str,
) -> MonitorStep:
    """Count one window: its AUC and DeLong variance (None, None: no AUC), or ``too_few``
    (why it carries no verdict). ``previous``: the state the last window returned."""
    state = _start(question) if previous is None else _continued(question, previous)
    if window is not None and len(window) > MAX_WINDOW_CHARS:
        raise InvalidInputError(
            "window", f"expected at most {MAX_WINDOW_CHARS} characters, but got {len(window)}"
        )
    if window is not None and window in state.recent:
        reason = f"window {window!r} was counted already; the state is unchanged"
        evalue = state.last_evalue if window == state.recent[-1] else None
        return MonitorStep(_entry(state, evalue, "ok", reason), encode(state))
    recent = state.recent if window is None else (*state.recent, window)[-MAX_RECENT:]
    if auc is None or variance is None or too_few:
        state = replace(state, recent=recent, last_evalue=None, last_z=None)
        reason = too_few or "the window has no AUC"
        return MonitorStep(_entry(state, None, "insufficient_data", reason), encode(state))
    z = _z(auc, variance, state.bound)
    log_evalues = -_LAMBDAS * z - _LAMBDAS**2 / 2
    detectors = np.logaddexp(np.array(state.log_detectors), 0.0) + log_evalues
    evalue = float(np.exp(min(_mixture(log_evalues), LOG_STATISTIC_LIMIT)))
    state = replace(
        state,
        log_detectors=tuple(float(x) for x in detectors),
        windows=state.windows + 1,
        recent=recent,
        last_evalue=evalue,
        last_z=z,
    )
    return MonitorStep(_entry(state, evalue, "ok", None), encode(state))


def _start(question: MonitorQuestion) -> MonitorState:
    return MonitorState(
        tolerance=question.tolerance,
        arl=question.arl,
        threshold=question.threshold,
        bound=question.bound,
        log_detectors=(NO_EVIDENCE,) * len(EFFECTS),
    )


def _continued(question: MonitorQuestion, previous: bytes) -> MonitorState:
    state = decode(previous)
    if len(state.log_detectors) != len(EFFECTS):
        raise InvalidInputError("monitor_state", "was made by another version of the monitor")
    asked = (question.tolerance, question.arl, question.bound)
    if (state.tolerance, state.arl, state.bound) != asked:
        raise InvalidInputError(
            "monitor_state",
            f"was made for drift_tolerance {state.tolerance:g}, monitor_arl_windows"
            f" {state.arl:g} and a boundary AUC of {state.bound:.6g}, but this request asks"
            f" for {question.tolerance:g}, {question.arl:g} and {question.bound:.6g}: a new"
            " baseline or new settings start a new monitor (send no monitor_state)",
        )
    return state


def _z(auc: float, variance: float, bound: float) -> float:
    gap = auc - bound
    if variance <= 0:
        return math.copysign(Z_LIMIT, gap) if gap else 0.0
    return max(-Z_LIMIT, min(Z_LIMIT, gap / math.sqrt(variance)))


def _mixture(logs: np.ndarray) -> float:
    """log of the equally weighted average of exp(``logs``)."""
    return float(np.logaddexp.reduce(logs)) + _LOG_WEIGHT


def _entry(
    state: MonitorState, evalue: float | None, status: str, reason: str | None
) -> MonitorVerdict:
    log_statistic = _mixture(np.array(state.log_detectors))
    return MonitorVerdict(
        statistic=float(np.exp(min(log_statistic, LOG_STATISTIC_LIMIT))),
        threshold=state.threshold,
        alarm=log_statistic >= math.log(state.threshold),
        windows=state.windows,
        evalue=evalue,
        status=status,
        reason=reason,
    )
