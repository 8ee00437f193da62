"""Schema hygiene: `buf lint`, `buf format` and `buf breaking` against the newest released proto
pass, and the breaking gate really refuses incompatible changes (a removed field, a renumbered
field, a changed type, a removed RPC) while letting compatible ones (a new field) through.

buf comes from clients/typescript's npm dependencies (`make ts-install`)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUF = ROOT / "clients" / "typescript" / "node_modules" / ".bin" / "buf"
PROTO = Path("proto") / "evalserve" / "v1" / "evaluation.proto"
RELEASED = sorted(
    (ROOT / "proto" / "released").glob("v*.json"),
    key=lambda p: tuple(int(part) for part in p.stem[1:].split(".")),
)


def buf(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    if not BUF.exists():
        pytest.fail(f"{BUF.relative_to(ROOT)} is missing: run `make ts-install`")
    return subprocess.run(
        [str(BUF), *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def test_lint_passes() -> None:
    done = buf("lint")
    assert done.returncode == 0, done.stdout + done.stderr


def test_format_is_canonical() -> None:
    done = buf("format", "--diff", "--exit-code")
    assert done.returncode == 0, done.stdout + done.stderr


def test_no_breaking_change_since_the_last_release() -> None:
    done = buf("breaking", "--against", str(RELEASED[-1]))
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_released_snapshot_is_the_service_of_this_package() -> None:
    image = json.loads(RELEASED[-1].read_text())
    files = {f["name"]: f for f in image["file"]}
    released = files[PROTO.relative_to("proto").as_posix()]
    assert released["package"] == "evalserve.v1"
    methods = {m["name"] for m in released["service"][0]["method"]}
    assert methods == {"Evaluate", "EvaluateStream", "ListMetrics"}
    # No source info: the snapshot holds the schema, not the comments.
    assert "sourceCodeInfo" not in released


def _workspace(tmp_path: Path, edit: Callable[[str], str]) -> Path:
    shutil.copy(ROOT / "buf.yaml", tmp_path / "buf.yaml")
    shutil.copytree(ROOT / "proto" / "evalserve", tmp_path / "proto" / "evalserve")
    path = tmp_path / PROTO
    text = path.read_text()
    edited = edit(text)
    assert edited != text, "the edit did not apply"
    path.write_text(edited)
    return tmp_path


def _sub(pattern: str, replacement: str) -> Callable[[str], str]:
    return lambda text: re.sub(pattern, replacement, text, count=1, flags=re.MULTILINE)


BREAKING = {
    "removed field": (_sub(r"^  bytes weights_f64 = 15;\n", ""), "weights_f64"),
    "renumbered field": (_sub(r"bytes weights_f64 = 15;", "bytes weights_f64 = 115;"), "15"),
    "changed type": (_sub(r"bytes weights_f64 = 15;", "string weights_f64 = 15;"), "type"),
    "removed rpc": (
        _sub(r"^  // The metric catalog.*\n  rpc ListMetrics.*\n", ""),
        "ListMetrics",
    ),
}


@pytest.mark.parametrize("case", sorted(BREAKING))
def test_an_incompatible_change_fails_the_gate(tmp_path: Path, case: str) -> None:
    edit, named = BREAKING[case]
    workspace = _workspace(tmp_path, edit)
    done = buf("breaking", "--against", str(RELEASED[-1]), cwd=workspace)
    assert done.returncode != 0, f"{case} passed buf breaking"
    assert named in done.stdout + done.stderr


def test_a_compatible_change_passes_the_gate(tmp_path: Path) -> None:
    new_field = (
        "  repeated DetectionImage images = 17;\n  // A new optional field.\n  string note = 99;\n"
    )
    workspace = _workspace(tmp_path, _sub(r"^  repeated DetectionImage images = 17;\n", new_field))
    done = buf("breaking", "--against", str(RELEASED[-1]), cwd=workspace)
    assert done.returncode == 0, done.stdout + done.stderr
