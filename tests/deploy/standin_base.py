"""A stand-in for the image's ``python:3.11-slim`` base, made from Debian packages.

Where no image registry is reachable, ``deploy/Dockerfile`` is built on this instead
(``--build-arg PYTHON_IMAGE=<name>``): Debian bookworm's Python 3.11 laid out as the official
image has it. ``python`` on PATH (a link in /usr/local/bin), ``python3-venv``, ``groupadd`` and
``useradd`` (package ``passwd``), and a pip that is not "externally managed" and that pip itself
installed into /usr/local (from the wheel python3-venv ships), so that the runtime stage's
``pip uninstall`` removes it as it does the official image's. Documentation, manual pages and
translations are left out, as in Debian's slim images.

mmdebstrap makes the root file system (from the host's apt sources when the host is Debian
bookworm, else from mmdebstrap's default mirror) into a tarball, which buildah imports into
containers-storage as ``localhost/evalserve-standin-base:<key>``; ``key`` is a hash of the
recipe below, so the base is built once per recipe and reused (the tarball is kept in
``$XDG_CACHE_HOME/evalserve/standin-base/`` too). Needs root, buildah and mmdebstrap
(``make image-tools``).

    python -m tests.deploy.standin_base     # builds it if needed, prints its name
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

SUITE = "bookworm"
PACKAGES = ("python3", "python3-venv", "passwd", "ca-certificates")
NAME = "localhost/evalserve-standin-base"
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# The chroot's commands get a clean environment: the host's PIP_* settings stay outside.
_CLEAN = f"env -i PATH={PATH} LANG=C.UTF-8"
OPTIONS = (
    "--variant=minbase",
    '--aptopt=Apt::Install-Recommends "false"',
    *(
        f"--dpkgopt=path-{kind}=/usr/share/{path}"
        for kind, path in (
            ("exclude", "man/*"),
            ("exclude", "doc/*"),
            ("include", "doc/*/copyright"),
            ("exclude", "locale/*"),
            ("exclude", "info/*"),
        )
    ),
    '--customize-hook=rm -f "$1"/usr/lib/python3.11/EXTERNALLY-MANAGED',
    # pip installing pip (and setuptools) from the wheels python3-venv ships, into /usr/local.
    f'--customize-hook=chroot "$1" {_CLEAN} sh -c \'set -- /usr/share/python-wheels/pip-*.whl'
    ' && python3 "$1/pip" install --quiet --no-cache-dir --no-index'
    " --find-links /usr/share/python-wheels pip setuptools'",
    '--customize-hook=ln -s /usr/bin/python3 "$1"/usr/local/bin/python',
    '--customize-hook=rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*',
)
CONFIG = (f"--env=PATH={PATH}", "--env=LANG=C.UTF-8", "--cmd=python3")


def key() -> str:
    recipe = "\n".join([SUITE, *PACKAGES, *OPTIONS, *CONFIG])
    return hashlib.sha256(recipe.encode()).hexdigest()[:12]


def image_name() -> str:
    return f"{NAME}:{key()}"


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "evalserve" / "standin-base"


def _host_sources() -> list[str]:
    """The host's apt sources when the host is Debian bookworm (its mirror, its proxy)."""
    try:
        release = Path("/etc/os-release").read_text(encoding="utf-8")
    except OSError:
        return []
    if "VERSION_CODENAME=bookworm" not in release.split():
        return []
    listed = Path("/etc/apt/sources.list")
    files = sorted(Path("/etc/apt/sources.list.d").glob("*.sources"))
    files += sorted(Path("/etc/apt/sources.list.d").glob("*.list"))
    if listed.is_file() and any(
        line.strip() and not line.lstrip().startswith("#")
        for line in listed.read_text(encoding="utf-8").splitlines()
    ):
        files.insert(0, listed)
    return [str(path) for path in files]


def _exists(name: str) -> bool:
    found = subprocess.run(
        ["buildah", "inspect", "--type", "image", name], capture_output=True, check=False
    )
    return found.returncode == 0


def _tarball() -> Path:
    tarball = _cache_dir() / f"{key()}.tar"
    if tarball.is_file():
        return tarball
    tarball.parent.mkdir(parents=True, exist_ok=True)
    partial = tarball.with_suffix(".partial.tar")
    command = [
        "mmdebstrap",
        "--quiet",
        *OPTIONS,
        f"--include={','.join(PACKAGES)}",
        SUITE,
        str(partial),
        *_host_sources(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        raise RuntimeError(f"mmdebstrap failed ({done.returncode}): {done.stderr[-4000:]}")
    partial.rename(tarball)
    return tarball


def build() -> str:
    """The stand-in's image name, built first if containers-storage does not hold it."""
    name = image_name()
    if _exists(name):
        return name
    for tool in ("buildah", "mmdebstrap"):
        if shutil.which(tool) is None:
            raise RuntimeError(f"{tool} is not installed: run `make image-tools`")
    tarball = _tarball()
    container = subprocess.run(
        ["buildah", "from", "scratch"], capture_output=True, text=True, check=True
    ).stdout.strip()
    try:
        subprocess.run(["buildah", "add", "--quiet", container, str(tarball), "/"],
                       capture_output=True, check=True)  # fmt: skip
        subprocess.run(["buildah", "config", *CONFIG, container], capture_output=True, check=True)
        subprocess.run(["buildah", "commit", "--quiet", container, name],
                       capture_output=True, check=True)  # fmt: skip
    finally:
        subprocess.run(["buildah", "rm", container], capture_output=True, check=False)
    return name


if __name__ == "__main__":
    try:
        print(build())
    except (RuntimeError, subprocess.CalledProcessError) as error:
        print(f"standin_base: {error}", file=sys.stderr)
        sys.exit(1)
