"""The binary core against references, on hundreds of seeded random cases.

scikit-learn and scipy are the oracles where they define the metric; where they do not
(interpolated APs, R-precision, head precision/recall, optimal thresholds, ECE) an independent
brute force written from the definitions in the core docstrings and ``core/_catalog.py``
recomputes every threshold from the rows. The cases cover heavy ties, float weights with zeros,
extreme prevalence (one positive or one negative in 10^4), single-class and constant inputs, and
n from 1 to 10^5.

References work on the rows and the core on its per-distinct-score statistic, so values agree to
1e-9 (relative and absolute), not bit for bit; thresholds are compared exactly.
"""

from __future__ import annotations

import bisect
import math
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import combinations
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy import stats as scipy_stats
from sklearn import metrics as skm
from sklearn.calibration import calibration_curve
from sklearn.exceptions import UndefinedMetricWarning

from evalserve import core
from evalserve.core.binary._suite import RANKING_METRICS

Floats = NDArray[np.float64]
Bools = NDArray[np.bool_]

REL = 1e-9
ABS = 1e-9
# Every curve point is kept: the core thins only above this many points.
ALL_POINTS = 100_000  # the option's largest value: every point of these tests' curves
# Brute force recomputes every threshold from the rows: O(rows x distinct scores).
BRUTE_FORCE_BUDGET = 400_000


def close(value: float) -> Any:
    return pytest.approx(value, rel=REL, abs=ABS)


@dataclass(frozen=True, eq=False)
class Case:
    """One seeded input: labels, scores, optional weights and the options to evaluate with."""

    name: str
    y: Bools
    s: Floats
    w: Floats | None
    options: dict[str, Any]
    _memo: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def weights(self) -> Floats:
        return np.ones(self.y.size) if self.w is None else self.w

    @property
    def labels(self) -> NDArray[np.int64]:
        return self.y.astype(np.int64)

    @property
    def positive_mass(self) -> float:
        return math.fsum(self.weights[self.y])

    @property
    def negative_mass(self) -> float:
        return math.fsum(self.weights[~self.y])

    @property
    def both_classes(self) -> bool:
        """Both classes carry weight (rows of weight zero leave no trace)."""
        return self.positive_mass > 0 and self.negative_mass > 0

    @property
    def probabilities(self) -> bool:
        return bool(self.s.min() >= 0 and self.s.max() <= 1)

    @property
    def integral_weights(self) -> bool:
        """Every sum of weights is exact in float64, so exact ties stay exact."""
        return bool(np.all(self.weights == np.round(self.weights)))

    @property
    def n_distinct(self) -> int:
        return int(np.unique(self.s).size)

    @property
    def brute_force_size(self) -> int:
        return self.y.size * self.n_distinct

    @property
    def result(self) -> core.EvaluationResult:
        if "result" not in self._memo:
            self._memo["result"] = core.evaluate(
                "binary", self.y, self.s, sample_weight=self.w, options=self.options
            )
        result: core.EvaluationResult = self._memo["result"]
        return result

    @property
    def table(self) -> Table:
        if "table" not in self._memo:
            self._memo["table"] = Table.from_case(self)
        table: Table = self._memo["table"]
        return table


# --------------------------------------------------------------------------------------------
# Case generation


def _size(rng: np.random.Generator, low: int, high: int) -> int:
    return round(math.exp(rng.uniform(math.log(low), math.log(high))))


def _continuous(rng: np.random.Generator, y: Bools) -> Floats:
    """Probabilities, positives shifted up: an informative but imperfect model."""
    z = rng.normal(size=y.size) + rng.uniform(0.0, 2.5) * y
    return np.asarray(1 / (1 + np.exp(-z)), dtype=np.float64)


def _scores(rng: np.random.Generator, y: Bools, kind: str) -> Floats:
    if kind == "continuous":
        return _continuous(rng, y)
    if kind == "rounded":  # heavy ties: probabilities rounded to 0, 1 or 2 decimals
        return np.asarray(np.round(_continuous(rng, y), int(rng.integers(0, 3))), np.float64)
    if kind == "levels":  # a handful of distinct values, informative
        levels = np.sort(rng.random(int(rng.integers(1, 7))))
        index = rng.integers(0, levels.size, y.size) + y * rng.integers(0, 2, y.size)
        return np.asarray(levels[np.minimum(index, levels.size - 1)], np.float64)
    if kind == "raw":  # not probabilities: margins of any sign, some ties
        raw = rng.normal(size=y.size) * 3 + 2 * y
        return np.asarray(np.round(raw, 1) if rng.random() < 0.5 else raw, np.float64)
    if kind == "constant":
        return np.full(y.size, float(np.round(rng.random(), 2)))
    raise AssertionError(kind)


