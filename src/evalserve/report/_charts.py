"""The report's charts: Vega-Lite specifications made with Altair from a result.

Each chart draws what the result holds, so the page's size follows the request's curve points
(``max_curve_points``), not its rows. Numbers are rounded for display only (7 significant
digits); tooltips show the thresholds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import altair as alt
import numpy as np

from evalserve.core import EvaluationResult

__all__ = ["Chart", "charts_of"]

WIDTH = 360
HEIGHT = 300
# Okabe & Ito's colour-blind safe palette: blue, vermillion, bluish green, orange, purple.
COLOURS = ("#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7")
GREY = "#555555"
DIGITS = 7


@dataclass(frozen=True)
class Chart:
    """One chart of the page: an id for its element, a title, a sentence saying what it shows
    (the figure's caption and accessible description) and the Vega-Lite specification."""

    key: str
    title: str
    description: str
    spec: dict[str, Any]


def charts_of(result: EvaluationResult, *, threshold: float = 0.5) -> list[Chart]:
    """The charts of a result, by task; ``threshold``: the options' (binary)."""
    if result.task == "binary":
        return _binary(result, f"threshold {threshold:g}")
    makers = {
        "multiclass": _multiclass,
        "multilabel": _multilabel,
        "regression": _regression,
        "detection": _detection,
    }
    return makers[result.task](result)


# ---------------------------------------------------------------------------------------------
# binary


def _binary(result: EvaluationResult, at: str) -> list[Chart]:
    charts = []
    metrics = result.metrics
    if "roc" in result.curves:
        charts.append(_roc(result, at))
        charts.append(_pr(result, at))
        charts.append(_distributions(result))
    if "calibration" in result.curves:
        charts.append(_calibration(result.curves["calibration"]))
    counts = [metrics.get(name) for name in ("tp", "fp", "tn", "fn")]
    numbers = [float(value) for value in counts if isinstance(value, int | float)]
    if len(numbers) == 4:
        charts.append(_confusion_2x2(numbers, at))
    return charts


def _roc(result: EvaluationResult, at: str) -> Chart:
    roc = result.curves["roc"]
    fpr, tpr, thresholds = roc["fpr"], roc["tpr"], roc["thresholds"]
    n_positive = float(result.metrics.get("n_positive") or 0.0)
    lower, upper = _wilson_band(tpr, n_positive, _level(result))
    rows = _rows(fpr=fpr, tpr=tpr, threshold=thresholds, tpr_lower=lower, tpr_upper=upper)
    base = alt.Chart()  # the layers share the page's one copy of the rows
    x = alt.X("fpr:Q", title="False positive rate", scale=alt.Scale(domain=[0, 1]))
    y = alt.Y("tpr:Q", title="True positive rate", scale=alt.Scale(domain=[0, 1]))
    band = base.mark_area(opacity=0.25, color=COLOURS[0]).encode(
        x=x, y=alt.Y("tpr_lower:Q"), y2="tpr_upper:Q"
    )
    line = base.mark_line(color=COLOURS[0], interpolate="step-after").encode(
        x=x, y=y, tooltip=_tooltips("threshold", "fpr", "tpr")
    )
    hover = base.mark_point(opacity=0, size=60).encode(
        x=x, y=y, tooltip=_tooltips("threshold", "fpr", "tpr")
    )
    layers: list[Any] = [band, _diagonal(), line, hover]
    marks = _roc_marks(result, at)
    if marks:
        layers.append(_marks(marks, "fpr", "tpr"))
    auc = result.metrics.get("roc_auc")
    interval = result.intervals.get("roc_auc")
    title = "ROC curve"
    description = "ROC curve: true positive rate against false positive rate"
    if isinstance(auc, float):
        title += f", AUC {auc:.4f}"
        if interval is not None:
            title += f" ({_interval_text(interval)})"
    description += (
        f"; the shaded band is the {_level(result):.0%} pointwise Wilson interval of the true "
        "positive rate; the dashed diagonal is a random ranking; points mark the threshold and "
        "the optimal thresholds."
    )
    return Chart("roc", title, description, _layered(layers, title, description, rows))


def _pr(result: EvaluationResult, at: str) -> Chart:
    pr = result.curves["pr"]
    rows = _rows(recall=pr["recall"], precision=pr["precision"], threshold=pr["thresholds"])
    base = alt.Chart()
    x = alt.X("recall:Q", title="Recall", scale=alt.Scale(domain=[0, 1]))
    y = alt.Y("precision:Q", title="Precision", scale=alt.Scale(domain=[0, 1]))
    line = base.mark_line(color=COLOURS[0], interpolate="step-before").encode(
        x=x, y=y, tooltip=_tooltips("threshold", "recall", "precision")
    )
    hover = base.mark_point(opacity=0, size=60).encode(
        x=x, y=y, tooltip=_tooltips("threshold", "recall", "precision")
    )
    layers: list[Any] = [line, hover]
    prevalence = result.metrics.get("prevalence")
    if isinstance(prevalence, float):
        layers.append(
            alt.Chart(_inline([{"prevalence": _round(prevalence)}]))
            .mark_rule(color=GREY, strokeDash=[4, 4])
            .encode(y="prevalence:Q", tooltip=[alt.Tooltip("prevalence:Q", title="Prevalence")])
        )
    marks = _pr_marks(result, at)
    if marks:
        layers.append(_marks(marks, "recall", "precision"))
    ap = result.metrics.get("average_precision")
    title = "Precision-recall curve"
    if isinstance(ap, float):
        title += f", average precision {ap:.4f}"
    description = (
        "Precision against recall; the dashed line is the prevalence (a random ranking's "
        "precision); points mark the threshold and the F1-optimal threshold."
    )
    return Chart("pr", title, description, _layered(layers, title, description, rows))


def _distributions(result: EvaluationResult) -> Chart:
    roc = result.curves["roc"]
    finite = np.isfinite(roc["thresholds"])
    rows = _rows(
        threshold=roc["thresholds"][finite],
        positive=roc["tpr"][finite],
        negative=roc["fpr"][finite],
    )
    lines = (
        alt.Chart()
        .transform_fold(["positive", "negative"], as_=["cls", "share"])
        .mark_line(interpolate="step-after")
        .encode(
            x=alt.X("threshold:Q", title="Score"),
            y=alt.Y(
                "share:Q",
                title="Share of the class scored at or above",
                scale=alt.Scale(domain=[0, 1]),
            ),
            color=alt.Color(
                "cls:N",
                title="Class",
                scale=alt.Scale(domain=["positive", "negative"], range=[COLOURS[0], COLOURS[1]]),
            ),
            strokeDash=alt.StrokeDash("cls:N", legend=None),
            tooltip=[
                alt.Tooltip("cls:N", title="Class"),
                alt.Tooltip("threshold:Q", title="Score", format=".6~g"),
                alt.Tooltip("share:Q", title="Share at or above", format=".4f"),
            ],
        )
    )
    layers: list[Any] = [lines]
    ks, at = result.metrics.get("ks_statistic"), result.metrics.get("ks_threshold")
    title = "Score distribution per class"
    if isinstance(ks, float) and isinstance(at, float):
        title += f", KS {ks:.4f} at {at:.4g}"
        layers.append(
            alt.Chart(_inline([{"threshold": _round(at), "ks": _round(ks)}]))
            .mark_rule(color=GREY, strokeDash=[4, 4])
            .encode(
                x="threshold:Q",
                tooltip=[
                    alt.Tooltip("threshold:Q", title="KS threshold", format=".6~g"),
                    alt.Tooltip("ks:Q", title="KS statistic", format=".4f"),
                ],
            )
        )
    description = (
        "For each score, the share of positives and of negatives scored at or above it (the "
        "classes' cumulative score distributions, read from the top); the dashed rule marks "
        "the Kolmogorov-Smirnov statistic, their largest gap."
    )
    return Chart("distributions", title, description, _layered(layers, title, description, rows))


def _calibration(curve: Mapping[str, np.ndarray]) -> Chart:
    rows = _rows(
        mean_score=curve["mean_score"],
        fraction_positive=curve["fraction_positive"],
        weight=curve["weight"],
        lower=curve["lower"],
        upper=curve["upper"],
    )
    base = alt.Chart()
    x = alt.X("mean_score:Q", title="Mean predicted probability", scale=alt.Scale(domain=[0, 1]))
    y = alt.Y("fraction_positive:Q", title="Fraction of positives", scale=alt.Scale(domain=[0, 1]))
    tooltip = [
        alt.Tooltip("lower:Q", title="Bin from", format=".4~g"),
        alt.Tooltip("upper:Q", title="Bin to", format=".4~g"),
        alt.Tooltip("mean_score:Q", title="Mean predicted", format=".4f"),
        alt.Tooltip("fraction_positive:Q", title="Fraction positive", format=".4f"),
        alt.Tooltip("weight:Q", title="Rows (weight)", format=",.6~g"),
    ]
    line = base.mark_line(color=COLOURS[0]).encode(x=x, y=y)
    points = base.mark_circle(color=COLOURS[0], opacity=0.9).encode(
        x=x, y=y, size=alt.Size("weight:Q", title="Rows (weight)", legend=None), tooltip=tooltip
    )
    title = "Reliability diagram"
    description = (
        "Per probability bin, the fraction of positives against the mean predicted probability "
        "(point size: the bin's rows); the dashed diagonal is perfect calibration."
    )
    layers = [_diagonal(), line, points]
    return Chart("calibration", title, description, _layered(layers, title, description, rows))


def _confusion_2x2(counts: Sequence[float], at: str) -> Chart:
    tp, fp, tn, fn = counts
    cells = [
        ("positive", "positive", tp, "true positives"),
        ("positive", "negative", fn, "false negatives"),
        ("negative", "positive", fp, "false positives"),
        ("negative", "negative", tn, "true negatives"),
    ]
    rows = [{"actual": a, "predicted": p, "count": c, "name": n} for a, p, c, n in cells]
    title = f"Confusion matrix at {at}"
    description = "Counts (weights) of actual against predicted class at the threshold."
    return Chart(
        "confusion",
        title,
        description,
        _heatmap(rows, ["positive", "negative"], title, description),
    )


def _roc_marks(result: EvaluationResult, at: str) -> list[dict[str, Any]]:
    return _points(result, "roc", ("fpr", "recall"), ("fpr", "tpr"), at, "Youden's J optimum")


def _pr_marks(result: EvaluationResult, at: str) -> list[dict[str, Any]]:
    return _points(result, "pr", ("recall", "precision"), ("recall", "precision"), at, "F1 optimum")


def _points(
    result: EvaluationResult,
    curve: str,
    metrics: tuple[str, str],
    axes: tuple[str, str],
    at: str,
    optimum: str,
) -> list[dict[str, Any]]:
    """The points to mark on a curve: the confusion counts' point at the threshold (from the
    ``metrics``, exact) and the optimum's (``optimal_threshold_youden`` on the ROC curve,
    ``optimal_threshold_f1`` on the PR curve; the thinned curve's nearest point)."""
    marks = []
    x, y = (result.metrics.get(name) for name in metrics)
    if isinstance(x, float) and isinstance(y, float):
        marks.append({axes[0]: _round(x), axes[1]: _round(y), "mark": f"At {at}"})
    name = "optimal_threshold_youden" if curve == "roc" else "optimal_threshold_f1"
    best = result.metrics.get(name)
    if isinstance(best, float):
        point = _curve_point(result.curves[curve], best, axes)
        if point is not None:
            marks.append({**point, "mark": f"{optimum} (threshold {best:.4g})"})
    return marks


def _curve_point(
    curve: Mapping[str, np.ndarray], threshold: float, keys: tuple[str, str]
) -> dict[str, Any] | None:
    """The curve's point at ``threshold``, or at the nearest threshold the thinned curve kept."""
    thresholds = curve["thresholds"]
    finite = np.flatnonzero(np.isfinite(thresholds))
    if not finite.size:
        return None
    index = finite[np.argmin(np.abs(thresholds[finite] - threshold))]
    return {key: _round(float(curve[key][index])) for key in keys}


# ---------------------------------------------------------------------------------------------
# multiclass, multilabel, regression, detection


def _multiclass(result: EvaluationResult) -> list[Chart]:
    charts = []
    matrix = result.curves.get("confusion_matrix")
    classes = [str(entry.get("class")) for entry in result.per_class]
    if matrix is not None and classes:
        values = np.asarray(matrix["matrix"]).reshape(len(classes), len(classes))
        rows = [
            {
                "actual": classes[i],
                "predicted": classes[j],
                "count": _round(float(values[i, j])),
                "name": "",
            }
            for i in range(len(classes))
            for j in range(len(classes))
        ]
        title = "Confusion matrix"
        description = "Counts (weights) of actual class (rows) against predicted class (columns)."
        charts.append(
            Chart("confusion", title, description, _heatmap(rows, classes, title, description))
        )
    macro = result.curves.get("roc_macro")
    if macro is not None:
        rows = _rows(fpr=macro["fpr"], tpr=macro["tpr"])
        base = alt.Chart(_inline(rows))
        x = alt.X("fpr:Q", title="False positive rate", scale=alt.Scale(domain=[0, 1]))
        y = alt.Y(
            "tpr:Q", title="True positive rate (mean over classes)", scale=alt.Scale(domain=[0, 1])
        )
        line = base.mark_line(color=COLOURS[0]).encode(x=x, y=y, tooltip=_tooltips("fpr", "tpr"))
        title = "Macro-averaged ROC curve (one-vs-rest)"
        description = (
            "The one-vs-rest ROC curves' true positive rates averaged over the classes at each "
            "false positive rate; the dashed diagonal is a random ranking."
        )
        charts.append(
            Chart(
                "roc_macro", title, description, _layered([_diagonal(), line], title, description)
            )
        )
    return charts


def _multilabel(result: EvaluationResult) -> list[Chart]:
    return _per_class_bars(result, "roc_auc", "ROC AUC per label")


def _regression(result: EvaluationResult) -> list[Chart]:
    charts = []
    sample = result.curves.get("sample")
    if sample is not None:
        charts += _regression_sample(sample)
    curve = result.curves.get("rec")
    if curve is None:
        return charts
    finite = np.isfinite(curve["absolute_error"])
    rows = _rows(absolute_error=curve["absolute_error"][finite], share=curve["share"][finite])
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
            alt.Chart(_inline([{"median": _round(median)}]))
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
    charts.append(Chart("rec", title, description, _layered(layers, title, description, rows)))
    return charts


def _regression_sample(sample: Mapping[str, np.ndarray]) -> list[Chart]:
    """Predicted against actual and the residuals' histogram, from the result's sample of
    rows (the same rows however the data was split; a row's weight is its point's size)."""
    rows = _rows(actual=sample["actual"], predicted=sample["predicted"], weight=sample["weight"])
    for row in rows:
        row["residual"] = _round(row["actual"] - row["predicted"])
    n = len(rows)
    low = min(min(row["actual"], row["predicted"]) for row in rows)
    high = max(max(row["actual"], row["predicted"]) for row in rows)
    identity = (
        alt.Chart(_inline([{"a": low, "b": low}, {"a": high, "b": high}]))
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
        _layered([identity, points], title, description, rows),
    )
    bars = (
        alt.Chart(_inline(rows))
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
        "residuals", hist_title, hist_description, _finish(bars, hist_title, hist_description)
    )
    return [scatter, histogram]


def _detection(result: EvaluationResult) -> list[Chart]:
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
    order = sorted(range(rows_count), key=lambda i: -float(entries[i]["n_ground_truth"]))
    shown = order[:MAX_PR_CLASSES]
    rows = [
        {"recall": _round(float(r)), "precision": _round(float(p)), "cls": str(entries[i]["class"])}
        for i in shown
        for r, p in zip(pr["recall"], precision[i], strict=True)
    ]
    chart = (
        alt.Chart(_inline(rows))
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
    return Chart("pr_iou50", title, description, _finish(chart, title, description))


def _per_class_bars(result: EvaluationResult, metric: str, title: str) -> list[Chart]:
    rows = [
        {"class": str(entry.get("class")), metric: _round(entry[metric])}
        for entry in result.per_class
        if isinstance(entry.get(metric), float)
    ]
    if not rows:
        return []
    chart = (
        alt.Chart(_inline(rows))
        .mark_bar(color=COLOURS[0])
        .encode(
            x=alt.X(f"{metric}:Q", title=metric, scale=alt.Scale(domain=[0, 1])),
            y=alt.Y("class:N", title=None, sort=None),
            tooltip=[alt.Tooltip("class:N"), alt.Tooltip(f"{metric}:Q", format=".4f")],
        )
    )
    description = f"{metric} of each class; classes whose value is undefined are left out."
    return [Chart(f"per_class_{metric}", title, description, _finish(chart, title, description))]


# ---------------------------------------------------------------------------------------------
# shared pieces


def _heatmap(
    rows: list[dict[str, Any]], order: list[str], title: str, description: str
) -> dict[str, Any]:
    base = alt.Chart(_inline(rows)).encode(
        x=alt.X("predicted:N", title="Predicted", sort=order),
        y=alt.Y("actual:N", title="Actual", sort=order),
    )
    cells = base.mark_rect().encode(
        color=alt.Color(
            "count:Q",
            title="Count",
            scale=alt.Scale(scheme="blues"),
            legend=alt.Legend(orient="right", direction="vertical"),
        ),
        tooltip=[
            alt.Tooltip("actual:N", title="Actual"),
            alt.Tooltip("predicted:N", title="Predicted"),
            alt.Tooltip("count:Q", title="Count", format=",.6~g"),
        ],
    )
    layers: list[Any] = [cells]
    if len(order) <= 20:  # numbers in the cells while they fit, white on the dark half
        dark = max((float(row["count"]) for row in rows), default=0.0) / 2
        layers.append(
            base.mark_text(fontSize=12).encode(
                text=alt.Text("count:Q", format=",.6~g"),
                color=alt.condition(
                    alt.datum.count > dark, alt.value("#ffffff"), alt.value("#000000")
                ),
            )
        )
    size = 40 * len(order)
    return _layered(
        layers, title, description, width=min(WIDTH, size + 80), height=min(HEIGHT, size + 40)
    )


def _diagonal() -> Any:
    return (
        alt.Chart(_inline([{"a": 0, "b": 0}, {"a": 1, "b": 1}]))
        .mark_line(color=GREY, strokeDash=[4, 4])
        .encode(x="a:Q", y="b:Q")
    )


def _marks(marks: list[dict[str, Any]], x: str, y: str) -> Any:
    return (
        alt.Chart(_inline(marks))
        .mark_point(filled=True, size=90, color=COLOURS[1])
        .encode(
            x=f"{x}:Q",
            y=f"{y}:Q",
            shape=alt.Shape("mark:N", title="Marked"),
            tooltip=[
                alt.Tooltip("mark:N", title="Point"),
                alt.Tooltip(f"{x}:Q", format=".4f"),
                alt.Tooltip(f"{y}:Q", format=".4f"),
            ],
        )
    )


def _layered(
    layers: list[Any],
    title: str,
    description: str,
    rows: list[dict[str, Any]] | None = None,
    width: int = WIDTH,
    height: int = HEIGHT,
) -> dict[str, Any]:
    """The layers as one chart; ``rows``: the data of every layer that has none of its own."""
    chart = alt.layer(*layers) if rows is None else alt.layer(*layers, data=_inline(rows))
    return _finish(chart, title, description, width, height)


def _finish(
    chart: Any, title: str, description: str, width: int = WIDTH, height: int = HEIGHT
) -> dict[str, Any]:
    framed = chart.properties(width=width, height=height, title=title, description=description)
    # Legends below the plot, whole: two charts side by side fit the page's width.
    spec: dict[str, Any] = framed.configure_legend(
        orient="bottom", direction="vertical", labelLimit=0
    ).to_dict()
    spec.pop("$schema", None)  # a URL: the page never fetches it
    return spec


def _inline(rows: list[dict[str, Any]]) -> Any:
    """Rows as a chart's inline data."""
    return alt.InlineData(values=rows)


def _tooltips(*fields: str) -> list[alt.Tooltip]:
    titles = {
        "threshold": "Threshold",
        "fpr": "False positive rate",
        "tpr": "True positive rate",
        "recall": "Recall",
        "precision": "Precision",
    }
    return [
        alt.Tooltip(
            f"{name}:Q", title=titles[name], format=".6~g" if name == "threshold" else ".4f"
        )
        for name in fields
    ]


def _rows(**columns: Iterable[Any]) -> list[dict[str, Any]]:
    names = list(columns)
    return [
        {name: _display(value) for name, value in zip(names, values, strict=True)}
        for values in zip(*columns.values(), strict=True)
    ]


def _display(value: Any) -> Any:
    if isinstance(value, str):
        return value
    number = float(value)
    return _round(number) if math.isfinite(number) else None


def _round(value: float) -> float:
    return float(f"{value:.{DIGITS}g}")


def _level(result: EvaluationResult) -> float:
    for interval in result.intervals.values():
        return float(interval["level"])
    return 0.95


def _interval_text(interval: Mapping[str, Any]) -> str:
    return (
        f"{interval['level']:.0%} CI {interval['lower']:.4f} to {interval['upper']:.4f}, "
        f"{interval['method']}"
    )


def _wilson_band(tpr: np.ndarray, n: float, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Wilson's score interval (Wilson 1927) of each true positive rate, over ``n`` positives."""
    if n <= 0:
        return tpr.copy(), tpr.copy()
    z = _normal_quantile(0.5 + level / 2)
    centre = (tpr + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * np.sqrt(tpr * (1 - tpr) / n + z * z / (4 * n * n))
    return np.clip(centre - half, 0, 1), np.clip(centre + half, 0, 1)


def _normal_quantile(p: float) -> float:
    from evalserve.core._distributions import normal_quantile

    return float(normal_quantile(p))
