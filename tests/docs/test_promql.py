"""The PromQL the monitoring page shows parses: each expression of its ``promql`` blocks becomes a
recording rule that ``promtool check rules`` reads (promtool: Debian's ``prometheus``, installed
by ``make prometheus-tools``)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.docs.pages import DOCS, blocks


def expressions(code: str) -> list[str]:
    """The expressions of a block: comment lines dropped, an expression ending at the first line
    where its parentheses balance."""
    found: list[str] = []
    current: list[str] = []
    depth = 0
    for line in code.splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        current.append(line)
        depth += line.count("(") - line.count(")")
        if depth == 0:
            found.append("\n".join(current))
            current = []
    assert not current, f"unbalanced parentheses in {current}"
    return found


def test_expressions_split_where_the_parentheses_close() -> None:
    code = "# one\nsum(rate(a[5m]))\nmax(\n  b\n)\n\n# two\nc\n"
    assert expressions(code) == ["sum(rate(a[5m]))", "max(\n  b\n)", "c"]


def test_the_monitoring_page_promql_parses(tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.fail("promtool is not installed: run `make prometheus-tools` (Debian: prometheus)")
    found = [
        expression
        for block in blocks(DOCS / "monitoring.md")
        if block.lang == "promql"
        for expression in expressions(block.code)
    ]
    assert len(found) >= 4
    rules = [{"record": f"docs:example_{index}", "expr": expr} for index, expr in enumerate(found)]
    path = tmp_path / "docs.rules.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "docs", "rules": rules}]}))
    done = subprocess.run(
        [promtool, "check", "rules", str(path)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