def _weights(rng: np.random.Generator, n: int, kind: str) -> Floats | None:
    if kind == "none":
        return None
    if kind == "float":  # exponential weights, about 15% exactly zero
        weights = rng.exponential(size=n) * (rng.random(n) >= 0.15)
    elif kind == "int":
        weights = rng.integers(0, 4, n).astype(np.float64)
    else:
        raise AssertionError(kind)
    if not weights.any():
        weights[int(rng.integers(n))] = 1.0
    return weights


def _options(rng: np.random.Generator, s: Floats, weights: Floats | None, n: int) -> dict[str, Any]:
    total = float(n if weights is None else math.fsum(weights))
    candidates = [
        float(rng.choice(s)),  # exactly on a score: ties at the threshold are positive
        float(rng.uniform(s.min(), s.max())) if s.min() < s.max() else float(s[0]),
        0.5,
        float(s.max()) + 1.0,  # nothing predicted positive
        float(s.min()) - 1.0,  # everything predicted positive
    ]
    threshold = candidates[int(rng.choice(5, p=[0.4, 0.3, 0.1, 0.1, 0.1]))]
    # k values print exactly with "{k:g}" (at most six significant digits)
    heads = {1.0, float(min(99_999, max(1, round(total * rng.uniform(0.01, 0.9)))))}
    heads.add(min(9_999.5, math.floor(total * rng.uniform(0.0, 1.0)) + 0.5))
    if rng.random() < 0.3 and total < 50_000:
        heads.add(float(math.ceil(total * 1.5)) + 0.5)  # beyond the total: capped
    return {
        "threshold": threshold,
        "beta": float(rng.choice([0.25, 0.5, 1.0, 2.0, 3.0])),
        "max_fpr": float(rng.choice([0.001, 0.05, 0.1, 0.3, 0.5, 0.77, 1.0])),
        "head_k": sorted(heads),
        "calibration_bins": int(rng.choice([1, 2, 5, 10, 15, 20, 100])),
        "max_curve_points": ALL_POINTS,
    }


@dataclass(frozen=True)
class Family:
    name: str
    count: int
    sizes: tuple[int, int]
    scores: str
    weights: str
    labels: str = "random"  # or "one_positive" / "one_negative"


FAMILIES = (
    Family("continuous", 36, (2, 5_000), "continuous", "none"),
    Family("rounded", 36, (2, 5_000), "rounded", "none"),
    Family("levels", 30, (2, 3_000), "levels", "none"),
    Family("weighted", 30, (2, 5_000), "continuous", "float"),
    Family("weighted-rounded", 30, (2, 5_000), "rounded", "float"),
    Family("weighted-levels", 20, (2, 2_000), "levels", "float"),
    Family("int-weights", 20, (2, 2_000), "levels", "int"),
    Family("raw", 16, (2, 3_000), "raw", "none"),
    Family("raw-weighted", 8, (2, 3_000), "raw", "float"),
    Family("tiny", 30, (1, 4), "rounded", "none"),
    Family("tiny-weighted", 16, (1, 4), "continuous", "float"),
    Family("constant", 8, (1, 500), "constant", "none"),
    Family("one-positive", 5, (10_000, 10_000), "continuous", "none", "one_positive"),
    Family("one-positive-ties", 3, (10_000, 10_000), "rounded", "none", "one_positive"),
    Family("one-positive-weighted", 2, (10_000, 10_000), "continuous", "float", "one_positive"),
    Family("one-negative", 5, (10_000, 10_000), "continuous", "none", "one_negative"),
    Family("one-negative-ties", 3, (10_000, 10_000), "levels", "none", "one_negative"),
    Family("one-negative-weighted", 2, (10_000, 10_000), "rounded", "float", "one_negative"),
    Family("large", 2, (99_000, 99_000), "continuous", "none"),
    Family("large-ties", 1, (99_000, 99_000), "rounded", "none"),
    Family("large-weighted-ties", 1, (99_000, 99_000), "levels", "float"),
)


