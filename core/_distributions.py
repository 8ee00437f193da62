"""The few distribution functions the intervals and tests need, in plain Python (no scipy in
the core): the normal CDF and quantile, and Student's t CDF.

Accuracy (tests/core/test_distributions.py): about 1e-14 relative for the normal quantile (less
within 1e-9 of p = 1/2, where x itself is tiny), 1e-15 for the normal tails, and 1e-11 for the
t tail up to df 1e6 (1e-9 beyond, and above df 1e7 for |t| <= 5), below the 1e-9 at which the
tests compare with R (pROC).
"""

from __future__ import annotations

import math

__all__ = ["normal_cdf", "normal_quantile", "normal_two_sided_p", "t_two_sided_p"]


def normal_cdf(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def normal_two_sided_p(z: float) -> float:
    """P(|Z| >= |z|) for a standard normal Z, without cancellation in the tails."""
    return math.erfc(abs(z) / math.sqrt(2.0))


# Acklam's rational approximation of the normal quantile (relative error 1.15e-9), refined by
# one Halley step on erfc, which brings it to the precision of the double.
_A = (-39.69683028665376, 220.9460984245205, -275.9285104469687,
      138.3577518672690, -30.66479806614716, 2.506628277459239)  # fmt: skip
_B = (-54.47609879822406, 161.5858368580409, -155.6989798598866,
      66.80131188771972, -13.28068155288572)  # fmt: skip
_C = (-7.784894002430293e-03, -0.3223964580411365, -2.400758277161838,
      -2.549732539343734, 4.374664141464968, 2.938163982698783)  # fmt: skip
_D = (7.784695709041462e-03, 0.3224671290700398, 2.445134137142996, 3.754408661907416)
_LOW = 0.02425


def normal_quantile(p: float) -> float:
    """The x with P(Z <= x) = p, for 0 < p < 1."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"normal_quantile needs 0 < p < 1, got {p}")
    if p > 0.5:
        return -normal_quantile(1.0 - p)  # 1 - p is exact here; the lower tail is precise
    if p < _LOW:
        x = _tail(math.sqrt(-2.0 * math.log(p)))
    else:
        q = p - 0.5
        r = q * q
        numerator = ((((_A[0] * r + _A[1]) * r + _A[2]) * r + _A[3]) * r + _A[4]) * r + _A[5]
        denominator = ((((_B[0] * r + _B[1]) * r + _B[2]) * r + _B[3]) * r + _B[4]) * r + 1.0
        x = numerator * q / denominator
    error = normal_cdf(x) - p
    step = error * math.sqrt(2.0 * math.pi) * math.exp(x * x / 2.0)
    return x - step / (1.0 + x * step / 2.0)


def _tail(q: float) -> float:
    numerator = ((((_C[0] * q + _C[1]) * q + _C[2]) * q + _C[3]) * q + _C[4]) * q + _C[5]
    return numerator / ((((_D[0] * q + _D[1]) * q + _D[2]) * q + _D[3]) * q + 1.0)


LARGE_DF = 1e7


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with ``df`` > 0 degrees of freedom (df may be
    fractional, as Welch-Satterthwaite's): the regularized incomplete beta
    I_x(df/2, 1/2) at x = df / (df + t^2)."""
    if not df > 0:
        raise ValueError(f"t_two_sided_p needs df > 0, got {df}")
    if math.isinf(df):
        return normal_two_sided_p(t)
    if t == 0.0:
        return 1.0
    if df > LARGE_DF:
        # The first term of the expansion of t around the normal (Abramowitz & Stegun 26.7.5):
        # the continued fraction loses digits when df/2 is this large; the next term is
        # O(1/df^2).
        density = math.exp(-t * t / 2.0) / math.sqrt(2.0 * math.pi)
        return normal_two_sided_p(t) + density * (abs(t) ** 3 + abs(t)) / (2.0 * df)
    # x = df / (df + t^2) and 1 - x, each computed without cancellation, and their logs.
    square = t * t
    x, one_minus_x = df / (df + square), square / (df + square)
    log_x, log_one_minus_x = -math.log1p(square / df), -math.log1p(df / square)
    a, b = df / 2.0, 0.5
    log_front = _log_beta_ratio(a) + a * log_x + b * log_one_minus_x
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(x, a, b) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(one_minus_x, b, a) / b


def _log_beta_ratio(a: float) -> float:
    """log(Gamma(a + 1/2) / (Gamma(a) Gamma(1/2))); for a >= 20 by its asymptotic series (the
    next term is below 1e-14 there), as the difference of two large lgamma values loses the
    digits that matter."""
    if a < 20.0:
        return math.lgamma(a + 0.5) - math.lgamma(a) - math.lgamma(0.5)
    series = 0.5 * math.log(a) - 1.0 / (8.0 * a) + 1.0 / (192.0 * a**3)
    series += -1.0 / (640.0 * a**5) + 17.0 / (14336.0 * a**7)
    return series - math.lgamma(0.5)


_TINY = 1e-300


def _beta_fraction(x: float, a: float, b: float) -> float:
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    fraction = d
    for m in range(1, 100_000):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            fraction *= c * d
            if abs(c * d - 1.0) < 1e-16:
                return fraction
    return fraction  # not reached for the x, a, b of a t test
