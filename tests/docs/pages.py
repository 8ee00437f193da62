"""The README and the documentation site as the tests read them: the pages, the nav, the fenced
blocks with their markers, the links, and the tables that restate the code.

A fenced block is marked by an HTML comment on the line right before it:

- ``<!-- example: NAME -->``: an example, run by ``tests/clients/test_readme_examples.py``. A name
  may appear on several pages (the README and the site show the same first evaluation) only
  with the very same code.
- ``<!-- output: NAME -->``: exactly what example NAME prints, or, with lines of ``...``
  standing for what is left out, the lines it prints in that order.
- ``<!-- not-run: WHY -->``: a command that is shown, not run (it installs, needs Docker, ...).

Every shell, Python or TypeScript block must carry one of them, so that no example is left
unchecked by accident."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MKDOCS = ROOT / "mkdocs.yml"

# Languages of blocks that could be run; every such block is an example or says why it is not.
RUNNABLE = frozenset({"sh", "bash", "shell", "console", "python", "py", "ts", "typescript", "js"})

_FENCE = re.compile(
    r"^(?P<indent> *)```(?P<lang>[\w-]*)[^\n]*\n(?P<code>.*?)^(?P=indent)``` *$",
    re.DOTALL | re.MULTILINE,
)
_MARKER = re.compile(r"<!-- (?P<kind>example|output|not-run): (?P<arg>.+?) -->\s*$")
_LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\((?P<target>[^)\s]+)(?: \"[^\"]*\")?\)")
_CODE_SPAN = re.compile(r"`[^`\n]*`")


@dataclass(frozen=True)
class Block:
    """A fenced block of a Markdown file, with the marker right before it (if any)."""

    path: Path
    line: int
    lang: str
    code: str
    kind: str | None
    arg: str | None

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def site_pages() -> list[Path]:
    """Every Markdown page under docs/."""
    return sorted(DOCS.rglob("*.md"))


def markdown_files() -> list[Path]:
    """The README and every page of the site."""
    return [README, *site_pages()]


def blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = _MARKER.search(before)
        found.append(
            Block(
                path=path,
                line=text.count("\n", 0, match.start()) + 1,
                lang=match["lang"],
                code=match["code"],
                kind=marker["kind"] if marker else None,
                arg=marker["arg"] if marker else None,
            )
        )
    return found


def all_blocks() -> list[Block]:
    return [block for path in markdown_files() for block in blocks(path)]


def examples() -> dict[str, Block]:
    """Every example by name (the first place it appears; the others must be equal to it)."""
    found: dict[str, Block] = {}
    for block in all_blocks():
        if block.kind != "example":
            continue
        assert block.arg is not None
        first = found.setdefault(block.arg, block)
        assert (first.lang, first.code) == (block.lang, block.code), (
            f"example {block.arg} differs between {first.where} and {block.where}"
        )
    return found


def outputs() -> dict[str, list[Block]]:
    """The ``<!-- output: NAME -->`` blocks by the name of the example they belong to."""
    found: dict[str, list[Block]] = {}
    for block in all_blocks():
        if block.kind == "output":
            assert block.arg is not None
            found.setdefault(block.arg, []).append(block)
    return found


def prose(text: str) -> str:
    """The text without its fenced blocks and code spans (where a link is only an example)."""
    return _CODE_SPAN.sub("", _FENCE.sub("", text))


def links(path: Path) -> list[str]:
    """The targets of the Markdown links of a file, outside code."""
    return [match["target"] for match in _LINK.finditer(prose(path.read_text(encoding="utf-8")))]


class _IgnoreTags(yaml.SafeLoader):
    """mkdocs.yml's own tags (``!relative``) are MkDocs' business: read them as plain values."""


def _untagged(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node)
    return loader.construct_mapping(node)  # type: ignore[arg-type]


_IgnoreTags.add_multi_constructor("!", _untagged)


def mkdocs_config() -> dict[str, Any]:
    config = yaml.load(MKDOCS.read_text(encoding="utf-8"), Loader=_IgnoreTags)
    assert isinstance(config, dict)
    return config


def nav_pages() -> list[str]:
    """The pages of mkdocs.yml's nav, as paths relative to docs/, in nav order."""
    found: list[str] = []

    def walk(entry: Any) -> None:
        if isinstance(entry, str):
            found.append(entry)
        elif isinstance(entry, list):
            for item in entry:
                walk(item)
        elif isinstance(entry, dict):
            for value in entry.values():
                walk(value)

    walk(mkdocs_config()["nav"])
    return found


def between(text: str, name: str) -> str:
    """The part of a page between ``<!-- name -->`` and ``<!-- /name -->``."""
    start, end = f"<!-- {name} -->", f"<!-- /{name} -->"
    assert text.count(start) == 1 and text.count(end) == 1, f"no single {start} ... {end}"
    return text.split(start)[1].split(end)[0]


def section(text: str, heading: str) -> str:
    """The body of the ``## heading`` section of a page, up to the next ``## ``."""
    match = re.search(rf"^## {re.escape(heading)}\n(?P<body>.*?)(?=^## |\Z)", text, re.S | re.M)
    assert match is not None, f"no section '## {heading}'"
    return match["body"]


def table_rows(text: str) -> list[list[str]]:
    """The body rows of the Markdown tables in ``text``, cells stripped (the header and the
    separator row left out)."""
    rows = []
    lines = [line.strip() for line in text.splitlines() if line.strip().startswith("|")]
    for index, line in enumerate(lines):
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        is_separator = all(re.fullmatch(r":?-{3,}:?", cell) for cell in cells)
        next_is_separator = index + 1 < len(lines) and re.fullmatch(r"[|:\- ]+", lines[index + 1])
        if not is_separator and not next_is_separator:
            rows.append(cells)
    return rows


def metrics_contract() -> dict[str, str]:
    """The Prometheus metrics contract of docs/monitoring.md: metric name -> type."""
    table = between((DOCS / "monitoring.md").read_text(encoding="utf-8"), "contract")
    contract: dict[str, str] = {}
    for names, kind, *_ in table_rows(table):
        for name in re.findall(r"`(evalserve_[a-z0-9_]+)`", names):
            contract[name] = kind
    return contract
