"""The committed stubs are what the pinned generator makes of the proto: regenerate and
compare, so a proto change without regenerated stubs (or the reverse) fails the suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STUBS = Path("evalserve") / "v1"
COMMITTED = ROOT / "src" / STUBS


def test_regenerating_the_stubs_changes_nothing(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(ROOT / "proto" / "generate.py"), str(tmp_path)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    generated = tmp_path / STUBS
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file()) == sorted(
        p.relative_to(tmp_path) for p in generated.rglob("*") if p.is_file()
    ), "the generator writes nothing outside evalserve/v1"
    fresh = {p.relative_to(generated): p.read_bytes() for p in generated.rglob("*") if p.is_file()}
    committed = {
        p.relative_to(COMMITTED): p.read_bytes()
        for p in COMMITTED.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert sorted(fresh) == sorted(committed)
    stale = [str(name) for name, content in fresh.items() if committed[name] != content]
    assert stale == [], f"stale generated files, run `make proto`: {stale}"