def _labels(rng: np.random.Generator, n: int, kind: str) -> Bools:
    if kind == "one_positive":
        y = np.zeros(n, dtype=np.bool_)
        y[int(rng.integers(n))] = True
        return y
    if kind == "one_negative":
        y = np.ones(n, dtype=np.bool_)
        y[int(rng.integers(n))] = False
        return y
    prevalence = float(rng.choice([0.02, 0.1, 0.3, 0.5, 0.8, 0.97]))
    return rng.random(n) < prevalence


def _make_cases() -> list[Case]:
    cases = []
    for family_index, family in enumerate(FAMILIES):
        for i in range(family.count):
            rng = np.random.default_rng([20240611, family_index, i])
            n = _size(rng, *family.sizes)
            y = _labels(rng, n, family.labels)
            s = _scores(rng, y, family.scores)
            w = _weights(rng, n, family.weights)
            options = _options(rng, s, w, n)
            cases.append(Case(f"{family.name}-{i}-n{n}", y, s, w, options))
    return cases


CASES = _make_cases()


def params(keep: Callable[[Case], bool] = lambda case: True) -> list[Any]:
    return [pytest.param(case, id=case.name) for case in CASES if keep(case)]


def _ranked(case: Case) -> bool:
    return case.both_classes


def _brute(case: Case) -> bool:
    return case.brute_force_size <= BRUTE_FORCE_BUDGET


# --------------------------------------------------------------------------------------------
# Helpers


def assert_undefined(result: core.EvaluationResult, name: str) -> None:
    assert result.metrics[name] is None, f"{name} = {result.metrics[name]}, expected undefined"
    reason = result.undefined.get(name)
    assert isinstance(reason, str) and reason, f"{name} is None without a reason"


def assert_value(result: core.EvaluationResult, name: str, expected: float) -> None:
    value = result.metrics[name]
    assert value is not None, (
        f"{name} undefined ({result.undefined.get(name)}), expected {expected}"
    )
    assert type(value) is float
    assert value == close(expected), name


def head_names(k: float) -> tuple[str, str]:
    return f"precision_at_{k:g}", f"recall_at_{k:g}"


def predicted(case: Case) -> NDArray[np.int64]:
    return np.asarray(case.s >= case.options["threshold"], dtype=np.int64)


# --------------------------------------------------------------------------------------------
# Ranking metrics against scikit-learn and scipy


@pytest.mark.parametrize("case", params())
def test_single_class_leaves_ranking_metrics_undefined(case: Case) -> None:
    result = case.result
    if case.both_classes:
        assert {"roc", "pr", "det"} <= set(result.curves) <= {"roc", "pr", "det", "calibration"}
        for name in RANKING_METRICS:
            assert type(result.metrics[name]) is float, name
    else:
        assert set(result.curves) <= {"calibration"}
        for name in RANKING_METRICS:
            assert_undefined(result, name)


@pytest.mark.parametrize("case", params(_ranked))
def test_roc_auc_matches_sklearn(case: Case) -> None:
    expected = skm.roc_auc_score(case.labels, case.s, sample_weight=case.w)
    assert_value(case.result, "roc_auc", expected)


@pytest.mark.parametrize("case", params(_ranked))
def test_roc_auc_partial_matches_sklearn_max_fpr(case: Case) -> None:
    max_fpr = case.options["max_fpr"]
    expected = skm.roc_auc_score(case.labels, case.s, sample_weight=case.w, max_fpr=max_fpr)
    assert_value(case.result, "roc_auc_partial", expected)


@pytest.mark.parametrize("case", params(_ranked))
def test_average_precision_matches_sklearn(case: Case) -> None:
    expected = skm.average_precision_score(case.labels, case.s, sample_weight=case.w)
    assert_value(case.result, "average_precision", expected)


@pytest.mark.parametrize("case", params(_ranked))
def test_pr_auc_trapezoid_matches_sklearn_auc_of_pr_curve(case: Case) -> None:
    precision, recall, _ = skm.precision_recall_curve(case.labels, case.s, sample_weight=case.w)
    assert_value(case.result, "pr_auc_trapezoid", skm.auc(recall, precision))


