"""The multilabel core against scikit-learn, on seeded random cases, plus degenerate inputs,
bad input and Hypothesis invariants.

scikit-learn is the oracle for every metric. Where our convention differs from its default
(core.multilabel.CONVENTIONS), the reference is the scikit-learn call that states ours:
``zero_division=np.nan`` (0/0 skipped by the averages), ``labels=<labels with positives>`` for
macro and weighted, and, for Jaccard, LRAP and coverage (which have no NaN mode), the call on
the defined labels or rows only. Cases cover ties (scores rounded to 1 decimal or a handful of
levels), float weights with zeros, integer weights, labels never positive and always positive,
rows with no true label, all-zero predictions and sent predictions.

The references work on the rows, the core on sorted columns, so values agree to 1e-9 (relative
and absolute), not bit for bit.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from numpy.typing import NDArray
from sklearn import metrics as skm

from evalserve import core
from evalserve.core import ClassRow, InvalidInputError, Options
from evalserve.core._result import TaskOutput
from evalserve.core.multilabel import CATALOG_ENTRIES, CONVENTIONS, compute_multilabel
from evalserve.core.multilabel import _columns as multilabel_columns
from evalserve.core.multilabel import _ranking as multilabel_ranking

Floats = NDArray[np.float64]
Ints = NDArray[np.int64]
Bools = NDArray[np.bool_]

REL = 1e-9
ABS = 1e-9
LABEL_METRICS = ("precision", "recall", "f1", "jaccard")
AVERAGES = ("micro", "macro", "weighted", "samples")
SCORE_AVERAGES = ("micro", "macro", "weighted")
# The canonical metric names of task multilabel (plus n_samples): the contract.
CANONICAL = (
    "n_samples",
    "subset_accuracy",
    "hamming_loss",
    *(f"{name}_{average}" for name in LABEL_METRICS for average in AVERAGES),
    *(f"roc_auc_{average}" for average in SCORE_AVERAGES),
    *(f"average_precision_{average}" for average in SCORE_AVERAGES),
    "label_ranking_average_precision",
    "coverage_error",
    "equal_error_rate_macro",  # each label's, always (tests/core/test_multilabel_operating.py)
)
ROW_KEYS = (
    "class", "precision", "recall", "f1", "jaccard", "support", "roc_auc", "average_precision",
    "equal_error_rate", "equal_error_rate_threshold",
    "undefined", "intervals",
)  # fmt: skip


def close(value: float) -> Any:
    return pytest.approx(value, rel=REL, abs=ABS)


def reference(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """A scikit-learn call with its UndefinedMetricWarning and friends silenced (the suite
    turns warnings into errors; here they are the expected degenerate cases)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function(*args, **kwargs)


def compute(
    y: Any,
    s: Any = None,
    *,
    pred: Any = None,
    w: Any = None,
    classes: Any = None,
    threshold: float = 0.5,
) -> TaskOutput:
    return compute_multilabel(
        y, s, y_pred=pred, sample_weight=w, classes=classes, options=Options(threshold=threshold)
    )


@dataclass(frozen=True, eq=False)
class Case:
    name: str
    y: Ints  # n x k, 0/1
    s: Floats
    w: Floats | None
    threshold: float
    pred: Ints | None = None  # sent predictions (else score >= threshold)
    _memo: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def output(self) -> TaskOutput:
        if "output" not in self._memo:
            self._memo["output"] = compute(
                self.y, self.s, pred=self.pred, w=self.w, threshold=self.threshold
            )
        output: TaskOutput = self._memo["output"]
        return output

    @property
    def metrics(self) -> dict[str, float | None]:
        return self.output.sink.metrics

    @property
    def p(self) -> Ints:
        if self.pred is not None:
            return self.pred
        return np.asarray(self.s >= self.threshold, dtype=np.int64)

    @property
    def weights(self) -> Floats:
        return np.ones(self.y.shape[0]) if self.w is None else self.w

    @property
    def k(self) -> int:
        return int(self.y.shape[1])

    @property
    def positive_mass(self) -> Floats:
        return np.array([math.fsum(self.weights[self.y[:, j] == 1]) for j in range(self.k)])

    @property
    def negative_mass(self) -> Floats:
        return np.array([math.fsum(self.weights[self.y[:, j] == 0]) for j in range(self.k)])

    @property
    def present(self) -> Ints:
        """Labels with positives of weight > 0."""
        return np.flatnonzero(self.positive_mass > 0)

    @property
    def live(self) -> Bools:
        return self.weights > 0


# --------------------------------------------------------------------------------------------
# Case generation


