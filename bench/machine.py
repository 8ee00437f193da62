"""What machine a benchmark ran on: the CPU (model, AVX2 / AVX-512 flags), numpy's SIMD
dispatch (what ``np.show_runtime()`` reports), memory, and the environment variables that change
the timings."""

from __future__ import annotations

import importlib
import os
import platform
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "TUNING_VARIABLES",
    "Simd",
    "avx512_dispatch_targets",
    "cpu_description",
    "machine_description",
    "numpy_simd",
]

# Environment variables that change the timings (recorded with the results): numpy's SIMD
# dispatch (its sort kernels), numpy's hugepage advice, and glibc's allocator, which decides
# whether freed memory goes back to the system (to be faulted in afresh by the next call).
TUNING_VARIABLES = (
    "NPY_DISABLE_CPU_FEATURES",
    "NPY_ENABLE_CPU_FEATURES",
    "NUMPY_MADVISE_HUGEPAGE",
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_MMAP_MAX_",
    "MALLOC_TRIM_THRESHOLD_",
)


def _cpuinfo() -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo (empty where there is none)."""
    fields: dict[str, str] = {}
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return fields
    for line in text.splitlines():
        if not line.strip():
            break
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    return fields


def cpu_description() -> str:
    """The CPU's model name, family and model, and whether it has AVX2 and AVX-512F."""
    cpu = _cpuinfo()
    model = cpu.get("model name", platform.processor() or "unknown CPU")
    flags = set(cpu.get("flags", "").split())

    def has(flag: str) -> str:
        return "yes" if flag in flags else "no"

    return (
        f"{model} (family {cpu.get('cpu family', '?')}, model {cpu.get('model', '?')}; "
        f"avx2: {has('avx2')}, avx512f: {has('avx512f')})"
    )


@dataclass(frozen=True, slots=True)
class Simd:
    """numpy's SIMD extensions as ``np.show_runtime()`` reports them: compiled in (baseline),
    dispatch targets this CPU runs (found) and those it does not, or that were disabled."""

    baseline: tuple[str, ...]
    found: tuple[str, ...]
    not_found: tuple[str, ...]

    def describe(self) -> str:
        return (
            f"baseline {' '.join(self.baseline) or '-'}, found {' '.join(self.found) or '-'}, "
            f"not found {' '.join(self.not_found) or '-'}"
        )


def _multiarray_umath() -> Any:
    # numpy's private module: the source of np.show_runtime()'s "simd_extensions".
    return importlib.import_module("numpy._core._multiarray_umath")


def numpy_simd() -> Simd:
    """What ``np.show_runtime()`` lists under ``simd_extensions``, from the same source."""
    module = _multiarray_umath()
    features: dict[str, bool] = module.__cpu_features__
    dispatch: list[str] = module.__cpu_dispatch__
    return Simd(
        tuple(module.__cpu_baseline__),
        tuple(name for name in dispatch if features.get(name)),
        tuple(name for name in dispatch if not features.get(name)),
    )


def avx512_dispatch_targets() -> tuple[str, ...]:
    """numpy's dispatch targets that use AVX-512 and that this process runs: the names to put
    in ``NPY_DISABLE_CPU_FEATURES`` to get numpy's AVX2 path (``X86_V4``, ``AVX512_ICL``,
    ``AVX512_SPR`` in numpy 2.4; ``AVX512F``, ``AVX512_SKX``, ... before). Empty on a CPU
    without AVX-512."""
    return tuple(
        name for name in numpy_simd().found if name.startswith("AVX512") or name == "X86_V4"
    )


def _memory_gib() -> str:
    try:
        for line in Path("/proc/meminfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 2**20:.1f} GiB RAM"
    except OSError:
        pass
    return "RAM unknown"


def _transparent_hugepages() -> str:
    try:
        modes = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text(encoding="utf-8")
    except OSError:
        return "unknown"
    chosen = [mode[1:-1] for mode in modes.split() if mode.startswith("[")]
    return chosen[0] if chosen else modes.strip()


def _environment() -> str:
    """The variables that change numpy's sort kernels or the allocator, as they were set."""
    return ", ".join(f"{name}={os.environ.get(name, 'unset')}" for name in TUNING_VARIABLES)


def machine_description(*, cpu: bool = True) -> str:
    """nproc, the CPU and numpy's SIMD dispatch (unless ``cpu`` is false: told elsewhere),
    memory, Python, numpy, scikit-learn, and the environment variables that change the
    timings."""
    # Here, not at the top: the worker processes use this module without scikit-learn, whose
    # import takes seconds.
    import sklearn

    nproc = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    processor = f"CPU {cpu_description()}; " if cpu else ""
    simd = f" (SIMD: {numpy_simd().describe()})" if cpu else ""
    return (
        f"nproc {nproc}; {processor}{_memory_gib()}, "
        f"transparent hugepages: {_transparent_hugepages()}; "
        f"Python {platform.python_version()}, numpy {np.__version__}{simd}, "
        f"scikit-learn {sklearn.__version__}; "
        f"environment: {_environment()}"
    )
