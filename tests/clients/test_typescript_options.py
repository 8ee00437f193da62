"""The TypeScript client's ``Options`` interface (clients/typescript/src/types.ts, written by
hand for its doc comments) has exactly the options of the core's table, with matching types:
``number`` for a number or an integer, ``readonly number[]`` for a list, the union of the
choices for a choice, ``string`` for a string; every one optional and nullable (null is the
default)."""

from __future__ import annotations

import re
from pathlib import Path

from evalserve.core import OPTIONS, OptionSpec

TYPES = Path(__file__).resolve().parents[2] / "clients" / "typescript" / "src" / "types.ts"


def _interface() -> dict[str, str]:
    text = TYPES.read_text(encoding="utf-8")
    body = re.search(r"export interface Options \{(.*?)\n\}", text, re.DOTALL)
    assert body is not None, "no `export interface Options` in types.ts"
    fields = re.findall(r"^\s*readonly (\w+)\?: (.+) \| null;$", body.group(1), re.MULTILINE)
    return dict(fields)


def _typescript(spec: OptionSpec) -> set[str]:
    """The type the interface must give the option, as the set of its union's members."""
    if spec.kind == "choice":
        return {f'"{choice}"' for choice in spec.choices}
    if spec.kind == "string":  # a number goes as its text: the proto field is a string
        return {"string"}
    return {"readonly number[]" if spec.repeated else "number"}


def test_the_typescript_options_are_the_table() -> None:
    fields = _interface()
    assert list(fields) == list(OPTIONS)
    for name, spec in OPTIONS.items():
        assert set(fields[name].split(" | ")) == _typescript(spec), name
