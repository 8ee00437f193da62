"""Worked examples of binary metrics from the literature, with the numbers they give.

- Fawcett's 20-instance ROC example (Fawcett 2006, "An introduction to ROC analysis", Pattern
  Recognition Letters 27(8), Fig. 3 and its discussion: best accuracy, class skew, tied scores,
  negated classifiers, KS as the largest gap to the diagonal).
- The textbook rank-formula AUC examples (4 and 7 samples, with and without ties) and the
  sensitivity/specificity/F-beta identities of the classification chapter of Zhou, "Machine
  Learning" (Tsinghua University Press, 2016), ch. 2; the weighted AUC by pairs, by hand.
- The precision/recall examples of detection and retrieval write-ups: 100 photos (60 positive),
  a high-precision and a high-recall model, the 15-image precision-recall example with its
  PASCAL VOC 11-point AP (Everingham et al. 2010), and a top-K example.
"""

from __future__ import annotations

import numpy as np
import pytest

from evalserve.core import evaluate

# Fawcett's 20-instance ROC example (Fawcett 2006, Fig. 3): 20 instances, p/n and score.
FAWCETT_CLASSES = "ppnpppnnpnpnpnnnpnpn"
FAWCETT_SCORES = [
    0.9, 0.8, 0.7, 0.6, 0.55, 0.54, 0.53, 0.52, 0.51, 0.505,
    0.4, 0.39, 0.38, 0.37, 0.36, 0.35, 0.34, 0.33, 0.30, 0.1,
]  # fmt: skip
FAWCETT_LABELS = [int(c == "p") for c in FAWCETT_CLASSES]


def _fawcett(**options: object) -> dict[str, float | None]:
    return evaluate("binary", FAWCETT_LABELS, FAWCETT_SCORES, options=dict(options)).metrics


def test_fawcett_table_auc_is_0_68() -> None:
    assert _fawcett()["roc_auc"] == pytest.approx(0.68, abs=1e-12)


def test_fawcett_roc_curve_walks_every_threshold() -> None:
    # One ROC point per threshold: 20 thresholds plus the (0, 0) start; at 0.9 only instance 1
    # is positive, giving (0, 0.1); at the lowest score everything is positive, giving (1, 1).
    result = evaluate("binary", FAWCETT_LABELS, FAWCETT_SCORES)
    roc = result.curves["roc"]
    assert roc["fpr"].size == 21
    assert (roc["fpr"][0], roc["tpr"][0]) == (0.0, 0.0)
    assert (roc["fpr"][1], roc["tpr"][1], roc["thresholds"][1]) == (0.0, 0.1, 0.9)
    assert (roc["fpr"][-1], roc["tpr"][-1], roc["thresholds"][-1]) == (1.0, 1.0, 0.1)


def test_fawcett_best_accuracy_is_70_percent_at_0_54() -> None:
    # Fawcett (2006): the curve reaches its best accuracy, 70%, at (0.1, 0.5), threshold 0.54.
    metrics = _fawcett(threshold=0.54)
    assert (metrics["fpr"], metrics["recall"], metrics["accuracy"]) == (0.1, 0.5, 0.7)
    for score in FAWCETT_SCORES:
        accuracy = _fawcett(threshold=score)["accuracy"]
        assert accuracy is not None
        assert accuracy <= 0.7
    # At 0.6 instances 1-4 are called positive (the textbook's worked threshold on this table).
    at_06 = _fawcett(threshold=0.6)
    assert (at_06["tp"], at_06["fp"]) == (3.0, 1.0)


def test_fawcett_ks_is_the_largest_gap_to_the_diagonal() -> None:
    # KS = the largest distance between the ROC curve and TPR = FPR; by hand, the gap
    # TPR - FPR is largest at threshold 0.54: 0.5 - 0.1 = 0.4.
    metrics = _fawcett()
    assert metrics["ks_statistic"] == pytest.approx(0.4, abs=1e-12)
    assert metrics["ks_threshold"] == 0.54
    assert metrics["optimal_threshold_youden"] == 0.54


