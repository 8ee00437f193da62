"""numpy's AVX2 sort for the processes the ``evalserve`` command starts on AMD Zen 4: the rule
on cpuinfo texts of several CPUs, the restart with its failure modes in this process, and the
command itself in subprocesses given a Zen 4's cpuinfo (numpy really starts with its AVX-512
targets off there, on this machine's CPU, whatever it is), Dask workers of the command's own
cluster included.

Each subprocess runs with a ``sitecustomize`` module that logs every Python start (pid, argv,
``NPY_DISABLE_CPU_FEATURES`` and numpy's active targets, as numpy reports them): a restart by
``exec`` is a second start with the same pid."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from evalserve import cpu_dispatch
from evalserve.cpu_dispatch import (
    CPUINFO_VARIABLE,
    VARIABLE,
    avx512_targets,
    disabled_targets,
    restart_with_avx2_sort,
    slow_avx512_sort,
)

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "fawcett.csv"

AVX2_FLAGS = "fpu vme sse sse2 ht syscall nx lm sse3 ssse3 fma cx16 sse4_1 sse4_2 popcnt avx avx2"
AVX512_FLAGS = "avx512f avx512dq avx512ifma avx512cd avx512bw avx512vl avx512_bf16 avx512vbmi"


def _cpuinfo(vendor: str, family: int, model: int, name: str, flags: str) -> str:
    """Two processors' blocks as Linux writes them."""
    return "".join(
        f"processor\t: {number}\nvendor_id\t: {vendor}\ncpu family\t: {family}\n"
        f"model\t\t: {model}\nmodel name\t: {name}\nstepping\t: 1\ncpu MHz\t\t: 2400.000\n"
        f"flags\t\t: {flags}\nbogomips\t: 4800.00\n\n"
        for number in range(2)
    )


ZEN_4 = _cpuinfo("AuthenticAMD", 25, 17, "AMD EPYC 9654 96-Core Processor",
                 f"{AVX2_FLAGS} {AVX512_FLAGS}")  # fmt: skip
ZEN_4_NO_AVX512 = _cpuinfo("AuthenticAMD", 25, 17, "AMD EPYC 9654 96-Core Processor", AVX2_FLAGS)
ZEN_3 = _cpuinfo("AuthenticAMD", 25, 1, "AMD EPYC 7763 64-Core Processor", AVX2_FLAGS)
ZEN_5 = _cpuinfo("AuthenticAMD", 26, 2, "AMD EPYC 9B45", f"{AVX2_FLAGS} {AVX512_FLAGS}")
INTEL = _cpuinfo("GenuineIntel", 6, 143, "Intel(R) Xeon(R) Platinum 8480+",
                 f"{AVX2_FLAGS} {AVX512_FLAGS}")  # fmt: skip

# numpy's dispatch lists on x86-64: 2.4's targets by microarchitecture level, and 2.0's.
NUMPY_2_4 = ["X86_V3", "X86_V4", "AVX512_ICL", "AVX512_SPR"]
NUMPY_2_0 = ["SSSE3", "SSE41", "POPCNT", "SSE42", "AVX", "F16C", "FMA3", "AVX2", "AVX512F",
             "AVX512CD", "AVX512_KNL", "AVX512_KNM", "AVX512_SKX", "AVX512_CLX", "AVX512_CNL",
             "AVX512_ICL", "AVX512_SPR"]  # fmt: skip


# --- the rule ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cpuinfo", "slow"),
    [
        pytest.param(ZEN_4, True, id="zen4"),
        pytest.param(ZEN_4_NO_AVX512, False, id="zen4-avx512-hidden"),
        pytest.param(ZEN_3, False, id="zen3"),
        pytest.param(ZEN_5, False, id="zen5"),
        pytest.param(INTEL, False, id="intel"),
        pytest.param("", False, id="no-cpuinfo"),
    ],
)
def test_only_zen_4_with_avx512_has_the_slow_sort(cpuinfo: str, slow: bool) -> None:
    assert slow_avx512_sort(cpuinfo) is slow
    assert (disabled_targets(cpuinfo, {}, NUMPY_2_4) is not None) is slow


def test_only_the_first_processor_counts() -> None:
    assert slow_avx512_sort(ZEN_4.split("\n\n")[0])
    assert not slow_avx512_sort(INTEL + ZEN_4)


def test_zen_4_turns_off_every_avx512_target_numpy_dispatches_to() -> None:
    assert disabled_targets(ZEN_4, {}, NUMPY_2_4) == "X86_V4 AVX512_ICL AVX512_SPR"
    assert disabled_targets(ZEN_4, {}, NUMPY_2_0) == (
        "AVX512F AVX512CD AVX512_KNL AVX512_KNM AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL "
        "AVX512_SPR"
    )
    # A numpy without AVX-512 targets (AVX-512 in its baseline, or no dispatch): nothing to do.
    assert disabled_targets(ZEN_4, {}, ["X86_V3"]) is None
    assert disabled_targets(ZEN_4, {}, []) is None


