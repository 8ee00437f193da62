"""The report's segments: the table (every segment, worst first, its headline metrics with
their intervals and verdicts, insufficient data said so), the rule that flags a segment, each
segment's charts on demand, the size of a page of 50 segments, and the page in a browser."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalserve import evaluate
from evalserve.core import EvaluationResult, catalog_entry, task_spec
from evalserve.report import render_report, report_options
from evalserve.report._segments import LEFT_OUT, SEGMENT_POINTS, segment_rows
from tests.report.browser import Browser, Page
from tests.report.cases import binary_rows

# A segment's row: its class, its name (linked to its charts or not), then its cells.
ROW = re.compile(r'<tr( class="[^"]*")?><th scope="row">(.*?)</th>(.*?)</tr>')
CELL = re.compile(r"<td([^>]*)>(.*?)</td>")
BASELINE = {"roc_auc": 0.86, "n_positive": 1500, "n_negative": 3500}
HEADLINE = ["roc_auc", "average_precision", "ks_statistic", "log_loss", "brier_score",
            "accuracy", "precision", "recall", "f1"]  # fmt: skip


def segmented(n: int = 6000) -> EvaluationResult:
    """Task binary in four healthy channels, one whose scores are noise ("broken"), one whose
    rows weigh nothing ("empty") and one of six positives ("tiny"), against a baseline."""
    labels, scores = binary_rows(n, 5)
    names = np.array(["web", "app", "store", "partner"] * (n // 4), dtype=object)
    names[:600] = "broken"
    scores[:600] = np.random.default_rng(2).random(600)
    names[600:700] = "empty"
    names[700:706] = "tiny"
    labels[700:706] = 1
    weights = np.ones(n)
    weights[600:700] = 0
    return evaluate(
        "binary", labels, scores, sample_weight=weights, segments=names.tolist(),
        baseline=BASELINE, options=report_options(None),
    )  # fmt: skip


def _section(page: str) -> str:
    start = page.index('<section aria-labelledby="h-segments">')
    return page[start : page.index("</section>", start)]


def _rows(page: str) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """The table's rows after the overall one: (class, name, [(cell attributes, cell)])."""
    section = _section(page)
    table = section[section.index("<tbody>") : section.index("</tbody>")]
    found = [
        (css.strip(), unescape(re.sub(r"<[^>]+>", "", name)), CELL.findall(cells))
        for css, name, cells in ROW.findall(table)
    ]
    assert found[0][1] == "All rows (overall)"
    return found[1:]


def _value(cell: tuple[str, str]) -> float | None:
    match = re.search(r'data-value="([^"]*)"', cell[0])
    return float(match.group(1)) if match and match.group(1) else None


def _specs(page: str) -> list[dict[str, Any]]:
    start = page.index('id="evalserve-charts">') + len('id="evalserve-charts">')
    specs: list[dict[str, Any]] = json.loads(page[start : page.index("</script>", start)])
    return specs


@pytest.fixture(scope="module")
def result() -> EvaluationResult:
    return segmented()


@pytest.fixture(scope="module")
def page(result: EvaluationResult) -> str:
    return render_report(result, title="Segments")


def test_every_segment_worst_first_with_its_headline_metrics(
    result: EvaluationResult, page: str
) -> None:
    rows = _rows(page)
    assert sorted(name for _, name, _ in rows) == sorted(result.segments)
    # roc_auc first (higher is better): ascending, the undefined ones last.
    assert [name for _, name, _ in rows] == ["broken", "app", "store", "partner", "web",
                                             "empty", "tiny"]  # fmt: skip
    values = [_value(cells[3]) for _, _, cells in rows]
    defined = [value for value in values if value is not None]
    assert defined == sorted(defined)
    assert values[len(defined) :] == [None] * (len(values) - len(defined))
    headers = re.findall(r'<th scope="col">([^<]*)</th>', _section(page))
    assert headers == ["Segment", "Rows", "roc_auc against the overall", "Verdicts", *HEADLINE]
    for _, name, cells in rows:
        each = result.segments[name]
        assert cells[0][1] == f"{each.n_samples:,}"
        if not each.metrics:
            continue
        for column, cell in zip(HEADLINE, cells[3:], strict=True):
            assert _value(cell) == each.metrics.get(column), (name, column)
            interval = each.intervals.get(column)
            if interval is not None:
                assert f"[{interval.lower:.4g}, {interval.upper:.4g}]" in cell[1], (name, column)
            else:
                assert 'class="interval"' not in cell[1], (name, column)


