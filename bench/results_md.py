"""``bench/RESULTS.md``: one ``## <section>`` per benchmark script.

Each script rewrites only its own section (``write_section``); every other section, and the
preamble above the first section, is kept as it was.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["RESULTS_PATH", "read_section", "write_section"]

RESULTS_PATH = Path(__file__).with_name("RESULTS.md")

PREAMBLE = """# Benchmark results

Written by the scripts in `bench/`: each script owns one `## ` section below and rewrites only
that section when it runs. Do not edit by hand; rerun the script instead."""


def write_section(title: str, body: str, path: Path = RESULTS_PATH) -> None:
    """Replace the section ``## {title}`` of ``path`` with ``body`` (appended if absent)."""
    text = path.read_text(encoding="utf-8") if path.exists() else PREAMBLE
    preamble, sections = _split(text)
    sections[title] = body.strip("\n")  # an existing title keeps its place in the file
    parts = [preamble] if preamble else []
    parts += [f"## {name}\n\n{content}" for name, content in sections.items()]
    path.write_text("\n\n".join(parts) + "\n", encoding="utf-8")


def read_section(title: str, path: Path = RESULTS_PATH) -> str | None:
    """The body of the section ``## {title}`` of ``path``; None when there is none."""
    if not path.exists():
        return None
    return _split(path.read_text(encoding="utf-8"))[1].get(title)


def _split(text: str) -> tuple[str, dict[str, str]]:
    """(preamble, {section title: section body}); ``## `` lines inside code fences are text."""
    preamble: list[str] = []
    sections: dict[str, list[str]] = {}
    current = preamble
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith("## "):
            current = sections.setdefault(line[3:].strip(), [])
            continue
        current.append(line)
    return "\n".join(preamble).strip("\n"), {
        name: "\n".join(lines).strip("\n") for name, lines in sections.items()
    }
