"""Multiclass averaging as the literature writes it, each recipe run as written.

These sources give formulas and code for multiclass averaging but no worked numbers, so each
test implements the source's own recipe on a fixed data set and compares it with the core.

- Zhou, "Machine Learning" (Tsinghua University Press, 2016), ch. 2: micro-P/R/F1 from the TP,
  FP, FN averaged over the per-class binary confusion matrices; macro-P/R as means; macro-F1 as
  the F1 of macro-P and macro-R (which differs from scikit-learn's mean per-class F1).
- scikit-learn's multiclass ROC example (``plot_roc`` in its gallery): micro-AUC from
  ``roc_curve`` of the ``label_binarize``-d labels and scores, flattened with ``ravel``;
  macro-AUC by interpolating every class's ROC curve at the union of FPR values, which differs
  from ``roc_auc_score``'s macro where a class's curve has vertical steps.
- scikit-learn's user guide table of multiclass and multilabel averages (after Manning,
  Raghavan & Schütze, "Introduction to Information Retrieval", 2008, ch. 8 and 13):
  P(A, B) = |A & B| / |A| over (sample, label) sets for the None, micro, macro and weighted
  averages of precision, recall and F-beta.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray
from sklearn import metrics as skm

from evalserve.core import Options
from evalserve.core.multiclass import CONVENTIONS, compute_multiclass

Floats = NDArray[np.float64]
RNG = np.random.default_rng(7)
N, K = 400, 4
LABELS = RNG.integers(0, K, N)
_LOGITS = RNG.normal(size=(N, K)) + 1.3 * np.eye(K)[LABELS]
SCORES = np.exp(_LOGITS) / np.exp(_LOGITS).sum(axis=1, keepdims=True)
PREDICTED = SCORES.argmax(axis=1)
BETA = 2.0
OUTPUT = compute_multiclass(LABELS, SCORES, options=Options(beta=BETA, max_curve_points=100_000))
METRICS = OUTPUT.sink.metrics


def close(value: float | None) -> object:
    return pytest.approx(value, rel=1e-12, abs=1e-12)


def _binary_counts() -> list[tuple[int, int, int]]:
    """Zhou (2016): one binary confusion matrix per class (class c positive): (TP, FP, FN)."""
    truth, predicted = LABELS, PREDICTED
    return [
        (
            int(np.sum((predicted == c) & (truth == c))),
            int(np.sum((predicted == c) & (truth != c))),
            int(np.sum((predicted != c) & (truth == c))),
        )
        for c in range(K)
    ]


def test_zhou_micro_averages_the_confusion_counts() -> None:
    counts = np.array(_binary_counts(), dtype=np.float64)
    tp, fp, fn = counts.mean(axis=0)  # averaged TP, FP, FN
    micro_p = tp / (tp + fp)
    micro_r = tp / (tp + fn)
    micro_f1 = 2 * micro_p * micro_r / (micro_p + micro_r)
    assert METRICS["precision_micro"] == close(micro_p)
    assert METRICS["recall_micro"] == close(micro_r)
    assert METRICS["f1_micro"] == close(micro_f1)
    # one label and one prediction per row: every micro average is the accuracy
    assert micro_p == close(METRICS["accuracy"])


def test_zhou_macro_precision_recall_and_macro_f1() -> None:
    precision = [tp / (tp + fp) for tp, fp, _ in _binary_counts()]
    recall = [tp / (tp + fn) for tp, _, fn in _binary_counts()]
    macro_p, macro_r = float(np.mean(precision)), float(np.mean(recall))
    assert METRICS["precision_macro"] == close(macro_p)
    assert METRICS["recall_macro"] == close(macro_r)
    # Zhou's macro-F1 is the F1 of macro-P and macro-R; f1_macro is the mean per-class F1
    # (scikit-learn), which differs: CONVENTIONS says so.
    zhou = 2 * macro_p * macro_r / (macro_p + macro_r)
    per_class_f1 = [2 * p * r / (p + r) for p, r in zip(precision, recall, strict=True)]
    assert METRICS["f1_macro"] == close(float(np.mean(per_class_f1)))
    assert abs(METRICS["f1_macro"] - zhou) > 1e-6  # type: ignore[operator]
    assert "Zhou" in CONVENTIONS["f1_macro"]


def test_plot_roc_micro_auc_is_the_auc_of_the_flattened_problem() -> None:
    # The example's code: fpr, tpr = roc_curve(y_test.ravel(), y_score.ravel()); auc(fpr, tpr)
    y_test = np.eye(K)[LABELS]
    fpr_micro, tpr_micro, _ = skm.roc_curve(y_test.ravel(), SCORES.ravel())
    auc_micro = skm.auc(fpr_micro, tpr_micro)
    assert METRICS["roc_auc_ovr_micro"] == close(auc_micro)
    # equivalent to calling roc_auc_score(..., average="micro")
    assert METRICS["roc_auc_ovr_micro"] == close(skm.roc_auc_score(y_test, SCORES, average="micro"))


def _plot_roc_macro(scores: Floats) -> tuple[float, float]:
    """The example's macro curve (merge every class's FPR values, drop duplicates, interpolate
    each class's TPR there and average) and roc_auc_score's macro, on ``scores``."""
    y_test = np.eye(K)[LABELS]
    fprs, tprs = [], []
    for idx in range(K):
        fpr, tpr, _ = skm.roc_curve(y_test[:, idx], scores[:, idx])
        fprs.append(fpr)
        tprs.append(tpr)
    all_fpr = np.unique(np.concatenate(fprs))
    mean_tpr = np.zeros_like(all_fpr)
    for idx in range(K):
        mean_tpr += np.interp(all_fpr, fprs[idx], tprs[idx])  # scipy.interp in old versions
    mean_tpr /= K
    return float(skm.auc(all_fpr, mean_tpr)), float(
        skm.roc_auc_score(LABELS, scores, multi_class="ovr", average="macro")
    )


def test_plot_roc_macro_interpolation_differs_but_vertical_averaging_does_not() -> None:
    # With ties (scores rounded to 2 decimals) the per-class curves have vertical steps at
    # FPR values other classes lack; np.interp keeps one end of each, so its area differs.
    rounded = np.round(SCORES, 2)
    rounded /= rounded.sum(axis=1, keepdims=True)
    interpolated, macro = _plot_roc_macro(rounded)
    output = compute_multiclass(LABELS, rounded, options=Options(max_curve_points=100_000))
    curve = output.curves["roc_macro"]
    assert output.sink.metrics["roc_auc_ovr_macro"] == close(macro)
    assert float(np.trapezoid(curve["tpr"], curve["fpr"])) == close(macro)
    assert abs(interpolated - macro) > 1e-6


def test_plot_roc_macro_curve_on_the_fixed_data() -> None:
    _, macro = _plot_roc_macro(SCORES)
    curve = OUTPUT.curves["roc_macro"]
    assert METRICS["roc_auc_ovr_macro"] == close(macro)
    assert float(np.trapezoid(curve["tpr"], curve["fpr"])) == pytest.approx(macro, abs=1e-12)


def _sets() -> tuple[set[tuple[int, int]], set[tuple[int, int]]]:
    """The user guide's table: y = the (sample, predicted label) pairs, y_hat = the (sample,
    true label) pairs."""
    predicted = {(i, int(label)) for i, label in enumerate(PREDICTED)}
    true = {(i, int(label)) for i, label in enumerate(LABELS)}
    return predicted, true


def _p(a: set[tuple[int, int]], b: set[tuple[int, int]]) -> float:
    return len(a & b) / len(a)


def _r(a: set[tuple[int, int]], b: set[tuple[int, int]]) -> float:
    return len(a & b) / len(b)


def _f(a: set[tuple[int, int]], b: set[tuple[int, int]], beta: float) -> float:
    p, r = _p(a, b), _r(a, b)
    return (1 + beta**2) * p * r / (beta**2 * p + r)


def test_user_guide_average_table() -> None:
    y, y_hat = _sets()
    by_label = [
        ({pair for pair in y if pair[1] == label}, {pair for pair in y_hat if pair[1] == label})
        for label in range(K)
    ]
    support = np.array([len(true) for _, true in by_label], dtype=np.float64)
    # None: one value per label
    rows = OUTPUT.per_class
    for (predicted, true), row in zip(by_label, rows, strict=True):
        assert row.metrics["precision"] == close(_p(predicted, true))
        assert row.metrics["recall"] == close(_r(predicted, true))
        assert row.metrics["f_beta"] == close(_f(predicted, true, BETA))
        assert row.metrics["f1"] == close(_f(predicted, true, 1.0))
    # Micro: P(y, y_hat) over all pairs
    assert METRICS["precision_micro"] == close(_p(y, y_hat))
    assert METRICS["recall_micro"] == close(_r(y, y_hat))
    # Macro: 1/|L| sum over labels; weighted: by |y_hat_l|
    for name, function in (("precision", _p), ("recall", _r)):
        values = np.array([function(predicted, true) for predicted, true in by_label])
        assert METRICS[f"{name}_macro"] == close(float(values.mean()))
        assert METRICS[f"{name}_weighted"] == close(float(np.dot(support, values) / support.sum()))
    f1 = np.array([_f(predicted, true, 1.0) for predicted, true in by_label])
    assert METRICS["f1_macro"] == close(float(f1.mean()))
    assert METRICS["f1_weighted"] == close(float(np.dot(support, f1) / support.sum()))
