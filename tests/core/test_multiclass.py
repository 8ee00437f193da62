"""The multiclass core against scikit-learn, on seeded random cases.

scikit-learn is the oracle for every metric it has: confusion_matrix, accuracy_score,
balanced_accuracy_score, matthews_corrcoef, cohen_kappa_score, log_loss, brier_score_loss,
top_k_accuracy_score, precision/recall/f1/fbeta (average None, micro, macro, weighted),
roc_auc_score (ovr macro and weighted, micro via label_binarize + ravel, ovo macro and weighted
on unweighted probability rows) and average_precision_score (per class, macro, weighted,
micro). Where scikit-learn refuses (ovo with weights, top-k with ties, scores that are not
probabilities) a brute force written from the definitions in ``core/multiclass`` decides.

Cases cover ties (rounded and few-level scores), float and integer weights with zeros, absent
classes, scores that are not probabilities, 2 to 12 classes and 1 to 3000 rows. References
work on the rows and the core on its slots, so values agree to 1e-9, not bit for bit.
"""

from __future__ import annotations

import functools
import itertools
import math
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from sklearn import metrics as skm
from sklearn.preprocessing import label_binarize

from evalserve import core
from evalserve.core._result import TaskOutput
from evalserve.core.multiclass import CATALOG_ENTRIES, CONVENTIONS, compute_multiclass

Floats = NDArray[np.float64]
Ints = NDArray[np.int64]

REL = 1e-9
ABS = 1e-9
ALL_POINTS = 100_000  # the option's largest value: every point of these tests' curves
TOP_K = (1, 2, 3, 5)


def close(value: float | np.floating[Any] | None) -> Any:
    """pytest.approx at the module's tolerances (None only equals None)."""
    return pytest.approx(value, rel=REL, abs=ABS)


