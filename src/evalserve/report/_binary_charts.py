"""Task binary's charts: ROC (with the Wilson band of the true positive rate, the threshold's
and Youden's points), precision-recall (the prevalence line, the F1 optimum), both with the
operating points; precision, recall and share flagged by threshold; the DET curve; the classes'
score distributions (KS), the reliability diagram and the confusion matrix at the threshold."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import altair as alt
import numpy as np

from evalserve.core import EvaluationResult, Interval, Options
from evalserve.core.intervals import wilson_band
from evalserve.report._operating_charts import det_chart, operating_marks, threshold_view
from evalserve.report._parts import (
    COLOURS,
    GREY,
    Chart,
    confusion_rows,
    diagonal,
    heatmap,
    inline,
    layered,
    point_marks,
    rounded,
    table_rows,
    tooltips,
)

__all__ = [
    "SERIES",
    "binary_charts",
    "calibration_rows",
    "distribution_rows",
    "gain_rows",
    "series_rows",
]


def binary_charts(
    result: EvaluationResult,
    options: Options,
    skip: frozenset[str] = frozenset(),
    reference: EvaluationResult | None = None,
) -> list[Chart]:
    """Task binary's charts, but those whose key is in ``skip`` (made only when wanted);
    ``reference``: the baseline payload's result, whose ROC, precision-recall, score
    distribution and calibration curves are drawn beside the current ones."""
    charts = []
    metrics = result.metrics
    at = f"threshold {options.threshold:g}"
    if "roc" in result.curves:
        charts.append(_roc(result, at, options, reference))
        charts.append(_pr(result, at, options, reference))
        view = None if "threshold" in skip else threshold_view(result, options)
        if view is not None:
            charts.append(view)
        det = None if "det" in skip else det_chart(result)
        if det is not None:
            charts.append(det)
        if "gain" not in skip:
            charts += _gain_and_lift(result)
        if "distributions" not in skip:
            charts.append(_distributions(result, reference))
    if "calibration" in result.curves:
        other = None if reference is None else reference.curves.get("calibration")
        charts.append(_calibration(result.curves["calibration"], other))
    counts = [metrics.get(name) for name in ("tp", "fp", "tn", "fn")]
    numbers = [float(value) for value in counts if isinstance(value, int | float)]
    if len(numbers) == 4:
        charts.append(_confusion_2x2(numbers, at))
    return charts


# The series of a chart with a reference (the baseline payload's curves beside the current).
SERIES = ("current", "reference")
SERIES_COLOURS = (COLOURS[0], "#7A7A7A")  # blue; the reference a grey of 4.3:1 on white


def series_rows(
    current: list[dict[str, Any]], reference: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The rows of both series, each marked ``series``: "current" or "reference"."""
    return [{**row, "series": SERIES[0]} for row in current] + [
        {**row, "series": SERIES[1]} for row in reference
    ]


def _beside_reference(
    current: Mapping[str, Any],
    reference: Mapping[str, Any],
    axes: tuple[str, str],
    x: Any,
    y: Any,
    interpolate: Literal["linear", "step-before"],
) -> Any:
    """The line of a curve (its ``axes`` and thresholds) drawn for the current data and the
    reference, coloured and dashed by series."""

    def rows(curve: Mapping[str, Any]) -> list[dict[str, Any]]:
        return table_rows(**{name: curve[name] for name in axes}, threshold=curve["thresholds"])

    return (
        alt.Chart(inline(series_rows(rows(current), rows(reference))))
        .mark_line(interpolate=interpolate)
        .encode(
            x=x,
            y=y,
            **_series_encoding(),
            tooltip=[alt.Tooltip("series:N", title="Data"), *tooltips("threshold", *axes)],
        )
    )


def _series_encoding() -> dict[str, Any]:
    """Colour and dash by series, one legend ("Data")."""
    return {
        "color": alt.Color(
            "series:N",
            title="Data",
            scale=alt.Scale(domain=list(SERIES), range=list(SERIES_COLOURS)),
        ),
        "strokeDash": alt.StrokeDash(
            "series:N",
            title="Data",
            scale=alt.Scale(domain=list(SERIES), range=[[1, 0], [6, 3]]),
        ),
    }