def _scores(rng: np.random.Generator, y: Ints, kind: str) -> Floats:
    z = rng.normal(size=y.shape) + rng.uniform(0.0, 2.5, y.shape[1]) * y
    probabilities = 1 / (1 + np.exp(-z))
    if kind == "continuous":
        return np.asarray(probabilities, dtype=np.float64)
    if kind == "rounded":  # heavy ties, inside rows and inside columns
        return np.asarray(np.round(probabilities, 1), dtype=np.float64)
    if kind == "levels":  # a handful of values for the whole matrix
        levels = np.sort(rng.random(int(rng.integers(1, 5))))
        index = np.minimum(rng.integers(0, levels.size, y.shape) + y, levels.size - 1)
        return np.asarray(levels[index], dtype=np.float64)
    if kind == "raw":  # margins of any sign, not probabilities
        return np.asarray(np.round(z * 3, 1), dtype=np.float64)
    raise AssertionError(kind)


def _weights(rng: np.random.Generator, n: int, kind: str) -> Floats | None:
    if kind == "none":
        return None
    if kind == "float":  # exponential, about 20% exactly zero
        weights = rng.exponential(size=n) * (rng.random(n) >= 0.2)
    elif kind == "int":
        weights = rng.integers(0, 4, n).astype(np.float64)
    else:
        raise AssertionError(kind)
    if not weights.any():
        weights[int(rng.integers(n))] = 1.0
    return weights


@dataclass(frozen=True)
class Family:
    name: str
    count: int
    rows: tuple[int, int]
    scores: str
    weights: str
    predictions: str = "threshold"  # or "sent" / "none-predicted"


FAMILIES = (
    Family("continuous", 10, (2, 2_000), "continuous", "none"),
    Family("rounded", 10, (2, 2_000), "rounded", "none"),
    Family("levels", 8, (2, 500), "levels", "none"),
    Family("raw", 5, (2, 1_000), "raw", "none"),
    Family("weighted", 9, (2, 2_000), "continuous", "float"),
    Family("weighted-rounded", 9, (2, 2_000), "rounded", "float"),
    Family("int-weights", 6, (2, 500), "levels", "int"),
    Family("tiny", 10, (1, 4), "rounded", "none"),
    Family("tiny-weighted", 6, (1, 4), "continuous", "float"),
    Family("sent-predictions", 6, (2, 1_000), "rounded", "float", "sent"),
    Family("none-predicted", 4, (2, 500), "continuous", "none", "none-predicted"),
    Family("large", 1, (5_000, 5_000), "rounded", "float"),
)


def _make_cases() -> list[Case]:
    cases = []
    for family_index, family in enumerate(FAMILIES):
        for i in range(family.count):
            rng = np.random.default_rng([20240612, family_index, i])
            n = round(math.exp(rng.uniform(math.log(family.rows[0]), math.log(family.rows[1]))))
            k = int(rng.integers(2, 9))
            # Never-positive and always-positive labels, rare and common ones.
            prevalence = rng.choice([0.0, 0.02, 0.1, 0.3, 0.5, 0.9, 1.0], size=k)
            y = (rng.random((n, k)) < prevalence).astype(np.int64)
            s = _scores(rng, y, family.scores)
            w = _weights(rng, n, family.weights)
            threshold = 0.5 if rng.random() < 0.6 else float(rng.choice(s.ravel()))
            pred = None
            if family.predictions == "sent":
                pred = (rng.random((n, k)) < 0.3).astype(np.int64)
            elif family.predictions == "none-predicted":
                threshold = float(s.max()) + 1.0
            cases.append(Case(f"{family.name}-{i}-n{n}-k{k}", y, s, w, threshold, pred))
    return cases


CASES = _make_cases()


def params(keep: Callable[[Case], bool] = lambda case: True) -> list[Any]:
    return [pytest.param(case, id=case.name) for case in CASES if keep(case)]


# --------------------------------------------------------------------------------------------
# Helpers


def assert_undefined(metrics: dict[str, Any], undefined: dict[str, str], name: str) -> None:
    assert metrics[name] is None, f"{name} = {metrics[name]}, expected undefined"
    reason = undefined.get(name)
    assert isinstance(reason, str) and reason, f"{name} is None without a reason"


def assert_metric(case: Case, name: str, expected: float | None) -> None:
    """``expected`` None (or NaN from scikit-learn's zero_division=np.nan): undefined."""
    if expected is None or math.isnan(expected):
        assert_undefined(case.metrics, case.output.sink.undefined, name)
        return
    value = case.metrics[name]
    assert value is not None, f"{name} undefined ({case.output.sink.undefined.get(name)})"
    assert type(value) is float
    assert value == close(expected), name


def columns(y: Ints, s: Floats, keep: Ints) -> tuple[Ints, Floats]:
    """The kept label columns; a single column as 1-d (scikit-learn reads an n x 1 matrix as
    binary, not multilabel)."""
    if keep.size == 1:
        return y[:, keep[0]], s[:, keep[0]]
    return y[:, keep], s[:, keep]


# --------------------------------------------------------------------------------------------
# Hard predictions against scikit-learn


