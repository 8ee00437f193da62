"""The documentation site holds together: every page is in the nav and every nav entry is a
page, no page links outside the site, the README's links lead to files of the repository, and
every block that could be run is an example (run by tests/clients/test_readme_examples.py) or
says why it is not run."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.docs.pages import (
    DOCS,
    README,
    ROOT,
    RUNNABLE,
    all_blocks,
    examples,
    links,
    nav_pages,
    outputs,
    site_pages,
)


def _page(path: Path) -> str:
    return path.relative_to(DOCS).as_posix()


def test_every_page_is_in_the_nav_once() -> None:
    nav = nav_pages()
    assert len(nav) == len(set(nav)), "a page is in the nav twice"
    assert sorted(nav) == sorted(_page(path) for path in site_pages())


def test_the_nav_holds_the_generated_pages_at_their_paths() -> None:
    # The metric catalog and the options table are generated from the code into these paths.
    tasks = ("binary", "multiclass", "multilabel", "regression", "detection")
    generated = {"metrics/index.md", *(f"metrics/{task}.md" for task in tasks)}
    generated.add("reference/options.md")
    assert generated <= set(nav_pages())


@pytest.mark.parametrize("path", site_pages(), ids=_page)
def test_no_page_links_outside_the_site(path: Path) -> None:
    for target in links(path):
        parts = urlsplit(target)
        if parts.scheme:
            assert parts.scheme in ("http", "https", "mailto"), target
            continue
        assert not target.startswith("/"), f"{target}: absolute path; link relative to the page"
        if not parts.path:
            continue  # an anchor of the same page (mkdocs --strict checks that it exists)
        resolved = (path.parent / parts.path).resolve()
        assert resolved.is_relative_to(DOCS), f"{target} leaves docs/: name the file as a path"
        assert resolved.is_file(), f"{target} is not a page of the site"


def test_readme_links_lead_to_files_of_the_repository() -> None:
    for target in links(README):
        parts = urlsplit(target)
        if parts.scheme or not parts.path:
            continue
        resolved = (ROOT / parts.path).resolve()
        assert resolved.is_relative_to(ROOT) and resolved.exists(), target


def test_the_readme_links_into_the_site() -> None:
    linked = {
        (ROOT / urlsplit(target).path).resolve()
        for target in links(README)
        if not urlsplit(target).scheme
    }
    for page in ("getting-started.md", "api/index.md", "metrics/index.md", "development.md"):
        assert (DOCS / page).resolve() in linked, page


def test_every_runnable_block_is_an_example_or_says_why_not() -> None:
    for block in all_blocks():
        assert block.lang, f"{block.where}: a fenced block without a language"
        if block.lang in RUNNABLE:
            assert block.kind in ("example", "not-run"), (
                f"{block.where}: a ```{block.lang} block needs <!-- example: NAME --> (and a "
                "check in tests/clients/test_readme_examples.py) or <!-- not-run: why -->"
            )
        else:
            assert block.kind in (None, "output"), f"{block.where}: a ```{block.lang} example?"


def test_output_blocks_belong_to_an_example() -> None:
    names = set(examples())
    for name, blocks in outputs().items():
        assert name in names, f"{blocks[0].where}: output of an unknown example {name}"


def test_the_first_evaluation_is_the_same_in_the_readme_and_the_site() -> None:
    places = {
        block.path
        for block in all_blocks()
        if block.kind == "example" and block.arg in ("first-curl", "first-grpcurl", "first-python")
    }
    assert README in places and DOCS / "getting-started.md" in places