def _roc(
    result: EvaluationResult, at: str, options: Options, reference: EvaluationResult | None
) -> Chart:
    roc = result.curves["roc"]
    fpr, tpr, thresholds = roc["fpr"], roc["tpr"], roc["thresholds"]
    n_positive = float(result.metrics.get("n_positive") or 0.0)
    lower, upper = wilson_band(tpr, n_positive, _level(result))
    rows = table_rows(fpr=fpr, tpr=tpr, threshold=thresholds, tpr_lower=lower, tpr_upper=upper)
    base = alt.Chart()  # the layers share the page's one copy of the rows
    x = alt.X("fpr:Q", title="False positive rate", scale=alt.Scale(domain=[0, 1]))
    y = alt.Y("tpr:Q", title="True positive rate", scale=alt.Scale(domain=[0, 1]))
    band = base.mark_area(opacity=0.25, color=COLOURS[0]).encode(
        x=x, y=alt.Y("tpr_lower:Q"), y2="tpr_upper:Q"
    )
    # Straight lines between the points: between two distinct scores the curve is flat,
    # vertical, or (through tied scores) diagonal, as the AUC counts it.
    line = base.mark_line(color=COLOURS[0], interpolate="linear").encode(
        x=x, y=y, tooltip=tooltips("threshold", "fpr", "tpr")
    )
    hover = base.mark_point(opacity=0, size=60).encode(
        x=x, y=y, tooltip=tooltips("threshold", "fpr", "tpr")
    )
    if reference is not None and "roc" in reference.curves:
        line = _beside_reference(
            result.curves["roc"], reference.curves["roc"], ("fpr", "tpr"), x, y, "linear"
        )
    layers: list[Any] = [band, diagonal(), line, hover]
    marks = _roc_marks(result, at)
    if marks:
        layers.append(point_marks(marks, "fpr", "tpr"))
    operating = operating_marks(result, options, "roc")
    if operating is not None:
        layers.append(operating)
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
        "positive rate; the dashed diagonal is a random ranking; the vermillion circle marks "
        "the threshold, the black square Youden's optimum"
        + (", hollow symbols the operating points." if operating is not None else ".")
    )
    reference_auc = None if reference is None else reference.metrics.get("roc_auc")
    if reference is not None and isinstance(reference_auc, float) and "roc" in reference.curves:
        description += (
            " The grey dashed curve is the reference (the baseline's rows, AUC "
            f"{reference_auc:.4f}), the blue one the current data."
        )
    spec = layered(layers, title, description, rows, own_shapes=True)
    return Chart("roc", title, description, spec)


def _pr(
    result: EvaluationResult, at: str, options: Options, reference: EvaluationResult | None
) -> Chart:
    pr = result.curves["pr"]
    rows = table_rows(recall=pr["recall"], precision=pr["precision"], threshold=pr["thresholds"])
    base = alt.Chart()
    x = alt.X("recall:Q", title="Recall", scale=alt.Scale(domain=[0, 1]))
    y = alt.Y("precision:Q", title="Precision", scale=alt.Scale(domain=[0, 1]))
    line = base.mark_line(color=COLOURS[0], interpolate="step-before").encode(
        x=x, y=y, tooltip=tooltips("threshold", "recall", "precision")
    )
    hover = base.mark_point(opacity=0, size=60).encode(
        x=x, y=y, tooltip=tooltips("threshold", "recall", "precision")
    )
    if reference is not None and "pr" in reference.curves:
        line = _beside_reference(
            pr, reference.curves["pr"], ("recall", "precision"), x, y, "step-before"
        )
    layers: list[Any] = [line, hover]
    prevalence = result.metrics.get("prevalence")
    if isinstance(prevalence, float):
        layers.append(
            alt.Chart(inline([{"prevalence": rounded(prevalence)}]))
            .mark_rule(color=GREY, strokeDash=[4, 4])
            .encode(y="prevalence:Q", tooltip=[alt.Tooltip("prevalence:Q", title="Prevalence")])
        )
    marks = _pr_marks(result, at)
    if marks:
        layers.append(point_marks(marks, "recall", "precision"))
    operating = operating_marks(result, options, "pr")
    if operating is not None:
        layers.append(operating)
    ap = result.metrics.get("average_precision")
    title = "Precision-recall curve"
    if isinstance(ap, float):
        title += f", average precision {ap:.4f}"
    description = (
        "Precision against recall; the dashed line is the prevalence (a random ranking's "
        "precision); the vermillion circle marks the threshold, the black square the "
        "F1-optimal threshold"
        + (", hollow symbols the operating points." if operating is not None else ".")
    )
    reference_ap = None if reference is None else reference.metrics.get("average_precision")
    if reference is not None and isinstance(reference_ap, float) and "pr" in reference.curves:
        description += (
            " The grey dashed curve is the reference (the baseline's rows, average precision "
            f"{reference_ap:.4f}; its prevalence may differ), the blue one the current data."
        )
    spec = layered(layers, title, description, rows, own_shapes=True)
    return Chart("pr", title, description, spec)