def quiet(call: Callable[[], Any]) -> Any:
    """A scikit-learn call with its warnings (undefined metrics, absent labels) silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return call()


@dataclass(frozen=True, eq=False)
class Case:
    name: str
    y: Ints
    s: Floats
    w: Floats | None
    beta: float = 1.0
    _memo: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def k(self) -> int:
        return int(self.s.shape[1])

    @property
    def labels(self) -> list[int]:
        return list(range(self.k))

    @property
    def weights(self) -> Floats:
        return np.ones(self.y.size) if self.w is None else self.w

    @property
    def mass(self) -> Floats:
        # float64 with weights (numpy's stubs give bincount one return type, intp)
        return np.asarray(
            np.bincount(self.y, weights=self.weights, minlength=self.k), dtype=np.float64
        )

    @property
    def present(self) -> list[int]:
        return [c for c in self.labels if self.mass[c] > 0]

    @property
    def predicted(self) -> Ints:
        return np.asarray(self.s.argmax(axis=1), dtype=np.int64)

    @property
    def probabilities(self) -> bool:
        rows = self.s.sum(axis=1)
        tolerance = max(1e-4, self.k * 1e-6)  # docs/conventions.md, "probabilities"
        return bool(self.s.min() >= 0 and self.s.max() <= 1 and np.all(abs(rows - 1) <= tolerance))

    @property
    def ties(self) -> bool:
        """Some row has two equal scores."""
        ordered = np.sort(self.s, axis=1)
        return bool(np.any(ordered[:, 1:] == ordered[:, :-1]))

    @property
    def output(self) -> TaskOutput:
        if "output" not in self._memo:
            options = core.Options(top_k=TOP_K, beta=self.beta, max_curve_points=ALL_POINTS)
            self._memo["output"] = compute_multiclass(
                self.y, self.s, sample_weight=self.w, options=options
            )
        output: TaskOutput = self._memo["output"]
        return output

    @property
    def metrics(self) -> dict[str, float | None]:
        metrics: dict[str, float | None] = self.output.sink.metrics
        return metrics

    def per_class(self, metric: str) -> list[float | None]:
        return [row.metrics[metric] for row in self.output.per_class]


# --------------------------------------------------------------------------------------------
# Cases


def _softmax(logits: Floats) -> Floats:
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return np.asarray(e / e.sum(axis=1, keepdims=True), dtype=np.float64)


def _scores(rng: np.random.Generator, y: Ints, k: int, kind: str) -> Floats:
    logits = rng.normal(size=(y.size, k))
    logits[np.arange(y.size), y] += rng.uniform(0.0, 2.5)
    if kind == "continuous":
        return _softmax(logits)
    if kind == "levels":  # probabilities from small counts: heavy ties, rows sum to 1
        counts = rng.integers(0, 4, size=(y.size, k)).astype(np.float64)
        counts[np.arange(y.size), y] += rng.integers(0, 3, size=y.size)
        counts[counts.sum(axis=1) == 0, 0] = 1.0
        return np.asarray(counts / counts.sum(axis=1, keepdims=True), dtype=np.float64)
    if kind == "rounded":  # ties, rows no longer sum to 1: not probabilities
        return np.asarray(np.round(_softmax(logits), int(rng.integers(1, 3))), dtype=np.float64)
    if kind == "raw":  # margins of any sign, some ties
        return np.asarray(np.round(logits, 1), dtype=np.float64)
    raise AssertionError(kind)


def _weights(rng: np.random.Generator, n: int, kind: str) -> Floats | None:
    if kind == "none":
        return None
    if kind == "float":  # about 15% exactly zero
        weights = rng.exponential(size=n) * (rng.random(n) >= 0.15)
    else:
        weights = rng.integers(0, 4, n).astype(np.float64)
    if not weights.any():
        weights[0] = 1.0
    return np.asarray(weights, dtype=np.float64)


def _labels(rng: np.random.Generator, n: int, k: int, kind: str) -> Ints:
    if kind == "absent":  # one class never appears
        missing = int(rng.integers(k))
        choices = [c for c in range(k) if c != missing]
        return np.asarray(rng.choice(choices, n), dtype=np.int64)
    prior = rng.dirichlet(np.ones(k) * 2)
    return np.asarray(rng.choice(k, n, p=prior), dtype=np.int64)


FAMILIES = (
    # name, count, sizes, classes, scores, weights, labels
    ("continuous", 10, (20, 3000), (3, 12), "continuous", "none", "random"),
    ("levels", 10, (2, 2000), (2, 6), "levels", "none", "random"),
    ("weighted", 8, (20, 3000), (3, 9), "continuous", "float", "random"),
    ("weighted-levels", 8, (2, 2000), (2, 6), "levels", "int", "random"),
    ("rounded", 6, (20, 2000), (3, 8), "rounded", "none", "random"),
    ("raw-weighted", 6, (20, 2000), (3, 8), "raw", "float", "random"),
    ("absent", 6, (10, 1000), (3, 7), "continuous", "float", "absent"),
    ("absent-levels", 4, (10, 1000), (3, 6), "levels", "none", "absent"),
)


def _cases() -> Iterator[Case]:
    rng = np.random.default_rng(20261122)
    for name, count, sizes, classes, scores, weights, labels in FAMILIES:
        for index in range(count):
            n = round(math.exp(rng.uniform(math.log(sizes[0]), math.log(sizes[1]))))
            k = int(rng.integers(classes[0], classes[1] + 1))
            y = _labels(rng, n, k, labels)
            beta = float(rng.choice([0.5, 1.0, 2.0]))
            yield Case(
                f"{name}-{index}-n{n}-k{k}",
                y,
                _scores(rng, y, k, scores),
                _weights(rng, n, weights),
                beta,
            )


CASES = list(_cases())


def cases(predicate: Callable[[Case], bool] = lambda case: True) -> list[Any]:
    return [pytest.param(case, id=case.name) for case in CASES if predicate(case)]


def test_the_cases_cover_what_they_claim() -> None:
    assert any(case.ties for case in CASES)
    assert any(not case.probabilities for case in CASES)
    assert any(len(case.present) < case.k for case in CASES)
    assert any(case.w is not None and (case.w == 0).any() for case in CASES)
    assert {case.k for case in CASES} >= {2, 3, 12}


# --------------------------------------------------------------------------------------------
# Hard predictions


@pytest.mark.parametrize("case", cases())
def test_confusion_matrix_accuracy_and_agreement(case: Case) -> None:
    y, pred, w = case.y, case.predicted, case.w
    matrix = skm.confusion_matrix(y, pred, labels=case.labels, sample_weight=w)
    curve = case.output.curves["confusion_matrix"]
    assert curve["shape"].tolist() == [case.k, case.k]
    np.testing.assert_allclose(curve["matrix"].reshape(case.k, case.k), matrix, rtol=REL)
    metrics = case.metrics
    assert metrics["n_samples"] == y.size  # rows, weight-zero ones included
    assert metrics["accuracy"] == close(skm.accuracy_score(y, pred, sample_weight=w))
    balanced = quiet(lambda: skm.balanced_accuracy_score(y, pred, sample_weight=w))
    assert metrics["balanced_accuracy"] == close(balanced)
    mcc = skm.matthews_corrcoef(y, pred, sample_weight=w)
    if metrics["mcc"] is None:
        assert mcc == 0.0  # scikit-learn's value for 0/0
        assert "0/0" in case.output.sink.undefined["mcc"]
    else:
        assert metrics["mcc"] == close(mcc)
    kappa = quiet(lambda: skm.cohen_kappa_score(y, pred, sample_weight=w))
    if metrics["cohen_kappa"] is None:
        assert math.isnan(kappa) or kappa == 0.0
    else:
        assert metrics["cohen_kappa"] == close(kappa)
    for weights in ("linear", "quadratic"):
        name = f"cohen_kappa_{weights}"
        weighted = quiet(
            partial(
                skm.cohen_kappa_score, y, pred, labels=case.labels, weights=weights,
                sample_weight=w,
            )
        )  # fmt: skip
        if metrics[name] is None:
            assert math.isnan(weighted) or weighted == 0.0
            assert "0/0" in case.output.sink.undefined[name]
        else:
            assert metrics[name] == close(weighted), name


@pytest.mark.parametrize("case", cases())
def test_precision_recall_f1_per_class_and_averaged(case: Case) -> None:
    y, pred, w = case.y, case.predicted, case.w
    precision, recall, f_beta, support = quiet(
        lambda: skm.precision_recall_fscore_support(
            y, pred, labels=case.labels, beta=case.beta, sample_weight=w, zero_division=np.nan
        )
    )
    f1 = quiet(
        lambda: skm.f1_score(
            y, pred, labels=case.labels, average=None, sample_weight=w, zero_division=np.nan
        )
    )
    for name, expected in (
        ("precision", precision), ("recall", recall), ("f1", f1), ("f_beta", f_beta),
        ("support", support),
    ):  # fmt: skip
        ours = case.per_class(name)
        for index, (value, reference) in enumerate(zip(ours, expected, strict=True)):
            if math.isnan(reference):
                assert value is None, (name, index)
                assert name in case.output.per_class[index].undefined
            else:
                assert value == close(reference), (name, index)
    for name, function in (
        ("precision", skm.precision_score), ("recall", skm.recall_score), ("f1", skm.f1_score),
    ):  # fmt: skip
        assert case.metrics[f"{name}_micro"] == close(
            function(y, pred, labels=case.labels, average="micro", sample_weight=w)
        )
        for average in ("macro", "weighted"):
            expected = quiet(
                functools.partial(
                    function, y, pred, labels=case.present, average=average, sample_weight=w,
                    zero_division=np.nan,
                )
            )  # fmt: skip
            averaged = case.metrics[f"{name}_{average}"]
            if math.isnan(expected):
                assert averaged is None
            else:
                assert averaged == close(expected), (name, average)


# --------------------------------------------------------------------------------------------
# Scores: probabilities and top-k


@pytest.mark.parametrize("case", cases(lambda case: case.probabilities))
def test_log_loss_and_brier_score(case: Case) -> None:
    y, s, w = case.y, case.s, case.w
    expected = skm.log_loss(y, s, labels=case.labels, sample_weight=w)
    assert case.metrics["log_loss"] == close(expected)
    brier = skm.brier_score_loss(y, s, labels=case.labels, sample_weight=w, scale_by_half=False)
    assert case.metrics["brier_score"] == close(brier)


@pytest.mark.parametrize("case", cases(lambda case: case.probabilities))
def test_top_label_calibration_error(case: Case) -> None:
    confidence = case.s.max(axis=1)
    correct = (case.predicted == case.y).astype(np.float64)
    edges = np.arange(11) / 10  # options.calibration_bins = 10, as task binary's bins
    gap = 0.0
    for low, high in itertools.pairwise(edges):
        inside = (confidence >= low) & ((confidence < high) | (high == 1.0))
        gap += abs(float(np.dot(case.weights[inside], correct[inside] - confidence[inside])))
    assert case.metrics["expected_calibration_error"] == close(gap / case.weights.sum())


@pytest.mark.parametrize("case", cases(lambda case: not case.probabilities))
def test_probability_metrics_are_undefined_for_other_scores(case: Case) -> None:
    for name in ("log_loss", "brier_score", "expected_calibration_error"):
        assert case.metrics[name] is None
        assert "not probabilities" in case.output.sink.undefined[name]


def _expected_top_k(case: Case, k: int) -> float:
    """Brute force: every order of each row's tied classes, equally likely."""
    hits = np.empty(case.y.size)
    for row, (label, scores) in enumerate(zip(case.y, case.s, strict=True)):
        true = scores[label]
        above = int((scores > true).sum())
        tied = int((scores == true).sum())
        # the true class is equally likely at each place among its ties
        hits[row] = sum(above + place <= k for place in range(1, tied + 1)) / tied
    return float(np.dot(case.weights, hits) / case.weights.sum())


