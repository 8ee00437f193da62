"""Task binary's charts of the operating points: their markers on the ROC and precision-recall
curves, the threshold view (precision, recall and the share flagged against the threshold, the
chosen threshold and the alert budgets marked) and the DET curve with the equal error rate."""

from __future__ import annotations

from statistics import NormalDist
from typing import Any

import altair as alt
import numpy as np

from evalserve.core import EvaluationResult, Options, operating_names, target_label
from evalserve.report._operating import (
    EER,
    OperatingPoint,
    curve_position,
    operating_points,
    precision_of,
)
from evalserve.report._parts import (
    COLOURS,
    GREY,
    Chart,
    inline,
    layered,
    rounded,
    table_rows,
    tooltips,
)

__all__ = ["MARK_COLOUR", "SHAPES", "det_chart", "operating_marks", "threshold_view"]

# The operating points are hollow symbols in bluish green, one shape per option; the threshold's
# point is a filled vermillion circle, the optima's filled black squares (``_parts.point_marks``).
MARK_COLOUR = COLOURS[2]
SHAPES = {
    "recall_at_precision": "triangle-up",
    "precision_at_recall": "triangle-down",
    "tpr_at_fpr": "diamond",
    "specificity_at_sensitivity": "triangle-right",
    "flagged_share": "triangle-left",
    EER: "cross",
}
# The DET axes' ticks (rates), kept where the curve is: normal deviates spread the ends.
DET_TICKS = (
    0.00001, 0.0001, 0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.4,
    0.6, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 0.9999, 0.99999,
)  # fmt: skip
_PROBIT = NormalDist().inv_cdf


def operating_marks(result: EvaluationResult, options: Options, curve: str) -> Any | None:
    """A layer of the operating points on the ``roc`` curve (FPR, TPR) or the ``pr`` curve
    (recall, precision), one point per target with a threshold; None when there is none."""
    rows = []
    for point in operating_points(result, options):
        position = curve_position(result, point) if point.primary else None
        if position is None:
            continue
        fpr, tpr = position
        if curve == "roc":
            at = {"fpr": rounded(fpr), "tpr": rounded(tpr)}
        else:
            precision = (
                point.value if point.option == "precision_at_recall" else None
            ) or precision_of(result, fpr, tpr)
            if precision is None:
                continue
            at = {"recall": rounded(tpr), "precision": rounded(precision)}
        rows.append({**at, **_described(point)})
    if not rows:
        return None
    x, y = ("fpr", "tpr") if curve == "roc" else ("recall", "precision")
    options_shown = [name for name in SHAPES if any(row["option"] == name for row in rows)]
    return (
        alt.Chart(inline(rows))
        .mark_point(filled=False, size=110, strokeWidth=2, color=MARK_COLOUR, opacity=1)
        .encode(
            x=f"{x}:Q",
            y=f"{y}:Q",
            shape=alt.Shape(
                "option:N",
                title="Operating point",
                scale=alt.Scale(
                    domain=options_shown, range=[SHAPES[name] for name in options_shown]
                ),
            ),
            tooltip=[*_point_tooltip(), *tooltips(x, y)],
        )
    )


