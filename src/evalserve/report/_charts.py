"""The report's charts: Vega-Lite specifications made with Altair from a result, by task.

Each chart draws what the result holds, so the page's size follows the request's curve points
(``max_curve_points``), not its rows. Numbers are rounded for display only (7 significant
digits); tooltips show the thresholds. Task binary's charts are in ``_binary_charts``, the
pieces they share in ``_parts``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import altair as alt
import numpy as np

from evalserve.core import EvaluationResult, Options, parse_options
from evalserve.report._binary_charts import binary_charts
from evalserve.report._parts import (
    COLOURS,
    GREY,
    Chart,
    confusion_rows,
    diagonal,
    finished,
    heatmap,
    inline,
    layered,
    rounded,
    table_rows,
    tooltips,
)

__all__ = ["CHART_MAKERS", "Chart", "charts_of", "class_roc_rows"]


def charts_of(
    result: EvaluationResult,
    options: Mapping[str, Any] | Options | None = None,
    reference: EvaluationResult | None = None,
) -> list[Chart]:
    """The charts of a result, by task; ``options``: the evaluation's (task binary: the
    threshold, the operating points' targets); ``reference`` (task binary): the baseline
    payload's result, drawn beside the current curves."""
    if reference is not None and result.task == "binary":
        return binary_charts(result, parse_options(options), reference=reference)
    return CHART_MAKERS[result.task](result, parse_options(options))


def _binary(result: EvaluationResult, options: Options) -> list[Chart]:
    return binary_charts(result, options)


def _multiclass(result: EvaluationResult, options: Options) -> list[Chart]:
    charts = []
    matrix = result.curves.get("confusion_matrix")
    classes = [entry.class_name for entry in result.per_class]
    if matrix is not None and classes:
        values = np.asarray(matrix["matrix"]).reshape(len(classes), len(classes))
        rows = confusion_rows(values, classes)
        title = "Confusion matrix"
        description = (
            "Counts (weights) of actual class (rows) against predicted class (columns), each "
            "cell coloured and labelled by its share of the actual class: the diagonal is each "
            "class's recall, so a rare class reads as clearly as a common one. The tooltip "
            "adds the share of the predicted class (the diagonal: each class's precision)."
        )
        charts.append(
            Chart("confusion", title, description, heatmap(rows, classes, title, description))
        )
    macro = result.curves.get("roc_macro")
    if macro is not None:
        rows = table_rows(fpr=macro["fpr"], tpr=macro["tpr"])
        base = alt.Chart(inline(rows))
        x = alt.X("fpr:Q", title="False positive rate", scale=alt.Scale(domain=[0, 1]))
        y = alt.Y(
            "tpr:Q", title="True positive rate (mean over classes)", scale=alt.Scale(domain=[0, 1])
        )
        line = base.mark_line(color=COLOURS[0]).encode(x=x, y=y, tooltip=tooltips("fpr", "tpr"))
        title = "Macro-averaged ROC curve (one-vs-rest)"
        description = (
            "The one-vs-rest ROC curves' true positive rates averaged over the classes at each "
            "false positive rate; the dashed diagonal is a random ranking."
        )
        charts.append(
            Chart("roc_macro", title, description, layered([diagonal(), line], title, description))
        )
    per_class = result.curves.get("roc_per_class")
    if per_class is not None and per_class["fpr"].size:
        charts.append(_class_rocs(result, per_class, macro))
    return charts


MAX_ROC_CLASSES = 12  # per-class ROC curves drawn: the classes with the most rows


def class_roc_rows(
    result: EvaluationResult, curve: Mapping[str, np.ndarray]
) -> tuple[list[dict[str, Any]], int]:
    """The rows of the per-class ROC chart: each drawn class's points, ``cls`` its name with
    its AUC (one-vs-rest), for the ``MAX_ROC_CLASSES`` classes with the most positives; and
    how many classes have a curve."""
    indices = curve["class_index"].astype(int)
    present = list(dict.fromkeys(indices.tolist()))

    def support(index: int) -> float:
        value = result.per_class[index].metrics.get("support")
        return float(value) if isinstance(value, int | float) else 0.0

    shown = sorted(present, key=lambda index: (-support(index), index))[:MAX_ROC_CLASSES]
    names = {}
    for index in shown:
        entry = result.per_class[index]
        auc = entry.metrics.get("roc_auc")
        names[index] = entry.class_name + (f" (AUC {auc:.3f})" if isinstance(auc, float) else "")
    rows = [
        {"fpr": rounded(float(f)), "tpr": rounded(float(t)), "cls": names[int(i)], "order": k}
        for k, (f, t, i) in enumerate(zip(curve["fpr"], curve["tpr"], indices, strict=True))
        if int(i) in names
    ]
    return rows, len(present)