@pytest.mark.parametrize("case", cases(lambda case: case.k >= 3))
def test_top_k_accuracy(case: Case) -> None:
    for k in TOP_K:
        ours = case.metrics[f"top_{k}_accuracy"]
        if k > case.k:
            assert ours is None
            continue
        assert ours == close(_expected_top_k(case, k))
        if not case.ties and k < case.k:
            expected = skm.top_k_accuracy_score(
                case.y, case.s, k=k, labels=case.labels, sample_weight=case.w
            )
            assert ours == close(expected)


def test_top_k_ties_count_pro_rata_where_scikit_learn_picks_the_highest_index() -> None:
    # Row 0: classes 1 and 2 tie above class 0; row 1: all three tie.
    labels = [2, 0]
    scores = [[0.2, 0.4, 0.4], [1 / 3, 1 / 3, 1 / 3]]
    output = compute_multiclass(labels, scores, options=core.Options(top_k=(1, 2)))
    # Row 0: the true class 2 shares 1st-2nd place with class 1: top-1 1/2, top-2 1.
    # Row 1: class 0 ties with two others: top-1 1/3, top-2 2/3.
    assert output.sink.metrics["top_1_accuracy"] == close((1 / 2 + 1 / 3) / 2)
    assert output.sink.metrics["top_2_accuracy"] == close((1 + 2 / 3) / 2)
    # scikit-learn ranks the highest index first among ties: row 0 a hit, row 1 a miss.
    assert skm.top_k_accuracy_score(labels, scores, k=1, labels=[0, 1, 2]) == 0.5
    assert "top_k_ties" in CONVENTIONS


