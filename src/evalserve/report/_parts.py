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
    "VALIDATE",
    "WIDTH",
    "Chart",
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


def heatmap(
    rows: list[dict[str, Any]], order: list[str], title: str, description: str
) -> dict[str, Any]:
    base = alt.Chart(inline(rows)).encode(
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
    return layered(
        layers, title, description, width=min(WIDTH, size + 80), height=min(HEIGHT, size + 40)
    )


def diagonal() -> Any:
    return (
        alt.Chart(inline([{"a": 0, "b": 0}, {"a": 1, "b": 1}]))
        .mark_line(color=GREY, strokeDash=[4, 4])
        .encode(x="a:Q", y="b:Q")
    )


def point_marks(marks: list[dict[str, Any]], x: str, y: str) -> Any:
    return (
        alt.Chart(inline(marks))
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
    ``own_shapes``: each layer keeps its shape scale and legend (two kinds of marked points)."""
    chart = alt.layer(*layers) if rows is None else alt.layer(*layers, data=inline(rows))
    if own_shapes:
        chart = chart.resolve_scale(shape="independent")
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
