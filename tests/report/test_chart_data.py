"""The data going into the report's charts, checked without a browser: the confusion matrix's
rates, the marked points' colours and shapes, the gain and lift chart, the per-class ROC
curves and the reference curves of a baseline payload (test_browser.py draws them)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from evalserve import evaluate
from evalserve.report._binary_charts import (
    CONFUSION_NAMES,
    calibration_rows,
    distribution_rows,
    gain_rows,
)
from evalserve.report._charts import charts_of, class_roc_rows
from evalserve.report._page import reference_result
from evalserve.report._parts import OPTIMUM_MARK, THRESHOLD_MARK, confusion_rows
from tests.report.cases import binary_rows, case


def _layers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return list(spec.get("layer", [spec]))


def _data(spec: dict[str, Any], layer: dict[str, Any]) -> list[dict[str, Any]]:
    data = layer.get("data", spec.get("data"))
    assert data is not None
    rows: list[dict[str, Any]] = (
        data["values"] if "values" in data else spec["datasets"][data["name"]]
    )
    return rows


def test_a_rare_class_cells_are_coloured_by_their_share_of_the_actual_class() -> None:
    # One million rows, 938,364 of them true negatives: by count every other cell is pale.
    tp, fn, fp, tn = 20_000.0, 11_636.0, 30_000.0, 938_364.0
    rows = confusion_rows([[tp, fn], [fp, tn]], ["positive", "negative"], CONFUSION_NAMES)
    cell = {row["name"]: row for row in rows}
    assert cell["true positives"]["count"] == tp
    assert cell["true positives"]["rate"] == pytest.approx(tp / (tp + fn), rel=1e-6)
    assert cell["false negatives"]["rate"] == pytest.approx(fn / (tp + fn), rel=1e-6)
    assert cell["false positives"]["rate"] == pytest.approx(fp / (fp + tn), rel=1e-6)
    assert cell["true negatives"]["rate"] == pytest.approx(tn / (fp + tn), rel=1e-6)
    assert cell["true positives"]["column_rate"] == pytest.approx(tp / (tp + fp), rel=1e-6)
    assert cell["true negatives"]["column_rate"] == pytest.approx(tn / (tn + fn), rel=1e-6)
    assert [cell[name]["rate_name"] for name in cell] == ["TPR", "FNR", "FPR", "TNR"]
    assert cell["true positives"]["column_rate_name"] == "precision"
    assert cell["true positives"]["label"] == "TPR 63.2%"
    assert cell["false positives"]["label"] == "FPR 3.1%"
    # The two cells of a row add up to the whole class.
    assert cell["true positives"]["rate"] + cell["false negatives"]["rate"] == pytest.approx(1)


def test_an_empty_class_has_no_rate_and_a_tiny_one_is_not_zero() -> None:
    rows = confusion_rows([[0, 0], [1, 99_999]], ["a", "b"])
    by_cell = {(row["actual"], row["predicted"]): row for row in rows}
    assert by_cell["a", "a"]["rate"] is None and by_cell["a", "a"]["label"] == "n/a"
    assert by_cell["b", "a"]["label"] == "<0.1%"
    assert by_cell["b", "a"]["column_rate"] == 1.0


@pytest.mark.parametrize("task", ["binary", "multiclass"])
def test_the_confusion_matrix_colour_is_the_rate_on_a_fixed_scale(task: str) -> None:
    result, options = case(task)
    chart = next(chart for chart in charts_of(result, options) if chart.key == "confusion")
    cells, *texts = _layers(chart.spec)
    colour = cells["encoding"]["color"]
    assert colour["field"] == "rate"
    assert colour["scale"]["domain"] == [0, 1]
    shown = {layer["encoding"]["text"]["field"] for layer in texts}
    assert shown == {"count", "label"}  # the count and its rate in each cell
    rows = _data(chart.spec, cells)
    for actual in {row["actual"] for row in rows}:
        assert sum(row["rate"] for row in rows if row["actual"] == actual) == pytest.approx(1)
    if task == "multiclass":
        matrix = np.asarray(result.curves["confusion_matrix"]["matrix"]).reshape(4, 4)
        recall = {entry.class_name: entry.metrics["recall"] for entry in result.per_class}
        for row in rows:
            if row["actual"] == row["predicted"]:
                assert row["rate"] == pytest.approx(recall[row["actual"]], rel=1e-6)
        assert sum(row["count"] for row in rows) == pytest.approx(matrix.sum())


@pytest.mark.parametrize("key", ["roc", "pr"])
def test_the_threshold_and_the_optimum_have_their_own_colour_shape_and_legend(key: str) -> None:
    result, options = case("binary")
    chart = next(chart for chart in charts_of(result, options) if chart.key == key)
    (layer,) = [
        layer
        for layer in _layers(chart.spec)
        if layer.get("encoding", {}).get("shape", {}).get("field") == "mark"
    ]
    names = [row["mark"] for row in _data(chart.spec, layer)]
    assert len(names) == 2 and names[0].startswith("At threshold 0.4")
    colour, shape = layer["encoding"]["color"], layer["encoding"]["shape"]
    assert colour["scale"] == {"domain": names, "range": [THRESHOLD_MARK[0], OPTIMUM_MARK[0]]}
    assert shape["scale"] == {"domain": names, "range": [THRESHOLD_MARK[1], OPTIMUM_MARK[1]]}
    assert THRESHOLD_MARK[0] != OPTIMUM_MARK[0] and THRESHOLD_MARK[1] != OPTIMUM_MARK[1]
    assert colour["legend"]["title"] == shape["legend"]["title"] == "Marked"  # one legend
    assert "color" not in layer.get("mark", {})


def test_a_single_class_result_still_has_its_confusion_matrix() -> None:
    result = evaluate("binary", np.ones(20, dtype=np.int64), np.linspace(0.05, 0.95, 20))
    chart = next(chart for chart in charts_of(result) if chart.key == "confusion")
    rows = _data(chart.spec, _layers(chart.spec)[0])
    negatives = [row for row in rows if row["actual"] == "negative"]
    assert all(row["rate"] is None for row in negatives)


def test_gain_and_lift_are_the_weighted_shares_of_rows_and_positives_flagged() -> None:
    rng = np.random.default_rng(5)
    labels = (rng.random(400) < 0.2).astype(np.int64)
    scores = np.round(rng.random(400) * 0.6 + 0.4 * labels, 2)  # ties
    weights = rng.integers(1, 4, 400).astype(float)
    result = evaluate("binary", labels, scores, sample_weight=weights)
    rows = gain_rows(result)
    assert len(rows) == result.curves["roc"]["fpr"].size
    total, positives = weights.sum(), weights[labels == 1].sum()
    for row in rows:
        if row["threshold"] is None:  # the curve's start, above every score
            assert row["share"] == row["gain"] == 0 and row["lift"] is None
            continue
        flagged = scores >= row["threshold"]
        share = weights[flagged].sum() / total
        gain = weights[flagged & (labels == 1)].sum() / positives
        assert row["share"] == pytest.approx(share, rel=1e-6)
        assert row["gain"] == pytest.approx(gain, rel=1e-6)
        assert row["lift"] == pytest.approx(gain / share, rel=1e-5)
    assert rows[-1]["share"] == pytest.approx(1) and rows[-1]["lift"] == pytest.approx(1)


def test_the_gain_and_lift_charts_hold_those_rows() -> None:
    result, options = case("binary")
    charts = {chart.key: chart for chart in charts_of(result, options)}
    rows = gain_rows(result)
    gain = charts["gain"].spec
    line = _layers(gain)[-1]
    assert line["encoding"]["y"]["field"] == "gain"
    assert _data(gain, line) == rows
    lift = charts["lift"].spec
    assert _data(lift, _layers(lift)[-1]) == [row for row in rows if row["lift"] is not None]
    assert "(TP + FP) / N" in charts["gain"].description  # the caption says how


def test_each_class_roc_curve_is_its_one_vs_rest_curve() -> None:
    rng = np.random.default_rng(9)
    labels = rng.integers(0, 3, 600)
    scores = rng.dirichlet(np.ones(3), 600) + 0.4 * np.eye(3)[labels]
    scores /= scores.sum(axis=1, keepdims=True)
    result = evaluate(
        "multiclass", labels, scores, classes=["a", "b", "c"], options={"max_curve_points": 9000}
    )
    curve = result.curves["roc_per_class"]
    for index, entry in enumerate(result.per_class):
        mine = curve["class_index"] == index
        fpr, tpr = curve["fpr"][mine], curve["tpr"][mine]
        assert (fpr[0], tpr[0]) == (0, 0) and (fpr[-1], tpr[-1]) == (1, 1)
        area = float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2))
        assert area == pytest.approx(entry.metrics["roc_auc"], abs=1e-12), entry.class_name
    # Thinned: at most max_curve_points // classes points per class, still from end to end.
    thin = evaluate("multiclass", labels, scores, options={"max_curve_points": 30})
    thinned = thin.curves["roc_per_class"]
    for index in range(3):
        mine = thinned["class_index"] == index
        assert 2 <= mine.sum() <= 10
        fpr, tpr = thinned["fpr"][mine], thinned["tpr"][mine]
        assert (fpr[0], tpr[0], fpr[-1], tpr[-1]) == (0, 0, 1, 1)


def test_the_per_class_roc_chart_draws_the_classes_with_the_most_rows() -> None:
    rng = np.random.default_rng(4)
    n_classes = 15
    labels = np.minimum(rng.geometric(0.15, 3000) - 1, n_classes - 1)
    scores = rng.dirichlet(np.ones(n_classes), 3000) + 0.3 * np.eye(n_classes)[labels]
    scores /= scores.sum(axis=1, keepdims=True)
    result = evaluate("multiclass", labels, scores)
    rows, count = class_roc_rows(result, result.curves["roc_per_class"])
    assert count == n_classes
    support = {entry.class_name: float(entry.metrics["support"] or 0) for entry in result.per_class}
    drawn = {row["cls"].split(" (AUC")[0] for row in rows}
    assert len(drawn) == 12
    assert min(support[name] for name in drawn) >= max(
        support[name] for name in support if name not in drawn
    )
    first = result.per_class[0]
    assert any(row["cls"] == f"{first.class_name} (AUC {first.metrics['roc_auc']:.3f})"
               for row in rows)  # fmt: skip
    chart = next(chart for chart in charts_of(result) if chart.key == "roc_per_class")
    assert "12 classes with the most rows of 15" in chart.description


def _payload_case() -> tuple[Any, dict[str, Any], dict[str, Any]]:
    labels, scores = binary_rows(2000, seed=1)
    ref_labels, ref_scores = binary_rows(1500, seed=2)
    baseline = {"labels": ref_labels.tolist(), "scores": (ref_scores**0.7).tolist()}
    options = {"threshold": 0.4, "bootstrap_replicates": 0}
    result = evaluate("binary", labels, scores, options=options, baseline=baseline)
    return result, options, baseline


def test_a_baseline_payload_is_evaluated_as_the_reference() -> None:
    result, options, baseline = _payload_case()
    reference = reference_result(result, baseline, options)
    assert reference is not None
    expected = evaluate("binary", baseline["labels"], baseline["scores"], options=options)
    assert reference.metrics["roc_auc"] == expected.metrics["roc_auc"]
    assert reference.metrics["roc_auc"] == pytest.approx(result.drift["roc_auc"].baseline)
    np.testing.assert_array_equal(reference.curves["roc"]["tpr"], expected.curves["roc"]["tpr"])
    # A summary has no rows to draw; other tasks take no baseline.
    assert reference_result(result, {"roc_auc": 0.9, "n_positive": 9, "n_negative": 9}, {}) is None
    assert reference_result(result, None, options) is None


def test_the_reference_curves_are_drawn_beside_the_current_ones() -> None:
    result, options, baseline = _payload_case()
    reference = reference_result(result, baseline, options)
    assert reference is not None
    charts = {chart.key: chart for chart in charts_of(result, options, reference)}
    for key, curve, x, y in (("roc", "roc", "fpr", "tpr"), ("pr", "pr", "recall", "precision")):
        spec = charts[key].spec
        (layer,) = [
            layer
            for layer in _layers(spec)
            if layer.get("encoding", {}).get("color", {}).get("field") == "series"
        ]
        assert layer["encoding"]["color"]["scale"]["domain"] == ["current", "reference"]
        rows = _data(spec, layer)
        for series, source in (("current", result), ("reference", reference)):
            mine = [row for row in rows if row["series"] == series]
            assert len(mine) == source.curves[curve][x].size, (key, series)
            np.testing.assert_allclose([row[y] for row in mine], source.curves[curve][y], rtol=1e-6)
        assert "reference" in charts[key].description
    distributions = distribution_rows(result, reference)
    assert {row["series"] for row in distributions} == {"current", "reference"}
    calibration = calibration_rows(result.curves["calibration"], reference.curves["calibration"])
    reference_bins = [row for row in calibration if row["series"] == "reference"]
    assert sum(row["weight"] for row in reference_bins) == pytest.approx(reference.n_samples)
    # Without a reference, the charts are as before: no series.
    plain = {chart.key: chart for chart in charts_of(result, options)}
    assert "series" not in str(plain["roc"].spec)