@pytest.mark.parametrize("case", params())
def test_subset_accuracy_and_hamming_loss_match_sklearn(case: Case) -> None:
    assert_metric(case, "subset_accuracy", skm.accuracy_score(case.y, case.p, sample_weight=case.w))
    assert_metric(case, "hamming_loss", skm.hamming_loss(case.y, case.p, sample_weight=case.w))


@pytest.mark.parametrize("average", ["micro", "samples"])
@pytest.mark.parametrize("case", params())
def test_precision_recall_f1_micro_and_samples_match_sklearn_nan(case: Case, average: str) -> None:
    expected = reference(
        skm.precision_recall_fscore_support, case.y, case.p, average=average,
        sample_weight=case.w, zero_division=np.nan,
    )  # fmt: skip
    for name, value in zip(("precision", "recall", "f1"), expected[:3], strict=True):
        assert_metric(case, f"{name}_{average}", value)


@pytest.mark.parametrize("case", params())
def test_precision_recall_f1_macro_match_sklearn_on_labels_with_positives(case: Case) -> None:
    present = case.present
    if present.size == 0:
        for name in ("precision", "recall", "f1"):
            assert_metric(case, f"{name}_macro", None)
        return
    expected = reference(
        skm.precision_recall_fscore_support, case.y, case.p, average="macro",
        labels=present, sample_weight=case.w, zero_division=np.nan,
    )  # fmt: skip
    for name, value in zip(("precision", "recall", "f1"), expected[:3], strict=True):
        assert_metric(case, f"{name}_macro", value)


@pytest.mark.parametrize("case", params())
def test_precision_recall_f1_weighted_match_sklearn_nan(case: Case) -> None:
    per_label = reference(
        skm.precision_recall_fscore_support, case.y, case.p, average=None,
        sample_weight=case.w, zero_division=np.nan,
    )  # fmt: skip
    expected = reference(
        skm.precision_recall_fscore_support, case.y, case.p, average="weighted",
        sample_weight=case.w, zero_division=np.nan,
    )  # fmt: skip
    for index, name in enumerate(("precision", "recall", "f1")):
        kept = ~np.isnan(per_label[index]) & (case.positive_mass > 0)
        # With no defined label of positive support, scikit-learn falls back to an unweighted
        # mean of the labels without support; we call it undefined.
        assert_metric(case, f"{name}_weighted", expected[index] if kept.any() else None)


@pytest.mark.parametrize("case", params())
def test_jaccard_matches_sklearn_on_defined_labels_and_rows(case: Case) -> None:
    y, p, w = case.y, case.p, case.w
    if (y | p).any():  # pooled counts: some cell is true or predicted
        expected = reference(skm.jaccard_score, y, p, average="micro", sample_weight=w)
        assert_metric(case, "jaccard_micro", expected)
    present = case.present
    for average in ("macro", "weighted"):
        expected = None
        if present.size:
            expected = reference(
                skm.jaccard_score, y, p, average=average, labels=present, sample_weight=w
            )
        assert_metric(case, f"jaccard_{average}", expected)
    rows = case.live & ((y | p).sum(axis=1) > 0)
    expected = None
    if rows.any():
        w_rows = None if w is None else w[rows]
        expected = reference(
            skm.jaccard_score, y[rows], p[rows], average="samples", sample_weight=w_rows
        )
    assert_metric(case, "jaccard_samples", expected)


def test_jaccard_micro_undefined_when_nothing_is_true_or_predicted() -> None:
    output = compute(np.zeros((3, 2)), np.zeros((3, 2)))
    assert_undefined(output.sink.metrics, output.sink.undefined, "jaccard_micro")
    assert_undefined(output.sink.metrics, output.sink.undefined, "f1_micro")


# --------------------------------------------------------------------------------------------
# Scores against scikit-learn


@pytest.mark.parametrize("case", params())
def test_roc_auc_matches_sklearn(case: Case) -> None:
    pooled = case.positive_mass.sum() > 0 and case.negative_mass.sum() > 0
    expected = None
    if pooled:
        expected = reference(
            skm.roc_auc_score, case.y, case.s, average="micro", sample_weight=case.w
        )
    assert_metric(case, "roc_auc_micro", expected)
    both = np.flatnonzero((case.positive_mass > 0) & (case.negative_mass > 0))
    for average in ("macro", "weighted"):
        expected = None
        if both.size:
            y, s = columns(case.y, case.s, both)
            expected = reference(skm.roc_auc_score, y, s, average=average, sample_weight=case.w)
        assert_metric(case, f"roc_auc_{average}", expected)


@pytest.mark.parametrize("case", params())
def test_average_precision_matches_sklearn(case: Case) -> None:
    expected = None
    if case.positive_mass.sum() > 0:
        expected = reference(
            skm.average_precision_score, case.y, case.s, average="micro", sample_weight=case.w
        )
    assert_metric(case, "average_precision_micro", expected)
    present = case.present
    for average in ("macro", "weighted"):
        expected = None
        if present.size:
            y, s = columns(case.y, case.s, present)
            expected = reference(
                skm.average_precision_score, y, s, average=average, sample_weight=case.w
            )
        assert_metric(case, f"average_precision_{average}", expected)