def threshold_view(result: EvaluationResult, options: Options) -> Chart | None:
    """Precision, recall and the share of rows flagged (scored at or above) against the
    threshold, from the ROC curve and the weighted class totals; the chosen threshold and the
    alert budgets marked."""
    roc = result.curves.get("roc")
    positives = _float(result.metrics.get("n_positive"))
    negatives = _float(result.metrics.get("n_negative"))
    if roc is None or not positives or not negatives:
        return None
    finite = np.isfinite(roc["thresholds"])
    tpr, fpr = roc["tpr"][finite], roc["fpr"][finite]
    flagged = tpr * positives + fpr * negatives
    precision = np.divide(
        tpr * positives, flagged, out=np.full(flagged.shape, np.nan), where=flagged > 0
    )
    rows = table_rows(
        threshold=roc["thresholds"][finite],
        precision=precision,
        recall=tpr,
        flagged_share=flagged / (positives + negatives),
    )
    measures: list[Any] = ["precision", "recall", "flagged_share"]
    legend = alt.Legend(labelExpr="replace(datum.label, '_', ' ')")
    lines = (
        alt.Chart()
        .transform_fold(measures, as_=["measure", "share"])
        .transform_filter("isValid(datum.share)")
        # The share at a score is that of the lowest threshold at or above it: step-before.
        .mark_line(interpolate="step-before")
        .encode(
            x=alt.X("threshold:Q", title="Threshold (score)", scale=alt.Scale(zero=False)),
            y=alt.Y(
                "share:Q", title="Precision, recall, share flagged", scale=alt.Scale(domain=[0, 1])
            ),
            color=alt.Color(
                "measure:N",
                title="Measure",
                scale=alt.Scale(domain=measures, range=list(COLOURS[:3])),
                legend=legend,
            ),
            strokeDash=alt.StrokeDash(
                "measure:N",
                title="Measure",
                scale=alt.Scale(domain=measures, range=[[1, 0], [6, 3], [2, 2]]),
                legend=legend,  # the same legend: one, whose symbols show both cues
            ),
            tooltip=[
                alt.Tooltip("measure:N", title="Measure"),
                alt.Tooltip("threshold:Q", title="Threshold", format=".6~g"),
                alt.Tooltip("share:Q", title="Value", format=".4f"),
            ],
        )
    )
    layers: list[Any] = [lines]
    chosen = _chosen(result, options.threshold, positives + negatives)
    layers.append(
        alt.Chart(inline([chosen]))
        .mark_rule(color=GREY, strokeDash=[4, 4], strokeWidth=1.5)
        .encode(
            x="threshold:Q",
            tooltip=[
                alt.Tooltip("threshold:Q", title="Chosen threshold", format=".6~g"),
                alt.Tooltip("precision:Q", title="Precision", format=".4f"),
                alt.Tooltip("recall:Q", title="Recall", format=".4f"),
                alt.Tooltip("flagged_share:Q", title="Share flagged", format=".4f"),
            ],
        )
    )
    budgets = _budgets(result, options)
    if budgets:
        layers.append(
            alt.Chart(inline(budgets))
            .mark_rule(color=GREY, strokeDash=[1, 3])
            .encode(y="budget:Q", tooltip=[alt.Tooltip("budget:Q", title="Budget (share flagged)")])
        )
        reached = [row for row in budgets if row["threshold"] is not None]
        if reached:
            layers.append(
                alt.Chart(inline(reached))
                .mark_point(
                    filled=False,
                    size=110,
                    strokeWidth=2,
                    color=MARK_COLOUR,
                    shape=SHAPES["flagged_share"],
                )
                .encode(
                    x="threshold:Q",
                    y="flagged_share:Q",
                    tooltip=[
                        alt.Tooltip("budget:Q", title="Budget (share flagged)"),
                        alt.Tooltip("threshold:Q", title="Threshold", format=".6~g"),
                        alt.Tooltip("flagged_share:Q", title="Share flagged", format=".4f"),
                        alt.Tooltip("precision:Q", title="Precision", format=".4f"),
                        alt.Tooltip("recall:Q", title="Recall", format=".4f"),
                    ],
                )
            )
    title = "Precision, recall and share flagged by threshold"
    description = (
        "For each threshold, the precision, the recall and the share of rows flagged (scored at "
        f"or above it; weighted), from the ROC curve; the dashed rule is the chosen threshold "
        f"{options.threshold:g}"
    )
    if budgets:
        description += (
            "; the dotted lines are the alert budgets and the hollow triangles the lowest "
            "thresholds that keep within them"
        )
    description += "."
    return Chart("threshold", title, description, layered(layers, title, description, rows))