@pytest.mark.parametrize("case", params(_ranked))
def test_roc_curve_matches_sklearn_points(case: Case) -> None:
    fpr, tpr, thresholds = skm.roc_curve(
        case.labels, case.s, sample_weight=case.w, drop_intermediate=False
    )
    roc = case.result.curves["roc"]
    assert roc["thresholds"][0] == np.inf
    np.testing.assert_array_equal(roc["thresholds"], thresholds)
    np.testing.assert_allclose(roc["fpr"], fpr, rtol=REL, atol=ABS)
    np.testing.assert_allclose(roc["tpr"], tpr, rtol=REL, atol=ABS)


@pytest.mark.parametrize("case", params(_ranked))
def test_pr_curve_matches_sklearn_points(case: Case) -> None:
    # scikit-learn lists the PR curve by ascending threshold and ends it at (R=0, P=1); the core
    # lists it from that start point down, one point per distinct score, as the ROC curve.
    precision, recall, thresholds = skm.precision_recall_curve(
        case.labels, case.s, sample_weight=case.w
    )
    precision, recall, thresholds = precision[::-1], recall[::-1], thresholds[::-1]
    pr = case.result.curves["pr"]
    assert pr["thresholds"][0] == np.inf
    np.testing.assert_array_equal(pr["thresholds"][1:], thresholds)
    np.testing.assert_allclose(pr["precision"], precision, rtol=REL, atol=ABS)
    np.testing.assert_allclose(pr["recall"], recall, rtol=REL, atol=ABS)
    assert pr["recall"][-1] == 1.0


@pytest.mark.parametrize("case", params(lambda c: c.both_classes and c.w is None))
def test_roc_auc_matches_mann_whitney_with_average_ranks(case: Case) -> None:
    ranks = scipy_stats.rankdata(case.s, method="average")
    positives, negatives = int(case.y.sum()), int((~case.y).sum())
    u = math.fsum(ranks[case.y]) - positives * (positives + 1) / 2
    assert_value(case.result, "roc_auc", u / (positives * negatives))


@pytest.mark.parametrize("case", params(lambda c: c.both_classes and c.w is None))
def test_ks_statistic_matches_scipy_ks_2samp(case: Case) -> None:
    expected = scipy_stats.ks_2samp(case.s[case.y], case.s[~case.y]).statistic
    assert_value(case.result, "ks_statistic", float(expected))


# --------------------------------------------------------------------------------------------
# Threshold metrics against scikit-learn (score >= threshold is positive)


def _counts(case: Case) -> tuple[float, float, float, float]:
    predicted_positive = case.s >= case.options["threshold"]
    w = case.weights
    tp = math.fsum(w[case.y & predicted_positive])
    fp = math.fsum(w[~case.y & predicted_positive])
    tn = math.fsum(w[~case.y & ~predicted_positive])
    fn = math.fsum(w[case.y & ~predicted_positive])
    return tp, fp, tn, fn


@pytest.mark.parametrize("case", params())
def test_counts_match_sklearn_confusion_matrix(case: Case) -> None:
    matrix = skm.confusion_matrix(case.labels, predicted(case), labels=[0, 1], sample_weight=case.w)
    (tn, fp), (fn, tp) = matrix.tolist()
    result = case.result
    expected = {
        "tp": tp,
        "fp": fp,
        "tn": tn,
        "fn": fn,
        "n_positive": tp + fn,
        "n_negative": tn + fp,
        "n_predicted_positive": tp + fp,
        "n_predicted_negative": tn + fn,
    }
    for name, value in expected.items():
        assert_value(result, name, value)
    assert result.metrics["n_samples"] == case.y.size
    assert result.n_samples == case.y.size
    assert_value(
        result, "accuracy", skm.accuracy_score(case.labels, predicted(case), sample_weight=case.w)
    )
    assert_value(
        result,
        "error_rate",
        1 - skm.accuracy_score(case.labels, predicted(case), sample_weight=case.w),
    )
    assert_value(result, "prevalence", (tp + fn) / (tp + fp + tn + fn))


def _sklearn_ratio(
    case: Case, name: str, denominator: float, reference: Callable[..., float]
) -> None:
    """Where the denominator is 0, scikit-learn warns and returns 0: ours is None + reason."""
    result = case.result
    if denominator == 0:
        with pytest.warns(UndefinedMetricWarning):
            assert reference() == 0.0
        assert_undefined(result, name)
    else:
        assert_value(result, name, reference())


