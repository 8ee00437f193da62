"""The pieces every chart of the report is made of: the ``Chart`` record, the page's colours
and sizes, and the Altair helpers (layers over one copy of the rows, legends below, numbers
rounded for display)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import altair as alt

__all__ = [
    "COLOURS",
    "GREY",
    "HEIGHT",
    "OPTIMUM_MARK",
    "THRESHOLD_MARK",
    "VALIDATE",
    "WIDTH",
    "Chart",
    "confusion_rows",
    "diagonal",
    "display",
    "finished",
    "heatmap",
    "inline",
    "layered",
    "point_marks",
    "rounded",
    "table_rows",
    "tooltips",
]

WIDTH = 360
HEIGHT = 300
# Okabe & Ito's colour-blind safe palette: blue, vermillion, bluish green, orange, purple.
COLOURS = ("#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7")
GREY = "#555555"
DIGITS = 7
# Whether ``finished`` checks a specification against Vega-Lite's schema (Altair's default):
# the segments' charts, made by the code that made the overall ones, check the first segment's.
VALIDATE: ContextVar[bool] = ContextVar("VALIDATE", default=True)


@dataclass(frozen=True)
class Chart:
    """One chart of the page: an id for its element, a title, a sentence saying what it shows
    (the figure's caption and accessible description) and the Vega-Lite specification."""

    key: str
    title: str
    description: str
    spec: dict[str, Any]


def confusion_rows(counts: Any, order: list[str], names: Any = None) -> list[dict[str, Any]]:
    """The cells of a confusion matrix (``counts[i][j]``: actual ``order[i]`` predicted
    ``order[j]``) with each cell's count, its share of the actual class (the row: the rate a
    cell is coloured by, so that a rare class's cells are as readable as a common one's) and
    its share of the predicted class (the column); a share of an empty row or column is None.
    ``names[i][j]``: the cell's name and its two rates' names (task binary: ``("true
    positives", "TPR", "precision")``)."""
    values = [[float(value) for value in row] for row in counts]
    rows_total = [sum(row) for row in values]
    columns_total = [sum(row[j] for row in values) for j in range(len(order))]
    cells = []
    for i, actual in enumerate(order):
        for j, predicted in enumerate(order):
            count = values[i][j]
            name, row_name, column_name = names[i][j] if names is not None else ("", "", "")
            rate = count / rows_total[i] if rows_total[i] > 0 else None
            share = count / columns_total[j] if columns_total[j] > 0 else None
            cells.append(
                {
                    "actual": actual,
                    "predicted": predicted,
                    "count": rounded(count),
                    "name": name,
                    "rate": None if rate is None else rounded(rate),
                    "rate_name": row_name,
                    "column_rate": None if share is None else rounded(share),
                    "column_rate_name": column_name,
                    "label": _rate_label(rate, row_name),
                }
            )
    return cells


def _rate_label(rate: float | None, name: str) -> str:
    """A share as the cell shows it: one decimal of a percent, "<0.1%" for a small non-zero
    one (never shown as 0), "n/a" for an empty row."""
    if rate is None:
        return "n/a"
    percent = "<0.1%" if 0 < rate < 0.0005 else f"{100 * rate:.1f}%"
    return f"{name} {percent}" if name else percent


def heatmap(
    rows: list[dict[str, Any]], order: list[str], title: str, description: str
) -> dict[str, Any]:
    """A confusion matrix of ``confusion_rows``: each cell coloured by its share of the actual
    class, its count and that share written in it while they fit."""
    base = alt.Chart(inline(rows)).encode(
        x=alt.X("predicted:N", title="Predicted", sort=order),
        y=alt.Y("actual:N", title="Actual", sort=order),
    )
    binary = any(row["rate_name"] for row in rows)
    cells = base.mark_rect().encode(
        color=alt.Color(
            "rate:Q",
            title="Share of the actual class",
            scale=alt.Scale(scheme="blues", domain=[0, 1]),
            legend=alt.Legend(orient="right", direction="vertical", format="%"),
        ),
        tooltip=[
            alt.Tooltip("actual:N", title="Actual"),
            alt.Tooltip("predicted:N", title="Predicted"),
            *([alt.Tooltip("name:N", title="Cell")] if binary else []),
            alt.Tooltip("count:Q", title="Count", format=",.6~g"),
            *([alt.Tooltip("rate_name:N", title="Rate")] if binary else []),
            alt.Tooltip("rate:Q", title="Share of the actual class", format=".2%"),
            *([alt.Tooltip("column_rate_name:N", title="Of the predicted")] if binary else []),
            alt.Tooltip("column_rate:Q", title="Share of the predicted class", format=".2%"),
        ],
    )
    layers: list[Any] = [cells]
    lines = 2 if len(order) <= 10 else 1 if len(order) <= 20 else 0
    # White text on the dark half of the scale.
    ink = alt.condition(alt.datum.rate > 0.5, alt.value("#ffffff"), alt.value("#000000"))
    if lines == 2:
        layers.append(
            base.mark_text(fontSize=12, dy=-8).encode(
                text=alt.Text("count:Q", format=",.6~g"), color=ink
            )
        )
    if lines:
        layers.append(
            base.mark_text(fontSize=11, dy=8 if lines == 2 else 0).encode(
                text=alt.Text("label:N"), color=ink
            )
        )
    size = (90 if binary else 56) * len(order)
    return layered(
        layers, title, description, width=min(WIDTH, size + 80), height=min(HEIGHT, size + 40)
    )


def diagonal() -> Any:
    return (
        alt.Chart(inline([{"a": 0, "b": 0}, {"a": 1, "b": 1}]))
        .mark_line(color=GREY, strokeDash=[4, 4])
        .encode(x="a:Q", y="b:Q")
    )


# The marked points of the ROC and precision-recall curves: the chosen threshold's and the
# optimum's, each its own colour and shape (one legend, "Marked", says which is which).
THRESHOLD_MARK = ("#D55E00", "circle")  # vermillion
OPTIMUM_MARK = ("#000000", "square")  # black: apart from the curve's blue and the green points


def point_marks(marks: list[dict[str, Any]], x: str, y: str) -> Any:
    """The marked points (``mark``: "At threshold ..." or the optimum's name): the threshold's
    a vermillion circle, the optimum's a black square."""
    names = [str(mark["mark"]) for mark in marks]
    styles = [THRESHOLD_MARK if name.startswith("At ") else OPTIMUM_MARK for name in names]
    legend = alt.Legend(title="Marked", symbolStrokeWidth=0)
    return (
        alt.Chart(inline(marks))
        .mark_point(filled=True, size=90, opacity=1)
        .encode(
            x=f"{x}:Q",
            y=f"{y}:Q",
            color=alt.Color(
                "mark:N",
                scale=alt.Scale(domain=names, range=[style[0] for style in styles]),
                legend=legend,
            ),
            shape=alt.Shape(
                "mark:N",
                scale=alt.Scale(domain=names, range=[style[1] for style in styles]),
                legend=legend,
            ),
            tooltip=[
                alt.Tooltip("mark:N", title="Point"),
                alt.Tooltip(f"{x}:Q", format=".4f"),
                alt.Tooltip(f"{y}:Q", format=".4f"),
            ],
        )
    )


def layered(
    layers: list[Any],
    title: str,
    description: str,
    rows: list[dict[str, Any]] | None = None,
    width: int = WIDTH,
    height: int = HEIGHT,
    own_shapes: bool = False,
) -> dict[str, Any]:
    """The layers as one chart; ``rows``: the data of every layer that has none of its own;
    ``own_shapes``: each layer keeps its shape and colour scales and legends (two kinds of
    marked points, the current and reference curves)."""
    chart = alt.layer(*layers) if rows is None else alt.layer(*layers, data=inline(rows))
    if own_shapes:
        chart = chart.resolve_scale(
            shape="independent", color="independent", strokeDash="independent"
        )
    return finished(chart, title, description, width, height)


def finished(
    chart: Any, title: str, description: str, width: int = WIDTH, height: int = HEIGHT
) -> dict[str, Any]:
    framed = chart.properties(width=width, height=height, title=title, description=description)
    # Legends below the plot, whole: two charts side by side fit the page's width.
    spec: dict[str, Any] = framed.configure_legend(
        orient="bottom", direction="vertical", labelLimit=0
    ).to_dict(validate=VALIDATE.get())
    spec.pop("$schema", None)  # a URL: the page never fetches it
    return spec


def inline(rows: list[dict[str, Any]]) -> Any:
    """Rows as a chart's inline data."""
    return alt.InlineData(values=rows)


def tooltips(*fields: str) -> list[alt.Tooltip]:
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


def table_rows(**columns: Iterable[Any]) -> list[dict[str, Any]]:
    names = list(columns)
    return [
        {name: display(value) for name, value in zip(names, values, strict=True)}
        for values in zip(*columns.values(), strict=True)
    ]


def display(value: Any) -> Any:
    if isinstance(value, str):
        return value
    number = float(value)
    return rounded(number) if math.isfinite(number) else None


def rounded(value: float) -> float:
    return float(f"{value:.{DIGITS}g}")
