"""The client on the oldest dependencies it claims: .venv-client-floor (built by `make
client-envs` from clients/python/floors.txt) holds exactly the floors of its pyproject.toml, and
there, under ``python -W error``, the calls of oldest_runtime_calls.py (gRPC and REST, unary and
streamed, sync and async, refusals, the catalog, a plot) against the live servers of this
process give exactly the answers of the main venv's client (the server's newest runtime)."""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from evalserve.core import CATALOG
from tests.clients import oldest_runtime_calls
from tests.contract.servers import Service

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "clients" / "python"
FLOOR_PYTHON = ROOT / ".venv-client-floor" / "bin" / "python"
FLOOR = re.compile(r"^([A-Za-z0-9_.-]+)>=([\w.]+)(,<[\w.]+)?$")


def _claimed() -> dict[str, str]:
    """Each dependency's floor in clients/python/pyproject.toml, the plot extra's too."""
    project = tomllib.loads((CLIENT / "pyproject.toml").read_text())["project"]
    claimed = {}
    for requirement in [*project["dependencies"], *project["optional-dependencies"]["plot"]]:
        match = FLOOR.match(requirement)
        assert match, f"{requirement}: every dependency of the client states its floor as >="
        claimed[match[1]] = match[2]
    return claimed


def _pinned() -> dict[str, str]:
    lines = (line.split("#")[0].strip() for line in (CLIENT / "floors.txt").read_text().split("\n"))
    return dict(line.split("==") for line in lines if line)


def test_the_floors_pinned_are_the_floors_claimed() -> None:
    assert _pinned() == _claimed()
    assert set(_claimed()) == set(oldest_runtime_calls.DEPENDENCIES)
    assert _claimed()["protobuf"] == "4.25.1"  # the stubs' generated-code version
    assert _claimed()["grpcio"] == "1.62.3"  # the stubs' grpcio-tools


@pytest.fixture(scope="module")
def floor_run(service: Service, limited: Service) -> dict[str, Any]:
    if not FLOOR_PYTHON.exists():
        pytest.fail(f"{FLOOR_PYTHON.relative_to(ROOT)} is missing: run make client-envs")
    script = Path(oldest_runtime_calls.__file__)
    targets = [service.grpc_target, service.url, limited.grpc_target, limited.url]
    ran = subprocess.run(
        [str(FLOOR_PYTHON), "-W", "error", str(script), *targets],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT / "clients",  # not the repo root: nothing of the server's on its path
    )
    assert ran.returncode == 0, ran.stderr
    out: dict[str, Any] = json.loads(ran.stdout)
    return out


def test_the_floor_venv_runs_the_floors(floor_run: dict[str, Any]) -> None:
    assert floor_run["versions"] == _pinned(), "stale .venv-client-floor: run make client-envs"


def test_the_floor_venv_runs_the_installed_package_of_these_sources(
    floor_run: dict[str, Any],
) -> None:
    """The client there is a wheel install (what a user gets), not this checkout: every file of
    the package made it in, unchanged."""
    installed = Path(floor_run["client"])
    assert installed.is_relative_to(FLOOR_PYTHON.parent.parent), installed
    source = ROOT / "clients" / "python" / "src" / "evalserve_client"
    files = [p for p in source.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert any(p.suffix == ".pyi" for p in files) and (source / "py.typed") in files
    for path in files:
        shipped = installed / path.relative_to(source)
        assert shipped.exists(), f"{path.relative_to(source)} is not in the installed package"
        assert shipped.read_bytes() == path.read_bytes(), (
            f"stale {path.relative_to(source)}: run make client-envs"
        )


def test_the_oldest_runtime_gives_the_newest_runtimes_answers(
    floor_run: dict[str, Any], service: Service, limited: Service
) -> None:
    newest = oldest_runtime_calls.answers(
        service.grpc_target, service.url, limited.grpc_target, limited.url
    )
    newest = json.loads(json.dumps(newest))  # tuples as lists, as the script's JSON has them
    oldest = floor_run["answers"]
    for transport in ("grpc", "rest"):
        assert set(oldest[transport]) == set(newest[transport])
        for call, answer in newest[transport].items():
            assert oldest[transport][call] == answer, f"{transport} {call}"
    grpc = oldest["grpc"]
    assert grpc["error"]["type"] == "InvalidArgument"
    assert grpc["error"]["field"] == "scores"
    assert grpc["too_large"]["type"] == "TooLarge"
    assert grpc["coverage"]["coverage"]["label_coverage"] == 0.25  # optional fields on 4.25.1
    # the field read from the BadRequest trailer, on grpcio 1.62.3 sync and aio alike
    assert grpc["stream_error"]["field"] == "batch 4.scores"
    assert oldest["rest"]["stream_error"]["field"] == "line 4.scores"
    assert grpc["async_error"]["field"] == "scores"
    assert grpc["streamed"]["n_samples"] == 2500
    assert [(entry["task"], entry["name"]) for entry in grpc["catalog"]] == list(CATALOG)
    assert {entry["task"] for entry in grpc["detection_catalog"]} == {"detection"}
    assert grpc["catalog_error"]["field"] == oldest["rest"]["catalog_error"]["field"] == "task"