@pytest.mark.parametrize(
    "environ",
    [
        pytest.param({VARIABLE: ""}, id="disable-empty"),
        pytest.param({VARIABLE: "X86_V3"}, id="disable-set"),
        pytest.param({"NPY_ENABLE_CPU_FEATURES": "X86_V3"}, id="enable-set"),
    ],
)
def test_the_users_choice_of_targets_is_left_alone(environ: dict[str, str]) -> None:
    assert disabled_targets(ZEN_4, environ, NUMPY_2_4) is None


def _simd() -> Any:
    """numpy's private module behind ``np.show_runtime()``'s ``simd_extensions``."""
    return importlib.import_module("numpy._core._multiarray_umath")


def test_the_names_are_numpys_own() -> None:
    simd = _simd()
    names = avx512_targets(simd.__cpu_dispatch__)
    assert set(names) <= set(simd.__cpu_dispatch__)
    assert not set(names) & set(simd.__cpu_baseline__)  # numpy refuses to disable those


# --- the restart, in this process -------------------------------------------------------------


class ExecError(Exception):
    """Raised by the test's ``os.execve`` instead of replacing the test process."""


@pytest.fixture
def execs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[tuple[str, list[str], Any]]:
    """A Zen 4's cpuinfo, no numpy variable, and ``os.execve`` recording its calls."""
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(ZEN_4, encoding="utf-8")
    monkeypatch.setenv(CPUINFO_VARIABLE, str(cpuinfo))
    monkeypatch.delenv(VARIABLE, raising=False)
    monkeypatch.delenv("NPY_ENABLE_CPU_FEATURES", raising=False)
    monkeypatch.setattr(cpu_dispatch, "_numpy_dispatch", lambda: NUMPY_2_4)
    calls: list[tuple[str, list[str], Any]] = []

    def execve(path: str, argv: list[str], env: Any) -> None:
        calls.append((path, argv, env))
        raise ExecError

    monkeypatch.setattr(os, "execve", execve)
    return calls


def test_the_restart_runs_the_same_command_with_the_variable(
    execs: list[tuple[str, list[str], Any]],
) -> None:
    with pytest.raises(ExecError):
        restart_with_avx2_sort()
    ((path, argv, env),) = execs
    assert path == sys.executable
    assert argv == [sys.executable, *sys.orig_argv[1:]]
    assert env[VARIABLE] == "X86_V4 AVX512_ICL AVX512_SPR"
    assert VARIABLE not in os.environ  # set for the new program only