@pytest.mark.parametrize("case", params())
def test_ranking_metrics_match_sklearn_on_rows_with_a_true_label(case: Case) -> None:
    rows = case.live & (case.y.sum(axis=1) > 0)
    lrap = coverage = None
    if rows.any():
        w = None if case.w is None else case.w[rows]
        y, s = case.y[rows], case.s[rows]
        lrap = reference(skm.label_ranking_average_precision_score, y, s, sample_weight=w)
        coverage = reference(skm.coverage_error, y, s, sample_weight=w)
    assert_metric(case, "label_ranking_average_precision", lrap)
    assert_metric(case, "coverage_error", coverage)


# --------------------------------------------------------------------------------------------
# Per-label rows against scikit-learn's average=None


@pytest.mark.parametrize("case", params())
def test_per_class_rows_match_sklearn_per_label(case: Case) -> None:
    y, p, s, w = case.y, case.p, case.s, case.w
    precision, recall, f1, support = reference(
        skm.precision_recall_fscore_support, y, p, average=None, sample_weight=w,
        zero_division=np.nan,
    )  # fmt: skip
    jaccard = reference(skm.jaccard_score, y, p, average=None, sample_weight=w, zero_division=0)
    jaccard[(y | p).astype(bool).T @ case.weights == 0] = np.nan  # 0/0: no NaN mode there
    roc_auc = reference(skm.roc_auc_score, y, s, average=None, sample_weight=w)  # NaN: 1 class
    average_precision = reference(skm.average_precision_score, y, s, average=None, sample_weight=w)
    average_precision[case.positive_mass == 0] = np.nan  # scikit-learn: 0 with a warning
    expected = {
        "precision": precision, "recall": recall, "f1": f1, "jaccard": jaccard,
        "support": support, "roc_auc": roc_auc, "average_precision": average_precision,
    }  # fmt: skip
    rows = [row.to_dict() for row in case.output.per_class]
    assert [row["class"] for row in rows] == [str(j) for j in range(case.k)]
    for j, row in enumerate(rows):
        assert tuple(row) == ROW_KEYS
        assert row["intervals"] == {}
        for name, values in expected.items():
            if math.isnan(values[j]):
                assert row[name] is None, (j, name)
                assert row["undefined"][name], (j, name)
            else:
                assert type(row[name]) is float
                assert row[name] == close(values[j]), (j, name)
        undefined = set(row["undefined"]) - {"equal_error_rate", "equal_error_rate_threshold"}
        assert undefined == {name for name in expected if row[name] is None}


def test_ranking_blocks_do_not_change_the_result(monkeypatch: pytest.MonkeyPatch) -> None:
    """Columns are built, and columns and rows ranked, in blocks of at most BLOCK_CELLS cells:
    tiny blocks (one label or a few rows at a time) give the same numbers as one block."""
    case = next(c for c in CASES if c.name.startswith("weighted-rounded") and c.k >= 4)
    whole = compute(case.y, case.s, w=case.w, threshold=case.threshold)
    monkeypatch.setattr(multilabel_columns, "BLOCK_CELLS", 7)
    monkeypatch.setattr(multilabel_ranking, "BLOCK_CELLS", 7)
    blocked = compute(case.y, case.s, w=case.w, threshold=case.threshold)
    assert blocked.sink.metrics == whole.sink.metrics
    assert blocked.per_class == whole.per_class


# --------------------------------------------------------------------------------------------
# Whole results: names, reasons, k = 1 against task binary


@pytest.mark.parametrize("case", params())
def test_every_metric_is_emitted_and_every_null_has_a_reason(case: Case) -> None:
    sink = case.output.sink
    assert tuple(sink.metrics) == CANONICAL
    for name, value in sink.metrics.items():
        if value is None:
            assert sink.undefined[name], name
        else:
            assert type(value) is float and math.isfinite(value), name
    assert set(sink.undefined) == {name for name, value in sink.metrics.items() if value is None}
    assert sink.metrics["n_samples"] == case.y.shape[0]
    assert case.output.conventions == CONVENTIONS


def test_catalog_entries_classify_every_emitted_name() -> None:
    names = [entry.name for entry in CATALOG_ENTRIES]
    assert len(names) == len(set(names))
    # Beside them, the macro averages of the operating points the options ask for.
    assert set(names) - set(CANONICAL) == {
        f"{name}_{{k}}_macro"
        for name in (
            "recall_at_precision", "precision_at_recall", "tpr_at_fpr",
            "specificity_at_sensitivity", "precision_at_flagged_share", "recall_at_flagged_share",
        )
    }  # fmt: skip
    assert set(CANONICAL) <= set(names)
    for entry in CATALOG_ENTRIES:
        assert entry.task == "multilabel"
        assert core.CATALOG["multilabel", entry.name] is entry
    directions = {entry.name: entry.higher_is_better for entry in CATALOG_ENTRIES}
    assert directions["hamming_loss"] is False
    assert directions["coverage_error"] is False
    assert directions["n_samples"] is None


