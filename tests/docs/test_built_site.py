"""The built documentation site as a reader gets it: ``mkdocs build --strict`` into a folder,
then what it holds (the pages, not the scripts that generate some of them) and how its pages
look on a phone: at 390 px wide in headless Chromium (``tests/report/browser.py``; ``make
browser-tools`` installs it) no code block is cut off: a wide one scrolls."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs.pages import MKDOCS, ROOT
from tests.report.browser import Browser

pytestmark = pytest.mark.slow

NARROW = 390  # a phone's width in CSS pixels
# The pages whose first code blocks a reader meets first.
PAGES = ("index.html", "getting-started/index.html", "offline/index.html", "report/index.html")

# Per <pre>: whether an ancestor with hidden overflow cuts it off, and whether its code, when
# wider than the block, can be scrolled to.
CLIPPED = """(() => Array.from(document.querySelectorAll('.md-content pre')).map((pre, index) => {
  const code = pre.querySelector('code') || pre;
  const box = pre.getBoundingClientRect();
  let cut = null;
  for (let el = pre.parentElement; el && el !== document.documentElement; el = el.parentElement) {
    const style = getComputedStyle(el);
    const outer = el.getBoundingClientRect();
    if ((style.overflowX === 'hidden' || style.overflowX === 'clip')
        && (box.right > outer.right + 1 || box.left < outer.left - 1)) {
      cut = el.tagName + '.' + el.className;
      break;
    }
  }
  const wide = code.scrollWidth > code.clientWidth + 1;
  const scrolls = ['auto', 'scroll'].includes(getComputedStyle(code).overflowX)
    || ['auto', 'scroll'].includes(getComputedStyle(pre).overflowX);
  return {index, cut, wide, scrolls, right: box.right, left: box.left,
          text: code.textContent.slice(0, 40)};
}))()"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
         "-f", str(MKDOCS), "-d", str(folder)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return folder


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with Browser() as opened:
        yield opened


def test_the_generator_scripts_are_not_published(site: Path) -> None:
    assert (site / "reference" / "options" / "index.html").is_file()
    published = [path.relative_to(site) for path in site.rglob("*.py")]
    assert published == []
    assert not list(site.rglob("__pycache__"))


@pytest.mark.parametrize("name", PAGES)
def test_no_code_block_is_clipped_on_a_phone(site: Path, browser: Browser, name: str) -> None:
    page = browser.open("about:blank")
    try:
        page.call(
            "Emulation.setDeviceMetricsOverride",
            width=NARROW, height=844, deviceScaleFactor=2, mobile=True,
        )  # fmt: skip
        page.call("Page.navigate", url=(site / name).as_uri())
        page.wait_for("Page.loadEventFired")
        blocks = page.evaluate(CLIPPED)
        assert blocks, f"{name}: no code block"
        width = page.evaluate("document.documentElement.clientWidth")
        assert width == NARROW
        for block in blocks:
            assert block["cut"] is None, f"{name}: {block}"
            assert block["left"] >= -1 and block["right"] <= width + 1, f"{name}: {block}"
            assert block["scrolls"] or not block["wide"], f"{name}: {block}"
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    finally:
        page.socket.close()