def test_a_failed_exec_warns_and_goes_on(
    execs: list[tuple[str, list[str], Any]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def execve(path: str, argv: list[str], env: Any) -> None:
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(os, "execve", execve)
    restart_with_avx2_sort()
    assert "could not restart with NPY_DISABLE_CPU_FEATURES='X86_V4 AVX512_ICL AVX512_SPR'" in (
        capsys.readouterr().err
    )
    assert VARIABLE not in os.environ


@pytest.mark.parametrize("argv0", ["", "-"])
def test_a_command_that_cannot_run_again_is_not_restarted(
    execs: list[tuple[str, list[str], Any]], monkeypatch: pytest.MonkeyPatch, argv0: str
) -> None:
    monkeypatch.setattr(sys, "argv", [argv0])
    restart_with_avx2_sort()
    assert execs == []


def test_no_cpuinfo_no_restart(
    execs: list[tuple[str, list[str], Any]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(CPUINFO_VARIABLE, str(tmp_path / "missing"))
    restart_with_avx2_sort()
    assert execs == []


# --- the command, in subprocesses -------------------------------------------------------------

LOG_VARIABLE = "EVALSERVE_TEST_STARTS"
SITECUSTOMIZE = f"""
import json, os, sys
import numpy._core._multiarray_umath as simd
with open(os.environ["{LOG_VARIABLE}"], "a", encoding="utf-8") as log:
    log.write(json.dumps({{
        "pid": os.getpid(),
        "argv": sys.orig_argv[1:],
        "variable": os.environ.get("{VARIABLE}"),
        "found": [name for name in simd.__cpu_dispatch__ if simd.__cpu_features__.get(name)],
    }}) + "\\n")
"""


@dataclass(frozen=True)
class Run:
    done: subprocess.CompletedProcess[str]
    starts: list[dict[str, Any]]


def _expected() -> str:
    names = avx512_targets(_simd().__cpu_dispatch__)
    if not names:
        pytest.skip("this numpy dispatches to no AVX-512 target: nothing to turn off")
    return " ".join(names)


def _run(tmp_path: Path, cpuinfo: str, *args: str, stdin: str | None = None, **environ: str) -> Run:
    """``python -W error::ImportWarning ARGS`` (numpy's warning about a name it does not know
    would fail the import) on ``cpuinfo``, every Python start logged."""
    (tmp_path / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    (tmp_path / "cpuinfo").write_text(cpuinfo, encoding="utf-8")
    log = tmp_path / "starts.jsonl"
    env = {k: v for k, v in os.environ.items() if k not in (VARIABLE, "NPY_ENABLE_CPU_FEATURES")}
    env.update(
        PYTHONPATH=os.pathsep.join(filter(None, [str(tmp_path), env.get("PYTHONPATH")])),
        **{CPUINFO_VARIABLE: str(tmp_path / "cpuinfo"), LOG_VARIABLE: str(log)},
        **environ,
    )
    done = subprocess.run(
        [sys.executable, "-W", "error::ImportWarning", *args],
        input=stdin, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300,
        check=False,
    )  # fmt: skip
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    return Run(done, [json.loads(line) for line in lines])


def _avx512_off(start: dict[str, Any]) -> bool:
    return not avx512_targets(start["found"])


def _restarted_once(run: Run, expected: str) -> None:
    """The command started twice in one process, the second time with the variable and
    numpy's AVX-512 targets off, the same arguments both times."""
    first, second = run.starts[:2]
    assert (first["variable"], second["variable"]) == (None, expected)
    assert first["pid"] == second["pid"]
    assert first["argv"] == second["argv"]
    assert _avx512_off(second)


SCRIPT = "evalserve"  # in the test's folder


def _console_script(path: Path) -> None:
    """The ``evalserve`` command as pip installs it from ``[project.scripts]`` (its shebang
    line aside: the test runs it with this interpreter)."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "scripts"
    ]
    module, _, function = scripts["evalserve"].partition(":")
    path.write_text(
        f"import re\nimport sys\nfrom {module} import {function}\n"
        'if __name__ == "__main__":\n'
        "    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
        f"    sys.exit({function}())\n",
        encoding="utf-8",
    )


@pytest.mark.parametrize(
    ("args", "stdin", "status", "output"),
    [
        pytest.param(["-m", "evalserve", "evaluate", "-"], "label,score\n0,0.2\n1,0.7\n0,0.4\n",
                     0, '"n_samples": 3', id="evaluate-stdin"),
        pytest.param(["-m", "evalserve", "evaluate", "missing.csv"], None, 2, "",
                     id="evaluate-exit-status"),
        pytest.param(["-m", "evalserve.service", "serve", "--help"], None, 0, "--rest-port",
                     id="service-module"),
        pytest.param([SCRIPT, "evaluate", "missing.csv"], None, 2, "", id="console-script"),
    ],
)  # fmt: skip
def test_the_command_restarts_once_with_avx512_off(
    tmp_path: Path, args: list[str], stdin: str | None, status: int, output: str
) -> None:
    expected = _expected()
    _console_script(tmp_path / SCRIPT)
    run = _run(tmp_path, ZEN_4, *args, stdin=stdin)
    assert run.done.returncode == status, run.done.stderr
    assert output in run.done.stdout
    assert len(run.starts) == 2, run.starts
    _restarted_once(run, expected)


@pytest.mark.parametrize(
    ("cpuinfo", "environ", "variable"),
    [
        pytest.param(ZEN_5, {}, None, id="zen5"),
        pytest.param(INTEL, {}, None, id="intel"),
        pytest.param(ZEN_4, {VARIABLE: ""}, "", id="zen4-variable-empty"),
        pytest.param(ZEN_4, {VARIABLE: "X86_V3"}, "X86_V3", id="zen4-variable-set"),
    ],
)
def test_the_command_runs_once_as_it_is_elsewhere(
    tmp_path: Path, cpuinfo: str, environ: dict[str, str], variable: str | None
) -> None:
    run = _run(tmp_path, cpuinfo, "-m", "evalserve", "evaluate", str(EXAMPLE), **environ)
    assert run.done.returncode == 0, run.done.stderr
    assert [start["variable"] for start in run.starts] == [variable]


@pytest.mark.slow
def test_the_workers_of_the_commands_own_dask_cluster_start_with_avx512_off(
    tmp_path: Path,
) -> None:
    expected = _expected()
    run = _run(tmp_path, ZEN_4, "-m", "evalserve", "evaluate", str(EXAMPLE), "--engine", "dask")
    assert run.done.returncode == 0, run.done.stderr
    assert json.loads(run.done.stdout)["n_samples"] == 20
    _restarted_once(run, expected)
    later = run.starts[2:]
    workers = [start for start in later if any("spawn_main" in arg for arg in start["argv"])]
    assert workers, run.starts
    assert all(start["variable"] == expected and _avx512_off(start) for start in later), later
