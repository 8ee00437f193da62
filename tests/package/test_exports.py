"""The public names: ``evalserve`` re-exports exactly the core's ``__all__`` (plus its version),
every name is defined in the core, and nothing public is missing from ``__all__``."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
import types
from pathlib import Path
from typing import Any

import pytest

import evalserve
from evalserve import core

ROOT = Path(__file__).resolve().parents[2]
PUBLIC = [pytest.param(evalserve, id="evalserve"), pytest.param(core, id="evalserve.core")]


@pytest.mark.parametrize("module", PUBLIC)
def test_all_imports_are_exported(module: types.ModuleType) -> None:
    public = sorted(
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    )
    assert sorted(set(module.__all__) - {"__version__"}) == public
    assert len(module.__all__) == len(set(module.__all__))


@pytest.mark.parametrize("module", PUBLIC)
def test_star_import_gives_exactly_all(module: types.ModuleType) -> None:
    namespace: dict[str, Any] = {}
    exec(f"from {module.__name__} import *", namespace)
    assert sorted(set(namespace) - {"__builtins__"}) == sorted(module.__all__)


def test_the_package_root_re_exports_the_core() -> None:
    assert sorted(evalserve.__all__) == sorted([*core.__all__, "__version__"])
    for name in core.__all__:
        assert getattr(evalserve, name) is getattr(core, name), name


@pytest.mark.parametrize(
    "name", [pytest.param(name, id=name) for name in core.__all__ if callable(getattr(core, name))]
)
def test_exported_classes_and_functions_are_defined_in_core(name: str) -> None:
    module = getattr(core, name).__module__
    assert module.startswith("evalserve.core."), (name, module)


def test_version_is_the_packages() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", evalserve.__version__)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["dynamic"] == ["version"]  # read from evalserve.__version__ by setuptools
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert f"## {evalserve.__version__} " in changelog


def test_no_module_imports_the_folders_by_their_repository_names() -> None:
    """``core`` and ``service`` are importable from the repository root by accident (pytest puts
    it on sys.path); code must say ``evalserve.core`` / ``evalserve.service``, or the wheel breaks
    and the same module could load twice under two names."""
    pattern = re.compile(r"^\s*(from|import)\s+(core|service)(\.|\s|$)", re.MULTILINE)
    offenders = [
        str(path.relative_to(ROOT))
        for folder in ("core", "service", "src", "tests", "bench", "deploy", "proto")
        for path in (ROOT / folder).rglob("*.py")
        if pattern.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


@pytest.mark.parametrize(
    "module",
    [
        "evalserve",
        "evalserve.core",
        "evalserve.service",
        "evalserve.cli",
        "evalserve.cpu_dispatch",
        "evalserve.service.server",
    ],
)
def test_importing_changes_no_process_state(module: str) -> None:
    """Environment, allocator-relevant variables and signal handlers are the server's business
    when it starts, never an import's."""
    probe = f"""
import os, signal, sys
before_env = dict(os.environ)
before_signals = {{s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}}
import {module}
assert dict(os.environ) == before_env, set(os.environ.items()) ^ set(before_env.items())
after = {{s: signal.getsignal(s) for s in before_signals}}
assert after == before_signals, (before_signals, after)
"""
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