# (metric, sklearn function, keyword arguments, which counts make the denominator)
RATIOS: list[tuple[str, Callable[..., float], dict[str, Any], Callable[..., float]]] = [
    ("precision", skm.precision_score, {}, lambda tp, fp, tn, fn: tp + fp),
    ("recall", skm.recall_score, {}, lambda tp, fp, tn, fn: tp + fn),
    ("specificity", skm.recall_score, {"pos_label": 0}, lambda tp, fp, tn, fn: tn + fp),
    ("npv", skm.precision_score, {"pos_label": 0}, lambda tp, fp, tn, fn: tn + fn),
    ("f1", skm.f1_score, {}, lambda tp, fp, tn, fn: tp + fp + fn),
]


@pytest.mark.parametrize("case", params())
@pytest.mark.parametrize(
    ("name", "function", "kwargs", "denominator"),
    [pytest.param(*row, id=row[0]) for row in RATIOS],
)
def test_ratio_matches_sklearn(
    case: Case,
    name: str,
    function: Callable[..., float],
    kwargs: dict[str, Any],
    denominator: Callable[..., float],
) -> None:
    def reference() -> float:
        return function(case.labels, predicted(case), sample_weight=case.w, **kwargs)

    _sklearn_ratio(case, name, denominator(*_counts(case)), reference)


@pytest.mark.parametrize("case", params())
def test_f_beta_matches_sklearn_fbeta(case: Case) -> None:
    tp, fp, _, fn = _counts(case)
    beta = case.options["beta"]

    def reference() -> float:
        return float(skm.fbeta_score(case.labels, predicted(case), beta=beta, sample_weight=case.w))

    _sklearn_ratio(case, "f_beta", tp + fp + fn, reference)


@pytest.mark.parametrize("case", params())
def test_complementary_rates_match_sklearn(case: Case) -> None:
    tp, fp, tn, fn = _counts(case)
    result = case.result
    pred = predicted(case)
    if tp + fn == 0:
        assert_undefined(result, "fnr")
    else:
        assert_value(result, "fnr", 1 - skm.recall_score(case.labels, pred, sample_weight=case.w))
    if tn + fp == 0:
        assert_undefined(result, "fpr")
    else:
        specificity = skm.recall_score(case.labels, pred, pos_label=0, sample_weight=case.w)
        assert_value(result, "fpr", 1 - specificity)


@pytest.mark.parametrize("case", params())
def test_balanced_accuracy_and_youden_j_match_sklearn(case: Case) -> None:
    tp, fp, tn, fn = _counts(case)
    result = case.result
    if tp + fn == 0 or tn + fp == 0:
        # scikit-learn averages the recall of the classes present; with one class there is no
        # balance to speak of.
        assert_undefined(result, "balanced_accuracy")
        assert_undefined(result, "youden_j")
        return
    pred = predicted(case)
    balanced = skm.balanced_accuracy_score(case.labels, pred, sample_weight=case.w)
    assert_value(result, "balanced_accuracy", balanced)
    informedness = skm.balanced_accuracy_score(
        case.labels, pred, sample_weight=case.w, adjusted=True
    )
    assert_value(result, "youden_j", informedness)


@pytest.mark.parametrize("case", params())
def test_mcc_matches_sklearn(case: Case) -> None:
    tp, fp, tn, fn = _counts(case)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "A single label was found", UserWarning)
        expected = skm.matthews_corrcoef(case.labels, predicted(case), sample_weight=case.w)
    if (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn) == 0:
        assert expected == 0.0  # scikit-learn's silent 0 for 0/0
        assert_undefined(case.result, "mcc")
    else:
        assert_value(case.result, "mcc", expected)


@pytest.mark.parametrize("case", params())
def test_cohen_kappa_matches_sklearn(case: Case) -> None:
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", ".*`cohen_kappa_score` is undefined", UndefinedMetricWarning
        )
        expected = skm.cohen_kappa_score(
            case.labels, predicted(case), labels=[0, 1], sample_weight=case.w
        )
    if math.isnan(expected):
        assert_undefined(case.result, "cohen_kappa")
    else:
        assert_value(case.result, "cohen_kappa", expected)


# --------------------------------------------------------------------------------------------
# Calibration