def test_fawcett_negated_classifier_mirrors_the_auc() -> None:
    # Fawcett (2006): negating a classifier's decisions maps (fpr, tpr) to (1 - fpr, 1 - tpr).
    negated = evaluate("binary", FAWCETT_LABELS, [-s for s in FAWCETT_SCORES]).metrics
    assert negated["roc_auc"] == pytest.approx(1 - 0.68, abs=1e-12)


def test_fawcett_class_skew_leaves_roc_alone_but_moves_precision() -> None:
    # Fawcett (2006), class skew: ten times the negatives leave the ROC curve unchanged;
    # precision drops.
    weights = [1.0 if label else 10.0 for label in FAWCETT_LABELS]
    plain = evaluate("binary", FAWCETT_LABELS, FAWCETT_SCORES, options={"threshold": 0.54})
    skewed = evaluate(
        "binary",
        FAWCETT_LABELS,
        FAWCETT_SCORES,
        sample_weight=weights,
        options={"threshold": 0.54},
    )
    assert skewed.metrics["roc_auc"] == pytest.approx(plain.metrics["roc_auc"], abs=1e-12)
    np.testing.assert_allclose(skewed.curves["roc"]["fpr"], plain.curves["roc"]["fpr"])
    np.testing.assert_allclose(skewed.curves["roc"]["tpr"], plain.curves["roc"]["tpr"])
    assert plain.metrics["precision"] == pytest.approx(5 / 6)
    assert skewed.metrics["precision"] == pytest.approx(5 / 15)


def test_fawcett_tied_block_is_one_diagonal_segment() -> None:
    # Fawcett (2006): 6 positives and 4 negatives with the same score: the ROC curve is the diagonal
    # of the optimistic/pessimistic rectangle, one segment from (0, 0) to (1, 1).
    result = evaluate("binary", [1] * 6 + [0] * 4, [0.7] * 10)
    assert result.metrics["roc_auc"] == 0.5
    assert result.curves["roc"]["fpr"].tolist() == [0.0, 1.0]
    assert result.curves["roc"]["tpr"].tolist() == [0.0, 1.0]


def test_fawcett_perfect_ranking_reaches_full_accuracy() -> None:
    # Fawcett (2006): AUC = 1 means some threshold classifies every instance correctly, though a
    # threshold of 0.5 may not. The scores are ours, built to give the example's numbers: 6 of 10
    # positive, 80% accuracy at 0.5, 90% at the prior 0.6, 100% at 0.7.
    labels = [1, 1, 1, 1, 1, 1, 0, 0, 0, 0]
    scores = [0.99, 0.95, 0.9, 0.85, 0.8, 0.75, 0.65, 0.55, 0.4, 0.3]
    accuracy = {
        t: evaluate("binary", labels, scores, options={"threshold": t}).metrics["accuracy"]
        for t in (0.5, 0.6, 0.7)
    }
    assert accuracy == {0.5: 0.8, 0.6: 0.9, 0.7: 1.0}
    assert evaluate("binary", labels, scores).metrics["roc_auc"] == 1.0


@pytest.mark.parametrize("score_d", [0.8, 8.0], ids=["0.8", "8.0-as-printed"])
def test_four_sample_auc_is_0_75(score_d: float) -> None:
    # The textbook 4-sample example: A(0, .1) B(0, .4) C(1, .35) D(1, .8): pairs (D,B) (D,A)
    # (C,A) win, (C,B) loses. Some copies print D's score as "8.0", a slip for 0.8; the AUC
    # depends on ranks only.
    metrics = evaluate("binary", [0, 0, 1, 1], [0.1, 0.4, 0.35, score_d]).metrics
    assert metrics["roc_auc"] == 0.75


def test_four_sample_auc_with_a_tie_is_0_875() -> None:
    # The same example with C and B tied at 0.4: the pair counts 0.5, (1 + 1 + 1 + 0.5) / 4.
    assert evaluate("binary", [0, 0, 1, 1], [0.1, 0.4, 0.4, 0.8]).metrics["roc_auc"] == 0.875


