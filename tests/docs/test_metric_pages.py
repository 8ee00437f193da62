"""The metric pages of the documentation (docs/metrics/) are generated from the metric catalog by
docs/generate_metrics.py: the committed pages must be what it writes now, every entry must be on
its task's page with all its parts, and nothing on them may link outside docs/ (mkdocs --strict
refuses such links: tests are named as code text)."""

from __future__ import annotations

import importlib.util
import re
import shutil
from pathlib import Path
from types import ModuleType

import pytest

from evalserve.core import TASKS, catalog_entries, task_spec

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = DOCS / "metrics"
STATE_SECTION = "State size (streams and merges)"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "evalserve_generate_metrics", ROOT / "docs" / "generate_metrics.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GENERATOR = _generator()


def test_the_committed_pages_are_up_to_date() -> None:
    outputs = GENERATOR.outputs()
    assert set(outputs) == {PAGES / "index.md", *(PAGES / f"{task}.md" for task in TASKS)}
    for path, text in outputs.items():
        assert path.is_file(), f"{path.relative_to(ROOT)} is missing: run docs/generate_metrics.py"
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.relative_to(ROOT)} is stale: run python docs/generate_metrics.py"
        )
    assert GENERATOR.main(["--check"]) == 0


def test_check_fails_on_drift_and_writing_repairs_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert GENERATOR.main(["--check", "--out", str(tmp_path)]) == 1  # nothing written yet
    assert GENERATOR.main(["--out", str(tmp_path)]) == 0
    assert GENERATOR.main(["--check", "--out", str(tmp_path)]) == 0
    page = tmp_path / "multiclass.md"
    page.write_text(page.read_text(encoding="utf-8").replace("higher", "lower", 1))
    assert GENERATOR.main(["--check", "--out", str(tmp_path)]) == 1
    assert "multiclass.md is out of date" in capsys.readouterr().err
    shutil.rmtree(tmp_path)
    assert GENERATOR.main(["--check", "--out", str(tmp_path)]) == 1


def _sections(task: str) -> dict[str, str]:
    """Each metric's section of a task page, by the name in its heading."""
    text = (PAGES / f"{task}.md").read_text(encoding="utf-8")
    parts = re.split(r"^## (.+)$", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


@pytest.mark.parametrize("task", TASKS)
def test_every_entry_has_its_section_with_every_part(task: str) -> None:
    sections = _sections(task)
    entries = catalog_entries(task)
    # A task with an accumulator state says what it holds, before the metrics.
    state = sections.pop(STATE_SECTION, None)
    # Every task has one.
    assert state is not None and task_spec(task).state.size_doc in state
    assert next(iter(_sections(task))) == STATE_SECTION
    assert list(sections) == [info.name for info in entries]
    for info in entries:
        section = sections[info.name]
        assert f"- **Range**: {info.range}\n" in section
        assert f"- **Test**: `{info.test}`\n" in section
        for part in ("Direction", "Aliases", "Conventions", "Reference"):
            assert f"- **{part}**:" in section, (info.name, part)
        for key, _ in info.conventions:
            assert f"    - `{key}`: " in section, (info.name, key)
        for alias in info.aliases:
            assert f"`{alias}`" in section, (info.name, alias)
        direction = {True: "higher is better", False: "lower is better", None: "none"}
        assert f"- **Direction**: {direction[info.higher_is_better]}\n" in section


def test_the_index_links_every_task_page_and_nothing_leaves_docs() -> None:
    index = (PAGES / "index.md").read_text(encoding="utf-8")
    assert set(re.findall(r"\]\(([a-z]+)\.md\)", index)) == set(TASKS)
    for page in PAGES.glob("*.md"):
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            assert not target.startswith(("/", "http")), (page.name, target)
            resolved = (PAGES / target).resolve()
            assert resolved.is_relative_to(DOCS.resolve()), (page.name, target)
            assert resolved.is_file(), (page.name, target)


def test_markup_in_the_catalog_text_is_escaped() -> None:
    # "labels=<present classes>" would be an HTML tag; "|" would split a table row.
    multiclass = (PAGES / "multiclass.md").read_text(encoding="utf-8")
    assert "&lt;present classes&gt;" in multiclass and "<present classes>" not in multiclass
    assert GENERATOR._text("a | b <c> *d*") == r"a \| b &lt;c&gt; \*d\*"
    assert GENERATOR._anchor("precision_at_{k}") == "precision_at_k"