@pytest.mark.parametrize("case", params())
def test_log_loss_and_brier_score_match_sklearn(case: Case) -> None:
    result = case.result
    if not case.probabilities:
        for name in ("log_loss", "brier_score", "expected_calibration_error"):
            assert_undefined(result, name)
        return
    log_loss = skm.log_loss(case.labels, case.s, sample_weight=case.w, labels=[0, 1])
    assert_value(result, "log_loss", log_loss)
    brier = skm.brier_score_loss(case.labels, case.s, sample_weight=case.w, labels=[0, 1])
    assert_value(result, "brier_score", brier)


@pytest.mark.parametrize("case", params(lambda c: c.probabilities))
def test_expected_calibration_error_matches_brute_force(case: Case) -> None:
    bins = case.options["calibration_bins"]
    observed = [0.0] * bins
    expected = [0.0] * bins
    total = 0.0
    for label, score, weight in zip(
        case.y.tolist(), case.s.tolist(), case.weights.tolist(), strict=True
    ):
        # equal-width bins [b/B, (b+1)/B); a score of exactly 1.0 belongs to the last one
        b = min(int(score * bins), bins - 1)
        observed[b] += weight * label
        expected[b] += weight * score
        total += weight
    ece = sum(abs(o - e) for o, e in zip(observed, expected, strict=True)) / total
    assert_value(case.result, "expected_calibration_error", ece)


@pytest.mark.parametrize("case", params(lambda c: c.probabilities))
def test_calibration_curve_matches_brute_force(case: Case) -> None:
    bins = case.options["calibration_bins"]
    edges = [i / bins for i in range(1, bins)]
    mass, positive, score_sum = [0.0] * bins, [0.0] * bins, [0.0] * bins
    for label, score, weight in zip(
        case.y.tolist(), case.s.tolist(), case.weights.tolist(), strict=True
    ):
        b = bisect.bisect_right(edges, score)  # [b/B, (b+1)/B) with the edges as floats
        mass[b] += weight
        positive[b] += weight * label
        score_sum[b] += weight * score
    held = [b for b in range(bins) if mass[b] > 0]
    curve = case.result.curves["calibration"]
    np.testing.assert_allclose(curve["lower"], [b / bins for b in held], rtol=1e-15)
    np.testing.assert_allclose(curve["upper"], [(b + 1) / bins for b in held], rtol=1e-15)
    # A bin's mass is a difference of cumulative sums: relative to the bin, a few ulps of the
    # whole mass.
    np.testing.assert_allclose(curve["weight"], [mass[b] for b in held], rtol=REL)
    fraction = [positive[b] / mass[b] for b in held]
    np.testing.assert_allclose(curve["fraction_positive"], fraction, rtol=REL, atol=ABS)
    mean = [score_sum[b] / mass[b] for b in held]
    np.testing.assert_allclose(curve["mean_score"], mean, rtol=REL, atol=ABS)


@pytest.mark.parametrize(
    "case", params(lambda c: c.probabilities and c.w is None and c.both_classes)
)
def test_calibration_curve_matches_sklearn(case: Case) -> None:
    bins = case.options["calibration_bins"]
    inner_edges = np.arange(1, bins) / bins
    if np.isin(case.s, inner_edges).any():
        pytest.skip("a score on an inner edge: scikit-learn puts it in the lower bin")
    prob_true, prob_pred = calibration_curve(case.labels, case.s, n_bins=bins)
    curve = case.result.curves["calibration"]
    np.testing.assert_allclose(curve["fraction_positive"], prob_true, rtol=1e-12)
    np.testing.assert_allclose(curve["mean_score"], prob_pred, rtol=1e-12)


# --------------------------------------------------------------------------------------------
# Brute force from the definitions


@dataclass(frozen=True, eq=False)
class Table:
    """Per distinct score (descending, rows of weight zero ignored), the exact positive and
    negative weight at or above it, each recomputed from the rows."""

    thresholds: list[float]
    tp: list[Fraction]
    fp: list[Fraction]
    positives: Fraction
    negatives: Fraction

    @classmethod
    def from_case(cls, case: Case) -> Table:
        live = case.weights > 0
        s, y, w = case.s[live], case.y[live], case.weights[live]
        thresholds = sorted(set(s.tolist()), reverse=True)
        tp, fp = [], []
        for t in thresholds:
            above = s >= t
            tp.append(Fraction(math.fsum(w[above & y])))
            fp.append(Fraction(math.fsum(w[above & ~y])))
        return cls(thresholds, tp, fp, Fraction(math.fsum(w[y])), Fraction(math.fsum(w[~y])))

    def rows(self) -> Iterator[tuple[float, Fraction, Fraction]]:
        return zip(self.thresholds, self.tp, self.fp, strict=True)


