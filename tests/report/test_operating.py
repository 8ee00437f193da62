"""Task binary's operating points in the report, without a browser: the table (value, interval,
threshold or why undefined), the points on the ROC and precision-recall curves, the threshold
view and the DET curve, each against the result it draws; and a result without the options."""

from __future__ import annotations

import dataclasses
import re
from html import unescape
from typing import Any

import numpy as np
import pytest
from scipy.stats import norm

from evalserve import evaluate
from evalserve.core import EvaluationResult, Interval, operating_names
from evalserve.report import render_report
from evalserve.report._charts import Chart, charts_of
from evalserve.report._operating_charts import SHAPES
from tests.report.cases import OPERATING, case

# A table row: the label, the metric, the value, the interval, the threshold, the reason.
ROW = re.compile(
    r'<tr><th scope="row">([^<]*)</th><td><code>([^<]*)</code></td>'
    r'<td class="num" data-value="([^"]*)">[^<]*</td><td>([^<]*)</td>'
    r'<td class="num" data-value="([^"]*)">[^<]*</td><td>([^<]*)</td></tr>'
)


def _table(page: str) -> dict[str, tuple[str, str, str, str, str]]:
    start = page.find('<section aria-labelledby="h-operating">')
    if start < 0:
        return {}
    section = page[start : page.index("</section>", start)]
    return {
        metric: (unescape(label), value, interval, threshold, unescape(reason))
        for label, metric, value, interval, threshold, reason in ROW.findall(section)
    }


def _charts(result: EvaluationResult, options: dict[str, Any]) -> dict[str, Chart]:
    return {chart.key: chart for chart in charts_of(result, options)}


