"""Benchmark: what the offline evaluator costs over reading the file and evaluating its arrays.

One binary Parquet file (10 million rows by default: 30% positives, continuous scores, every
score distinct, written once into a temporary directory) evaluated two ways, each a fresh
Python process that prints the JSON answer:

* ``evalserve evaluate FILE`` (the command, reading the file batch by batch into an
  ``Accumulator``: memory bounded by the state, not by the file);
* the reference: ``pyarrow.parquet.read_table`` of the same two columns and one
  ``evalserve.evaluate`` on their arrays (the whole file in memory at once).

Both start Python and import numpy, pyarrow and evalserve, so the ratio measures the command's
own cost. Target: at most 1.3x (gated). The processes run once to warm the page cache, then in
interleaved rounds; each keeps its best time.

    python bench/offline_cost.py [--rows 10000000] [--repeats 5] [--quick] [--no-fail]
        [--results PATH]

It prints its table and rewrites its own section of ``bench/RESULTS.md``; it exits with status
1 when the gated target fails, unless ``--no-fail``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from machine import machine_description
from results_md import RESULTS_PATH, write_section
from timing import Row, best_runs, progress, render_table, verdict

SECTION_TITLE = "offline evaluator (bench/offline_cost.py)"
LIMIT = 1.3

REFERENCE = """
import sys
import orjson
import pyarrow.parquet as pq
from evalserve import evaluate
table = pq.read_table(sys.argv[1], columns=["label", "score"])
result = evaluate("binary", table["label"].to_numpy(), table["score"].to_numpy())
sys.stdout.buffer.write(orjson.dumps(result.to_dict(), option=orjson.OPT_SERIALIZE_NUMPY))
"""


def write_file(path: Path, rows: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    labels = (rng.random(rows) < 0.3).astype(np.int64)
    scores = rng.normal(size=rows) + labels
    pq.write_table(pa.table({"label": labels, "score": scores}), path)


def _run(command: Sequence[str]) -> Callable[[], object]:
    def run() -> object:
        done = subprocess.run(command, capture_output=True, check=False, env=os.environ.copy())
        if done.returncode != 0:
            raise RuntimeError(f"{shlex.join(command)} failed: {done.stderr.decode()[-2000:]}")
        return json.loads(done.stdout)

    return run


def tasks(path: Path) -> dict[str, Callable[[], object]]:
    command = [sys.executable, "-m", "evalserve", "evaluate", "--task", "binary", str(path)]
    return {
        "evalserve evaluate": _run([*command, "--format", "json"]),
        "read_table + evaluate": _run([sys.executable, "-c", REFERENCE, str(path)]),
    }


def check(first: Mapping[str, object]) -> None:
    """Both answers hold the same AUC (the state's merges sum in another order: 1e-12)."""
    ours, reference = first["evalserve evaluate"], first["read_table + evaluate"]
    assert isinstance(ours, dict) and isinstance(reference, dict)
    auc, expected = ours["metrics"]["roc_auc"], reference["metrics"]["roc_auc"]
    assert abs(auc - expected) <= 1e-12, (auc, expected)
    assert ours["n_samples"] == reference["n_samples"]


def render(rows: Sequence[Row], command: str) -> str:
    lines = [
        f"* Command: `{command}`",
        f"* Date: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC",
        f"* Machine: {machine_description()}",
        "",
        render_table(rows),
        "",
        verdict(rows),
        "",
        "* Each side is a fresh process that imports numpy, pyarrow and evalserve and prints",
        "  the JSON answer; the file is in the page cache.",
    ]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="1,000,000 rows, two rounds")
    parser.add_argument("--no-fail", action="store_true", help="exit 0 when the target fails")
    parser.add_argument("--results", type=Path, default=RESULTS_PATH)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    rows, repeats = (1_000_000, 2) if args.quick else (args.rows, args.repeats)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "binary.parquet"
        progress(f"writing {rows:,} rows of Parquet ...")
        write_file(path, rows, args.seed)
        progress(f"timing both processes (best of {repeats}) ...")
        usage = best_runs(tasks(path), repeats, check=check)
    ours, reference = usage["evalserve evaluate"].wall, usage["read_table + evaluate"].wall
    table = [
        Row("evalserve evaluate / read_table + evaluate", rows, ours, "read_table + evaluate",
            reference, ours / reference, LIMIT, gate=True),
    ]  # fmt: skip
    given = argv if argv is not None else sys.argv[1:]
    command = "python bench/offline_cost.py" + (" " + shlex.join(given) if given else "")
    body = render(table, command)
    print(body)
    write_section(SECTION_TITLE, body, args.results)
    failed = [row.scenario for row in table if row.failed]
    if failed and not args.no_fail:
        print(f"FAIL: {'; '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