def highest_argmax(case: Case, thresholds: list[float], values: list[Fraction]) -> float:
    """The highest threshold reaching the maximum. Exact with integral weights; with float
    weights the sums are rounded, so values within 1e-12 of the maximum count as ties."""
    best = max(values)
    slack = Fraction(0) if case.integral_weights else Fraction(1, 10**12)
    return next(t for t, v in zip(thresholds, values, strict=True) if v >= best - slack)


@pytest.mark.parametrize("case", params(lambda c: _ranked(c) and _brute(c)))
def test_interpolated_aps_match_brute_force(case: Case) -> None:
    table = case.table
    positives = table.positives
    precision = [tp / (tp + fp) for _, tp, fp in table.rows()]
    recall = [tp / positives for tp in table.tp]
    # VOC 2007: mean over r = 0, 0.1, ..., 1 of the best precision at recall >= r, else 0
    eleven = Fraction(0)
    for i in range(11):
        reached = [p for p, r in zip(precision, recall, strict=True) if r >= Fraction(i, 10)]
        eleven += max(reached, default=Fraction(0))
    assert_value(case.result, "ap_11_point", float(eleven / 11))
    # VOC 2010: area under the monotone envelope, as VOCdevkit's VOCap
    mrec = [Fraction(0), *recall, Fraction(1)]
    mpre = [Fraction(0), *precision, Fraction(0)]
    for i in range(len(mpre) - 2, -1, -1):
        mpre[i] = max(mpre[i], mpre[i + 1])
    area = sum((mrec[i + 1] - mrec[i]) * mpre[i + 1] for i in range(len(mrec) - 1))
    assert_value(case.result, "ap_all_point", float(area))


def youden_j(table: Table) -> list[Fraction]:
    return [tp / table.positives - fp / table.negatives for _, tp, fp in table.rows()]


@pytest.mark.parametrize("case", params(lambda c: _ranked(c) and _brute(c)))
def test_ks_statistic_and_threshold_match_brute_force(case: Case) -> None:
    table = case.table
    gap = [abs(j) for j in youden_j(table)]
    assert_value(case.result, "ks_statistic", float(max(gap)))
    assert case.result.metrics["ks_threshold"] == highest_argmax(case, table.thresholds, gap)


@pytest.mark.parametrize("case", params(lambda c: _ranked(c) and _brute(c)))
def test_optimal_threshold_youden_matches_brute_force(case: Case) -> None:
    table = case.table
    expected = highest_argmax(case, table.thresholds, youden_j(table))
    assert case.result.metrics["optimal_threshold_youden"] == expected


@pytest.mark.parametrize("case", params(lambda c: _ranked(c) and _brute(c)))
def test_optimal_threshold_f1_matches_brute_force(case: Case) -> None:
    table = case.table
    p = table.positives
    f1 = [2 * tp / (tp + fp + p) for _, tp, fp in table.rows()]
    expected = highest_argmax(case, table.thresholds, f1)
    assert case.result.metrics["optimal_threshold_f1"] == expected


def test_exact_ties_in_youden_j_and_ks_go_to_the_highest_threshold() -> None:
    # Ranked from the top: + + + - + - - - - +. J = TP/5 - FP/5 is 3/5 at threshold 8 and
    # again 4/5 - 1/5 = 3/5 at threshold 6, its maximum; the highest threshold is 8.
    labels = [1, 1, 1, 0, 1, 0, 0, 0, 0, 1]
    scores = [10.0, 9.0, 8.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0]
    tp = np.cumsum(labels)
    fp = np.cumsum([1 - label for label in labels])
    youden = [Fraction(int(a), 5) - Fraction(int(b), 5) for a, b in zip(tp, fp, strict=True)]
    assert max(youden) == Fraction(3, 5)
    highest = scores[youden.index(max(youden))]
    assert highest == 8.0
    result = core.evaluate("binary", labels, scores)
    assert result.metrics["optimal_threshold_youden"] == highest
    assert result.metrics["ks_threshold"] == highest


