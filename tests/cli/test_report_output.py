"""``evalserve report -o FILE``: says where it wrote the page (one line on stderr; stdout stays
for results), keeps an existing file unless ``--force`` (one line, exit 2, before any row is
read), and refuses a directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.run import assert_refused, evalserve

EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "fawcett.csv")


def test_says_where_it_wrote_the_page(tmp_path: Path) -> None:
    out = tmp_path / "page.html"
    done = evalserve("report", EXAMPLE, "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert done.stderr == f"evalserve: wrote {out}\n"
    assert out.read_text(encoding="utf-8").lower().startswith("<!doctype html>")


def test_the_default_file_in_the_working_directory(tmp_path: Path) -> None:
    done = evalserve("report", EXAMPLE, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "evalserve: wrote report.html\n"
    assert (tmp_path / "report.html").exists()


def test_standard_output_says_nothing_else(tmp_path: Path) -> None:
    done = evalserve("report", EXAMPLE, "-o", "-")
    assert done.returncode == 0, done.stderr
    assert done.stderr == "" and "<html" in done.stdout


@pytest.mark.parametrize("flag", ["--force", "--overwrite", "-f"])
def test_an_existing_file_is_kept_unless_forced(tmp_path: Path, flag: str) -> None:
    out = tmp_path / "page.html"
    out.write_text("mine")
    assert_refused(evalserve("report", EXAMPLE, "-o", str(out)), f"{out} exists", "--force")
    assert out.read_text() == "mine"
    done = evalserve("report", EXAMPLE, "-o", str(out), flag)
    assert done.returncode == 0, done.stderr
    assert out.read_text(encoding="utf-8").lower().startswith("<!doctype html>")


def test_a_directory_is_refused(tmp_path: Path) -> None:
    assert_refused(evalserve("report", EXAMPLE, "-o", str(tmp_path)), str(tmp_path), "directory")
