"""The charting library, vendored: Vega, Vega-Lite and vega-embed's minified builds, inlined in
every report so that the page needs no network.

``vendor/manifest.json`` names each file's npm package, version, licence and SHA-256; the
files are checked against it when they are read. ``make report-vendor`` (``python -m
evalserve.report._vendor``) replaces them from the npm registry: ``npm pack`` of the versions
pinned below, the builds and licences copied out of the tarballs, the manifest rewritten.
Vega-Lite's version follows the schema that Altair writes (``altair.SCHEMA_VERSION``).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import tarfile
import tempfile
from functools import cache
from importlib import resources
from pathlib import Path
from typing import IO

__all__ = ["PACKAGES", "VendorError", "scripts"]

# (npm package, version, build file inside the package): in the order the page loads them.
PACKAGES: tuple[tuple[str, str, str], ...] = (
    ("vega", "6.4.0", "build/vega.min.js"),
    ("vega-lite", "6.4.1", "build/vega-lite.min.js"),
    ("vega-embed", "7.3.0", "build/vega-embed.min.js"),
)


class VendorError(RuntimeError):
    """A vendored file is missing or differs from its manifest entry."""


@cache
def scripts() -> tuple[str, ...]:
    """The scripts' texts in load order, each checked against the manifest."""
    folder = resources.files("evalserve.report").joinpath("vendor")
    manifest = json.loads(folder.joinpath("manifest.json").read_text(encoding="utf-8"))
    texts = []
    for name, version, _ in PACKAGES:
        entry = manifest[name]
        if entry["version"] != version:
            raise VendorError(f"vendor/{entry['file']}: version {entry['version']}, not {version}")
        data = folder.joinpath(entry["file"]).read_bytes()
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise VendorError(f"vendor/{entry['file']}: differs from its manifest entry")
        text = data.decode("utf-8")
        if "</script" in text.lower():  # would end the inline <script> element early
            raise VendorError(f"vendor/{entry['file']}: holds '</script'")
        texts.append(text)
    return tuple(texts)


def update(packed: Path, target: Path) -> None:
    """Copy each package's build and licence from the ``npm pack`` tarballs in ``packed`` to
    ``target`` and write the manifest."""
    manifest: dict[str, dict[str, str]] = {}
    for name, version, build in PACKAGES:
        with tarfile.open(packed / f"{name}-{version}.tgz") as tar:
            package = json.load(_member(tar, "package/package.json"))
            data = _member(tar, f"package/{build}").read()
            licence = _member(tar, "package/LICENSE").read()
        file = Path(build).name
        (target / file).write_bytes(data)
        (target / f"LICENSE-{name}.txt").write_bytes(licence)
        manifest[name] = {
            "version": version,
            "file": file,
            "license": str(package.get("license", "")),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
    text = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    (target / "manifest.json").write_text(text, encoding="utf-8")


def _member(tar: tarfile.TarFile, name: str) -> IO[bytes]:
    member = tar.extractfile(name)
    if member is None:
        raise VendorError(f"{name}: not a file in the tarball")
    return member


def main() -> None:
    with tempfile.TemporaryDirectory() as packed:
        specs = [f"{name}@{version}" for name, version, _ in PACKAGES]
        subprocess.run(["npm", "pack", "--silent", *specs], cwd=packed, check=True)
        update(Path(packed), Path(__file__).resolve().parent / "vendor")


if __name__ == "__main__":
    main()