def expected_head_hits(case: Case, k: float) -> float:
    """Positive weight among the top k units of weight: every tie group wholly above the cut
    counts fully, the group the cut falls in counts its positive weight pro rata (the expected
    value under a random order of its rows), groups below count nothing."""
    hits = 0.0
    for t in np.unique(case.s[case.weights > 0]):
        above = math.fsum(case.weights[case.s > t])
        group = case.s == t
        group_mass = math.fsum(case.weights[group])
        share = min(1.0, max(0.0, (k - above) / group_mass))
        hits += share * math.fsum(case.weights[group & case.y])
    return hits


@pytest.mark.parametrize("case", params(_brute))
def test_head_precision_and_recall_match_expected_value(case: Case) -> None:
    total = math.fsum(case.weights)
    positives = case.positive_mass
    result = case.result
    for k in case.options["head_k"]:
        precision_name, recall_name = head_names(k)
        hits = expected_head_hits(case, k)
        assert_value(result, precision_name, hits / min(k, total))
        if positives == 0:
            assert_undefined(result, recall_name)
        else:
            assert_value(result, recall_name, hits / positives)
    if max(case.options["head_k"]) > total:
        assert any("head_k" in warning for warning in result.warnings)


@pytest.mark.parametrize("case", params(lambda c: _ranked(c) and _brute(c)))
def test_break_even_point_is_r_precision(case: Case) -> None:
    positives = case.positive_mass
    assert_value(case.result, "break_even_point", expected_head_hits(case, positives) / positives)


@pytest.mark.parametrize("case", params(lambda c: _ranked(c) and _brute(c) and c.w is not None))
def test_weighted_ks_statistic_matches_brute_force(case: Case) -> None:
    table = case.table
    gaps = [abs(tp / table.positives - fp / table.negatives) for _, tp, fp in table.rows()]
    assert_value(case.result, "ks_statistic", float(max(gaps)))


# --------------------------------------------------------------------------------------------
# Head metrics: the expected value under every order of the tied rows, enumerated


def _small_tied_case(seed: int) -> tuple[Bools, Floats]:
    rng = np.random.default_rng([7, seed])
    n = int(rng.integers(1, 11))
    levels = rng.integers(1, 5)
    return rng.random(n) < rng.uniform(0.2, 0.8), rng.integers(0, levels, n).astype(np.float64)


def enumerated_head_hits(y: Bools, s: Floats, k: float) -> Fraction:
    """Average, over every arrangement of the positives inside each tie group, of the positives
    among the first k rows (a row straddling a fractional cut counts by its included part)."""
    hits = Fraction(0)
    position = 0
    for t in sorted(set(s.tolist()), reverse=True):
        group = s == t
        size, n_pos = int(group.sum()), int((group & y).sum())
        # each group has its rows ranked after every higher group, in a uniformly random order
        arrangements = list(combinations(range(size), n_pos))
        total = Fraction(0)
        for places in arrangements:
            for place in places:
                start = position + place
                total += min(Fraction(1), max(Fraction(0), Fraction(k) - start))
        hits += total / len(arrangements)
        position += size
    return hits


@pytest.mark.parametrize("seed", [pytest.param(seed, id=f"seed{seed}") for seed in range(60)])
def test_head_metrics_are_the_expected_value_over_tie_orders(seed: int) -> None:
    y, s = _small_tied_case(seed)
    ks = [k / 2 for k in range(1, 2 * y.size + 1)]
    result = core.evaluate("binary", y, s, options={"head_k": ks})
    for k in ks:
        precision_name, recall_name = head_names(k)
        hits = enumerated_head_hits(y, s, k)
        assert_value(result, precision_name, float(hits / Fraction(k)))
        if y.any():
            assert_value(result, recall_name, float(hits / int(y.sum())))
        else:
            assert_undefined(result, recall_name)


def test_case_mix_covers_the_hard_inputs() -> None:
    """The generated cases really contain what the module docstring promises."""
    sizes = [case.y.size for case in CASES]
    assert len(CASES) >= 300
    assert min(sizes) == 1 and max(sizes) == 99_000
    assert sum(case.n_distinct * 5 <= case.y.size for case in CASES) >= 50  # heavy ties
    assert sum(case.w is not None and bool((case.w == 0).any()) for case in CASES) >= 50
    assert any(case.y.sum() == 1 and case.y.size == 10_000 for case in CASES)
    assert any((~case.y).sum() == 1 and case.y.size == 10_000 for case in CASES)
    assert sum(not case.both_classes for case in CASES) >= 10
    assert sum(not case.probabilities for case in CASES) >= 10