# --------------------------------------------------------------------------------------------
# Ranking: one-vs-rest, micro, one-vs-one


def _binarized(case: Case) -> NDArray[np.int64]:
    """One-hot labels, n x k (label_binarize gives one column for two classes)."""
    binary = np.asarray(label_binarize(case.y, classes=case.labels), dtype=np.int64)
    return np.hstack([1 - binary, binary]) if case.k == 2 else binary


def _ovr_reference(case: Case, function: Callable[..., float]) -> list[float | None]:
    """scikit-learn's binary metric per class, None where the class lacks rows or others."""
    values: list[float | None] = []
    for c in case.labels:
        positive = case.y == c
        mass = case.weights[positive].sum()
        if mass == 0 or mass == case.weights.sum():
            values.append(None)
        else:
            values.append(function(positive, case.s[:, c], sample_weight=case.w))
    return values


def _assert_averages(case: Case, name: str, per_class: list[float | None]) -> None:
    """Macro: mean over the classes with a value; weighted: by class weight."""
    defined = [(c, v) for c, v in enumerate(per_class) if v is not None]
    if not defined:
        assert case.metrics[f"{name}_macro"] is None
        assert case.metrics[f"{name}_weighted"] is None
        return
    mass = case.mass
    weighted = sum(mass[c] * v for c, v in defined) / sum(mass[c] for c, _ in defined)
    assert case.metrics[f"{name}_macro"] == close(np.mean([v for _, v in defined]))
    assert case.metrics[f"{name}_weighted"] == close(weighted)