@pytest.mark.parametrize("seed", range(6))
def test_one_label_matches_task_binary(seed: int) -> None:
    rng = np.random.default_rng([3, seed])
    n = int(rng.integers(5, 300))
    y = (rng.random(n) < 0.3).astype(np.int64)
    s = np.round(rng.random(n) * 0.5 + 0.4 * y, 1)
    w = None if seed % 2 else rng.exponential(size=n)
    if y.min() == y.max():
        y[0] = 1 - y[0]
    binary = core.evaluate("binary", y, s, sample_weight=w).metrics
    multilabel = compute(y[:, None], s[:, None], w=w).sink.metrics
    pairs = {
        "subset_accuracy": "accuracy", "hamming_loss": "error_rate",
        "precision_micro": "precision", "recall_macro": "recall", "f1_weighted": "f1",
        "roc_auc_micro": "roc_auc", "roc_auc_macro": "roc_auc",
        "average_precision_micro": "average_precision",
        "average_precision_weighted": "average_precision",
    }  # fmt: skip
    for ours, theirs in pairs.items():
        expected = binary[theirs]
        assert expected is not None
        assert multilabel[ours] == close(expected), ours


# --------------------------------------------------------------------------------------------
# Degenerate inputs, worked by hand


def test_label_never_positive_is_left_out_of_macro_and_named() -> None:
    y = [[1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 0, 0]]
    s = [[0.9, 0.2, 0.7], [0.1, 0.8, 0.1], [0.6, 0.4, 0.2], [0.3, 0.6, 0.1]]
    output = compute(y, s, classes=["cat", "dog", "eel"])
    metrics, rows = output.sink.metrics, {row.class_name: row.to_dict() for row in output.per_class}
    # eel: no positives, one false positive (row 0). Its precision is a fact (0), but it has
    # no recall, AUC or AP, and it stays out of every macro average.
    assert rows["eel"]["precision"] == 0.0
    assert rows["eel"]["recall"] is None and rows["eel"]["undefined"]["recall"]
    assert rows["eel"]["roc_auc"] is None and rows["eel"]["average_precision"] is None
    assert rows["eel"]["support"] == 0.0
    assert any("'eel'" in warning and "no positives" in warning for warning in output.sink.warnings)
    # cat: predicted rows 0, 2 (both right); dog: predicted rows 1, 3 (one right).
    assert rows["cat"]["precision"] == 1.0 and rows["dog"]["precision"] == 0.5
    assert metrics["precision_macro"] == close((1.0 + 0.5) / 2)
    assert metrics["recall_macro"] == close((1.0 + 0.5) / 2)
    # scikit-learn's default averages eel in as a third label.
    sklearn_default = reference(
        skm.precision_score, np.array(y), np.array(s) >= 0.5, average="macro"
    )
    assert sklearn_default == close((1.0 + 0.5 + 0.0) / 3)
    # Micro keeps eel's false positive: 3 right of 5 predicted.
    assert metrics["precision_micro"] == close(3 / 5)


def test_sample_with_no_true_label_is_left_out_of_samples_and_ranking_averages() -> None:
    y = np.array([[1, 0, 0], [0, 1, 1], [0, 0, 0]])
    s = np.array([[0.9, 0.2, 0.1], [0.8, 0.6, 0.1], [0.7, 0.1, 0.2]])
    output = compute(y, s)
    metrics = output.sink.metrics
    # Row 2 has no true label: recall, LRAP and coverage skip it. Row 0: recall 1, LRAP 1,
    # coverage 1. Row 1 predicts {0, 1} for truth {1, 2}: recall 1/2; its true labels rank 2nd
    # (1 true label among the 2 scored >= it) and 3rd (2 among 3): LRAP (1/2 + 2/3) / 2,
    # coverage 3.
    assert metrics["recall_samples"] == close((1 + 0.5) / 2)
    assert metrics["label_ranking_average_precision"] == close((1 + (1 / 2 + 2 / 3) / 2) / 2)
    assert metrics["coverage_error"] == close((1 + 3) / 2)
    # scikit-learn scores that row LRAP 1 and coverage 0.
    assert skm.label_ranking_average_precision_score(y, s) == close(
        (1 + (1 / 2 + 2 / 3) / 2 + 1) / 3
    )
    assert skm.coverage_error(y, s) == close((1 + 3 + 0) / 3)
    # Row 2 predicts label 0 (0.7 >= 0.5): its precision is 0 and counts; so does its F1 of 0.
    # Row 1: TP 1, FP 1, FN 1: precision 1/2, F1 2 / (2 + 1 + 1).
    assert metrics["precision_samples"] == close((1 + 0.5 + 0) / 3)
    assert metrics["f1_samples"] == close((1 + 2 / (2 + 1 + 1) + 0) / 3)
    assert any("1 of 3 samples has no true label" in w for w in output.sink.warnings)