def gain_rows(result: EvaluationResult) -> list[dict[str, Any]]:
    """The cumulative gain and the lift at each point of the ROC curve: rows ranked by score
    from the top, ``share`` the share of rows flagged at the point's threshold,
    (TP + FP) / N = (TPR * P + FPR * (N - P)) / N by weight, ``gain`` the share of the
    positives among them (the TPR) and ``lift`` = gain / share (None at share 0)."""
    roc = result.curves["roc"]
    positives = float(result.metrics.get("n_positive") or 0.0)
    negatives = float(result.metrics.get("n_negative") or 0.0)
    total = positives + negatives
    if total <= 0:
        return []
    tpr, fpr = roc["tpr"].astype(float), roc["fpr"].astype(float)
    share = (tpr * positives + fpr * negatives) / total
    lift = np.divide(tpr, share, out=np.full(share.shape, np.nan), where=share > 0)
    return table_rows(share=share, gain=tpr, lift=lift, threshold=roc["thresholds"])


def _gain_and_lift(result: EvaluationResult) -> list[Chart]:
    rows = gain_rows(result)
    positives = float(result.metrics.get("n_positive") or 0.0)
    if not rows or positives <= 0:
        return []
    prevalence = positives / (positives + float(result.metrics.get("n_negative") or 0.0))
    share = alt.X(
        "share:Q", title="Share of rows flagged (ranked by score)", scale=alt.Scale(domain=[0, 1])
    )
    tip = [
        alt.Tooltip("threshold:Q", title="Threshold", format=".6~g"),
        alt.Tooltip("share:Q", title="Share flagged", format=".4f"),
        alt.Tooltip("gain:Q", title="Share of positives captured", format=".4f"),
        alt.Tooltip("lift:Q", title="Lift", format=".3f"),
    ]
    perfect = (
        alt.Chart(
            inline(
                [{"a": 0.0, "b": 0.0}, {"a": rounded(prevalence), "b": 1.0}, {"a": 1.0, "b": 1.0}]
            )
        )
        .mark_line(color=GREY, strokeDash=[1, 3])
        .encode(x="a:Q", y="b:Q")
    )
    gain_line = (
        alt.Chart()
        .mark_line(color=COLOURS[0], interpolate="linear")
        .encode(
            x=share,
            y=alt.Y(
                "gain:Q", title="Share of positives captured (gain)", scale=alt.Scale(domain=[0, 1])
            ),
            tooltip=tip,
        )
    )
    how = (
        "computed from the ROC curve's points: the share of rows flagged at a threshold is "
        "(TP + FP) / N = (TPR x positives + FPR x negatives) / rows, by weight, and the gain "
        "is the TPR"
    )
    gain_title = "Cumulative gain"
    gain_description = (
        "The share of all positives captured (gain) against the share of rows flagged, "
        f"highest scores first, {how}; the dashed diagonal is a random ranking, the dotted "
        "line a perfect one."
    )
    gain = Chart(
        "gain",
        gain_title,
        gain_description,
        layered([diagonal(), perfect, gain_line], gain_title, gain_description, rows),
    )
    lift_rows = [row for row in rows if row["lift"] is not None]
    one = (
        alt.Chart(inline([{"lift": 1.0}]))
        .mark_rule(color=GREY, strokeDash=[4, 4])
        .encode(y="lift:Q")
    )
    lift_line = (
        alt.Chart()
        .mark_line(color=COLOURS[0], interpolate="linear")
        .encode(x=share, y=alt.Y("lift:Q", title="Lift (gain / share flagged)"), tooltip=tip)
    )
    lift_title = f"Lift (at most {1 / prevalence:.3g}, the inverse of the prevalence)"
    lift_description = (
        "The lift, the gain divided by the share of rows flagged: how many times more "
        "positives the top-ranked rows hold than a random pick of the same size (from the "
        "gain chart's points); the dashed rule is a random ranking's lift of 1."
    )
    lift = Chart(
        "lift",
        lift_title,
        lift_description,
        layered([one, lift_line], lift_title, lift_description, lift_rows),
    )
    return [gain, lift]


def distribution_rows(
    result: EvaluationResult, reference: EvaluationResult | None = None
) -> list[dict[str, Any]]:
    """Per distinct score of the ROC curve, the share of positives and of negatives scored at
    or above it; with a ``reference``, both results' rows marked by ``series``."""

    def rows_of(each: EvaluationResult) -> list[dict[str, Any]]:
        roc = each.curves["roc"]
        finite = np.isfinite(roc["thresholds"])
        return table_rows(
            threshold=roc["thresholds"][finite],
            positive=roc["tpr"][finite],
            negative=roc["fpr"][finite],
        )

    if reference is None or "roc" not in reference.curves:
        return rows_of(result)
    return series_rows(rows_of(result), rows_of(reference))


