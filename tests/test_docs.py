"""The README's metric catalog is the code's catalog: neither can drift from the other."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evalserve.core import CATALOG, TASKS

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.parametrize("task", TASKS)
def test_readme_catalog_lists_every_metric_of_each_task(task: str) -> None:
    text = README.read_text(encoding="utf-8")
    table = text.split(f"<!-- catalog:{task} -->")[1].split(f"<!-- /catalog:{task} -->")[0]
    documented = set(re.findall(r"^\| `([^`]+)` \|", table, flags=re.MULTILINE))
    expected = {name for each, name in CATALOG if each == task}
    assert documented == expected


def test_readme_settings_table_matches_the_settings() -> None:
    from evalserve.service.config import Settings

    text = README.read_text(encoding="utf-8")
    table = text.split("<!-- settings -->")[1].split("<!-- /settings -->")[0]
    rows = re.findall(r"^\| `([^`]+)` \| ([^|]+) \|", table, flags=re.MULTILINE)
    documented = {name: default.strip() for name, default in rows}
    expected = {name: str(field.default) for name, field in Settings.model_fields.items()}
    assert documented == expected
