"""The report as a person sees it: each task's page opened from a file in headless Chromium
(``make browser-tools`` installs it and axe-core). No console errors, no network requests, every
chart drawn and not empty, the threshold shown on hover, WCAG 2 A/AA checks of axe-core passed,
and a screenshot (``REPORT_SCREENSHOTS=folder`` keeps them: the docs show them)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalserve.report import render_report
from tests.report.browser import Browser, Page
from tests.report.cases import PAGES, TASKS, case

pytestmark = pytest.mark.slow

# Per chart: how many of its drawn marks hold something (a path with a shape, a text).
DRAWN = """
Array.from(document.querySelectorAll('.chart')).map(chart => {
  const svg = chart.querySelector('svg');
  if (!svg) return [chart.id, -1];
  const drawn = Array.from(svg.querySelectorAll('.role-mark path, .role-mark text'))
    .filter(el => (el.getAttribute('d') || el.textContent || '').length > 0);
  return [chart.id, drawn.length];
})
"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with Browser() as opened:
        yield opened


@pytest.fixture(scope="module", params=PAGES)
def page(
    request: pytest.FixtureRequest, browser: Browser, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Page, Path]]:
    task = request.param
    result, options = case(task)
    folder = tmp_path_factory.mktemp(task)
    path = folder / f"{task}.html"
    path.write_text(render_report(result, options=options), encoding="utf-8")
    opened = browser.open(path.as_uri())
    expected = opened.evaluate("document.querySelectorAll('.chart').length")
    opened.until(f"document.querySelectorAll('.chart svg').length === {expected}")
    yield task, opened, path
    opened.socket.close()


def test_no_console_errors_and_no_exceptions(page: tuple[str, Page, Path]) -> None:
    _, opened, _ = page
    assert opened.exceptions == []
    problems = [entry for entry in opened.console if entry["type"] in ("error", "warning")]
    assert problems == []


def test_no_network_requests(page: tuple[str, Page, Path]) -> None:
    _, opened, path = page
    assert set(opened.requests) <= {path.as_uri()}


def test_every_chart_is_drawn_and_not_empty(page: tuple[str, Page, Path]) -> None:
    _, opened, _ = page
    drawn = dict(opened.evaluate(DRAWN))
    assert drawn, "no chart"
    for chart, count in drawn.items():
        assert count > 0, f"{chart}: nothing drawn"


def test_hovering_the_roc_curve_shows_the_threshold(page: tuple[str, Page, Path]) -> None:
    task, opened, _ = page
    if task != "binary":
        pytest.skip("the ROC curve's thresholds: task binary")
    point = opened.evaluate(
        """(() => {
          document.getElementById('chart-roc').scrollIntoView({block: 'center'});
          const paths = Array.from(document.querySelectorAll('#chart-roc .mark-symbol path'));
          const box = paths[Math.floor(paths.length / 2)].getBoundingClientRect();
          return [box.x + box.width / 2, box.y + box.height / 2];
        })()"""
    )
    opened.call("Input.dispatchMouseEvent", type="mouseMoved", x=point[0], y=point[1])
    text = opened.until(
        "(() => { const t = document.getElementById('vg-tooltip-element');"
        " return t && t.classList.contains('visible') && t.textContent; })()"
    )
    assert "Threshold" in text
    assert "True positive rate" in text


def _hover(opened: Page, element: str) -> str:
    """Move the mouse over ``element`` (a JavaScript expression); the tooltip's text."""
    # Away first: the tooltip of an earlier hover gone.
    opened.call("Input.dispatchMouseEvent", type="mouseMoved", x=1, y=1)
    opened.until(
        "(() => { const t = document.getElementById('vg-tooltip-element');"
        " return !t || !t.classList.contains('visible'); })()"
    )
    point = opened.evaluate(
        f"""(() => {{
          const element = {element};
          element.scrollIntoView({{block: 'center'}});
          const box = element.getBoundingClientRect();
          return [box.x + box.width / 2, box.y + box.height / 2];
        }})()"""
    )
    opened.call("Input.dispatchMouseEvent", type="mouseMoved", x=point[0], y=point[1])
    text: str = opened.until(
        "(() => { const t = document.getElementById('vg-tooltip-element');"
        " return t && t.classList.contains('visible') && t.textContent; })()"
    )
    return text