def _class_rocs(
    result: EvaluationResult,
    curve: Mapping[str, np.ndarray],
    macro: Mapping[str, np.ndarray] | None,
) -> Chart:
    rows, count = class_roc_rows(result, curve)
    x = alt.X("fpr:Q", title="False positive rate", scale=alt.Scale(domain=[0, 1]))
    y = alt.Y("tpr:Q", title="True positive rate", scale=alt.Scale(domain=[0, 1]))
    lines = (
        alt.Chart(inline(rows))
        .mark_line(strokeWidth=1.5, interpolate="linear")
        .encode(
            x=x,
            y=y,
            order="order:Q",
            color=alt.Color("cls:N", title="Class (one-vs-rest)", sort=None),
            tooltip=[alt.Tooltip("cls:N", title="Class"), *tooltips("fpr", "tpr")],
        )
    )
    layers: list[Any] = [diagonal(), lines]
    if macro is not None:
        layers.append(
            alt.Chart(inline(table_rows(fpr=macro["fpr"], tpr=macro["tpr"])))
            .mark_line(color="#000000", strokeWidth=2.5, strokeDash=[6, 3])
            .encode(x=x, y=y, tooltip=tooltips("fpr", "tpr"))
        )
    title = "ROC curve of each class (one-vs-rest)"
    description = (
        "Each class's ROC curve against the rest, its AUC in the legend"
        + ("; the thick dashed black line is their macro average" if macro is not None else "")
        + "; the grey dashed diagonal is a random ranking."
    )
    if count > MAX_ROC_CLASSES:
        description += f" The {MAX_ROC_CLASSES} classes with the most rows of {count}."
    return Chart("roc_per_class", title, description, layered(layers, title, description))


def _multilabel(result: EvaluationResult, options: Options) -> list[Chart]:
    return _per_class_bars(result, "roc_auc", "ROC AUC per label")


def _regression(result: EvaluationResult, options: Options) -> list[Chart]:
    charts = []
    sample = result.curves.get("sample")
    if sample is not None:
        charts += _regression_sample(sample)
    curve = result.curves.get("rec")
    if curve is None:
        return charts
    finite = np.isfinite(curve["absolute_error"])
    rows = table_rows(absolute_error=curve["absolute_error"][finite], share=curve["share"][finite])
    line = (
        alt.Chart()
        .mark_line(color=COLOURS[0], interpolate="step-after")
        .encode(
            x=alt.X("absolute_error:Q", title="Absolute error |y - prediction|"),
            y=alt.Y("share:Q", title="Share of rows within it", scale=alt.Scale(domain=[0, 1])),
            tooltip=[
                alt.Tooltip("absolute_error:Q", title="Absolute error", format=".6~g"),
                alt.Tooltip("share:Q", title="Share within", format=".4f"),
            ],
        )
    )
    layers: list[Any] = [line]
    median = result.metrics.get("median_absolute_error")
    title = "Regression error characteristic (REC) curve"
    if isinstance(median, float):
        layers.append(
            alt.Chart(inline([{"median": rounded(median)}]))
            .mark_rule(color=GREY, strokeDash=[4, 4])
            .encode(
                x="median:Q",
                tooltip=[alt.Tooltip("median:Q", title="Median absolute error", format=".6~g")],
            )
        )
    description = (
        "For each absolute error, the share of rows (by weight) predicted at least that well "
        "(Bi & Bennett 2003); the area above the curve is the mean absolute error, the dashed "
        "rule the median absolute error."
    )
    charts.append(Chart("rec", title, description, layered(layers, title, description, rows)))
    return charts


def _regression_sample(sample: Mapping[str, np.ndarray]) -> list[Chart]:
    """Predicted against actual and the residuals' histogram, from the result's sample of
    rows (the same rows however the data was split; a row's weight is its point's size)."""
    rows = table_rows(
        actual=sample["actual"], predicted=sample["predicted"], weight=sample["weight"]
    )
    for row in rows:
        row["residual"] = rounded(row["actual"] - row["predicted"])
    n = len(rows)
    low = min(min(row["actual"], row["predicted"]) for row in rows)
    high = max(max(row["actual"], row["predicted"]) for row in rows)
    identity = (
        alt.Chart(inline([{"a": low, "b": low}, {"a": high, "b": high}]))
        .mark_line(color=GREY, strokeDash=[4, 4])
        .encode(x="a:Q", y="b:Q")
    )
    weighted = len({row["weight"] for row in rows}) > 1
    size = (
        alt.Size("weight:Q", title="Weight", legend=None, scale=alt.Scale(range=[8, 120]))
        if weighted
        else alt.value(16)
    )
    points = (
        alt.Chart()
        .mark_circle(color=COLOURS[0], opacity=0.5)
        .encode(
            x=alt.X("actual:Q", title="Actual", scale=alt.Scale(zero=False)),
            y=alt.Y("predicted:Q", title="Predicted", scale=alt.Scale(zero=False)),
            size=size,
            tooltip=[
                alt.Tooltip("actual:Q", title="Actual", format=".6~g"),
                alt.Tooltip("predicted:Q", title="Predicted", format=".6~g"),
                alt.Tooltip("residual:Q", title="Residual", format=".6~g"),
                alt.Tooltip("weight:Q", title="Weight", format=".6~g"),
            ],
        )
    )
    title = "Predicted against actual"
    description = (
        f"A sample of {n:,} rows (the same rows however the data was split or merged; point "
        "size: the row's weight); the dashed line is a perfect prediction."
    )
    scatter = Chart(
        "predicted_actual",
        title,
        description,
        layered([identity, points], title, description, rows),
    )
    bars = (
        alt.Chart(inline(rows))
        .mark_bar(color=COLOURS[0])
        .encode(
            x=alt.X("residual:Q", bin=alt.Bin(maxbins=40), title="Residual (actual - predicted)"),
            y=alt.Y("sum(weight):Q", title="Weight of the rows"),
            tooltip=[
                alt.Tooltip("residual:Q", bin=alt.Bin(maxbins=40), title="Residual"),
                alt.Tooltip("sum(weight):Q", title="Weight", format=",.6~g"),
            ],
        )
    )
    hist_title = "Residuals"
    hist_description = (
        f"The distribution of the residuals y - prediction over the same sample of {n:,} rows, "
        "weighted."
    )
    histogram = Chart(
        "residuals", hist_title, hist_description, finished(bars, hist_title, hist_description)
    )
    return [scatter, histogram]


