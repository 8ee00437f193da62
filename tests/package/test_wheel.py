"""The package as users install it: build the wheel, install it (no ``-e``) into fresh virtual
environments, and use it there.

- the wheel holds the ``evalserve`` package and its dist-info, nothing else (no top-level
  ``core`` or ``service``), with the license, the type marker and the stubs' ``.pyi`` files;
- ``pip install evalserve`` brings numpy and pyarrow and nothing of the server (no grpcio, no
  fastapi);
  ``from evalserve import evaluate`` and the offline command work there, and ``evalserve serve``
  says in one line which extra to install, exit code 2;
- ``pip install 'evalserve[service]'`` starts a service that answers ``/healthz`` and an
  evaluation on loopback.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "fawcett.csv"
READY_LINE = re.compile(r"REST on (http://[\d.]+:\d+)")
SERVER_PACKAGES = {"grpcio", "fastapi", "uvicorn", "protobuf", "prometheus-client", "pydantic"}

pytestmark = pytest.mark.slow


def _run(*command: str | Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [str(part) for part in command],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd="/",  # not the repository: nothing may import from the source tree
        env=environment,
    )


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    done = _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", out, ROOT)
    assert done.returncode == 0, done.stderr
    (built,) = out.glob("evalserve-*.whl")
    return built


def _venv(where: Path, requirement: str) -> Path:
    venv.create(where, with_pip=True)
    python = where / "bin" / "python"
    done = _run(python, "-m", "pip", "install", "-q", "--disable-pip-version-check", requirement)
    assert done.returncode == 0, done.stderr
    return python


@pytest.fixture(scope="module")
def plain(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _venv(tmp_path_factory.mktemp("plain"), str(wheel))


@pytest.fixture(scope="module")
def with_service(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _venv(tmp_path_factory.mktemp("service"), f"evalserve[service] @ {wheel.as_uri()}")


def _installed(python: Path) -> set[str]:
    done = _run(python, "-m", "pip", "list", "--format", "json", "--disable-pip-version-check")
    assert done.returncode == 0, done.stderr
    return {entry["name"].lower().replace("_", "-") for entry in json.loads(done.stdout)}


def test_the_wheel_holds_only_the_evalserve_package(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"evalserve", wheel.name.split("-py3")[0] + ".dist-info"}, tops
    for expected in (
        "evalserve/__init__.py",
        "evalserve/py.typed",
        "evalserve/core/__init__.py",
        "evalserve/core/binary/__init__.py",
        "evalserve/service/server.py",
        "evalserve/v1/evaluation_pb2.py",
        "evalserve/v1/evaluation_pb2.pyi",
        "evalserve/report/__init__.py",
        "evalserve/report/vendor/manifest.json",
        "evalserve/report/vendor/vega.min.js",
        "evalserve/report/vendor/vega-lite.min.js",
        "evalserve/report/vendor/vega-embed.min.js",
        "evalserve/report/vendor/LICENSE-vega.txt",
    ):
        assert expected in names, expected
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)
    assert not [name for name in names if "__pycache__" in name or name.endswith(".pyc")]


def test_the_plain_install_is_the_core_without_a_server(plain: Path) -> None:
    installed = _installed(plain)
    assert "evalserve" in installed and "numpy" in installed
    assert installed & SERVER_PACKAGES == set()
    done = _run(
        plain,
        "-c",
        "import evalserve; from evalserve import evaluate; "
        "r = evaluate('binary', [0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]); "
        "print(r.metrics['roc_auc'], evalserve.__file__)",
    )
    assert done.returncode == 0, done.stderr
    auc, location = done.stdout.split()
    assert float(auc) == 0.75
    assert "site-packages" in location  # the installed copy, not the source tree


def test_the_plain_install_runs_the_offline_command(plain: Path) -> None:
    done = _run(plain.parent / "evalserve", "evaluate", EXAMPLE)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["n_samples"] == 20


def test_report_without_the_extra_names_the_extra(plain: Path) -> None:
    done = _run(plain.parent / "evalserve", "report", EXAMPLE, "-o", "-")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "evalserve: 'evalserve report' needs the report extra: pip install 'evalserve[report]'"
    ]


def test_serve_without_the_extra_names_the_extra(plain: Path) -> None:
    done = _run(plain.parent / "evalserve", "serve", "--rest-port", "0")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "evalserve: 'evalserve serve' needs the service extra: pip install 'evalserve[service]'"
    ]


@pytest.fixture
def served(with_service: Path) -> Iterator[str]:
    process = subprocess.Popen(
        [with_service.parent / "evalserve", "serve", "--rest-port", "0", "--grpc-port", "0"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        cwd="/",
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stderr is not None
    seen: list[str] = []
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            line = process.stderr.readline()
            if not line:
                break
            seen.append(line)
            if found := READY_LINE.search(line):
                yield found.group(1)
                return
        raise AssertionError(f"the installed service did not start: {''.join(seen)}")
    finally:
        process.terminate()
        process.wait(timeout=60)
        process.stderr.close()


def test_the_service_extra_serves(with_service: Path, served: str) -> None:
    assert _installed(with_service) >= SERVER_PACKAGES
    assert httpx.get(f"{served}/healthz", timeout=10).status_code == 200
    answer = httpx.post(
        f"{served}/v1/evaluate",
        json={"task": "binary", "labels": [0, 0, 1, 1], "scores": [0.1, 0.4, 0.35, 0.8]},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["metrics"]["roc_auc"] == 0.75
