"""The bench scripts as modules, for their tests: imported as the scripts import each other
(``bench/`` on ``sys.path``, for the import only)."""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "bench"


@contextlib.contextmanager
def bench_modules(*names: str) -> Iterator[dict[str, ModuleType]]:
    """The modules ``names`` of ``bench/``, by name."""
    folder = str(BENCH)
    sys.path.insert(0, folder)
    try:
        yield {name: importlib.import_module(name) for name in names}
    finally:
        sys.path.remove(folder)