def test_all_zero_predictions_leave_precision_undefined_not_zero() -> None:
    y = np.array([[1, 0], [0, 1], [1, 1], [0, 0]])
    s = np.full(y.shape, 0.1)
    output = compute(y, s)
    metrics, undefined = output.sink.metrics, output.sink.undefined
    for name in ("precision_micro", "precision_macro", "precision_weighted", "precision_samples"):
        assert_undefined(metrics, undefined, name)
    for average in AVERAGES:
        if average != "samples":
            assert metrics[f"recall_{average}"] == 0.0
            assert metrics[f"f1_{average}"] == 0.0
            assert metrics[f"jaccard_{average}"] == 0.0
    # Samples: rows 0-2 have true labels (recall 0, F1 0); row 3 has neither: left out.
    assert metrics["recall_samples"] == 0.0 and metrics["f1_samples"] == 0.0
    assert metrics["subset_accuracy"] == close(1 / 4)
    assert metrics["hamming_loss"] == close(4 / 8)
    # Every score tied: AUC 0.5 per label, AP = prevalence.
    assert metrics["roc_auc_macro"] == close(0.5)
    assert metrics["average_precision_macro"] == close(0.5)
    assert any("never predicted" in warning for warning in output.sink.warnings)
    assert any("no predicted label" in warning for warning in output.sink.warnings)


def test_no_positive_anywhere_leaves_every_positive_based_metric_undefined() -> None:
    y = np.zeros((3, 2), dtype=np.int64)
    s = np.array([[0.9, 0.1], [0.2, 0.3], [0.4, 0.6]])
    output = compute(y, s)
    metrics, undefined = output.sink.metrics, output.sink.undefined
    for name in (
        "recall_micro", "recall_macro", "recall_weighted", "recall_samples", "precision_macro",
        "f1_macro", "jaccard_weighted", "roc_auc_micro", "roc_auc_macro", "roc_auc_weighted",
        "average_precision_micro", "average_precision_macro", "average_precision_weighted",
        "label_ranking_average_precision", "coverage_error",
    ):  # fmt: skip
        assert_undefined(metrics, undefined, name)
    assert metrics["precision_micro"] == 0.0  # two predicted cells, both wrong
    assert metrics["subset_accuracy"] == close(1 / 3)


def test_label_positive_in_every_row_has_no_auc_but_ap_one() -> None:
    y = np.array([[1, 1], [1, 0], [1, 1], [1, 0]])
    s = np.array([[0.9, 0.8], [0.2, 0.3], [0.4, 0.6], [0.5, 0.1]])
    output = compute(y, s, classes=["always", "half"])
    rows = {row.class_name: row.to_dict() for row in output.per_class}
    assert rows["always"]["roc_auc"] is None
    assert "no actual negatives" in rows["always"]["undefined"]["roc_auc"]
    assert rows["always"]["average_precision"] == 1.0
    assert output.sink.metrics["roc_auc_macro"] == close(rows["half"]["roc_auc"])
    assert output.sink.metrics["average_precision_macro"] == close(
        (1.0 + rows["half"]["average_precision"]) / 2
    )
    assert any("'always'" in warning for warning in output.sink.warnings)


def test_sent_predictions_replace_the_threshold_and_serve_as_scores_when_alone() -> None:
    y = np.array([[1, 0], [0, 1], [1, 1], [0, 0]])
    s = np.array([[0.9, 0.8], [0.2, 0.3], [0.4, 0.6], [0.5, 0.1]])
    pred = np.array([[1, 0], [0, 0], [1, 1], [1, 0]])
    with_scores = compute(y, s, pred=pred).sink.metrics
    assert with_scores["precision_micro"] == close(3 / 4)
    assert with_scores["roc_auc_micro"] == close(skm.roc_auc_score(y, s, average="micro"))
    alone = compute(y, pred=pred).sink.metrics
    assert alone["precision_micro"] == with_scores["precision_micro"]
    assert alone["roc_auc_micro"] == close(skm.roc_auc_score(y, pred, average="micro"))


def test_rows_of_weight_zero_leave_no_trace() -> None:
    rng = np.random.default_rng(5)
    y = (rng.random((40, 4)) < 0.4).astype(np.int64)
    s = np.round(rng.random((40, 4)), 1)
    w = rng.integers(0, 3, 40).astype(np.float64)
    w[0] = 1.0
    kept = w > 0
    full = compute(y, s, w=w)
    trimmed = compute(y[kept], s[kept], w=w[kept])
    assert_same_metrics(trimmed, full, skip=("n_samples",))
    for got, expected in zip(trimmed.per_class, full.per_class, strict=True):
        assert_same_row(got, expected)


