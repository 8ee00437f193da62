"""The Python client's committed stubs: what the pinned generator (.venv-client-gen, built by
`make client-envs` from clients/python/generator.txt) makes of the proto, byte for byte; and,
though an older generator than the server's made them, the same descriptor as the server's
stubs, so both load in one process in either order."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "clients" / "python"
COMMITTED = CLIENT / "src" / "evalserve_client" / "_proto"
GEN_PYTHON = ROOT / ".venv-client-gen" / "bin" / "python"
CLIENT_PB = "evalserve_client._proto.evalserve.v1.evaluation_pb2"
SERVER_PB = "evalserve.v1.evaluation_pb2"


def _pins() -> dict[str, str]:
    lines = (
        line.split("#")[0].strip() for line in (CLIENT / "generator.txt").read_text().split("\n")
    )
    return dict(line.split("==") for line in lines if line)


def _gen_python() -> Path:
    if not GEN_PYTHON.exists():
        pytest.fail(f"{GEN_PYTHON.relative_to(ROOT)} is missing: run make client-envs")
    return GEN_PYTHON


def test_the_generator_venv_holds_the_pinned_versions() -> None:
    versions = subprocess.run(
        [str(_gen_python()), "-c",
         "import sys; from importlib import metadata as m; "
         "print('\\n'.join(f'{n}=={m.version(n)}' for n in sys.argv[1:]))", *_pins()],
        check=True, capture_output=True, text=True, timeout=60,
    ).stdout.split()  # fmt: skip
    assert dict(line.split("==") for line in versions) == _pins(), "run make client-envs"


def test_regenerating_the_client_stubs_changes_nothing(tmp_path: Path) -> None:
    subprocess.run(
        [str(_gen_python()), str(CLIENT / "generate.py"), str(tmp_path)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    fresh = {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    committed = {
        p.relative_to(COMMITTED): p.read_bytes()
        for p in COMMITTED.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert sorted(fresh) == sorted(committed)
    stale = [str(name) for name, content in fresh.items() if committed[name] != content]
    assert stale == [], (
        f"stale client stubs, run `.venv-client-gen/bin/python clients/python/generate.py`: {stale}"
    )


def test_the_stubs_come_from_the_floor_generator() -> None:
    """protobuf 4.25.1 generated code (no runtime-version check): what lets the client claim
    protobuf>=4.25.1 while the server's stubs need the newest runtime."""
    generated = (COMMITTED / "evalserve" / "v1" / "evaluation_pb2.py").read_text()
    assert "# Protobuf Python Version: 4.25.1\n" in generated
    assert "runtime_version" not in generated
    assert (
        "GRPC_GENERATED_VERSION"
        not in (COMMITTED / "evalserve/v1/evaluation_pb2_grpc.py").read_text()
    )
    assert _pins()["grpcio-tools"] == "1.62.3"


def test_client_and_server_stubs_serialize_the_same_descriptor() -> None:
    """protobuf's default pool takes the same file twice only when its serialized descriptor is
    identical; the two generators (protoc 25.1 and the server's newer one) agree."""
    from evalserve_client._proto.evalserve.v1 import evaluation_pb2 as client_pb

    from evalserve.v1 import evaluation_pb2 as server_pb

    assert client_pb.DESCRIPTOR.name == server_pb.DESCRIPTOR.name == "evalserve/v1/evaluation.proto"
    assert client_pb.DESCRIPTOR.serialized_pb == server_pb.DESCRIPTOR.serialized_pb
    assert client_pb.EvaluateRequest.DESCRIPTOR.full_name == "evalserve.v1.EvaluateRequest"
    # one pool, one descriptor: a message of either parses as the other
    message = client_pb.EvaluateRequest(task=client_pb.TASK_BINARY, scores_f64=b"\0" * 8)
    assert server_pb.EvaluateRequest.FromString(message.SerializeToString()) == message


@pytest.mark.parametrize(
    "first, second",
    [(CLIENT_PB, SERVER_PB), (SERVER_PB, CLIENT_PB)],
    ids=["client-first", "server-first"],
)
def test_both_stubs_load_in_one_process_in_either_order(first: str, second: str) -> None:
    script = (
        "import importlib\n"
        f"a = importlib.import_module({first!r})\n"
        f"b = importlib.import_module({second!r})\n"
        "assert a.DESCRIPTOR is b.DESCRIPTOR, 'two descriptors for one file'\n"
        "request = a.EvaluateRequest(task=1)\n"
        "assert b.EvaluateRequest.FromString(request.SerializeToString()).task == 1\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-W", "error", "-c", script], capture_output=True, text=True, timeout=60
    )
    assert loaded.returncode == 0, loaded.stderr
    assert metadata.version("protobuf").startswith("7.")  # the server's runtime, the newest
