"""Model-selection criteria under a Gaussian likelihood: aic, bic, mallows_cp (lower is better).

Akaike (1974), Schwarz (1978) and Mallows (1973), in the least-squares forms that surveys of
regression statistics give, with n rows, p the number of parameters (here ``options.n_params``,
used as given, see CONVENTIONS["n_params"]) and SSE = sum (y - ŷ)^2:

    AIC = -2 ln L(θ̂) + 2p      = n ln(SSE/n) + 2p
    BIC = -2 ln L(θ̂) + p ln n  = n ln(SSE/n) + p ln n
    Cp  = SSE / σ̂² - n + 2p    = (n - m - 1) SSE_p / SSE_m - n + 2p

The second forms are the ones computed here (they are also R's ``extractAIC`` for ``lm``). The
"=" in the AIC and BIC lines holds up to a constant: the Gaussian maximum likelihood,
σ̂² = SSE/n, gives -2 ln L = n ln(SSE/n) + n (1 + ln 2π), and the second forms drop
n (1 + ln 2π). It depends on n alone, so differences between models scored on the same rows are
the textbook ones; statsmodels' ``aic`` and ``bic`` include it. For Cp, σ̂² is
``options.full_model_variance``, the full model's SSE_m / (n - m - 1) in Cp's second form (m
features plus an intercept).

With sample weights every sum is weighted and n is the sum of the weights (frequency weights:
a weight 2 is a row sent twice).
"""

from __future__ import annotations

import math

from evalserve.core._options import Options
from evalserve.core._result import MetricSink
from evalserve.core.regression._fit import NO_N_PARAMS
from evalserve.core.regression._pointwise import OVERFLOW, put

__all__ = ["PERFECT_FIT", "information_criteria", "mallows_cp"]

PERFECT_FIT = "SSE is 0 (every prediction exact): n ln(SSE/n) is -infinity"
NO_VARIANCE = (
    "options.full_model_variance is not set: Mallows' Cp needs the full model's residual "
    "variance σ²"
)


def information_criteria(sink: MetricSink, sse: float, n: float, n_params: int | None) -> None:
    """aic = n ln(SSE/n) + 2p and bic = n ln(SSE/n) + p ln n, p = options.n_params."""
    if n_params is None:
        sink.undefine("aic", NO_N_PARAMS.format(metric="AIC"))
        sink.undefine("bic", NO_N_PARAMS.format(metric="BIC"))
        return
    reason = PERFECT_FIT if sse == 0 else None if math.isfinite(sse) else OVERFLOW
    if reason is not None:
        sink.undefine("aic", reason)
        sink.undefine("bic", reason)
        return
    # ln SSE - ln n rather than ln(SSE / n): the quotient of a tiny SSE may underflow to 0.
    fit = n * (math.log(sse) - math.log(n))
    put(sink, "aic", fit + 2 * n_params)
    put(sink, "bic", fit + n_params * math.log(n))


def mallows_cp(sink: MetricSink, sse: float, n: float, options: Options) -> None:
    """Cp = SSE / σ² - n + 2p, σ² = options.full_model_variance, p = options.n_params."""
    if options.n_params is None:
        sink.undefine("mallows_cp", NO_N_PARAMS.format(metric="Mallows' Cp"))
    elif options.full_model_variance is None:
        sink.undefine("mallows_cp", NO_VARIANCE)
    else:
        put(sink, "mallows_cp", sse / options.full_model_variance - n + 2 * options.n_params)
