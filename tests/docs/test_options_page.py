"""docs/reference/options.md is what docs/generate_options.py makes of the core's options table:
a change to an option without the regenerated page (or an edit of the page by hand) fails."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from docs import generate_options
from evalserve.core import OPTIONS


def test_the_committed_page_is_fresh() -> None:
    assert generate_options.main(["--check"]) == 0, "run `python docs/generate_options.py`"


def test_the_check_fails_on_a_stale_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = tmp_path / "reference" / "options.md"
    monkeypatch.setattr(generate_options, "PAGE", page)
    assert generate_options.main(["--check"]) == 1  # missing
    page.parent.mkdir()
    page.write_text(generate_options.render().replace("`0.5`", "`0.4`"), encoding="utf-8")
    assert generate_options.main(["--check"]) == 1  # edited
    assert generate_options.main([]) == 0
    assert generate_options.main(["--check"]) == 0  # rewritten


def test_the_page_has_one_row_per_option_with_its_default_and_tasks() -> None:
    rows = re.findall(r"^\| `([a-z_0-9]+)` \| (.*) \|$", generate_options.render(), re.MULTILINE)
    assert [name for name, _ in rows] == list(OPTIONS)
    for name, rest in rows:
        spec = OPTIONS[name]
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", rest)]
        assert cells[:4] == [
            spec.type_text,
            f"`{spec.default_text}`",
            spec.range_text,
            ", ".join(spec.tasks),
        ], name
