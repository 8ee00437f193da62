"""Regenerate the Python stubs of proto/evalserve/v1 into src (evalserve.v1), or the folder given.

    python proto/generate.py [OUT_DIR]

Pinned generator: grpcio-tools and mypy-protobuf as listed in pyproject.toml's `dev` extra; the
test suite regenerates into a temporary folder and fails on any difference.
"""

from __future__ import annotations

import sys
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
DEFAULT_OUT = ROOT / "src"
BIN = Path(sys.executable).parent  # mypy-protobuf's plugins sit beside the interpreter


def proto_files() -> list[Path]:
    return sorted(PROTO_ROOT.rglob("*.proto"))


def generate(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for proto in proto_files():
        args = [
            "grpc_tools.protoc",
            f"-I{PROTO_ROOT}",
            f"-I{Path(protoc.__file__).parent / '_proto'}",
            f"--plugin=protoc-gen-mypy={BIN / 'protoc-gen-mypy'}",
            f"--plugin=protoc-gen-mypy_grpc={BIN / 'protoc-gen-mypy_grpc'}",
            f"--python_out={out}",
            f"--mypy_out={out}",
            f"--grpc_python_out={out}",
            f"--mypy_grpc_out={out}",
            str(proto.relative_to(PROTO_ROOT)),
        ]
        if protoc.main(args) != 0:
            raise SystemExit(f"protoc failed on {proto}")
    # Only the stubs' own packages (evalserve/v1): the package root above them is ours.
    for package in {p.parent for p in out.rglob("*_pb2.py")}:
        (package / "__init__.py").touch()


if __name__ == "__main__":
    generate(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT)
