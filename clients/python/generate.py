"""Regenerate the client's stubs of proto/evalserve/v1 into src/evalserve_client/_proto (or the
folder given).

    .venv-client-gen/bin/python clients/python/generate.py [OUT_DIR]

The generator is pinned in generator.txt (grpcio-tools 1.62.3, mypy-protobuf 3.6.0), older than
the server's on purpose: its protobuf 4.25.1 generated code imports on every protobuf runtime
from 4.25.1 on, so the client claims that floor. `make client-envs` builds .venv-client-gen with
exactly those versions; run from any other interpreter, this script re-runs itself there, and
refuses when the venv is missing or holds other versions.

The proto keeps its file name (``evalserve/v1/evaluation.proto``), so client and server stubs
loaded in one process register the same file in protobuf's default pool instead of clashing
symbols (both generators serialize the same descriptor, which the pool accepts twice; the tests
check it); only the Python imports are moved under ``evalserve_client._proto``, so the client
never imports the server's ``evalserve.v1`` package. tests/clients regenerates into a temporary
folder and fails on any difference.
"""

from __future__ import annotations

import os
import re
import sys
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PROTO_ROOT = ROOT / "proto"
DEFAULT_OUT = HERE / "src" / "evalserve_client" / "_proto"
GEN_PYTHON = ROOT / ".venv-client-gen" / "bin" / "python"
PINS = HERE / "generator.txt"
PREFIX = "evalserve_client._proto."
# a module reference in a .pyi (``evalserve.v1.evaluation_pb2.EvaluateRequest``), not a proto
# full name inside a string
PYI_MODULE = re.compile(r"(?<![\w.'\"])evalserve\.v1\.(?=\w+_pb2\b)")


def pinned() -> dict[str, str]:
    lines = (line.split("#")[0].strip() for line in PINS.read_text().splitlines())
    return dict(line.split("==") for line in lines if line)


def wrong_versions() -> list[str]:
    wrong = []
    for name in ("grpcio-tools", "mypy-protobuf"):
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            installed = "none"
        if installed != pinned()[name]:
            wrong.append(f"{name} {installed} (pinned: {pinned()[name]})")
    return wrong


def generate(out: Path) -> None:
    from grpc_tools import protoc

    bin_dir = Path(sys.executable).parent  # mypy-protobuf's plugins sit beside the interpreter
    out.mkdir(parents=True, exist_ok=True)
    for proto in sorted(PROTO_ROOT.rglob("*.proto")):
        args = [
            "grpc_tools.protoc",
            f"-I{PROTO_ROOT}",
            f"-I{Path(protoc.__file__).parent / '_proto'}",
            f"--plugin=protoc-gen-mypy={bin_dir / 'protoc-gen-mypy'}",
            f"--plugin=protoc-gen-mypy_grpc={bin_dir / 'protoc-gen-mypy_grpc'}",
            f"--python_out={out}",
            f"--mypy_out={out}",
            f"--grpc_python_out={out}",
            f"--mypy_grpc_out={out}",
            str(proto.relative_to(PROTO_ROOT)),
        ]
        if protoc.main(args) != 0:
            raise SystemExit(f"protoc failed on {proto}")
    for generated in sorted(out.rglob("*_pb2*.py*")):
        text = generated.read_text()
        moved = text.replace("from evalserve.v1 import", f"from {PREFIX}evalserve.v1 import")
        moved = moved.replace("import evalserve.v1.", f"import {PREFIX}evalserve.v1.")
        if generated.suffix == ".pyi":
            moved = PYI_MODULE.sub(f"{PREFIX}evalserve.v1.", moved)
        if moved != text:
            generated.write_text(moved)
    for package in {p.parent for p in out.rglob("*_pb2.py")} | {out / "evalserve"}:
        while package != out.parent:
            (package / "__init__.py").touch()
            package = package.parent


def main() -> None:
    if wrong_versions():
        if Path(sys.executable) != GEN_PYTHON and GEN_PYTHON.exists():
            os.execv(GEN_PYTHON, [str(GEN_PYTHON), __file__, *sys.argv[1:]])
        raise SystemExit(
            f"the client's stubs need the pinned generator, not {', '.join(wrong_versions())}: "
            "run `make client-envs`, then `.venv-client-gen/bin/python clients/python/generate.py`"
        )
    generate(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT)


if __name__ == "__main__":
    main()