@pytest.mark.parametrize("case", cases())
def test_one_vs_rest_roc_auc(case: Case) -> None:
    expected = _ovr_reference(case, skm.roc_auc_score)
    ours = case.per_class("roc_auc")
    for value, reference in zip(ours, expected, strict=True):
        assert value == (None if reference is None else close(reference))
    _assert_averages(case, "roc_auc_ovr", expected)
    if case.probabilities and len(case.present) == case.k and case.k >= 3:
        for average in ("macro", "weighted"):
            reference = skm.roc_auc_score(
                case.y, case.s, multi_class="ovr", average=average, sample_weight=case.w
            )
            assert case.metrics[f"roc_auc_ovr_{average}"] == close(reference)


@pytest.mark.parametrize("case", cases())
def test_micro_roc_auc_and_average_precision_flatten_one_vs_rest(case: Case) -> None:
    # scikit-learn's plot_roc example: micro-AUC flattens the n x k one-hot labels and scores
    # (label_binarize + ravel).
    onehot = _binarized(case)
    weights = None if case.w is None else np.repeat(case.w, case.k)
    auc = skm.roc_auc_score(onehot.ravel(), case.s.ravel(), sample_weight=weights)
    ap = skm.average_precision_score(onehot.ravel(), case.s.ravel(), sample_weight=weights)
    assert case.metrics["roc_auc_ovr_micro"] == close(auc)
    assert case.metrics["average_precision_micro"] == close(ap)
    if case.k >= 3:
        assert skm.roc_auc_score(onehot, case.s, average="micro", sample_weight=case.w) == close(
            auc
        )


@pytest.mark.parametrize("case", cases())
def test_average_precision_per_class_and_averaged(case: Case) -> None:
    expected = _ovr_reference(case, skm.average_precision_score)
    ours = case.per_class("average_precision")
    for value, reference in zip(ours, expected, strict=True):
        assert value == (None if reference is None else close(reference))
    _assert_averages(case, "average_precision", expected)
    if len(case.present) == case.k and case.k >= 3:
        for average in ("macro", "weighted"):
            reference = skm.average_precision_score(
                _binarized(case), case.s, average=average, sample_weight=case.w
            )
            assert case.metrics[f"average_precision_{average}"] == close(reference)


@pytest.mark.parametrize("case", cases())
def test_per_class_rows_equal_task_binary_one_vs_rest(case: Case) -> None:
    """Each class's ROC AUC, AP, KS and DeLong interval are task binary's on (y == c, s[:, c])."""
    options = {"max_curve_points": 0}
    for c, row in enumerate(case.output.per_class):
        assert row.class_name == str(c)
        if row.metrics["roc_auc"] is None:
            assert row.undefined["roc_auc"]
            continue
        binary = core.evaluate(
            "binary", case.y == c, case.s[:, c], sample_weight=case.w, options=options
        )
        for name in ("roc_auc", "average_precision", "ks_statistic"):
            assert row.metrics[name] == close(binary.metrics[name]), name
        if "roc_auc" in binary.intervals:
            for key, value in binary.intervals["roc_auc"].to_dict().items():
                expected = row.intervals["roc_auc"].to_dict()[key]
                assert value == (expected if isinstance(value, str) else close(expected))
        else:
            assert row.intervals == {}


def _hand_till(case: Case) -> tuple[float, float]:
    """Brute force over every pair of rows of every pair of present classes, weights as
    frequencies: A(i|j) = sum w_a w_b ([s_a > s_b] + [s_a = s_b] / 2) / (W_i W_j)."""
    w, y, s = case.weights, case.y, case.s
    pair_aucs, prevalence = [], []
    for i, j in itertools.combinations(case.present, 2):
        conditional = []
        for first, second in ((i, j), (j, i)):
            a, b = y == first, y == second
            above = s[a, first][:, None] > s[b, first][None, :]
            equal = s[a, first][:, None] == s[b, first][None, :]
            pairs = np.outer(w[a], w[b])
            score = float((pairs * (above + 0.5 * equal)).sum()) / float(pairs.sum())
            conditional.append(score)
        pair_aucs.append(sum(conditional) / 2)
        prevalence.append(w[y == i].sum() + w[y == j].sum())
    return float(np.mean(pair_aucs)), float(np.average(pair_aucs, weights=prevalence))


