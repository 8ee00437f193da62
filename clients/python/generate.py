"""Regenerate the client's stubs of proto/evalserve/v1 into src/evalserve_client/_proto (or the
folder given).

    python clients/python/generate.py [OUT_DIR]

The same pinned generator as the server's (grpcio-tools 1.85.1, mypy-protobuf 5.1.0). The proto
keeps its file name (``evalserve/v1/evaluation.proto``), so client and server stubs loaded in
one process register the same file in protobuf's default pool instead of clashing symbols; only
the Python imports are moved under ``evalserve_client._proto``, so the client never imports the
server's ``evalserve.v1`` package. tests/clients regenerates into a temporary folder and fails on
any difference.
"""

from __future__ import annotations

import sys
from pathlib import Path

from grpc_tools import protoc

HERE = Path(__file__).resolve().parent
PROTO_ROOT = HERE.parent.parent / "proto"
DEFAULT_OUT = HERE / "src" / "evalserve_client" / "_proto"
BIN = Path(sys.executable).parent  # mypy-protobuf's plugins sit beside the interpreter
PREFIX = "evalserve_client._proto."


def generate(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for proto in sorted(PROTO_ROOT.rglob("*.proto")):
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
    for generated in sorted(out.rglob("*_pb2*.py*")):
        text = generated.read_text()
        moved = text.replace("from evalserve.v1 import", f"from {PREFIX}evalserve.v1 import")
        moved = moved.replace("import evalserve.v1.", f"import {PREFIX}evalserve.v1.")
        if moved != text:
            generated.write_text(moved)
    for package in {p.parent for p in out.rglob("*_pb2.py")} | {out / "evalserve"}:
        while package != out.parent:
            (package / "__init__.py").touch()
            package = package.parent


if __name__ == "__main__":
    generate(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT)
