"""A missing extra is one line saying what to install, as ``serve`` and ``report`` say it:
``--engine dask`` without ``dask`` or without ``distributed`` (a ``sitecustomize`` on the
subprocess's path makes their import fail, as in an environment without the extra)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.cli.run import assert_refused, evalserve

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fawcett.csv"

SHIM = """
import importlib.abc
import sys

class _Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == {module!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, _Missing())
"""


@pytest.mark.parametrize("module", ["dask", "distributed"])
@pytest.mark.parametrize("command", ["evaluate", "report"])
def test_the_dask_engine_without_the_extra(tmp_path: Path, module: str, command: str) -> None:
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(SHIM.format(module=module))
    path = os.pathsep.join([str(shim), os.environ.get("PYTHONPATH", "")])
    out = tmp_path / "r.html"
    output = ["-o", str(out)] if command == "report" else []
    done = evalserve(command, "--engine", "dask", str(EXAMPLE), *output, env={"PYTHONPATH": path})
    assert_refused(done, "--engine dask needs the dask extra", "pip install 'evalserve[dask]'")
    assert not out.exists()