def test_seven_sample_rank_formula_with_ties_is_10_12() -> None:
    # The rank formula AUC = (sum of positive ranks - P(P+1)/2) / (P N) with averaged ranks:
    # positives at ranks 7, 6 and two at (5+4+3+2)/4; (7+6+3.5+3.5-10) / (4*3).
    labels = [1, 1, 0, 0, 1, 1, 0]
    scores = [0.8, 0.7, 0.5, 0.5, 0.5, 0.5, 0.3]
    assert evaluate("binary", labels, scores).metrics["roc_auc"] == pytest.approx(10 / 12)


def test_weighted_auc_counts_pairs_by_weight() -> None:
    # Weighted AUC: each positive-negative pair counts w_pos * w_neg. By hand:
    # (.9 vs .8) 1*2 won, (.9 vs .1) 1*1 won, (.3 vs .8) 3*2 lost, (.3 vs .1) 3*1 won: 6 / 12.
    metrics = evaluate(
        "binary", [1, 0, 1, 0], [0.9, 0.8, 0.3, 0.1], sample_weight=[1, 2, 3, 1]
    ).metrics
    assert metrics["roc_auc"] == 0.5


def _counts(tp: int, fp: int, tn: int, fn: int) -> tuple[list[int], list[float]]:
    """Rows that give exactly these counts at threshold 0.5."""
    labels = [1] * tp + [0] * fp + [0] * tn + [1] * fn
    scores = [1.0] * (tp + fp) + [0.0] * (tn + fn)
    return labels, scores


def test_hundred_photos() -> None:
    # 100 photos: 60 e-bikes (positive), 40 motorbikes; the model calls 50 positive, 40 rightly.
    labels, scores = _counts(tp=40, fp=10, tn=30, fn=20)
    metrics = evaluate("binary", labels, scores).metrics
    assert metrics["n_predicted_positive"] == 50 and metrics["n_predicted_negative"] == 50
    assert metrics["n_positive"] == 60 and metrics["n_negative"] == 40
    assert metrics["accuracy"] == 0.7
    assert metrics["error_rate"] == pytest.approx(0.3)
    assert metrics["precision"] == 0.8
    assert metrics["recall"] == pytest.approx(40 / 60)
    assert round(metrics["recall"] or 0, 2) == 0.67


def test_high_precision_model() -> None:
    # A high-precision model: 50 called positive, all right; 200 called negative, all wrong.
    labels, scores = _counts(tp=50, fp=0, tn=0, fn=200)
    result = evaluate("binary", labels, scores)
    assert result.metrics["precision"] == 1.0
    assert result.metrics["error_rate"] == 200 / 250
    # No negatives at all: specificity is 0/0, undefined rather than 0.
    assert result.metrics["specificity"] is None
    assert "no actual negatives" in result.undefined["specificity"]


def test_high_recall_model() -> None:
    # A high-recall model: 110 called positive, 10 right; no negatives.
    labels, scores = _counts(tp=10, fp=100, tn=0, fn=0)
    metrics = evaluate("binary", labels, scores).metrics
    assert metrics["recall"] == 1.0
    assert metrics["error_rate"] == pytest.approx(100 / 110)
    assert round(metrics["error_rate"] or 0, 2) == 0.91


# The 15-image precision-recall example: confidence scores and truth.
PR_SCORES = [0.86, 0.97, 0.99, 0.85, 0.78, 0.72, 0.74, 0.63, 0.58, 0.55, 0.48, 0.46, 0.32, 0.22,
             0.19]  # fmt: skip
PR_LABELS = [1, 1, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0]


@pytest.mark.parametrize(
    ("threshold", "tp", "fp", "fn", "recall", "precision"),
    [(0.6, 6, 2, 1, 6 / 7, 0.75), (0.5, 7, 3, 0, 1.0, 0.7)],
)
def test_fifteen_image_pr_example(
    threshold: float, tp: int, fp: int, fn: int, recall: float, precision: float
) -> None:
    result = evaluate("binary", PR_LABELS, PR_SCORES, options={"threshold": threshold})
    metrics = result.metrics
    assert (metrics["tp"], metrics["fp"], metrics["fn"]) == (tp, fp, fn)
    assert metrics["recall"] == pytest.approx(recall)
    assert metrics["precision"] == pytest.approx(precision)
    # The example rounds R to two places: 0.86 and 1.
    assert round(metrics["recall"] or 0, 2) == round(recall, 2)
    # The (R, P) pair is the PR curve's point at that threshold (0.63 and 0.55 are the lowest
    # scores called positive at T = 0.6 and T = 0.5).
    curve = result.curves["pr"]
    at = int(np.flatnonzero(curve["thresholds"] == {0.6: 0.63, 0.5: 0.55}[threshold])[0])
    assert curve["recall"][at] == pytest.approx(recall)
    assert curve["precision"][at] == pytest.approx(precision)


