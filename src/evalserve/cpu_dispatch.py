"""numpy's AVX2 sort for the processes the ``evalserve`` command starts, on the CPUs whose
AVX-512 sort is the slow one.

On AMD Zen 4 (vendor ``AuthenticAMD``, ``cpu family`` 25, with the ``avx512f`` flag) numpy's
AVX-512 sort is several times slower than its AVX2 sort: the AVX-512 compress-store it relies on
is microcoded there. numpy chooses its SIMD targets once, when it is first imported, and turns
off the ones named in ``NPY_DISABLE_CPU_FEATURES``. ``import evalserve`` imports numpy, so by the
time any code of the command runs, numpy has chosen. The command therefore restarts itself:
:func:`restart_with_avx2_sort`, the first thing its entry points do (``evalserve`` and ``python
-m evalserve``, through :func:`evalserve.cli.run`, and ``python -m evalserve.service``), replaces
the process by the same command (``sys.executable`` running ``sys.orig_argv``) with
``NPY_DISABLE_CPU_FEATURES`` naming numpy's AVX-512 targets. The rule itself,
:func:`disabled_targets`, is pure: the cpuinfo text, the environment and numpy's dispatch
targets in, the value to set (or None) out.

* At most once: a set ``NPY_DISABLE_CPU_FEATURES`` (even empty) or ``NPY_ENABLE_CPU_FEATURES``
  is the user's choice, never changed (numpy refuses to import with both set), and the
  restarted process has the variable set, so it never restarts again.
* The same command: ``exec`` keeps the process (its pid, its parent, its open files with stdin
  unread) and runs the same interpreter with the same options and arguments; the command's exit
  status is the restarted program's. A command that cannot be run again (a script read from
  stdin, an interactive session: ``sys.argv[0]`` is ``""`` or ``"-"``) or an interpreter
  without ``sys.executable`` is not restarted, nor where the ``exec`` fails (a warning says so).
* Nothing to pay elsewhere: the first processor's block of ``/proc/cpuinfo`` (a few kilobytes,
  about 0.1 ms, whatever the number of cores) and a look at numpy's list of targets, already
  imported. No ``/proc/cpuinfo`` (macOS, Windows): nothing is done.
* numpy's own names: the AVX-512 targets of numpy's dispatch list (``X86_V4 AVX512_ICL
  AVX512_SPR`` in numpy 2.4; ``AVX512F``, ``AVX512_SKX``, ... before). A fixed list would not
  do: numpy warns (an ``ImportWarning``, an error under ``-W error``) about a name it does not
  dispatch to and refuses to import when a name is part of its baseline. A target the CPU lacks
  (``AVX512_SPR`` on Zen 4) is accepted without a word.
* Dask: the workers of the local cluster ``evalserve evaluate --engine dask`` starts are new
  processes with the restarted command's environment, so numpy starts there with the same
  targets off. Workers of a cluster of one's own, and processes that import evalserve as a
  library, are not touched: ``docs/performance.md`` says how to set the variable for them.

``_EVALSERVE_CPUINFO`` (tests only) names a file read instead of ``/proc/cpuinfo``.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterable, Mapping
from typing import Final

__all__ = [
    "CPUINFO_VARIABLE",
    "VARIABLE",
    "avx512_targets",
    "disabled_targets",
    "restart_with_avx2_sort",
    "slow_avx512_sort",
]

VARIABLE: Final = "NPY_DISABLE_CPU_FEATURES"
ENABLE_VARIABLE: Final = "NPY_ENABLE_CPU_FEATURES"
CPUINFO_VARIABLE: Final = "_EVALSERVE_CPUINFO"  # tests only: a cpuinfo file of another CPU
CPUINFO: Final = "/proc/cpuinfo"
ZEN_4_FAMILY: Final = "25"  # family 25 (0x19) is Zen 3 and Zen 4; of the two, Zen 4 has AVX-512


def _first_processor(cpuinfo: str) -> dict[str, str]:
    """The fields of the first processor's block (``key<tabs>: value`` lines up to a blank
    line)."""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        key, colon, value = line.partition(":")
        if colon:
            fields[key.strip()] = value.strip()
    return fields


def slow_avx512_sort(cpuinfo: str) -> bool:
    """Whether numpy's AVX-512 sort is the slow one on the CPU ``cpuinfo`` (the text of
    ``/proc/cpuinfo``) describes: AMD family 25 with ``avx512f``, that is Zen 4."""
    fields = _first_processor(cpuinfo)
    return (
        fields.get("vendor_id") == "AuthenticAMD"
        and fields.get("cpu family") == ZEN_4_FAMILY
        and "avx512f" in fields.get("flags", "").split()
    )


def avx512_targets(dispatch: Iterable[str]) -> tuple[str, ...]:
    """The AVX-512 targets among numpy's dispatch targets ``dispatch``: ``X86_V4`` and the
    ``AVX512*`` ones."""
    return tuple(name for name in dispatch if name == "X86_V4" or name.startswith("AVX512"))


def disabled_targets(
    cpuinfo: str, environ: Mapping[str, str], dispatch: Iterable[str]
) -> str | None:
    """The ``NPY_DISABLE_CPU_FEATURES`` value that gives numpy's AVX2 sort on the CPU
    ``cpuinfo`` describes, or None to leave numpy as it is: the CPU's AVX-512 sort is fast or
    absent, numpy dispatches to no AVX-512 target (``dispatch``, numpy's list), or ``environ``
    already sets numpy's targets."""
    if VARIABLE in environ or ENABLE_VARIABLE in environ or not slow_avx512_sort(cpuinfo):
        return None
    return " ".join(avx512_targets(dispatch)) or None


def _read_cpuinfo(path: str) -> str:
    """The first processor's block of ``path``; "" without such a file. The rest is not read:
    on a machine of many cores the whole file is long, and the kernel asks each core for its
    clock speed as it writes that core's block."""
    lines: list[str] = []
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            for line in file:
                if not line.strip() and lines:
                    break
                lines.append(line)
    except OSError:
        return ""
    return "".join(lines)


def _numpy_dispatch() -> list[str]:
    """numpy's dispatch targets, whether this CPU has them or not (what ``np.show_runtime()``
    lists under ``simd_extensions``); numpy is imported by then."""
    return list(importlib.import_module("numpy._core._multiarray_umath").__cpu_dispatch__)


def restart_with_avx2_sort() -> None:
    """Replace this process by the same command with numpy's AVX-512 targets off, where
    :func:`disabled_targets` says so; otherwise return at once. Only for a program's entry
    point, before it has done anything: the process is replaced."""
    path = os.environ.get(CPUINFO_VARIABLE, CPUINFO)
    value = disabled_targets(_read_cpuinfo(path), os.environ, _numpy_dispatch())
    if value is None or not sys.executable or sys.argv[0] in ("", "-"):
        return
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(
            sys.executable,
            [sys.executable, *sys.orig_argv[1:]],
            {**os.environ, VARIABLE: value},
        )
    except OSError as error:
        print(
            f"evalserve: warning: could not restart with {VARIABLE}={value!r} (numpy's AVX2 "
            f"sort, faster on this CPU): {error}; going on with numpy's AVX-512 sort",
            file=sys.stderr,
        )