@pytest.mark.parametrize("case", cases(lambda case: len(case.present) >= 2))
def test_one_vs_one_roc_auc(case: Case) -> None:
    macro, weighted = _hand_till(case)
    assert case.metrics["roc_auc_ovo_macro"] == close(macro)
    assert case.metrics["roc_auc_ovo_weighted"] == close(weighted)
    if case.w is None and case.probabilities and case.k >= 3:
        for average in ("macro", "weighted"):
            reference = skm.roc_auc_score(
                case.y, case.s, multi_class="ovo", average=average, labels=case.labels
            )
            assert case.metrics[f"roc_auc_ovo_{average}"] == close(reference)


# --------------------------------------------------------------------------------------------
# The macro-average ROC curve


@pytest.mark.parametrize("case", cases())
def test_macro_curve_area_is_the_mean_per_class_auc(case: Case) -> None:
    if case.metrics["roc_auc_ovr_macro"] is None:
        assert "roc_macro" not in case.output.curves
        return
    curve = case.output.curves["roc_macro"]
    fpr, tpr = curve["fpr"], curve["tpr"]
    assert fpr[0] == 0.0 and tpr[0] == 0.0
    assert fpr[-1] == close(1.0) and tpr[-1] == close(1.0)
    assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= -1e-15)
    assert float(np.trapezoid(tpr, fpr)) == close(case.metrics["roc_auc_ovr_macro"])


def test_np_interp_average_loses_the_vertical_segments() -> None:
    # scikit-learn's plot_roc example: mean of np.interp(all_fpr, fpr_i, tpr_i).
    # Class 0's curve is vertical at FPR 0.5, which no other class shares as a vertical step:
    # np.interp takes one end there, the area drops below the mean AUC (scikit-learn #13546).
    labels = np.array([0, 1, 0, 2, 1, 2, 0, 1, 2, 0, 1, 2])
    rng = np.random.default_rng(3)
    scores = _softmax(rng.normal(size=(labels.size, 3)) + 1.2 * np.eye(3)[labels])
    scores = np.round(scores, 1)
    scores /= scores.sum(axis=1, keepdims=True)
    fprs, tprs, aucs = [], [], []
    for c in range(3):
        fpr, tpr, _ = skm.roc_curve(labels == c, scores[:, c])
        fprs.append(fpr)
        tprs.append(tpr)
        aucs.append(skm.auc(fpr, tpr))
    all_fpr = np.unique(np.concatenate(fprs))
    mean_tpr = np.mean([np.interp(all_fpr, f, t) for f, t in zip(fprs, tprs, strict=True)], 0)
    interpolated = skm.auc(all_fpr, mean_tpr)
    output = compute_multiclass(labels, scores, options=core.Options(max_curve_points=ALL_POINTS))
    ours = output.curves["roc_macro"]
    assert output.sink.metrics["roc_auc_ovr_macro"] == close(np.mean(aucs))
    assert float(np.trapezoid(ours["tpr"], ours["fpr"])) == close(np.mean(aucs))
    assert abs(interpolated - np.mean(aucs)) > 1e-3
    # The averaged curve keeps both ends of a vertical step: repeated FPR values.
    assert np.any(np.diff(ours["fpr"]) == 0)


def test_macro_curve_is_thinned_onto_the_exact_curve() -> None:
    rng = np.random.default_rng(11)
    labels = rng.integers(0, 4, 5000)
    scores = _softmax(rng.normal(size=(5000, 4)) + np.eye(4)[labels])
    full = compute_multiclass(labels, scores, options=core.Options(max_curve_points=ALL_POINTS))
    thin = compute_multiclass(labels, scores, options=core.Options(max_curve_points=50))
    exact, thinned = full.curves["roc_macro"], thin.curves["roc_macro"]
    assert thinned["fpr"].size <= 50
    # Every thinned point lies on the exact curve: between its two ends at that FPR.
    for f, t in zip(thinned["fpr"], thinned["tpr"], strict=True):
        at = exact["tpr"][exact["fpr"] == f]
        if at.size:
            assert at.min() - 1e-12 <= t <= at.max() + 1e-12
        else:
            assert t == close(float(np.interp(f, exact["fpr"], exact["tpr"])))
    none = compute_multiclass(labels, scores, options=core.Options(max_curve_points=0))
    assert none.curves == {}


