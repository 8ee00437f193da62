"""``core._distributions`` (the plain-Python normal and Student t functions behind every interval
and test) against scipy, which the core does not import.

The tests below check the normal quantile to 1e-14 relative and the t p-value to 1e-12
relative for df <= 1e6 (scipy's own error there is below 1e-13, measured against 40-digit
mpmath while writing these tests), tighter than the module documents in places. Where the
module falls short of that, the test is a strict xfail that names the cause.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from evalserve.core._distributions import (
    LARGE_DF,
    normal_cdf,
    normal_quantile,
    normal_two_sided_p,
    t_two_sided_p,
)

# --------------------------------------------------------------------------------------------
# Normal quantile

# Lower tail down to 1e-300, the body, and the upper tail up to the largest double below 1
# (1 - 2^-53 ~ 1 - 1.1e-16). The centre |p - 1/2| < 0.01 has its own (xfail) test below.
LOWER_TAIL = [10.0**-e for e in (300, 250, 200, 150, 100, 50, 30, 20, 16, 12, 8, 6, 4, 3)]
BODY = [float(p) for p in np.linspace(0.001, 0.49, 50)] + [0.02425, 0.0242499, 0.0242501]
UPPER_TAIL = [1.0 - p for p in (1e-16, 1e-15, 1e-12, 1e-9, 1e-6, 1e-4, 1e-3, 0.01)]
UPPER_BODY = [float(p) for p in np.linspace(0.51, 0.999, 50)] + [0.97575]
QUANTILE_GRID = LOWER_TAIL + BODY + UPPER_BODY + UPPER_TAIL + [1.0 - 2.0**-53]


def test_normal_quantile_matches_scipy_over_the_grid() -> None:
    """normal_quantile(p) == scipy.stats.norm.ppf(p) to 1e-14 relative, from p = 1e-300 to the
    largest double below 1, across both branches of Acklam's approximation (p < 0.02425 and the
    central region) and their boundary."""
    for p in QUANTILE_GRID:
        expected = float(stats.norm.ppf(p))
        assert normal_quantile(p) == pytest.approx(expected, rel=1e-14, abs=0.0), p


def test_normal_quantile_at_one_half_is_zero_and_odd() -> None:
    """The median is exactly 0; Phi^-1(1 - p) == -Phi^-1(p) for dyadic p (1 - p exact)."""
    assert normal_quantile(0.5) == 0.0
    for p in (0.25, 0.125, 2.0**-10, 2.0**-20):
        assert normal_quantile(1.0 - p) == -normal_quantile(p)


def test_normal_quantile_inverts_the_cdf() -> None:
    """normal_cdf(normal_quantile(p)) == p, to 4e-16 * (1 + x^2) relative: the cdf's
    relative slope at x is ~x^2 (x = -37 at p = 1e-300), so the last ulp of the quantile alone
    moves the cdf by ~x^2 * 1.1e-16."""
    for p in LOWER_TAIL + BODY:
        x = normal_quantile(p)
        assert normal_cdf(x) == pytest.approx(p, rel=4e-16 * (1.0 + x * x), abs=0.0), p


def test_normal_quantile_of_the_usual_levels() -> None:
    """The z of the usual two-sided levels, as the intervals use them (0.5 + level / 2)."""
    for level, z in (
        (0.90, 1.6448536269514722),
        (0.95, 1.959963984540054),
        (0.99, 2.5758293035489),
    ):
        assert normal_quantile(0.5 + level / 2.0) == pytest.approx(z, rel=1e-14, abs=0.0)


@pytest.mark.xfail(
    strict=True,
    reason=(
        "normal_quantile near p = 1/2 keeps Acklam's relative error (~1e-9 at p = 0.5 +/- 1e-10,"
        " 2.7e-14 at p = 0.499): the Halley step computes normal_cdf(x) - p, whose absolute"
        " rounding (~1e-16) is larger than the error it should correct once |x| is small;"
        " the module documents less accuracy within 1e-9 of p = 1/2"
    ),
)
@pytest.mark.parametrize("offset", [1e-3, 1e-6, 1e-10])
def test_normal_quantile_near_the_centre(offset: float) -> None:
    """Relative accuracy holds near the median as well (|p - 1/2| small)."""
    for p in (0.5 - offset, 0.5 + offset):
        assert normal_quantile(p) == pytest.approx(float(stats.norm.ppf(p)), rel=1e-14, abs=0.0), p


@pytest.mark.xfail(
    strict=True,
    raises=OverflowError,
    reason=(
        "subnormal p (< 2.2e-308, still inside (0, 1)) raises OverflowError from"
        " math.exp(x * x / 2) in the Halley step (x^2 / 2 > 709.78 for p below ~1e-310)"
    ),
)
@pytest.mark.parametrize("p", [1e-315, 5e-324])
def test_normal_quantile_of_subnormal_p(p: float) -> None:
    """Every p in (0, 1) has a quantile; scipy gives -37.97 and -38.47 here."""
    assert normal_quantile(p) == pytest.approx(float(stats.norm.ppf(p)), rel=1e-14, abs=0.0)


@pytest.mark.parametrize("p", [0.0, 1.0, -0.1, 1.5, -math.inf, math.inf, math.nan])
def test_normal_quantile_rejects_p_outside_the_open_unit_interval(p: float) -> None:
    with pytest.raises(ValueError, match="0 < p < 1"):
        normal_quantile(p)


# --------------------------------------------------------------------------------------------
# Normal two-sided p-value


def test_normal_two_sided_p_matches_scipy() -> None:
    """P(|Z| >= |z|) == 2 * norm.sf(|z|) for z in [-37, 37] (p down to ~1e-299).

    Tolerance 4e-16 * (1 + z^2) relative: erfc(x) has d log erfc / d log x ~ -2 x^2 = -z^2, so
    rounding z / sqrt(2) alone costs ~z^2 * 1.1e-16 in either implementation (scipy differs
    from 40-digit mpmath by up to 1e-13 at z = 30 for that reason).
    """
    for z in np.linspace(-37.0, 37.0, 741):
        z = float(z)
        expected = 2.0 * float(stats.norm.sf(abs(z)))
        got = normal_two_sided_p(z)
        assert got == pytest.approx(expected, rel=4e-16 * (1.0 + z * z), abs=0.0), z
        assert got == normal_two_sided_p(-z)
    assert normal_two_sided_p(0.0) == 1.0
    assert normal_two_sided_p(1.959963984540054) == pytest.approx(0.05, rel=1e-14, abs=0.0)


def test_normal_cdf_matches_scipy() -> None:
    """normal_cdf(x) == norm.cdf(x) over [-37, 8] (relative: the lower tail is what matters)."""
    for x in np.linspace(-37.0, 8.0, 451):
        x = float(x)
        assert normal_cdf(x) == pytest.approx(
            float(stats.norm.cdf(x)), rel=4e-16 * (1.0 + x * x), abs=0.0
        ), x


# --------------------------------------------------------------------------------------------
# Student t two-sided p-value

T_GRID = [0.0, 1e-3, 0.1, 0.5, 1.0, 1.5, 1.96, 2.0, 2.5, 3.0, 4.0, 5.0, 7.0, 10.0, 20.0, 50.0]

# Degrees of freedom up to 1e6, fractional ones included (Welch-Satterthwaite's are).
# Where the module misses 1e-12 (measured against 40-digit mpmath; scipy is within 4e-14 of
# it on all of these), the case is a strict xfail with the cause:
FRACTION_REASON = (
    "for df >= 2e4 and |t| >~ 1.7 the continued fraction runs at x = df / (df + t^2) near 1"
    " with a = df / 2 huge: it converges slowly and accumulates rounding (relative error"
    " 2e-12 at df = 1e5, 5e-11 at df = 1e6, 4e-10 at df = 1e7); the module documents 1e-11 up"
    " to df 1e6, this test asks 1e-12"
)


def _t_case(df: float, reason: str | None = None) -> object:
    if reason is None:
        return pytest.param(df, id=f"df={df:g}")
    return pytest.param(df, id=f"df={df:g}", marks=pytest.mark.xfail(strict=True, reason=reason))


T_DFS = [
    _t_case(0.5),
    _t_case(0.75),
    _t_case(1.0),
    _t_case(1.3),
    _t_case(2.0),
    _t_case(3.7),
    _t_case(10.0),
    _t_case(33.3),
    _t_case(100.0),
    _t_case(257.25),
    _t_case(1000.0),
    _t_case(3000.0),
    _t_case(5000.0),  # the lgamma difference cancelled here before the asymptotic series
    _t_case(1e4),
    _t_case(19999.5),
    _t_case(1e5, FRACTION_REASON),
    _t_case(1e6, FRACTION_REASON),
]


@pytest.mark.parametrize("df", T_DFS)
def test_t_two_sided_p_matches_scipy(df: float) -> None:
    """t_two_sided_p(t, df) == 2 * scipy.stats.t.sf(|t|, df) to 1e-12 relative, for t from 0
    to 50 (either sign) and p down to the smallest normal double. (t = 1e-8 at df = 1 is left
    out here: scipy is off by 3e-9 there; the closed forms below cover it.)"""
    for t in T_GRID:
        expected = 2.0 * float(stats.t.sf(t, df))
        if expected < 1e-300:
            assert t_two_sided_p(t, df) < 1e-290, (t, df)
            continue
        assert t_two_sided_p(t, df) == pytest.approx(expected, rel=1e-12, abs=0.0), (t, df)
        assert t_two_sided_p(-t, df) == t_two_sided_p(t, df)


@pytest.mark.parametrize("t", [0.0, 1e-12, 1e-8, 1e-3, 0.5, 1.0, 3.0, 10.0, 1e3, 1e8, 1e150])
def test_t_two_sided_p_closed_forms(t: float) -> None:
    """df = 1 (Cauchy): p = (2 / pi) atan(1 / |t|); df = 2: p = 1 - |t| / sqrt(t^2 + 2),
    written without cancellation as 2 / (s (s + |t|)), s = sqrt(t^2 + 2). Both to 1e-13 relative,
    over 160 orders of magnitude of t."""
    cauchy = 1.0 if t == 0.0 else 2.0 / math.pi * math.atan(1.0 / t)
    root = math.sqrt(t * t + 2.0)
    two = 2.0 / (root * (root + t))
    assert t_two_sided_p(t, 1.0) == pytest.approx(cauchy, rel=1e-13, abs=0.0)
    assert t_two_sided_p(t, 2.0) == pytest.approx(two, rel=1e-13, abs=0.0)


@pytest.mark.parametrize("df", [2e6, 1e7, 1.5e7, 1e8, 1e10, 1e14])
def test_t_two_sided_p_beyond_1e6_is_close_to_scipy(df: float) -> None:
    """Above df = 1e6 (the continued fraction up to LARGE_DF = 1e7, then the first term of the
    expansion around the normal) the p-value of |t| <= 3 is within 1e-9 relative of scipy's:
    the measured error is 4e-10 at df = 1e7 (see FRACTION_REASON), far below any alpha."""
    for t in (0.1, 0.5, 1.0, 1.96, 2.0, 2.5, 3.0):
        expected = 2.0 * float(stats.t.sf(t, df))
        assert t_two_sided_p(t, df) == pytest.approx(expected, rel=1e-9, abs=0.0), (t, df)


@pytest.mark.xfail(
    strict=True,
    reason=(
        "above LARGE_DF = 1e7 only the first term of Abramowitz & Stegun 26.7.5 is used; the"
        " omitted term is O(t^8 / df^2) relative, not O(1 / df^2): 1.4e-8 relative at df = 1.5e7,"
        " t = 10 (8e-6 at t = 20); the module documents |t| <= 5 there"
    ),
)
def test_t_two_sided_p_just_above_large_df_in_the_tail() -> None:
    df = 1.5 * LARGE_DF
    assert t_two_sided_p(10.0, df) == pytest.approx(
        2.0 * float(stats.t.sf(10.0, df)), rel=1e-12, abs=0.0
    )


def test_t_two_sided_p_limits() -> None:
    """t = 0 gives 1; infinite df is the normal; the p-value falls as |t| grows and as df grows
    (for fixed |t| > 0 the t tails are heavier than the normal's)."""
    for df in (0.5, 1.0, 7.5, 1e3, 1e9, math.inf):
        assert t_two_sided_p(0.0, df) == 1.0
    for t in (0.3, 1.96, 6.0):
        assert t_two_sided_p(t, math.inf) == normal_two_sided_p(t)
        values = [t_two_sided_p(t, df) for df in (0.5, 1.0, 2.0, 10.0, 1e3, 1e8, math.inf)]
        assert all(a > b for a, b in itertools.pairwise(values)), (t, values)
    for df in (0.5, 3.0, 1e5):
        values = [t_two_sided_p(t, df) for t in T_GRID]
        assert all(0.0 <= v <= 1.0 for v in values)
        assert all(a > b for a, b in itertools.pairwise(values)), df


@pytest.mark.parametrize("df", [0.0, -1.0, -math.inf, math.nan])
def test_t_two_sided_p_rejects_df_not_positive(df: float) -> None:
    with pytest.raises(ValueError, match="df > 0"):
        t_two_sided_p(1.0, df)
