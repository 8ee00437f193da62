"""The report page without a browser: what it holds, that it references nothing outside
itself, and its size; the browser's view is in test_browser.py."""

from __future__ import annotations

import json
import re
from html import escape
from html.parser import HTMLParser
from typing import Any

import numpy as np
import pytest

from evalserve import evaluate
from evalserve.core import REGISTRY, catalog_entry
from evalserve.report import render_report
from evalserve.report._charts import CHART_MAKERS, charts_of
from evalserve.report._page import HEADLINES
from evalserve.report._vendor import PACKAGES, scripts
from tests.report.cases import TASKS, binary_rows, case


class _Parsed(HTMLParser):
    """Tags with their attributes, the text of each <script>, the rows of the metrics table."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._script: dict[str, str | None] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._script, self._text = dict(attrs), []

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._script is not None:
            self.scripts.append((self._script, "".join(self._text)))
            self._script = None

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self._text.append(data)


def _parse(page: str) -> _Parsed:
    parsed = _Parsed()
    parsed.feed(page)
    parsed.close()
    return parsed


def _specs(parsed: _Parsed) -> list[dict[str, Any]]:
    (text,) = [text for attrs, text in parsed.scripts if attrs.get("id") == "evalserve-charts"]
    specs: list[dict[str, Any]] = json.loads(text)
    return specs


def _values(spec: dict[str, Any], data: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The rows of ``data`` (default: the spec's own), inline or among the spec's datasets."""
    data = spec["data"] if data is None else data
    rows: list[dict[str, Any]] = (
        data["values"] if "values" in data else spec["datasets"][data["name"]]
    )
    return rows


@pytest.fixture(scope="module", params=TASKS)
def rendered(request: pytest.FixtureRequest) -> tuple[str, Any, dict[str, Any], str]:
    result, options = case(request.param)
    return request.param, result, options, render_report(result, options=options)


def test_the_page_holds_everything_it_shows(rendered: tuple[str, Any, dict[str, Any], str]) -> None:
    task, _, _, page = rendered
    parsed = _parse(page)
    # Nothing outside the page: no src, no href but in-page anchors, no stylesheet links.
    for tag, attrs in parsed.tags:
        assert "src" not in attrs, tag
        assert str(attrs.get("href", "#")).startswith("#"), (tag, attrs)
        assert tag not in ("link", "iframe", "img", "object", "embed"), tag
    # The vendored scripts, inline and in load order, then the specs and the loader.
    inline = [text for attrs, text in parsed.scripts if not attrs]
    assert inline[: len(PACKAGES)] == list(scripts())
    assert len(parsed.scripts) == len(PACKAGES) + 2
    html = next(attrs for tag, attrs in parsed.tags if tag == "html")
    assert html["lang"] == "en"
    assert f"<title>Evaluation report: {task}</title>" in page


def test_every_metric_has_its_value_interval_and_definition(
    rendered: tuple[str, Any, dict[str, Any], str],
) -> None:
    task, result, _, page = rendered
    for name, value in result.metrics.items():
        row = re.search(
            rf'<tr><th scope="row">{re.escape(name)}</th><td class="num" data-value="([^"]*)">'
            r"[^<]*</td><td>([^<]*)</td><td>([^<]*)</td></tr>",
            page,
        )
        assert row is not None, name
        assert row.group(1) == ("" if value is None else repr(value)), name
        interval = result.intervals.get(name)
        if interval is not None:
            assert f"{interval.lower:.6g} to {interval.upper:.6g}" in row.group(2), name
        entry = catalog_entry(name, task)
        assert entry is not None, name
        assert row.group(3) == escape(entry.definition), name
    headline = page[page.index('<ul class="headline">') : page.index("</ul>")]
    for name in HEADLINES[task]:
        if name in result.metrics:  # a card with the value, its definition on hover
            entry = catalog_entry(name, task)
            assert entry is not None
            assert f'<span class="name">{name}</span>' in headline, name
            assert f'<li title="{escape(entry.definition)}">' in headline, name
    for name, reason in result.undefined.items():
        assert f'<th scope="row">{name}</th><td>' in page, name
        assert escape(reason)[:40] in page, name


def test_every_registered_task_has_its_charts_and_headline_metrics() -> None:
    assert set(CHART_MAKERS) == {spec.name for spec in REGISTRY}
    for spec in REGISTRY:
        assert spec.headline
        for name in spec.headline:
            assert catalog_entry(name, spec.name) is not None, (spec.name, name)