# --------------------------------------------------------------------------------------------
# Absent classes and undefined values


def test_an_absent_class_is_null_with_a_reason_and_left_out_of_macro_averages() -> None:
    labels = [0, 1, 0, 1, 0, 1, 0]
    rng = np.random.default_rng(4)
    scores = _softmax(rng.normal(size=(7, 3)) + 2 * np.eye(3)[labels])
    output = compute_multiclass(
        labels, scores, classes=["cat", "dog", "eel"], options=core.Options()
    )
    eel = output.per_class[2]
    assert eel.class_name == "eel"
    assert eel.metrics["support"] == 0.0
    for name in ("roc_auc", "average_precision", "ks_statistic", "recall"):
        assert eel.metrics[name] is None
        assert "absent" in eel.undefined[name]
    assert any("'eel'" in warning and "absent" in warning for warning in output.sink.warnings)
    metrics = output.sink.metrics
    present_auc = [row.to_dict()["roc_auc"] for row in output.per_class[:2]]
    assert metrics["roc_auc_ovr_macro"] == close(np.mean(present_auc))
    recalls = [row.to_dict()["recall"] for row in output.per_class[:2]]
    assert metrics["recall_macro"] == close(np.mean(recalls))
    assert metrics["balanced_accuracy"] == metrics["recall_macro"]
    # ovo uses the one pair of present classes
    a = skm.roc_auc_score(np.array(labels) == 0, scores[:, 0])
    b = skm.roc_auc_score(np.array(labels) == 1, scores[:, 1])
    assert metrics["roc_auc_ovo_macro"] == close((a + b) / 2)


def test_one_class_present_leaves_one_vs_rest_and_one_vs_one_undefined() -> None:
    output = compute_multiclass(
        [1, 1, 1], [[0.2, 0.7, 0.1], [0.5, 0.4, 0.1], [0.1, 0.1, 0.8]], options=core.Options()
    )
    metrics, undefined = output.sink.metrics, output.sink.undefined
    for name in (
        "roc_auc_ovr_macro", "roc_auc_ovr_weighted", "average_precision_macro",
        "roc_auc_ovo_macro", "roc_auc_ovo_weighted",
    ):  # fmt: skip
        assert metrics[name] is None and undefined[name]
    # micro: 3 positives against 6 negatives, always defined
    onehot = np.eye(3)[[1, 1, 1]]
    scores = np.array([[0.2, 0.7, 0.1], [0.5, 0.4, 0.1], [0.1, 0.1, 0.8]])
    assert metrics["roc_auc_ovr_micro"] == close(skm.roc_auc_score(onehot.ravel(), scores.ravel()))
    assert output.per_class[1].undefined["roc_auc"].startswith("every row")
    assert metrics["mcc"] is None  # one true class: 0/0
    assert any("only class present" in warning for warning in output.sink.warnings)


def test_near_single_class_weights_give_null_not_an_overflow() -> None:
    # 1e-90 of the weight in the second class: the spreads of MCC and kappa round to 0.
    output = compute_multiclass(
        [0, 1, 0], [[0.9, 0.1], [0.2, 0.8], [0.7, 0.3]], sample_weight=[1, 1e-90, 1],
        options=core.Options(),
    )  # fmt: skip
    for name in ("mcc", "cohen_kappa"):
        assert output.sink.metrics[name] is None
        assert "0/0" in output.sink.undefined[name]