def test_hovering_an_operating_point_shows_its_option_and_threshold(
    page: tuple[str, Page, Path],
) -> None:
    task, opened, _ = page
    if task != "binary":
        pytest.skip("the operating points' options: task binary's case")
    # The ROC chart's last layer of symbols is the operating points', in the options' order:
    # the specificity at sensitivity 0.9 comes before two alert budgets and the EER.
    text = _hover(
        opened,
        "(() => { const layers = document.querySelectorAll("
        "'#chart-roc .mark-symbol.role-mark');"
        " const paths = layers[layers.length - 1].querySelectorAll('path');"
        " return paths[paths.length - 4]; })()",
    )
    for word in ("Option", "Target", "Value", "Threshold"):
        assert word in text
    assert "specificity_at_sensitivity" in text


def test_the_det_axes_are_labelled_in_percent(page: tuple[str, Page, Path]) -> None:
    task, opened, _ = page
    if not task.startswith("binary"):
        pytest.skip("the DET curve: task binary")
    labels = opened.evaluate(
        "Array.from(document.querySelectorAll('#chart-det .role-axis-label text'))"
        ".map(t => t.textContent)"
    )
    assert len(labels) >= 6
    assert all(label.endswith("%") for label in labels), labels
    assert "10%" in labels


def test_accessibility_basics(page: tuple[str, Page, Path]) -> None:
    _, opened, _ = page
    assert opened.axe() == []


def test_screenshot(page: tuple[str, Page, Path], tmp_path: Path) -> None:
    """The whole page, and its first part (to the end of the charts) as the docs show it."""
    task, opened, _ = page
    if task not in TASKS:
        pytest.skip("the screenshots: one page per task")
    whole = opened.screenshot(tmp_path / f"report-{task}-whole.png")
    keep = os.environ.get("REPORT_SCREENSHOTS")
    folder = Path(keep) if keep else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    # The charts' section, or the metrics' when a task has no chart (the first in the page).
    until = "section[aria-labelledby='h-charts'], section[aria-labelledby='h-metrics']"
    first = opened.screenshot(folder / f"report-{task}.png", until=until)
    for data in (whole, first):
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        assert len(data) > 20_000  # a page of tables and charts, not a blank one


def test_the_confusion_matrix_shows_counts_and_rates(page: tuple[str, Page, Path]) -> None:
    task, opened, _ = page
    if task not in ("binary", "multiclass"):
        pytest.skip("the confusion matrix: tasks binary and multiclass")
    texts = opened.evaluate(
        "Array.from(document.querySelectorAll('#chart-confusion .role-mark text'))"
        ".map(t => t.textContent)"
    )
    rates = [text for text in texts if text.endswith("%")]
    counts = [text for text in texts if text and not text.endswith("%")]
    cells = 4 if task == "binary" else 16
    assert len(rates) == len(counts) == cells, texts
    if task == "binary":
        assert {text.split()[0] for text in rates} == {"TPR", "FNR", "FPR", "TNR"}
    # Coloured by the rate: the cells of a row are as dark as their share of the row says,
    # whatever the row's size; the darkest cell of each row is never the palest colour.
    fills = opened.evaluate(
        "Array.from(document.querySelectorAll('#chart-confusion .mark-rect path'))"
        ".map(p => p.getAttribute('fill'))"
    )
    assert len(set(fills)) > 2, fills


def test_the_threshold_and_optimum_markers_differ_and_have_a_legend(
    page: tuple[str, Page, Path],
) -> None:
    task, opened, _ = page
    if not task.startswith("binary"):
        pytest.skip("the marked points: task binary")
    for chart in ("roc", "pr"):
        legend = opened.evaluate(
            f"""(() => {{
              const legends = Array.from(document.querySelectorAll('#chart-{chart} .role-legend'));
              const marked = legends.find(l => l.textContent.includes('Marked'));
              if (!marked) return null;
              const labels = Array.from(marked.querySelectorAll('.role-legend-label text'));
              const symbols = Array.from(marked.querySelectorAll('.role-legend-symbol path'));
              return labels.map((label, i) => [label.textContent,
                symbols[i].getAttribute('fill'), symbols[i].getAttribute('d')]);
            }})()"""
        )
        assert legend is not None, f"{chart}: no legend of the marked points"
        assert len(legend) == 2, legend
        (threshold, colour_a, shape_a), (optimum, colour_b, shape_b) = legend
        assert threshold.startswith("At threshold") and "optimum" in optimum
        assert colour_a != colour_b and shape_a != shape_b
        # The points on the curve carry the legend's colours.
        drawn = opened.evaluate(
            f"Array.from(document.querySelectorAll('#chart-{chart} .mark-symbol path'))"
            ".map(p => p.getAttribute('fill'))"
        )
        assert colour_a in drawn and colour_b in drawn


