"""The report's HTML: one page, everything inline (styles, the charting scripts, the charts'
specifications), so that it opens from a file or an e-mail attachment without network access.

The tables come first and carry every number (the charts repeat some of them for the eye):
the headline metrics with their intervals and the catalog's definitions, the undefined metrics
with their reasons, the AUC monitor, the drift and challenger tests, the segments (worst first,
each segment's charts drawn when opened), the label coverage, the per-class table, the warnings
and the conventions.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Mapping, Sequence
from html import escape
from types import MappingProxyType
from typing import Any

from evalserve.core import (
    REGISTRY,
    Comparison,
    DriftTest,
    EvaluationResult,
    Interval,
    MonitorVerdict,
    Options,
    catalog_entry,
    evaluate,
    parse_options,
    task_spec,
)
from evalserve.report._charts import Chart, charts_of
from evalserve.report._operating import operating_points
from evalserve.report._segments import (
    SEGMENT_POINTS,
    SegmentRow,
    headline_columns,
    higher_is_better,
    interval_bounds,
    segment_charts,
    segment_rows,
)
from evalserve.report._vendor import scripts

__all__ = ["HEADLINES", "render_report"]

# The few metrics a model owner reads first, per task (the full table follows the charts): each
# task's spec says which.
HEADLINES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {spec.name: spec.headline for spec in REGISTRY}
)

STYLE = """
:root { color-scheme: light; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1a1a1a;
  background: #ffffff; margin: 0 auto; max-width: 1100px; padding: 1.5rem; }
h1 { font-size: 1.6rem; margin: 0 0 .25rem; }
h2 { font-size: 1.25rem; margin: 2rem 0 .5rem; border-bottom: 1px solid #cccccc; }
table { border-collapse: collapse; width: 100%; margin: .5rem 0 1rem; font-size: 14px; }
caption { text-align: left; font-weight: 600; padding: .25rem 0; }
th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid #e0e0e0;
  vertical-align: top; }
th { background: #f2f2f2; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.muted { color: #4d4d4d; }
.charts { display: flex; flex-wrap: wrap; gap: 1.5rem; }
figure { margin: 0; border: 1px solid #e0e0e0; padding: .75rem; }
figcaption { max-width: 440px; font-size: 13px; color: #4d4d4d; margin-top: .5rem; }
.verdict-significant { color: #a3260b; font-weight: 600; }
.headline { display: flex; flex-wrap: wrap; gap: .75rem; padding: 0; list-style: none; }
.headline li { border: 1px solid #cccccc; padding: .5rem .75rem; min-width: 9rem; }
.headline .name { display: block; font-size: 13px; color: #4d4d4d; }
.headline .value { display: block; font-size: 1.3rem; font-weight: 600; }
.headline .interval { display: block; font-size: 12px; color: #4d4d4d; }
td.note { min-width: 12rem; }
td .interval { display: block; font-size: 12px; color: #4d4d4d; }
.scroll { overflow-x: auto; }
tr.segment-worse th, tr.segment-worse td { background: #fdf0ec; }
tr.overall th, tr.overall td { border-bottom: 2px solid #cccccc; }
details.segment { border: 1px solid #e0e0e0; margin: .5rem 0; padding: .25rem .75rem; }
details.segment summary { cursor: pointer; font-weight: 600; padding: .25rem 0; }
details.segment .charts { margin: .5rem 0; }
/* The tooltip's keys: vega-tooltip's grey (#808080) is under the 4.5:1 contrast of WCAG AA. */
#vg-tooltip-element.vg-tooltip table tr td.key { color: #4d4d4d; }
"""

# A chart in a segment's <details> is drawn when the details are first opened (a link to a
# segment opens them): a page of many segments draws only what is looked at.
LOADER = """
(function () {
  var charts = JSON.parse(document.getElementById("evalserve-charts").textContent);
  function draw(chart) {
    vegaEmbed("#chart-" + chart.key, chart.spec, {actions: false, renderer: "svg"})
      .catch(function (error) { console.error("chart " + chart.key + ": " + error); });
  }
  charts.forEach(function (chart) {
    if (!chart.segment) { draw(chart); return; }
    var details = document.getElementById(chart.segment), drawn = false;
    details.addEventListener("toggle", function () {
      if (details.open && !drawn) { drawn = true; draw(chart); }
    });
  });
  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("a.segment-link");
    var details = link && document.getElementById(link.getAttribute("href").slice(1));
    if (details) { details.open = true; }
  });
})();
"""


def render_report(
    result: EvaluationResult,
    *,
    options: Mapping[str, Any] | Options | None = None,
    title: str | None = None,
    source: str | None = None,
    now: dt.datetime | None = None,
    baseline: Mapping[str, Any] | None = None,
    model: str | None = None,
) -> str:
    """The page of ``result``. ``options``: those of the evaluation (the threshold is named in
    the page); ``title``: the page's title and heading (default: the task, or the model);
    ``source``: what was evaluated (files), shown under the heading; ``baseline``: the
    request's baseline: a payload (labels and scores, task binary) is evaluated with the same
    options and its curves drawn beside the current ones as the reference; ``model``: the
    model's name, shown under the heading."""
    parsed = parse_options(options)
    reference = reference_result(result, baseline, options)
    charts = charts_of(result, parsed, reference)
    segments, segment_specs = _segments_section(result, parsed)
    heading = title or (
        f"Evaluation report: {model}" if model else f"Evaluation report: {result.task}"
    )
    stamp = (now or dt.datetime.now(dt.UTC)).strftime("%Y-%m-%d %H:%M UTC")
    unit = "images" if task_spec(result.task).inputs.images else "samples"
    facts = [f"task {result.task}", f"{result.n_samples:,} {unit}", f"made {stamp}"]
    if model:
        facts.insert(0, f"model {model}")
    if reference is not None:
        facts.append(f"reference: the baseline's {reference.n_samples:,} {unit}")
    if source:
        facts.append(source)
    body = [
        f"<header><h1>{escape(heading)}</h1>",
        f'<p class="muted">{escape(" · ".join(facts))}</p></header>',
        "<main>",
        _headline_section(result),
        _tests_section(result),
        segments,
        _charts_section(charts),
        _operating_section(result, parsed),
        _metrics_section(result),
        _undefined_section(result),
        _per_class_section(result),
        _coverage_section(result),
        _notes_section(result),
        "</main>",
    ]
    specs = [{"key": chart.key, "spec": chart.spec} for chart in charts] + segment_specs
    inline = "".join(f"<script>{text}</script>\n" for text in scripts())
    return "\n".join(
        [
            "<!doctype html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{escape(heading)}</title>",
            f"<style>{STYLE}</style>",
            "</head>",
            "<body>",
            *[part for part in body if part],
            inline,
            '<script type="application/json" id="evalserve-charts">'
            + _json_in_html(specs)
            + "</script>",
            f"<script>{LOADER}</script>",
            "</body>",
            "</html>",
        ]
    )


def reference_result(
    result: EvaluationResult,
    baseline: Mapping[str, Any] | None,
    options: Mapping[str, Any] | Options | None,
) -> EvaluationResult | None:
    """The baseline's rows evaluated as the current ones were (same options, no intervals'
    bootstrap, no segments), when the baseline is a payload of labels and scores of task
    binary; None otherwise (a summary, or no baseline). The evaluation that made ``result``
    has checked the payload already."""
    if result.task != "binary" or not baseline:
        return None
    labels, scores = baseline.get("labels"), baseline.get("scores")
    if labels is None or scores is None:
        return None
    parsed = parse_options(options)
    same = dataclasses.replace(parsed, bootstrap_replicates=0)
    return evaluate("binary", labels, scores, sample_weight=baseline.get("weights"), options=same)


def _headline_section(result: EvaluationResult) -> str:
    items = []
    for name in HEADLINES[result.task]:
        if name not in result.metrics:
            continue
        value = result.metrics[name]
        interval = result.intervals.get(name)
        reason = result.undefined.get(name, "")
        below = (
            f'<span class="interval">{escape(_interval(interval))}</span>'
            if interval is not None
            else f'<span class="interval">{escape(reason)}</span>'
            if reason
            else ""
        )
        entry = catalog_entry(name, result.task)
        definition = "" if entry is None else entry.definition
        items.append(
            f'<li title="{escape(definition)}"><span class="name">{escape(name)}</span>'
            f'<span class="value">{escape(_number(value))}</span>{below}</li>'
        )
    if not items:
        return ""
    return _section("headline", "Headline", f'<ul class="headline">{"".join(items)}</ul>')


def _segments_section(
    result: EvaluationResult, options: Options
) -> tuple[str, list[dict[str, Any]]]:
    """The segments' table, worst first, with the rule that flags a segment, then each
    segment's charts in a <details> of its own; and the charts' entries for the page's
    specifications (each naming its details). Nothing without segments."""
    if not result.segments:
        return "", []
    columns = headline_columns(result)
    rows = segment_rows(result)
    verdicts = any(
        each.drift or each.comparison or each.monitor
        for each in (result, *result.segments.values())
    )
    unit = "Images" if task_spec(result.task).inputs.images else "Rows"
    metric = columns[0] if columns else ""
    # The flag and the verdicts before the metrics: a wide table scrolls, they stay in view.
    headers = [
        "Segment",
        unit,
        f"{metric} against the overall" if metric else "Against the overall",
        *(["Verdicts"] if verdicts else []),
        *columns,
    ]
    details: list[str] = []
    specs: list[dict[str, Any]] = []
    body = [_overall_row(result, columns, verdicts)]
    for index, row in enumerate(rows):
        charts = (
            []
            if row.insufficient
            else segment_charts(result, row.result, options, validate=not specs)
        )
        anchor = f"segment-{index}" if charts else ""
        body.append(_segment_row(row, columns, verdicts, anchor))
        if charts:
            details.append(_segment_details(row, anchor, charts, metric, unit.lower()))
            specs += [
                {"key": f"s{index}-{chart.key}", "spec": chart.spec, "segment": anchor}
                for chart in charts
            ]
    caption = (
        f"Each segment evaluated on its rows alone, worst first by {metric}"
        if metric
        else "Each segment evaluated on its rows alone"
    )
    table = (
        f'<div class="scroll" role="region" tabindex="0" aria-label="{escape(caption)}">'
        f"{_table(caption, headers, body)}</div>"
    )
    parts = [_segments_text(result, rows, columns), table]
    if details:
        parts.append(
            "<h3>Each segment's charts</h3>"
            f'<p class="muted">Open a segment to draw its charts, made as the overall ones are '
            f"from the segment's own result; each curve drawn from at most {SEGMENT_POINTS} "
            "of its points, so that a page of many segments stays light"
            + (
                " (the threshold view, the DET curve and the score distributions are the "
                "overall result's only)"
                if result.task == "binary"
                else ""
            )
            + "."
            + (
                ""
                if any(row.result.curves for row in rows)
                else " The segments' results hold no curves: evaluate with the option "
                "<code>segment_curve_points</code> (the report's own evaluations ask for "
                f"{SEGMENT_POINTS}) to draw them."
            )
            + "</p>"
            + "".join(details)
        )
    return _section("segments", "Segments", "".join(parts)), specs


def _segments_text(
    result: EvaluationResult, rows: Sequence[SegmentRow], columns: Sequence[str]
) -> str:
    """What the table shows: the order, the rule that flags a segment and what it is worth."""
    count = len(rows)
    words = [f"{count:,} segment{'s' if count != 1 else ''}, each evaluated on its rows alone."]
    if not columns:
        return f"<p>{escape(' '.join(words))}</p>"
    metric = columns[0]
    better = higher_is_better(result.task, metric)
    overall = result.metrics.get(metric)
    if better is None:
        words.append(f"Ordered by name ({metric} has no better direction); none is flagged.")
        return f"<p>{escape(' '.join(words))}</p>"
    side, bound = ("below", "upper") if better else ("above", "lower")
    words.append(
        f"Worst first by {metric} ({'higher' if better else 'lower'} is better); undefined values"
        " and segments with insufficient data last."
    )
    words.append(
        f"A segment is flagged worse when its {metric} is {side} the overall value "
        f"({_number(overall)}) by more than its interval allows: its interval's {bound} bound "
        f"is {side} the overall value. A segment without an interval is not judged."
    )
    levels = {
        each.result.intervals[metric].level for each in rows if metric in each.result.intervals
    }
    if len(levels) == 1:
        level = levels.pop()
        chance = (1 - level) / 2
        words.append(
            f"No correction for the number of segments: a segment no worse than the rest is "
            f"flagged with a chance of about {chance:.1%} ({level:.0%} intervals), so among "
            f"{count:,} such segments about {count * chance:.1f} would be."
        )
    methods = []
    for name in columns:
        interval = next(
            (each.result.intervals[name] for each in rows if name in each.result.intervals), None
        )
        if interval is not None:
            methods.append(f"{name} {interval.level:.0%} {interval.method}")
    if methods:
        words.append(f"Intervals in brackets: {'; '.join(methods)}.")
    return f"<p>{escape(' '.join(words))}</p>"


def _overall_row(result: EvaluationResult, columns: Sequence[str], verdicts: bool) -> str:
    cells = [
        f'<td class="num">{escape(_number(result.n_samples))}</td>',
        '<td class="note">the value each segment is judged against</td>',
    ]
    if verdicts:
        cells.append('<td class="note">in the tests above</td>')
    cells += [_segment_metric(result, name) for name in columns]
    return f'<tr class="overall"><th scope="row">All rows (overall)</th>{"".join(cells)}</tr>'


def _segment_row(row: SegmentRow, columns: Sequence[str], verdicts: bool, anchor: str) -> str:
    each = row.result
    name = escape(row.name)
    label = f'<a class="segment-link" href="#{anchor}">{name}</a>' if anchor else name
    cells = [f'<td class="num">{escape(_number(each.n_samples))}</td>', _against_cell(row, columns)]
    if verdicts:
        cells.append(f'<td class="note">{_segment_verdicts(each)}</td>')
    if row.insufficient:
        cells.append(
            f'<td colspan="{len(columns)}">insufficient data: {escape(row.insufficient)}</td>'
            if columns
            else ""
        )
    else:
        cells += [_segment_metric(each, name) for name in columns]
    css = ' class="segment-worse"' if row.against == "worse" else ""
    return f'<tr{css}><th scope="row">{label}</th>{"".join(cells)}</tr>'


def _segment_metric(result: EvaluationResult, name: str) -> str:
    """A headline metric's cell: the value and, below it, its interval in brackets; undefined
    with its reason on hover; empty when the result has no such metric."""
    if name not in result.metrics:
        return '<td class="num"></td>'
    value = result.metrics[name]
    interval = result.intervals.get(name)
    reason = result.undefined.get(name, "")
    title = _interval(interval) if interval is not None else reason
    below = (
        f'<span class="interval">{escape(interval_bounds(interval))}</span>'
        if interval is not None
        else ""
    )
    return (
        f'<td class="num" data-value="{escape(_exact(value))}"'
        f"{f' title={escape(title)!r}' if title else ''}>"
        f"{escape(_number(value))}{below}</td>"
    )


def _segment_verdicts(result: EvaluationResult) -> str:
    """A segment's monitor, drift and challenger verdicts, the significant ones marked."""
    lines = []
    for name, verdict in result.monitor.items():
        text = f"monitor {name}: {'alarm' if verdict.alarm else 'no alarm'}"
        lines.append((text, verdict.alarm))
    for kind, tests in (("drift", result.drift), ("challenger", result.comparison)):
        for name, test in tests.items():
            lines.append((f"{kind} {name}: {_verdict(test)}", test.significant is True))
    return "<br>".join(
        f'<span class="verdict-significant">{escape(text)}</span>' if marked else escape(text)
        for text, marked in lines
    )


def _against_cell(row: SegmentRow, columns: Sequence[str]) -> str:
    """Where the segment's first headline metric lies against the overall value."""
    if not columns:
        return '<td class="note"></td>'
    metric = columns[0]
    interval = row.result.intervals.get(metric)
    better = higher_is_better(row.result.task, metric)
    if row.against in ("worse", "better") and interval is not None:
        side = "below" if (row.against == "worse") == bool(better) else "above"
        css = " verdict-significant" if row.against == "worse" else ""
        return (
            f'<td class="note{css}">{row.against}: interval '
            f"{escape(interval_bounds(interval))} {side} the overall</td>"
        )
    if row.against == "within":
        text = "within: the interval holds the overall value"
    elif row.insufficient:
        text = "not judged: insufficient data"
    elif row.value is None:
        text = f"not judged: {metric} undefined"
    else:
        text = "not judged: no interval"
    return f'<td class="note">{escape(text)}</td>'


def _segment_details(
    row: SegmentRow, anchor: str, charts: Sequence[Chart], metric: str, unit: str
) -> str:
    facts = [f"{row.result.n_samples:,} {unit}"]
    if metric:
        facts.append(f"{metric} {_number(row.value)}")
    if row.against == "worse":
        facts.append("flagged worse than overall")
    figures = "".join(
        f'<figure id="figure-{anchor}-{chart.key}">'
        f'<div id="chart-s{anchor.removeprefix("segment-")}-{chart.key}" class="chart" '
        f'role="img" aria-label="{escape(row.name)}: {escape(chart.title)}"></div>'
        f"<figcaption><strong>{escape(chart.title)}.</strong> "
        f"{escape(chart.description)}</figcaption></figure>"
        for chart in charts
    )
    return (
        f'<details class="segment" id="{anchor}"><summary>{escape(row.name)} '
        f'<span class="muted">({escape(", ".join(facts))})</span></summary>'
        f'<div class="charts">{figures}</div></details>'
    )


def _metrics_section(result: EvaluationResult) -> str:
    rows = []
    for name, value in result.metrics.items():
        entry = catalog_entry(name, result.task)
        definition = entry.definition if entry is not None else ""
        interval = result.intervals.get(name)
        rows.append(
            "<tr>"
            f'<th scope="row">{escape(name)}</th>'
            f'<td class="num" data-value="{escape(_exact(value))}">{escape(_number(value))}</td>'
            f"<td>{escape(_interval(interval)) if interval is not None else ''}</td>"
            f"<td>{escape(definition)}</td>"
            "</tr>"
        )
    return _section(
        "metrics",
        "Metrics",
        _table(
            "Every defined metric, its confidence interval where one is computed, and its "
            "definition",
            ("Metric", "Value", "Interval", "Definition"),
            rows,
        ),
    )


def _operating_section(result: EvaluationResult, options: Options) -> str:
    """The operating points (task binary): per target, the value, its interval when the result
    has one, the threshold achieving it, or why either is undefined."""
    points = operating_points(result, options)
    if not points:
        return ""
    rows = []
    for point in points:
        interval = "" if point.interval is None else _interval(point.interval)
        rows.append(
            "<tr>"
            f'<th scope="row">{escape(point.label)}</th>'
            f"<td><code>{escape(point.metric)}</code></td>"
            f'<td class="num" data-value="{escape(_exact(point.value))}">'
            f"{escape(_number(point.value))}</td>"
            f"<td>{escape(interval)}</td>"
            f'<td class="num" data-value="{escape(_exact(point.threshold))}">'
            f"{escape(_number(point.threshold))}</td>"
            f"<td>{escape(point.reason)}</td>"
            "</tr>"
        )
    caption = (
        "Per target of the options, the best value a threshold achieves and that threshold "
        "(a score at or above it is flagged), or why there is none"
    )
    headers = ("Operating point", "Metric", "Value", "Interval", "Threshold", "Why undefined")
    return _section("operating", "Operating points", _table(caption, headers, rows))


def _undefined_section(result: EvaluationResult) -> str:
    cells = [(name, escape(reason), "") for name, reason in result.undefined.items()]
    caption = "Metrics without a value (never reported as 0), and why"
    return _pairs("undefined", "Undefined metrics", caption, ("Metric", "Reason"), cells)


def _tests_section(result: EvaluationResult) -> str:
    drift = {name: (test.baseline, test) for name, test in result.drift.items()}
    comparison = {name: (test.challenger, test) for name, test in result.comparison.items()}
    parts = (
        _monitor_table(result.monitor),
        _tests_table("Drift against the baseline", "Baseline", drift),
        _tests_table("The challenger against this model", "Challenger", comparison),
    )
    tables = "".join(parts)
    return _section("tests", "Monitor, drift and challenger", tables) if tables else ""


def _monitor_table(monitor: Mapping[str, MonitorVerdict]) -> str:
    """The sequential monitor: its statistic against the threshold, and the verdict."""
    if not monitor:
        return ""
    rows = []
    for name, verdict in monitor.items():
        css = ' class="verdict-significant"' if verdict.alarm else ""
        rows.append(
            "<tr>"
            f'<th scope="row">{escape(name)}</th>'
            f'<td class="num">{escape(_number(verdict.statistic))}</td>'
            f'<td class="num">{escape(_number(verdict.threshold))}</td>'
            f'<td class="num">{escape(_number(verdict.windows))}</td>'
            f'<td class="num">{escape(_number(verdict.evalue))}</td>'
            f"<td{css}>{escape(_monitor_verdict(verdict))}</td>"
            "</tr>"
        )
    caption = (
        "The AUC monitor over the windows so far: it alarms when its statistic reaches the"
        " threshold, the expected number of windows between false alarms"
    )
    headers = ("Metric", "Statistic", "Threshold", "Windows", "This window's e-value", "Verdict")
    return _table(caption, headers, rows)


def _monitor_verdict(verdict: MonitorVerdict) -> str:
    if verdict.alarm:
        return "alarm: evidence that the AUC fell below the baseline by more than the tolerance"
    if verdict.status != "ok":
        return f"no alarm; this window added no evidence: {verdict.reason or verdict.status}"
    return "no alarm"


def _tests_table(
    heading: str, against: str, tests: Mapping[str, tuple[float | None, DriftTest | Comparison]]
) -> str:
    """One table of tests: per metric, the value tested against (``against``) and the test."""
    if not tests:
        return ""
    rows = [_test_row(name, reference, test) for name, (reference, test) in tests.items()]
    return _table(heading, ("Metric", against, "Difference", "p-value", "Test", "Verdict"), rows)


def _test_row(name: str, reference: float | None, test: DriftTest | Comparison) -> str:
    css = ' class="verdict-significant"' if test.significant else ""
    return (
        "<tr>"
        f'<th scope="row">{escape(name)}</th>'
        f'<td class="num">{escape(_number(reference))}</td>'
        f'<td class="num">{escape(_number(test.delta))}</td>'
        f'<td class="num">{escape(_number(test.p_value))}</td>'
        f"<td>{escape(test.method or '')}</td>"
        f"<td{css}>{escape(_verdict(test))}</td>"
        "</tr>"
    )


def _verdict(test: DriftTest | Comparison) -> str:
    if test.status != "ok":
        return f"no verdict: {test.reason or test.status}"
    if test.significant:
        return "significant difference"
    return "no significant difference"


def _coverage_section(result: EvaluationResult) -> str:
    coverage = {} if result.coverage is None else result.coverage.to_dict()
    cells = [(name, escape(_number(value)), "num") for name, value in coverage.items()]
    caption = "Labelled rows against predictions"
    return _pairs("coverage", "Label coverage", caption, ("", "Value"), cells)


def _pairs(
    key: str,
    heading: str,
    caption: str,
    headers: tuple[str, str],
    cells: Sequence[tuple[str, str, str]],
) -> str:
    """A section of one two-column table: (name, its escaped cell, the cell's class) per row;
    nothing when there is no row."""
    if not cells:
        return ""
    rows = [
        f'<tr><th scope="row">{escape(name)}</th>'
        f"<td{f' class={css!r}' if css else ''}>{cell}</td></tr>"
        for name, cell, css in cells
    ]
    return _section(key, heading, _table(caption, headers, rows))


def _charts_section(charts: Sequence[Chart]) -> str:
    if not charts:
        return ""
    figures = [
        f'<figure id="figure-{chart.key}">'
        f'<div id="chart-{chart.key}" class="chart" role="img" '
        f'aria-label="{escape(chart.title)}"></div>'
        f"<figcaption><strong>{escape(chart.title)}.</strong> "
        f"{escape(chart.description)}</figcaption></figure>"
        for chart in charts
    ]
    return _section("charts", "Charts", f'<div class="charts">{"".join(figures)}</div>')


def _per_class_section(result: EvaluationResult) -> str:
    if not result.per_class:
        return ""
    names: list[str] = []
    for entry in result.per_class:
        names.extend(name for name in entry.metrics if name not in names)
    rows = []
    for entry in result.per_class:
        cells = []
        for name in names:
            value = entry.metrics.get(name)
            reason = entry.undefined.get(name, "")
            cells.append(
                f'<td class="num" title="{escape(reason)}">'
                f"{escape(_number(value) if value is not None else 'undefined')}</td>"
            )
        rows.append(f'<tr><th scope="row">{escape(entry.class_name)}</th>{"".join(cells)}</tr>')
    noun = "label" if task_spec(result.task).inputs.label_matrix else "class"
    return _section(
        "per-class",
        f"Per {noun}",
        _table(f"Metrics of each {noun}", (noun.capitalize(), *names), rows),
    )


def _notes_section(result: EvaluationResult) -> str:
    parts = []
    if result.warnings:
        items = "".join(f"<li>{escape(text)}</li>" for text in result.warnings)
        parts.append(f"<h3>Warnings</h3><ul>{items}</ul>")
    if result.conventions:
        rows = [
            f'<tr><th scope="row">{escape(key)}</th><td>{escape(text)}</td></tr>'
            for key, text in result.conventions.items()
        ]
        parts.append(
            _table(
                "Where references disagree, the convention followed", ("Topic", "Convention"), rows
            )
        )
    return _section("notes", "Warnings and conventions", "".join(parts)) if parts else ""


def _section(key: str, heading: str, content: str) -> str:
    return (
        f'<section aria-labelledby="h-{key}"><h2 id="h-{key}">{escape(heading)}</h2>'
        f"{content}</section>"
    )


def _table(caption: str, headers: Sequence[str], rows: Sequence[str]) -> str:
    head = "".join(f'<th scope="col">{escape(text)}</th>' for text in headers)
    return (
        f"<table><caption>{escape(caption)}</caption><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _number(value: Any) -> str:
    if value is None:
        return "undefined"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) or (
        isinstance(value, float) and value.is_integer() and abs(value) < 1e15
    ):
        return f"{int(value):,}"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _exact(value: Any) -> str:
    return "" if value is None else repr(value)


def _interval(interval: Interval) -> str:
    return f"{interval.lower:.6g} to {interval.upper:.6g} ({interval.level:.0%}, {interval.method})"


def _json_in_html(value: Any) -> str:
    """JSON inside a <script> element: '<' written as its escape, so that no '</script>' or
    '<!--' in a class name ends the element."""
    return json.dumps(value, allow_nan=False, separators=(",", ":")).replace("<", "\\u003c")