def det_chart(result: EvaluationResult) -> Chart | None:
    """The detection error tradeoff curve (Martin et al. 1997): FNR against FPR on normal
    deviate axes, labelled in percent, with the FPR = FNR diagonal and the equal error rate."""
    det = result.curves.get("det")
    if det is None:
        return None
    fpr, fnr, thresholds = det["fpr"], det["fnr"], det["thresholds"]
    # A rate of 0 or 1 is an infinite normal deviate: those points cannot be drawn.
    drawn = (fpr > 0) & (fpr < 1) & (fnr > 0) & (fnr < 1) & np.isfinite(thresholds)
    if not drawn.any():
        return None
    rows = table_rows(
        threshold=thresholds[drawn],
        fpr=fpr[drawn],
        fnr=fnr[drawn],
        x=[_PROBIT(float(rate)) for rate in fpr[drawn]],
        y=[_PROBIT(float(rate)) for rate in fnr[drawn]],
    )
    rates = np.concatenate([fpr[drawn], fnr[drawn]])
    low = max((t for t in DET_TICKS if t <= rates.min()), default=float(rates.min()))
    high = min((t for t in DET_TICKS if t >= rates.max()), default=float(rates.max()))
    domain = [rounded(_PROBIT(low)), rounded(_PROBIT(high))]
    ticks = [rounded(_PROBIT(t)) for t in DET_TICKS if low <= t <= high]

    def axis(title: str) -> alt.Axis:
        # Vega's cumulativeNormal turns a normal deviate back into the rate it stands for.
        return alt.Axis(
            title=title, values=ticks, labelExpr="format(cumulativeNormal(datum.value), '.3~%')"
        )

    scale = alt.Scale(domain=domain, nice=False, zero=False)
    x = alt.X("x:Q", axis=axis("False positive rate (normal deviate scale)"), scale=scale)
    y = alt.Y("y:Q", axis=axis("False negative rate (normal deviate scale)"), scale=scale)
    tip = [
        alt.Tooltip("threshold:Q", title="Threshold", format=".6~g"),
        alt.Tooltip("fpr:Q", title="False positive rate", format=".4f"),
        alt.Tooltip("fnr:Q", title="False negative rate", format=".4f"),
    ]
    order = alt.Order("threshold:Q", sort="descending")
    base = alt.Chart()
    diagonal = (
        alt.Chart(inline([{"a": domain[0]}, {"a": domain[1]}]))
        .mark_line(color=GREY, strokeDash=[4, 4])
        .encode(x=alt.X("a:Q", scale=scale), y=alt.Y("a:Q", scale=scale))
    )
    line = base.mark_line(color=COLOURS[0], clip=True).encode(x=x, y=y, order=order, tooltip=tip)
    hover = base.mark_point(opacity=0, size=60, clip=True).encode(x=x, y=y, tooltip=tip)
    layers: list[Any] = [diagonal, line, hover]
    title = "DET curve"
    eer = _float(result.metrics.get(EER))
    at = _float(result.metrics.get(f"{EER}_threshold"))
    if eer is not None and at is not None:
        title += f", EER {eer:.4f} at threshold {at:.4g}"
        if 0 < eer < 1:
            point = {"x": rounded(_PROBIT(eer)), "eer": rounded(eer), "threshold": rounded(at)}
            layers.append(
                alt.Chart(inline([point]))
                .mark_point(
                    filled=False, size=140, strokeWidth=2, color=MARK_COLOUR, shape=SHAPES[EER]
                )
                .encode(
                    x=alt.X("x:Q", scale=scale),
                    y=alt.Y("x:Q", scale=scale),
                    tooltip=[
                        alt.Tooltip("eer:Q", title="Equal error rate", format=".4f"),
                        alt.Tooltip("threshold:Q", title="Threshold", format=".6~g"),
                    ],
                )
            )
    description = (
        "Detection error tradeoff (Martin et al. 1997): the false negative rate against the "
        "false positive rate, both on normal deviate (probit) axes labelled in percent, where "
        "two normal score distributions give a straight line and the low error rates a team "
        "runs at are spread out; the dashed diagonal is FPR = FNR, the cross the equal error "
        "rate. Points where a rate is 0 or 1 have no normal deviate and are left out."
    )
    return Chart("det", title, description, layered(layers, title, description, rows))


def _described(point: OperatingPoint) -> dict[str, Any]:
    """A point's tooltip fields: the option, the target, the value's metric and the value, the
    threshold."""
    return {
        "option": point.option,
        "target": "" if point.target is None else target_label(point.target),
        "metric": point.metric,
        "value": None if point.value is None else rounded(point.value),
        "threshold": None if point.threshold is None else rounded(point.threshold),
    }


def _point_tooltip() -> list[alt.Tooltip]:
    return [
        alt.Tooltip("option:N", title="Option"),
        alt.Tooltip("target:N", title="Target"),
        alt.Tooltip("metric:N", title="Metric"),
        alt.Tooltip("value:Q", title="Value", format=".4f"),
        alt.Tooltip("threshold:Q", title="Threshold", format=".6~g"),
    ]


def _chosen(result: EvaluationResult, threshold: float, total: float) -> dict[str, Any]:
    """The chosen threshold's precision, recall and share flagged: the confusion counts'."""
    flagged = _float(result.metrics.get("n_predicted_positive"))
    return {
        "threshold": rounded(threshold),
        "precision": _shown(result.metrics.get("precision")),
        "recall": _shown(result.metrics.get("recall")),
        "flagged_share": None if flagged is None else rounded(flagged / total),
    }


def _budgets(result: EvaluationResult, options: Options) -> list[dict[str, Any]]:
    rows = []
    for q in options.flagged_share:
        names = operating_names("flagged_share", q)
        if names[0] not in result.metrics:
            continue
        values = [_shown(result.metrics.get(name)) for name in names]
        keys = ("threshold", "flagged_share", "precision", "recall")
        rows.append({"budget": rounded(q), **dict(zip(keys, values, strict=True))})
    return rows


def _float(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _shown(value: object) -> float | None:
    number = _float(value)
    return None if number is None else rounded(number)