def test_a_segment_without_data_says_so(page: str) -> None:
    rows = {name: cells for _, name, cells in _rows(page)}
    empty = rows["empty"]
    assert empty[3] == (
        ' colspan="9"',
        "insufficient data: all weights are zero; nothing to evaluate",
    )
    assert empty[1][1] == "not judged: insufficient data"
    assert rows["tiny"][3][1].startswith("undefined")  # roc_auc of one class
    assert "one class" in rows["tiny"][3][0]  # the reason on hover
    assert rows["tiny"][1][1] == "not judged: roc_auc undefined"


def test_the_flag_rule_and_its_statement(result: EvaluationResult, page: str) -> None:
    overall = result.metrics["roc_auc"]
    assert overall is not None
    for css, name, cells in _rows(page):
        interval = result.segments[name].intervals.get("roc_auc")
        worse = interval is not None and interval.upper < overall
        assert (css == 'class="segment-worse"') == worse, name
        assert cells[1][1].startswith("worse: ") == worse, name
        assert ("verdict-significant" in cells[1][0]) == worse, name
        if interval is not None and not worse:
            better = interval.lower > overall
            assert cells[1][1].startswith("better" if better else "within"), name
    broken = result.segments["broken"].intervals["roc_auc"]
    assert dict((name, cells[1][1]) for _, name, cells in _rows(page))["broken"] == (
        f"worse: interval [{broken.lower:.4g}, {broken.upper:.4g}] below the overall"
    )
    assert [name for css, name, _ in _rows(page) if css] == ["broken"]
    text = unescape(_section(page))
    assert (
        "A segment is flagged worse when its roc_auc is below the overall value (0.825095) by "
        "more than its interval allows: its interval's upper bound is below the overall value."
    ) in text
    assert "about 2.5% (95% intervals)" in text


def test_the_verdicts_of_each_segment(result: EvaluationResult, page: str) -> None:
    rows = {name: cells for _, name, cells in _rows(page)}
    broken = rows["broken"][2][1]
    assert result.segments["broken"].monitor["roc_auc"].alarm
    assert '<span class="verdict-significant">monitor roc_auc: alarm</span>' in broken
    assert '<span class="verdict-significant">drift roc_auc: significant difference</span>' in (
        broken
    )
    assert "monitor roc_auc: no alarm" in rows["app"][2][1]
    assert "drift roc_auc: no significant difference" in rows["app"][2][1]
    assert "drift roc_auc: no verdict" in rows["tiny"][2][1]
    assert rows["empty"][2][1] == ""


def test_lower_is_better_puts_the_largest_error_first() -> None:
    rng = np.random.default_rng(4)
    actual = rng.normal(10, 3, 3000)
    noise = np.repeat([0.5, 2.0, 1.0], 1000)
    names = np.repeat(["calm", "wild", "mild"], 1000).tolist()
    result = evaluate("regression", actual, actual + rng.normal(0, noise), segments=names)
    page = render_report(result)
    entry = catalog_entry("rmse", "regression")
    assert entry is not None and entry.higher_is_better is False
    assert [name for _, name, _ in _rows(page)] == ["wild", "mild", "calm"]
    assert "Worst first by rmse (lower is better)" in unescape(page)
    assert [row.name for row in segment_rows(result)] == ["wild", "mild", "calm"]