def test_a_class_never_predicted_is_left_out_of_precision_averages() -> None:
    labels = [0, 1, 2, 0, 1, 2]
    predictions = [0, 1, 1, 0, 1, 1]  # class 2 never predicted
    scores = np.full((6, 3), 1 / 3)
    output = compute_multiclass(labels, scores, y_pred=predictions, options=core.Options())
    assert output.per_class[2].metrics["precision"] is None
    assert "never predicted" in output.per_class[2].undefined["precision"]
    metrics = output.sink.metrics
    assert metrics["precision_macro"] == close((1.0 + 0.5) / 2)
    expected = skm.precision_score(
        labels, predictions, labels=[0, 1, 2], average="macro", zero_division=np.nan
    )
    assert metrics["precision_macro"] == close(expected)
    assert any(
        "precision_macro" in warning and "'2'" in warning for warning in output.sink.warnings
    )


def test_sent_predictions_replace_the_argmax() -> None:
    labels = [0, 1, 2, 2]
    scores = [[0.5, 0.5, 0.0], [0.2, 0.3, 0.5], [0.1, 0.1, 0.8], [0.3, 0.3, 0.4]]
    argmax = compute_multiclass(labels, scores, options=core.Options())
    # argmax: [0 (tie: lowest index), 2, 2, 2]
    assert argmax.sink.metrics["accuracy"] == close(0.75)
    sent = compute_multiclass(labels, scores, y_pred=[1, 1, 2, 0], options=core.Options())
    assert sent.sink.metrics["accuracy"] == close(0.5)
    # ranking metrics do not depend on the predictions
    for name in ("roc_auc_ovr_macro", "roc_auc_ovo_macro", "average_precision_micro"):
        assert sent.sink.metrics[name] == argmax.sink.metrics[name]


def test_class_names_in_labels_and_predictions() -> None:
    names = ["setosa", "versicolor", "virginica"]
    labels = ["virginica", "setosa", "versicolor", "setosa"]
    scores = [[0.1, 0.2, 0.7], [0.8, 0.1, 0.1], [0.3, 0.4, 0.3], [0.4, 0.5, 0.1]]
    by_name = compute_multiclass(
        labels, scores, y_pred=["virginica", "setosa", "setosa", "versicolor"], classes=names,
        options=core.Options(),
    )  # fmt: skip
    by_index = compute_multiclass([2, 0, 1, 0], scores, y_pred=[2, 0, 0, 1], options=core.Options())
    assert by_name.sink.metrics == by_index.sink.metrics
    assert [row.class_name for row in by_name.per_class] == names


# --------------------------------------------------------------------------------------------
# Catalog and conventions


def test_every_emitted_name_is_in_the_catalog_entries() -> None:
    patterns = [entry.name for entry in CATALOG_ENTRIES]
    for case in CASES[:10]:
        for name in case.metrics:
            assert name in patterns or (
                name.startswith("top_") and name.endswith("_accuracy") and "top_{k}_accuracy"
                in patterns
            ), name  # fmt: skip
    for entry in CATALOG_ENTRIES:
        assert entry.task == "multiclass"
        assert core.CATALOG["multiclass", entry.name] is entry


def test_the_canonical_multiclass_names_are_all_emitted() -> None:
    api = [
        "n_samples", "accuracy", "balanced_accuracy", "mcc", "cohen_kappa", "log_loss",
        "brier_score", "top_1_accuracy", "top_5_accuracy", "roc_auc_ovr_macro",
        "roc_auc_ovr_weighted", "roc_auc_ovr_micro", "roc_auc_ovo_macro", "roc_auc_ovo_weighted",
        "average_precision_macro", "average_precision_weighted", "average_precision_micro",
    ]  # fmt: skip
    api += [
        f"{m}_{a}" for m in ("precision", "recall", "f1") for a in ("micro", "macro", "weighted")
    ]
    rng = np.random.default_rng(2)
    labels = rng.integers(0, 6, 300)
    output = compute_multiclass(labels, _softmax(rng.normal(size=(300, 6))), options=core.Options())
    assert set(api) <= set(output.sink.metrics)
    assert all(output.sink.metrics[name] is not None for name in api)


def test_the_result_carries_the_conventions() -> None:
    output = compute_multiclass([0, 1], [[0.9, 0.1], [0.2, 0.8]], options=core.Options())
    assert output.conventions == CONVENTIONS
    for key in ("top_k_ties", "predictions", "absent_classes", "roc_macro_curve", "roc_auc_ovo"):
        assert key in CONVENTIONS
    assert "13546" in CONVENTIONS["roc_macro_curve"]