def test_label_names_in_warnings_are_capped() -> None:
    y = np.zeros((2, 30), dtype=np.int64)
    y[:, 0] = [1, 0]
    output = compute(y, np.full(y.shape, 0.2))
    warning = next(w for w in output.sink.warnings if "no positives" in w)
    assert "'1', '2'" in warning and "and 19 more" in warning and "'29'" not in warning


# --------------------------------------------------------------------------------------------
# Bad input: InvalidInputError naming the field

GOOD_Y = [[0, 1], [1, 0], [1, 1]]
GOOD_S = [[0.1, 0.9], [0.8, 0.3], [0.6, 0.7]]


@pytest.mark.parametrize(
    ("kwargs", "field", "fragment"),
    [
        pytest.param({"y": None}, "labels", "required", id="labels-none"),
        pytest.param({"y": [0, 1, 1]}, "labels", "2-d", id="labels-1d"),
        pytest.param({"y": [[[0, 1]], [[1, 0]], [[1, 1]]]}, "labels", "2-d", id="labels-3d"),
        pytest.param({"y": [], "s": []}, "labels", "2-d", id="labels-empty"),
        pytest.param({"y": [[]], "s": [[]]}, "labels", "label column", id="labels-no-columns"),
        pytest.param({"y": [[0, 1], [1]]}, "labels", "row 1 has 1", id="labels-ragged"),
        pytest.param({"y": [[0, 1], [2, 0], [1, 1]]}, "labels", "row 1, column 0 is 2", id="y2"),
        pytest.param({"y": [[0, 1], [1, 0.5], [1, 1]]}, "labels", "0 or 1", id="labels-half"),
        pytest.param({"y": [["a", "b"]] * 3}, "labels", "0 or 1", id="labels-str"),
        pytest.param({"y": [[0, None], [1, 0], [1, 1]]}, "labels", "0 or 1", id="labels-null"),
        pytest.param({"s": [[0.1], [0.2], [0.3]]}, "scores", "expected 2 columns", id="s-width"),
        pytest.param({"s": GOOD_S[:2]}, "scores", "expected 3 rows", id="scores-rows"),
        pytest.param({"s": [0.1, 0.2, 0.3]}, "scores", "2-d", id="scores-1d"),
        pytest.param(
            {"s": [[0.1, 0.9], [0.8, np.nan], [0.6, 0.7]]},
            "scores",
            "row 1, column 1",
            id="scores-nan",
        ),
        pytest.param(
            {"s": [[0.1, 0.9], [0.8, 0.3], [-np.inf, 0.7]]},
            "scores",
            "row 2, column 0",
            id="scores-inf",
        ),
        pytest.param({"s": [["x", "y"]] * 3}, "scores", "numbers", id="scores-str"),
        pytest.param({"s": None}, "scores", "required", id="no-scores-no-predictions"),
        pytest.param({"pred": [[0, 1], [1, 3], [1, 1]]}, "predictions", "0 or 1", id="pred-3"),
        pytest.param({"pred": [[0, 1], [1, 0]]}, "predictions", "3 rows", id="pred-rows"),
        pytest.param({"pred": [[0], [1], [1]]}, "predictions", "2 columns", id="pred-width"),
        pytest.param({"w": [1, -1, 1]}, "weights", "non-negative", id="weights-negative"),
        pytest.param({"w": [1, 1]}, "weights", "expected 3", id="weights-length"),
        pytest.param({"w": [0, 0, 0]}, "weights", "all weights are zero", id="weights-zero"),
        pytest.param({"w": [1, np.nan, 1]}, "weights", "finite", id="weights-nan"),
        pytest.param({"classes": ["a"]}, "classes", "expected 2 names", id="classes-length"),
        pytest.param({"classes": ["a", "a"]}, "classes", "distinct", id="classes-duplicate"),
        pytest.param({"classes": "ab"}, "classes", "list of names", id="classes-string"),
        pytest.param({"classes": ["a", None]}, "classes", "item 1", id="classes-null"),
        pytest.param({"classes": ["a", ""]}, "classes", "non-empty", id="classes-empty-name"),
        pytest.param({"classes": [["a"], "b"]}, "classes", "item 0", id="classes-nested"),
    ],
)
def test_bad_input_names_the_field(kwargs: dict[str, Any], field: str, fragment: str) -> None:
    call: dict[str, Any] = {"y": GOOD_Y, "s": GOOD_S}
    call.update(kwargs)
    with pytest.raises(InvalidInputError) as caught:
        compute(**call)
    assert caught.value.field == field
    assert fragment in caught.value.message, caught.value.message


def test_predictions_alone_and_named_classes_are_accepted() -> None:
    output = compute(GOOD_Y, pred=np.array(GOOD_Y, dtype=bool), classes=np.array(["x", "y"]))
    assert [row.class_name for row in output.per_class] == ["x", "y"]
    assert output.sink.metrics["subset_accuracy"] == 1.0
    numbered = compute(GOOD_Y, GOOD_S, classes=[10, 20])
    assert [row.class_name for row in numbered.per_class] == ["10", "20"]