def _detection(result: EvaluationResult, options: Options) -> list[Chart]:
    charts = _per_class_bars(result, "ap", "Average precision per class (COCO, IoU 0.50 to 0.95)")
    pr = result.curves.get("pr_iou50")
    if pr is not None:
        charts.append(_detection_pr(result, pr))
    return charts


MAX_PR_CLASSES = 12  # curves drawn; the classes with the most ground truth boxes


def _detection_pr(result: EvaluationResult, pr: Mapping[str, np.ndarray]) -> Chart:
    rows_count, points = (int(n) for n in pr["shape"])
    precision = pr["precision"].reshape(rows_count, points)
    entries = [result.per_class[int(index)] for index in pr["class_index"]]
    order = sorted(
        range(rows_count), key=lambda i: -float(entries[i].metrics["n_ground_truth"] or 0)
    )
    shown = order[:MAX_PR_CLASSES]
    rows = [
        {
            "recall": rounded(float(r)),
            "precision": rounded(float(p)),
            "cls": entries[i].class_name,
        }
        for i in shown
        for r, p in zip(pr["recall"], precision[i], strict=True)
    ]
    chart = (
        alt.Chart(inline(rows))
        .mark_line(interpolate="step-after")
        .encode(
            x=alt.X("recall:Q", title="Recall", scale=alt.Scale(domain=[0, 1])),
            y=alt.Y("precision:Q", title="Interpolated precision", scale=alt.Scale(domain=[0, 1])),
            color=alt.Color("cls:N", title="Class"),
            tooltip=[
                alt.Tooltip("cls:N", title="Class"),
                alt.Tooltip("recall:Q", title="Recall", format=".2f"),
                alt.Tooltip("precision:Q", title="Precision", format=".4f"),
            ],
        )
    )
    title = "Precision-recall curves at IoU 0.50 (COCO, 101 recall points)"
    description = (
        "Per class, the interpolated precision at each of COCO's 101 recall points at IoU 0.50 "
        "(0 where the recall is never reached); its mean is the class's ap_50."
    )
    if rows_count > MAX_PR_CLASSES:
        description += (
            f" The {MAX_PR_CLASSES} classes with the most ground truth boxes of {rows_count}."
        )
    return Chart("pr_iou50", title, description, finished(chart, title, description))


def _per_class_bars(result: EvaluationResult, metric: str, title: str) -> list[Chart]:
    rows = [
        {"class": entry.class_name, metric: rounded(value)}
        for entry in result.per_class
        if isinstance(value := entry.metrics.get(metric), float)
    ]
    if not rows:
        return []
    chart = (
        alt.Chart(inline(rows))
        .mark_bar(color=COLOURS[0])
        .encode(
            x=alt.X(f"{metric}:Q", title=metric, scale=alt.Scale(domain=[0, 1])),
            y=alt.Y("class:N", title=None, sort=None),
            tooltip=[alt.Tooltip("class:N"), alt.Tooltip(f"{metric}:Q", format=".4f")],
        )
    )
    description = f"{metric} of each class; classes whose value is undefined are left out."
    return [Chart(f"per_class_{metric}", title, description, finished(chart, title, description))]


ChartMaker = Callable[[EvaluationResult, Options], list[Chart]]
# The charts of each task, by the name the core's registry gives it (a test checks that every
# registered task has its charts).
CHART_MAKERS: Mapping[str, ChartMaker] = MappingProxyType(
    {
        "binary": _binary,
        "multiclass": _multiclass,
        "multilabel": _multilabel,
        "regression": _regression,
        "detection": _detection,
    }
)