def _distributions(result: EvaluationResult, reference: EvaluationResult | None) -> Chart:
    rows = distribution_rows(result, reference)
    compared = bool(rows) and "series" in rows[0]
    dash = (
        alt.StrokeDash(
            "series:N",
            title="Data",
            scale=alt.Scale(domain=list(SERIES), range=[[1, 0], [6, 3]]),
        )
        if compared
        else alt.StrokeDash("cls:N", legend=None)
    )
    lines = (
        alt.Chart()
        .transform_fold(["positive", "negative"], as_=["cls", "share"])
        # The share at a score is that of the lowest distinct score at or above it: the
        # points run in ascending score order, so each step is taken before the point.
        .mark_line(interpolate="step-before")
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
            strokeDash=dash,
            tooltip=[
                *([alt.Tooltip("series:N", title="Data")] if compared else []),
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
            alt.Chart(inline([{"threshold": rounded(at), "ks": rounded(ks)}]))
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
        + (
            " Solid lines are the current data, dashed ones the reference (the baseline's "
            "rows): a shift between them is the scores' drift."
            if compared
            else ""
        )
    )
    return Chart("distributions", title, description, layered(layers, title, description, rows))


def calibration_rows(
    curve: Mapping[str, np.ndarray], reference: Mapping[str, np.ndarray] | None = None
) -> list[dict[str, Any]]:
    """The reliability diagram's bins; with a ``reference`` curve, both marked by
    ``series``."""

    def rows_of(each: Mapping[str, np.ndarray]) -> list[dict[str, Any]]:
        return table_rows(
            mean_score=each["mean_score"],
            fraction_positive=each["fraction_positive"],
            weight=each["weight"],
            lower=each["lower"],
            upper=each["upper"],
        )

    if reference is None:
        return rows_of(curve)
    return series_rows(rows_of(curve), rows_of(reference))


def _calibration(
    curve: Mapping[str, np.ndarray], reference: Mapping[str, np.ndarray] | None = None
) -> Chart:
    rows = calibration_rows(curve, reference)
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
    size = alt.Size("weight:Q", title="Rows (weight)", legend=None)
    if reference is None:
        line = base.mark_line(color=COLOURS[0]).encode(x=x, y=y)
        points = base.mark_circle(color=COLOURS[0], opacity=0.9).encode(
            x=x, y=y, size=size, tooltip=tooltip
        )
    else:
        series = _series_encoding()
        line = base.mark_line().encode(x=x, y=y, **series)
        points = base.mark_circle(opacity=0.9).encode(
            x=x,
            y=y,
            size=size,
            color=series["color"],
            tooltip=[alt.Tooltip("series:N", title="Data"), *tooltip],
        )
    title = "Reliability diagram"
    description = (
        "Per probability bin, the fraction of positives against the mean predicted probability "
        "(point size: the bin's rows); the dashed diagonal is perfect calibration."
        + (
            " The blue points are the current data, the grey ones on the dashed line the "
            "reference (the baseline's rows)."
            if reference is not None
            else ""
        )
    )
    layers = [diagonal(), line, points]
    return Chart("calibration", title, description, layered(layers, title, description, rows))


# The 2x2 matrix's cells (rows: actual positive, negative; columns: predicted positive,
# negative): each cell's name, its share of the actual class and its share of the predicted.
CONFUSION_NAMES = (
    (("true positives", "TPR", "precision"), ("false negatives", "FNR", "FOR")),
    (("false positives", "FPR", "FDR"), ("true negatives", "TNR", "NPV")),
)


def _confusion_2x2(counts: Sequence[float], at: str) -> Chart:
    tp, fp, tn, fn = counts
    order = ["positive", "negative"]
    rows = confusion_rows([[tp, fn], [fp, tn]], order, CONFUSION_NAMES)
    title = f"Confusion matrix at {at}"
    description = (
        "Counts (weights) of actual against predicted class at the threshold, each cell "
        "coloured by its share of the actual class (its row): the true positive rate (TPR) "
        "and false negative rate (FNR) of the positives, the false positive rate (FPR) and "
        "true negative rate (TNR) of the negatives, so that the minority class's cells are "
        "as readable as the majority's. The tooltip adds each cell's share of its predicted "
        "class (precision, FDR, FOR, NPV)."
    )
    return Chart("confusion", title, description, heatmap(rows, order, title, description))


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
        marks.append({axes[0]: rounded(x), axes[1]: rounded(y), "mark": f"At {at}"})
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
    return {key: rounded(float(curve[key][index])) for key in keys}


def _level(result: EvaluationResult) -> float:
    for interval in result.intervals.values():
        return float(interval.level)
    return 0.95


def _interval_text(interval: Interval) -> str:
    return (
        f"{interval.level:.0%} CI {interval.lower:.4f} to {interval.upper:.4f}, {interval.method}"
    )