def test_each_segment_has_its_charts_on_demand(result: EvaluationResult, page: str) -> None:
    specs = _specs(page)
    overall = [spec["key"] for spec in specs if "segment" not in spec]
    assert overall == ["roc", "pr", "threshold", "det", "gain", "lift", "distributions",
                       "calibration", "confusion"]  # fmt: skip
    by_segment: dict[str, list[str]] = {}
    for spec in specs:
        if "segment" in spec:
            by_segment.setdefault(spec["segment"], []).append(spec["key"])
            assert f'<div id="chart-{spec["key"]}" class="chart" role="img"' in page
    # Every segment with metrics, in the table's order; the one without data has none.
    linked = re.findall(r'<a class="segment-link" href="#(segment-\d+)">([^<]*)</a>', page)
    assert [name for _, name in linked] == ["broken", "app", "store", "partner", "web", "tiny"]
    assert list(by_segment) == [anchor for anchor, _ in linked]
    for anchor, name in linked:
        assert f'<details class="segment" id="{anchor}"><summary>{name} ' in page
        keys = [key.split("-", 1)[1] for key in by_segment[anchor]]
        assert not set(keys) & LEFT_OUT["binary"]
        if name != "tiny":
            assert keys == ["roc", "pr", "calibration", "confusion"], name
    roc = next(spec["spec"] for spec in specs if spec["key"] == "s1-roc")
    assert len(roc["datasets"][roc["data"]["name"]]) <= SEGMENT_POINTS
    assert "no rows to evaluate" not in page


def test_segments_without_curves_say_how_to_draw_them() -> None:
    """A result evaluated without ``segment_curve_points`` (the default of evaluate and of the
    service's JSON answers) has no segment curves: each segment keeps its confusion matrix,
    and the page says which option draws the curves."""
    labels, scores = binary_rows(800)
    names = ["a", "b"] * 400
    page = render_report(evaluate("binary", labels, scores, segments=names))
    keys = [spec["key"] for spec in _specs(page) if "segment" in spec]
    assert keys == ["s0-confusion", "s1-confusion"]
    assert "<code>segment_curve_points</code>" in page
    drawn = render_report(
        evaluate("binary", labels, scores, segments=names, options=report_options(None))
    )
    assert "<code>segment_curve_points</code>" not in drawn


def test_no_segments_no_section() -> None:
    labels, scores = binary_rows(500)
    page = render_report(evaluate("binary", labels, scores))
    assert "h-segments" not in page
    assert "segment-link" not in page.replace("a.segment-link", "")


def test_segment_names_are_escaped() -> None:
    labels, scores = binary_rows(400)
    hostile = ["</script><script>alert(1)</script>", "<b>bold</b>"] * 200
    page = render_report(evaluate("binary", labels, scores, segments=hostile))
    assert "<script>alert(1)" not in page
    assert "<b>bold</b>" not in page
    assert {name for _, name, _ in _rows(page)} == set(hostile)


@pytest.mark.slow
def test_fifty_segments_keep_the_page_light() -> None:
    """The page of 200,000 rows in 50 segments: its size, and what the segments add."""
    labels, scores = binary_rows(200_000, 9)
    names = [f"country-{index % 50:02d}" for index in range(200_000)]
    result = evaluate("binary", labels, scores, segments=names)
    plain = len(render_report(evaluate("binary", labels, scores)).encode("utf-8"))
    size = len(render_report(result).encode("utf-8"))
    assert size < 3_000_000, size
    assert size - plain < 1_600_000, (size, plain)  # 50 segments' tables and charts


@pytest.fixture(scope="module")
def opened(page: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Page, Path]]:
    path = tmp_path_factory.mktemp("segments") / "segments.html"
    path.write_text(page, encoding="utf-8")
    with Browser() as browser:
        tab = browser.open(path.as_uri())
        overall = tab.evaluate("document.querySelectorAll('#h-charts ~ .charts .chart').length")
        assert overall == 9
        tab.until(
            f"document.querySelectorAll('#h-charts ~ .charts .chart svg').length === {overall}"
        )
        yield tab, path
        tab.socket.close()