def test_each_chart_has_its_figure_and_spec(rendered: tuple[str, Any, dict[str, Any], str]) -> None:
    task, _, _, page = rendered
    parsed = _parse(page)
    specs = _specs(parsed)
    expected = {
        "binary": [
            "roc",
            "pr",
            "threshold",
            "det",
            "gain",
            "lift",
            "distributions",
            "calibration",
            "confusion",
        ],
        "multiclass": ["confusion", "roc_macro", "roc_per_class"],
        "multilabel": ["per_class_roc_auc"],
        "regression": ["predicted_actual", "residuals", "rec"],
        "detection": ["per_class_ap", "pr_iou50"],
    }[task]
    assert [spec["key"] for spec in specs] == expected
    for spec in specs:
        key = spec["key"]
        assert f'<div id="chart-{key}" class="chart" role="img" aria-label="' in page
        assert spec["spec"]["title"] and spec["spec"]["description"]
        assert "$schema" not in spec["spec"]


def test_binary_page_shows_the_tests_coverage_and_curves() -> None:
    result, options = case("binary")
    page = render_report(result, options=options)
    assert "Drift against the baseline" in page
    assert "The AUC monitor over the windows so far" in page
    verdict = result.monitor["roc_auc"]
    assert f'<td class="num">{verdict.threshold:.6g}</td>' in page
    assert ("alarm: evidence" in page) == verdict.alarm
    assert "Label coverage" in page
    assert "threshold 0.4" in page
    charts = {chart.key: chart for chart in charts_of(result, options)}
    roc_rows = _values(charts["roc"].spec)
    assert len(roc_rows) == result.curves["roc"]["fpr"].size
    np.testing.assert_allclose(
        [row["fpr"] for row in roc_rows], result.curves["roc"]["fpr"], rtol=1e-6
    )
    band = [(row["tpr_lower"], row["tpr"], row["tpr_upper"]) for row in roc_rows]
    assert all(lower <= tpr <= upper for lower, tpr, upper in band)
    marks = [
        layer
        for layer in charts["roc"].spec["layer"]
        if "data" in layer and layer.get("mark", {}).get("type") == "point"
    ]
    assert any(
        str(mark.get("mark", "")).startswith("At threshold 0.4")
        and mark["fpr"] == pytest.approx(result.metrics["fpr"], rel=1e-6)
        and mark["tpr"] == pytest.approx(result.metrics["recall"], rel=1e-6)
        for layer in marks
        for mark in _values(charts["roc"].spec, layer["data"])
    )
    calibration = _values(charts["calibration"].spec)
    assert sum(row["weight"] for row in calibration) == pytest.approx(result.n_samples)


def test_single_class_is_shown_undefined_not_zero() -> None:
    labels = np.ones(50, dtype=np.int64)
    scores = np.linspace(0.05, 0.95, 50)
    result = evaluate("binary", labels, scores)
    page = render_report(result)
    assert result.undefined["roc_auc"]
    assert '<th scope="row">roc_auc</th><td class="num" data-value="">undefined</td>' in page
    assert "Undefined metrics" in page
    assert [chart.key for chart in charts_of(result)] == ["calibration", "confusion"]


def test_class_names_cannot_end_the_script_element() -> None:
    labels = np.array([0, 1, 0, 1, 1, 0])
    scores = np.array([[0.8, 0.2], [0.3, 0.7], [0.6, 0.4], [0.1, 0.9], [0.45, 0.55], [0.5, 0.5]])
    hostile = ["</script><script>alert(1)</script>", "<!--"]
    page = render_report(evaluate("multiclass", labels, scores, classes=hostile))
    parsed = _parse(page)
    assert len(parsed.scripts) == len(PACKAGES) + 2
    specs = _specs(parsed)
    values = _values(specs[0]["spec"])
    assert {row["actual"] for row in values} == set(hostile)
    assert "<script>alert(1)" not in page


@pytest.mark.slow
def test_ten_million_rows_give_a_page_under_two_megabytes() -> None:
    labels, scores = binary_rows(10_000_000, seed=3)
    result = evaluate("binary", labels, scores)
    page = render_report(result)
    size = len(page.encode("utf-8"))
    assert size < 2_000_000, size
    assert result.curves["roc"]["fpr"].size == 1000  # thinned to max_curve_points


def test_an_alarm_is_the_verdict_the_page_shows() -> None:
    rng = np.random.default_rng(3)
    labels = (np.arange(4000) % 5 == 0).astype(float)
    baseline = {"roc_auc": 0.9, "roc_auc_variance": 0.0}
    state = None
    for _ in range(3):  # an AUC near 0.64: far below 0.9 - 0.01
        result = evaluate("binary", labels, rng.normal(labels * 0.5, 1.0), baseline=baseline,
                          monitor_state=state)  # fmt: skip
        state = result.monitor_state
    assert result.monitor["roc_auc"].alarm
    page = render_report(result)
    assert 'class="verdict-significant">alarm: evidence that the AUC fell' in page