def test_fifteen_image_eleven_point_ap_by_hand() -> None:
    # VOC 11-point AP on the 15 images. Ranked: 1 1 1 1 1 0 0 1 1 0 ...; precision at
    # recall >= r is 1 for r <= 5/7, then max(6/8, 7/9) = 7/9 for r in (5/7, 1]:
    # r = 0, .1, ..., .7 -> 8 points of 1; r = .8, .9, 1 -> 3 points of 7/9.
    metrics = evaluate("binary", PR_LABELS, PR_SCORES).metrics
    assert metrics["ap_11_point"] == pytest.approx((8 + 3 * 7 / 9) / 11, abs=1e-12)
    # All-point AP: recall 5/7 at precision 1, then 2/7 more at envelope 7/9.
    assert metrics["ap_all_point"] == pytest.approx(5 / 7 + 2 / 7 * 7 / 9, abs=1e-12)
    # Step-wise AP (scikit-learn): 5 steps at precision 1, then 6/8 and 7/9.
    assert metrics["average_precision"] == pytest.approx((5 + 6 / 8 + 7 / 9) / 7, abs=1e-12)


def test_top_k_example() -> None:
    # Top-1/top-K: five images ranked by score; the top one is wrong, the top five
    # hold the right answers (ids 2 and 20). At T = 0.45 all five are called positive.
    labels = [0, 1, 0, 0, 1]
    scores = [0.93, 0.80, 0.77, 0.65, 0.46]
    metrics = evaluate(
        "binary", labels, scores, options={"head_k": [1, 5], "threshold": 0.45}
    ).metrics
    assert metrics["precision_at_1"] == 0.0
    assert metrics["recall_at_5"] == 1.0
    assert metrics["precision_at_5"] == pytest.approx(2 / 5)
    assert metrics["n_predicted_positive"] == 5


def test_f_beta_prefers_recall_when_beta_above_one() -> None:
    # F_b = (1 + b^2) P R / (b^2 P + R) (Zhou 2016, ch. 2; Manning, Raghavan & Schütze 2008,
    # ch. 8). With P = 0.8 and R = 0.5 (100 photos
    # scaled), b = 2 weighs recall: 5 * 0.4 / 3.7; b = 0.5 weighs precision: 1.25*0.4/0.7.
    labels, scores = _counts(tp=40, fp=10, tn=30, fn=40)
    f2 = evaluate("binary", labels, scores, options={"beta": 2}).metrics["f_beta"]
    f05 = evaluate("binary", labels, scores, options={"beta": 0.5}).metrics["f_beta"]
    f1 = evaluate("binary", labels, scores).metrics
    assert f2 == pytest.approx(5 * 0.8 * 0.5 / (4 * 0.8 + 0.5))
    assert f05 == pytest.approx(1.25 * 0.8 * 0.5 / (0.25 * 0.8 + 0.5))
    assert f1["f1"] == f1["f_beta"] == pytest.approx(2 * 0.8 * 0.5 / 1.3)
    assert f2 is not None and f05 is not None and f2 < (f1["f1"] or 0) < f05


def test_sensitivity_plus_specificity_is_not_accuracy() -> None:
    # Sensitivity + specificity is not accuracy (a textbook warning); for the 100 photos:
    # 40/60 + 30/40 versus 0.7.
    labels, scores = _counts(tp=40, fp=10, tn=30, fn=20)
    metrics = evaluate("binary", labels, scores).metrics
    assert metrics["balanced_accuracy"] == pytest.approx((40 / 60 + 30 / 40) / 2)
    assert (metrics["recall"] or 0) + (metrics["specificity"] or 0) != metrics["accuracy"]