# --------------------------------------------------------------------------------------------
# Hypothesis: invariants over small, tie-heavy inputs (integer weights: sums exact)

properties = settings(max_examples=60, deadline=None)
INVARIANT = 1e-12


@dataclass(frozen=True, eq=False)
class Rows:
    y: Ints
    s: Floats
    w: Floats | None

    def compute(self, classes: list[str] | None = None) -> TaskOutput:
        return compute(self.y, self.s, w=self.w, classes=classes)


@st.composite
def multilabel_rows(draw: st.DrawFn, weighted: bool | None = None) -> Rows:
    n = draw(st.integers(1, 12))
    k = draw(st.integers(1, 5))
    y = draw(arrays(np.int64, (n, k), elements=st.integers(0, 1)))
    # Quarters: many ties inside rows and columns, some at the threshold 0.5.
    s = draw(arrays(np.float64, (n, k), elements=st.integers(0, 4).map(lambda q: q / 4)))
    if weighted is None:
        weighted = draw(st.booleans())
    w = None
    if weighted:
        w = draw(arrays(np.float64, n, elements=st.integers(0, 3).map(float)))
        if not w.any():
            w[0] = 1.0
    return Rows(y, s, w)


def assert_same_metrics(
    got: TaskOutput, expected: TaskOutput, *, skip: tuple[str, ...] = ()
) -> None:
    for name, value in expected.sink.metrics.items():
        if name in skip:
            continue
        other = got.sink.metrics[name]
        if value is None:
            assert other is None, name
        else:
            assert other is not None, name
            assert other == pytest.approx(value, rel=INVARIANT, abs=INVARIANT), name


def assert_same_row(got_row: ClassRow, expected_row: ClassRow) -> None:
    got, expected = got_row.to_dict(), expected_row.to_dict()
    assert got["class"] == expected["class"]
    assert got["undefined"] == expected["undefined"]
    for name in ROW_KEYS[1:-2]:
        if expected[name] is None:
            assert got[name] is None, name
        else:
            assert got[name] == pytest.approx(expected[name], rel=INVARIANT, abs=INVARIANT), name


@properties
@given(rows=multilabel_rows(), data=st.data())
def test_row_order_does_not_matter(rows: Rows, data: st.DataObject) -> None:
    order = np.array(data.draw(st.permutations(range(rows.y.shape[0]))), dtype=np.intp)
    shuffled = Rows(rows.y[order], rows.s[order], None if rows.w is None else rows.w[order])
    original, permuted = rows.compute(), shuffled.compute()
    assert_same_metrics(permuted, original)
    for got, expected in zip(permuted.per_class, original.per_class, strict=True):
        assert_same_row(got, expected)


@properties
@given(rows=multilabel_rows(weighted=True))
def test_integer_weight_equals_repeated_rows(rows: Rows) -> None:
    assert rows.w is not None
    repeat = rows.w.astype(np.intp)
    repeated = Rows(np.repeat(rows.y, repeat, axis=0), np.repeat(rows.s, repeat, axis=0), None)
    weighted, expanded = rows.compute(), repeated.compute()
    assert_same_metrics(expanded, weighted, skip=("n_samples",))
    for got, expected in zip(expanded.per_class, weighted.per_class, strict=True):
        assert_same_row(got, expected)


@properties
@given(rows=multilabel_rows(), data=st.data())
def test_permuting_labels_permutes_the_rows_and_keeps_the_averages(
    rows: Rows, data: st.DataObject
) -> None:
    k = rows.y.shape[1]
    order = np.array(data.draw(st.permutations(range(k))), dtype=np.intp)
    names = [f"label{j}" for j in range(k)]
    original = rows.compute(names)
    permuted = Rows(rows.y[:, order], rows.s[:, order], rows.w).compute([names[j] for j in order])
    assert_same_metrics(permuted, original)
    for position, j in enumerate(order):
        assert_same_row(permuted.per_class[position], original.per_class[j])


def test_case_mix_covers_the_hard_inputs() -> None:
    """The generated cases really contain what the module docstring promises."""
    assert len(CASES) >= 80
    assert sum(case.present.size < case.k for case in CASES) >= 20  # a label never positive
    assert sum(bool((case.negative_mass == 0).any()) for case in CASES) >= 20  # always positive
    assert sum(bool((case.y.sum(axis=1) == 0).any()) for case in CASES) >= 25  # empty rows
    assert sum(np.unique(case.s).size * 5 <= case.s.size for case in CASES) >= 30  # ties
    assert sum(case.w is not None and bool((case.w == 0).any()) for case in CASES) >= 20
    assert sum(not case.p.any() for case in CASES) >= 4  # nothing predicted
    assert sum(case.pred is not None for case in CASES) >= 5
