"""Benchmark: one day of binary predictions in Parquet, evaluated three ways on this machine.

1. in process: ``evalserve evaluate`` (the offline evaluator: record batches into the
   accumulator);
2. Dask, the tree: ``evalserve.dask.evaluate`` on a ``distributed.LocalCluster`` of 2 worker
   processes (one thread each), partition states merged on the workers, the final state on the
   client;
3. Dask, the ranges: the same cluster, the score axis in ranges, no place holding every
   distinct score.

Each runs in a process of its own; its wall time and the peak resident memory of the process
(the kernel's high-water mark) and of each worker are reported, with the state's size. The
rows: labels 0/1 (30% positives), continuous float64 scores (every score distinct: the largest
state there is), in files of at most 10M rows and row groups of 1M. The three answers must
agree (the tree to the bit, the ranges to 1e-12); exit 1 when they do not, unless
``--no-fail``.

    python bench/offline_scale.py [--rows N] [--quick] [--no-fail] [--results PATH]

Default 100,000,000 rows (about 1 GB of Parquet in a temporary directory); ``--quick`` takes
1,000,000.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import numpy as np
from machine import machine_description  # bench/ is on sys.path when run as a script
from results_md import RESULTS_PATH, write_section
from timing import progress

SECTION_TITLE = "offline evaluation at scale (bench/offline_scale.py)"
SCRIPT = "bench/offline_scale.py"
FILE_ROWS = 10_000_000
GROUP_ROWS = 1_000_000
WORKERS = 2
MIB = 1 << 20
WAYS = ("in process", "dask tree", "dask ranges")


def write_data(folder: Path, rows: int, seed: int) -> int:
    """The Parquet files; returns their size in bytes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    size = 0
    for index, start in enumerate(range(0, rows, FILE_ROWS)):
        n = min(FILE_ROWS, rows - start)
        labels = (rng.random(n) < 0.3).astype(np.int8)
        scores = np.clip(rng.normal(0.35 + 0.3 * labels, 0.2), 0.0, 1.0)
        path = folder / f"part-{index:04}.parquet"
        pq.write_table(
            pa.table({"label": labels, "score": scores}), path, row_group_size=GROUP_ROWS
        )
        size += path.stat().st_size
    return size


def _peak_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) << 10
    return 0


def run_way(way: str, folder: str) -> dict[str, Any]:
    """One way, in this (fresh) process: its answer, wall time and peaks."""
    from evalserve.offline import ColumnSpec, accumulate_files

    started = time.perf_counter()
    workers: list[int] = []
    state_bytes = 0
    if way == "in process":
        accumulator = accumulate_files([folder], ColumnSpec())
        result = accumulator.result()
        state_bytes = accumulator.nbytes  # after the result: its levels merged into one
    else:
        import dask.dataframe as dd
        from distributed import Client, LocalCluster

        from evalserve import dask as evalserve_dask

        with (
            LocalCluster(
                n_workers=WORKERS, threads_per_worker=1, processes=True, dashboard_address=":0"
            ) as cluster,
            Client(cluster) as client,
        ):
            frame = dd.read_parquet(folder)
            method = "tree" if way == "dask tree" else "ranges"
            result = evalserve_dask.evaluate(frame, task="binary", method=method)
            workers = sorted(client.run(_peak_bytes).values())
    seconds = time.perf_counter() - started
    return {
        "way": way,
        "seconds": seconds,
        "peak": _peak_bytes(),
        "workers": workers,
        "state_bytes": state_bytes,
        "metrics": result.metrics,
        "std_error": result.intervals["roc_auc"].std_error,
    }


def _agree(first: dict[str, Any], other: dict[str, Any], *, exact: bool) -> list[str]:
    wrong = []
    for name, value in first["metrics"].items():
        got = other["metrics"][name]
        if value is None or got is None:
            if value != got:
                wrong.append(name)
        elif (exact and got != value) or abs(got - value) > 1e-12 * max(1.0, abs(value)):
            wrong.append(name)
    return wrong


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000_000)
    parser.add_argument("--quick", action="store_true", help="1,000,000 rows")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--no-fail", action="store_true", help="exit 0 even when a check fails")
    parser.add_argument("--results", type=Path, default=RESULTS_PATH)
    parser.add_argument("--worker", nargs=2, metavar=("WAY", "FOLDER"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(run_way(args.worker[0], args.worker[1])))
        return 0
    rows = 1_000_000 if args.quick else args.rows
    with tempfile.TemporaryDirectory(prefix="evalserve-scale-") as folder:
        progress(f"writing {rows:,} rows of Parquet ...")
        size = write_data(Path(folder), rows, args.seed)
        runs = []
        for way in WAYS:
            progress(f"{way} ...")
            done = subprocess.run(
                [sys.executable, __file__, "--worker", way, folder],
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode != 0:
                sys.stderr.write(done.stderr)
                raise SystemExit(f"{way} failed (exit {done.returncode})")
            runs.append(json.loads(done.stdout.splitlines()[-1]))
    wrong = {
        "dask tree": _agree(runs[0], runs[1], exact=True),
        "dask ranges": _agree(runs[0], runs[2], exact=False),
    }
    body = _report(rows, size, runs, wrong, args)
    write_section(SECTION_TITLE, body, args.results)
    print(body)
    failed = any(wrong.values())
    return 1 if failed and not args.no_fail else 0


def _report(
    rows: int,
    size: int,
    runs: list[dict[str, Any]],
    wrong: dict[str, list[str]],
    args: argparse.Namespace,
) -> str:
    command = " ".join(shlex.quote(part) for part in ["python", SCRIPT, *sys.argv[1:]])
    state = runs[0]["state_bytes"]
    lines = [
        f"* Command: `{command}`",
        f"* Date: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC",
        f"* Machine: {machine_description()}",
        f"* Data: {rows:,} rows (labels 0/1, 30% positives; float64 scores, all distinct) in "
        f"{-(-rows // FILE_ROWS)} Parquet files of row groups of {GROUP_ROWS:,} rows, "
        f"{size / MIB:,.0f} MiB; the binary state: {state / MIB:,.0f} MiB "
        f"({state / rows:.1f} bytes per row).",
        f"* Dask: `distributed.LocalCluster` of {WORKERS} worker processes, one thread each, on "
        "the same 2 cores; the ranges path with its default count of ranges.",
        "",
    ]
    verdicts = [
        f"{way}: metrics differ: {', '.join(names)}" for way, names in wrong.items() if names
    ]
    lines.append(
        "**FAIL: " + "; ".join(verdicts) + ".**"
        if verdicts
        else "The three answers agree (the tree to the bit, the ranges to 1e-12)."
    )
    lines += [
        "",
        "| way | seconds | rows/s | peak RSS, this process (MiB) | peak RSS per worker (MiB) |",
        "|---|---:|---:|---:|---|",
    ]
    for run in runs:
        per_worker = ", ".join(f"{peak / MIB:,.0f}" for peak in run["workers"]) or "-"
        lines.append(
            f"| {run['way']} | {run['seconds']:,.1f} | {rows / run['seconds']:,.0f} | "
            f"{run['peak'] / MIB:,.0f} | {per_worker} |"
        )
    lines += [
        "",
        f"AUC {runs[0]['metrics']['roc_auc']:.12f}, DeLong standard error "
        f"{runs[0]['std_error']:.3e}.",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