def _rows(spec: dict[str, Any], data: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The rows of ``data`` (default: the spec's own), inline or among the spec's datasets."""
    data = spec["data"] if data is None else data
    rows: list[dict[str, Any]] = (
        data["values"] if "values" in data else spec["datasets"][data["name"]]
    )
    return rows


def _layer_rows(spec: dict[str, Any], field: str) -> list[dict[str, Any]]:
    """The rows of the layers with data of their own holding ``field``."""
    return [
        row
        for layer in spec["layer"]
        if "data" in layer
        for row in _rows(spec, layer["data"])
        if field in row
    ]


def _own_layer(spec: dict[str, Any], field: str) -> dict[str, Any]:
    layer: dict[str, Any]
    (layer,) = [
        layer
        for layer in spec["layer"]
        if "data" in layer and any(field in row for row in _rows(spec, layer["data"]))
    ]
    return layer


def _values_names() -> dict[str, str]:
    """The value metrics of the binary case's options, in the table's order, then the EER,
    each with its threshold's name."""
    names = {}
    for kind, targets in OPERATING.items():
        for target in targets:
            found = operating_names(kind, target)
            if kind == "flagged_share":
                names.update(dict.fromkeys(found[1:], found[0]))
            else:
                names[found[0]] = found[1]
    return {**names, "equal_error_rate": "equal_error_rate_threshold"}


@pytest.fixture(scope="module")
def binary() -> tuple[EvaluationResult, dict[str, Any]]:
    return case("binary")


def test_the_table_holds_every_operating_point_with_its_threshold(
    binary: tuple[EvaluationResult, dict[str, Any]],
) -> None:
    result, options = binary
    page = render_report(result, options=options)
    table = _table(page)
    assert list(table) == list(_values_names())
    for name, (_, value, _, threshold, reason) in table.items():
        assert value == repr(result.metrics[name]), name
        assert threshold == repr(result.metrics[_values_names()[name]]), name
        assert reason == "", name
    assert table["recall_at_precision_0.8"][0] == "Recall at precision ≥ 0.8"
    assert table["flagged_share_0.2_actual"][3] == repr(
        result.metrics["flagged_share_0.2_threshold"]
    )
    # Near the metrics: after the charts, right before the metrics table.
    assert page.index('aria-labelledby="h-charts"') < page.index('aria-labelledby="h-operating"')
    assert page.index('aria-labelledby="h-operating"') < page.index('aria-labelledby="h-metrics"')


def test_an_interval_of_the_result_is_shown_with_its_value(
    binary: tuple[EvaluationResult, dict[str, Any]],
) -> None:
    result, options = binary
    interval = Interval(lower=0.51, upper=0.59, level=0.95, method="bootstrap-percentile",
                        std_error=0.02, replicates=200)  # fmt: skip
    intervals = {**result.intervals, "recall_at_precision_0.8": interval}
    page = render_report(dataclasses.replace(result, intervals=intervals), options=options)
    table = _table(page)
    assert table["recall_at_precision_0.8"][2] == "0.51 to 0.59 (95%, bootstrap-percentile)"
    assert table["recall_at_precision_0.95"][2] == ""


def test_undefined_operating_points_show_why_and_are_not_marked() -> None:
    # The highest score is a negative: no threshold reaches precision 1, and only flagging
    # nothing keeps the FPR at 0.
    labels = [0, 1, 1, 0, 1, 0, 1, 0]
    scores = [0.95, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.1]
    options = {"recall_at_precision": [1.0], "tpr_at_fpr": [0.0], "flagged_share": [0.5]}
    result = evaluate("binary", labels, scores, options=options)
    assert result.metrics["recall_at_precision_1"] is None
    table = _table(render_report(result, options=options))
    _, value, _, threshold, reason = table["recall_at_precision_1"]
    assert (value, threshold) == ("", "")
    assert reason == result.undefined["recall_at_precision_1"]
    assert table["tpr_at_fpr_0"][1:4] == ("0.0", "", "")
    assert table["tpr_at_fpr_0"][4] == result.undefined["tpr_at_fpr_0_threshold"]
    charts = _charts(result, options)
    for key in ("roc", "pr"):
        marked = {row["metric"] for row in _layer_rows(charts[key].spec, "option")}
        assert marked == {"flagged_share_0.5_actual", "equal_error_rate"}, key


def test_each_target_is_a_point_on_the_roc_and_pr_curves(
    binary: tuple[EvaluationResult, dict[str, Any]],
) -> None:
    result, options = binary
    charts = _charts(result, options)
    metrics = result.metrics
    positives, negatives = metrics["n_positive"], metrics["n_negative"]
    assert positives is not None and negatives is not None
    primary = [
        name for name in _values_names() if not name.startswith(("precision_at_f", "recall_at_f"))
    ]
    roc = {row["metric"]: row for row in _layer_rows(charts["roc"].spec, "option")}
    pr = {row["metric"]: row for row in _layer_rows(charts["pr"].spec, "option")}
    assert list(roc) == primary and list(pr) == primary
    curve = result.curves["roc"]
    for name, row in roc.items():
        assert row["value"] == pytest.approx(metrics[name], rel=1e-6), name
        assert row["option"] in SHAPES and row["threshold"] is not None
        # On the curve: the thinned curve's TPR at the point's FPR, within a step.
        assert row["tpr"] == pytest.approx(np.interp(row["fpr"], curve["fpr"], curve["tpr"]),
                                           abs=0.02), name  # fmt: skip
        # The PR point is the same point: recall = TPR, precision from the class totals.
        tp, fp = row["tpr"] * positives, row["fpr"] * negatives
        assert pr[name]["recall"] == pytest.approx(row["tpr"], rel=1e-6)
        assert pr[name]["precision"] == pytest.approx(tp / (tp + fp), rel=1e-5), name
    # The coordinate a value states is exact.
    assert roc["recall_at_precision_0.8"]["tpr"] == pytest.approx(
        metrics["recall_at_precision_0.8"], rel=1e-6
    )
    assert roc["tpr_at_fpr_0.1"]["fpr"] <= 0.1
    specificity = metrics["specificity_at_sensitivity_0.9"]
    assert specificity is not None
    assert roc["specificity_at_sensitivity_0.9"]["fpr"] == pytest.approx(1 - specificity, rel=1e-6)
    assert roc["specificity_at_sensitivity_0.9"]["tpr"] >= 0.9
    assert pr["precision_at_recall_0.5"]["precision"] == pytest.approx(
        metrics["precision_at_recall_0.5"], rel=1e-6
    )
    assert pr["flagged_share_0.2_actual"]["recall"] == pytest.approx(
        metrics["recall_at_flagged_share_0.2"], rel=1e-6
    )
    assert pr["flagged_share_0.2_actual"]["precision"] == pytest.approx(
        metrics["precision_at_flagged_share_0.2"], rel=1e-6
    )
    # Apart from the threshold's and the optima's points: hollow, another colour, own legend.
    layer = _own_layer(charts["roc"].spec, "option")
    assert layer["mark"]["filled"] is False
    assert layer["mark"]["color"] != "#D55E00"
    assert charts["roc"].spec["resolve"] == {
        "scale": {"shape": "independent", "color": "independent", "strokeDash": "independent"}
    }


def test_the_threshold_view_draws_precision_recall_and_share_flagged(
    binary: tuple[EvaluationResult, dict[str, Any]],
) -> None:
    result, options = binary
    spec = _charts(result, options)["threshold"].spec
    rows = _rows(spec)
    curve = result.curves["roc"]
    finite = np.isfinite(curve["thresholds"])
    positives, negatives = result.metrics["n_positive"], result.metrics["n_negative"]
    assert positives is not None and negatives is not None
    tp, fp = curve["tpr"][finite] * positives, curve["fpr"][finite] * negatives
    np.testing.assert_allclose([r["threshold"] for r in rows], curve["thresholds"][finite],
                               rtol=1e-6)  # fmt: skip
    np.testing.assert_allclose([r["recall"] for r in rows], curve["tpr"][finite], rtol=1e-6)
    np.testing.assert_allclose([r["precision"] for r in rows], tp / (tp + fp), rtol=1e-6)
    np.testing.assert_allclose([r["flagged_share"] for r in rows],
                               (tp + fp) / (positives + negatives), rtol=1e-6)  # fmt: skip
    (chosen,) = _layer_rows(spec, "recall")[:1]
    assert chosen["threshold"] == 0.4
    assert chosen["precision"] == pytest.approx(result.metrics["precision"], rel=1e-6)
    assert chosen["recall"] == pytest.approx(result.metrics["recall"], rel=1e-6)
    flagged = result.metrics["n_predicted_positive"]
    assert flagged is not None
    assert chosen["flagged_share"] == pytest.approx(flagged / result.n_samples, rel=1e-6)
    (layer,) = [
        layer for layer in spec["layer"] if "data" in layer and layer["mark"]["type"] == "point"
    ]
    budgets = _rows(spec, layer["data"])
    assert [row["budget"] for row in budgets] == [0.05, 0.2]
    for row in budgets:
        label = f"{row['budget']:g}"
        assert row["threshold"] == pytest.approx(
            result.metrics[f"flagged_share_{label}_threshold"], rel=1e-6
        )
        assert row["flagged_share"] == pytest.approx(
            result.metrics[f"flagged_share_{label}_actual"], rel=1e-6
        )
        assert row["flagged_share"] <= row["budget"]
    assert "chosen threshold 0.4" in spec["description"]


def test_the_det_curve_is_drawn_on_normal_deviates_with_the_eer(
    binary: tuple[EvaluationResult, dict[str, Any]],
) -> None:
    result, options = binary
    chart = _charts(result, options)["det"]
    rows = _rows(chart.spec)
    det = result.curves["det"]
    drawn = (det["fpr"] > 0) & (det["fpr"] < 1) & (det["fnr"] > 0) & (det["fnr"] < 1)
    assert len(rows) == int(drawn.sum()) > 100
    np.testing.assert_allclose([r["fpr"] for r in rows], det["fpr"][drawn], rtol=1e-6)
    np.testing.assert_allclose([r["x"] for r in rows], norm.ppf(det["fpr"][drawn]), atol=1e-6)
    np.testing.assert_allclose([r["y"] for r in rows], norm.ppf(det["fnr"][drawn]), atol=1e-6)
    eer = result.metrics["equal_error_rate"]
    assert isinstance(eer, float)
    assert f"EER {eer:.4f}" in chart.title
    (point,) = _layer_rows(chart.spec, "eer")
    assert point["x"] == pytest.approx(norm.ppf(eer), rel=1e-5)
    assert "Martin et al. 1997" in chart.description
    # Axes in percent: ticks at normal deviates of round rates, within the drawn rates.
    axis = chart.spec["layer"][1]["encoding"]["x"]["axis"]
    assert "cumulativeNormal" in axis["labelExpr"]
    rates = norm.cdf(axis["values"])
    assert min(rates) <= det["fpr"][drawn].min() or min(rates) <= det["fnr"][drawn].min()
    assert min(rates) > 0 and max(rates) < 1


def test_without_the_options_only_the_equal_error_rate_is_shown() -> None:
    result, options = case("binary-plain")
    page = render_report(result, options=options)
    assert list(_table(page)) == ["equal_error_rate"]
    charts = _charts(result, options)
    assert [row["metric"] for row in _layer_rows(charts["roc"].spec, "option")] == [
        "equal_error_rate"
    ]
    threshold = charts["threshold"]
    assert _layer_rows(threshold.spec, "budget") == []
    assert "alert budgets" not in threshold.description
    assert "det" in charts


def test_other_tasks_have_no_operating_points_section() -> None:
    result, options = case("multiclass")
    assert _table(render_report(result, options=options)) == {}
    assert "h-operating" not in render_report(result, options=options)