def test_the_gain_and_lift_charts_are_drawn_with_their_axes(page: tuple[str, Page, Path]) -> None:
    task, opened, _ = page
    if not task.startswith("binary"):
        pytest.skip("gain and lift: task binary")
    for chart, title in (("gain", "Share of positives captured (gain)"), ("lift", "Lift")):
        found = opened.evaluate(
            f"""(() => {{
              const svg = document.querySelector('#chart-{chart} svg');
              const titles = Array.from(svg.querySelectorAll('.role-axis-title text'))
                .map(t => t.textContent);
              const lines = Array.from(svg.querySelectorAll('.mark-line path'))
                .map(p => (p.getAttribute('d') || '').length);
              return [titles, lines];
            }})()"""
        )
        titles, lines = found
        assert "Share of rows flagged (ranked by score)" in titles
        assert any(text.startswith(title) for text in titles), titles
        assert max(lines) > 1000  # the curve, not only the reference lines


def test_multiclass_draws_each_class_roc_curve(page: tuple[str, Page, Path]) -> None:
    task, opened, _ = page
    if task != "multiclass":
        pytest.skip("the per-class ROC curves: task multiclass")
    found = opened.evaluate(
        """(() => {
          const svg = document.querySelector('#chart-roc_per_class svg');
          const labels = Array.from(svg.querySelectorAll('.role-legend-label text'))
            .map(t => t.textContent);
          const strokes = Array.from(svg.querySelectorAll('.mark-line path'))
            .filter(p => (p.getAttribute('d') || '').length > 200)
            .map(p => p.getAttribute('stroke'));
          return [labels, strokes];
        })()"""
    )
    labels, strokes = found
    assert sorted(label.split(" (AUC")[0] for label in labels) == ["bird", "cat", "dog", "fish"]
    assert len(set(strokes)) >= 5, strokes  # four classes in their colours and the average


def test_a_baseline_payload_draws_the_reference_curves(browser: Browser, tmp_path: Path) -> None:
    """A baseline of labels and scores: ROC, precision-recall, score distributions and the
    reliability diagram each show the "current" and the "reference" series in a legend."""
    from evalserve import evaluate
    from tests.report.cases import binary_rows

    labels, scores = binary_rows(3000, seed=1)
    ref_labels, ref_scores = binary_rows(2000, seed=2)
    baseline = {"labels": ref_labels.tolist(), "scores": (ref_scores**0.7).tolist()}
    options = {"threshold": 0.4, "bootstrap_replicates": 0}
    result = evaluate("binary", labels, scores, options=options, baseline=baseline)
    path = tmp_path / "baseline.html"
    path.write_text(render_report(result, options=options, baseline=baseline), encoding="utf-8")
    opened = browser.open(path.as_uri())
    try:
        expected = opened.evaluate("document.querySelectorAll('.chart').length")
        opened.until(f"document.querySelectorAll('.chart svg').length === {expected}")
        assert opened.exceptions == []
        for chart in ("roc", "pr", "distributions", "calibration"):
            legends = opened.evaluate(
                f"""Array.from(document.querySelectorAll('#chart-{chart} .role-legend'))
                  .filter(l => l.querySelector('.role-legend-title text')
                    && l.querySelector('.role-legend-title text').textContent === 'Data')
                  .map(l => Array.from(l.querySelectorAll('.role-legend-label text'))
                    .map(t => t.textContent))"""
            )
            assert legends == [["current", "reference"]], (chart, legends)
        # The reference's curve is drawn: the ROC chart has a grey dashed line of many points.
        dashed = opened.evaluate(
            "Array.from(document.querySelectorAll('#chart-roc .mark-line path'))"
            ".filter(p => p.getAttribute('stroke') === '#7A7A7A'"
            " && (p.getAttribute('stroke-dasharray') || '').length > 0)"
            ".map(p => (p.getAttribute('d') || '').length)"
        )
        assert dashed and max(dashed) > 1000, dashed
        assert opened.axe() == []
    finally:
        opened.socket.close()