@pytest.mark.slow
def test_in_a_browser_the_segments_draw_on_demand_and_pass_axe(opened: tuple[Page, Path]) -> None:
    tab, path = opened
    # Closed: no segment's chart is drawn.
    assert tab.evaluate("document.querySelectorAll('details.segment .chart svg').length") == 0
    # A link in the table opens its segment, which draws its charts.
    tab.evaluate("document.querySelector('a.segment-link').click(); true")
    assert tab.evaluate("document.getElementById('segment-0').open")
    tab.until("document.querySelectorAll('#segment-0 .chart svg').length === 4")
    # Every segment opened: each chart drawn, with marks.
    tab.evaluate(
        "document.querySelectorAll('details.segment').forEach(d => { d.open = true; }); true"
    )
    expected = tab.evaluate("document.querySelectorAll('details.segment .chart').length")
    assert expected >= 5 * 4
    tab.until(f"document.querySelectorAll('details.segment .chart svg').length === {expected}")
    empty = tab.evaluate(
        "Array.from(document.querySelectorAll('details.segment .chart')).filter(c =>"
        " !c.querySelector('.role-mark path, .role-mark text')).map(c => c.id)"
    )
    assert empty == []
    assert tab.exceptions == []
    assert [entry for entry in tab.console if entry["type"] in ("error", "warning")] == []
    assert set(tab.requests) <= {path.as_uri()}
    assert tab.axe() == []


def _task_rows(task: str) -> tuple[Any, Any, dict[str, Any]]:
    rng = np.random.default_rng(8)
    if task == "multiclass":
        labels = rng.integers(0, 3, 900)
        scores = rng.dirichlet(np.ones(3), 900) + 0.4 * np.eye(3)[labels]
        return labels, scores / scores.sum(axis=1, keepdims=True), {"classes": ["a", "b", "c"]}
    if task == "multilabel":
        labels = (rng.random((900, 4)) < 0.4).astype(np.int64)
        return labels, np.clip(labels * 0.3 + rng.random((900, 4)) * 0.7, 0, 1), {}
    targets, predictions = [], []
    for _ in range(30):
        boxes = rng.uniform(0, 80, (3, 2))
        boxes = np.hstack([boxes, boxes + rng.uniform(5, 20, (3, 2))])
        classes = rng.integers(0, 2, 3).tolist()
        targets.append({"boxes": boxes, "classes": classes})
        jitter = boxes + rng.normal(0, 1.5, boxes.shape)
        scores = rng.uniform(0.3, 1, 3).tolist()
        predictions.append({"boxes": jitter, "classes": classes, "scores": scores})
    return targets, predictions, {}


@pytest.mark.parametrize("task", ["multiclass", "multilabel", "detection"])
def test_every_task_has_its_segments(task: str) -> None:
    truth, scores, extra = _task_rows(task)
    names = ["north", "south", "east"] * (len(truth) // 3)
    result = evaluate(task, truth, scores, segments=names, options=report_options(None), **extra)
    page = render_report(result)
    rows = _rows(page)
    assert sorted(name for _, name, _ in rows) == ["east", "north", "south"]
    metric = task_spec(task).headline[0]
    assert f'<th scope="col">{metric} against the overall</th>' in page
    entry = catalog_entry(metric, task)
    assert entry is not None and entry.higher_is_better
    values = [_value(cells[2]) for _, _, cells in rows]  # no verdicts column: no baseline
    assert values == sorted(values, key=lambda value: float("inf") if value is None else value)
    specs = [spec for spec in _specs(page) if "segment" in spec]
    assert {spec["segment"] for spec in specs} == {"segment-0", "segment-1", "segment-2"}
    if task == "detection":
        assert re.findall(r'<th scope="col">([^<]*)</th>', page)[1] == "Images"
