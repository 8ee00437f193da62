"""Benchmark: a stream of 100 batches against the one-shot evaluation of the same rows, and
the stream doors' cost per batch.

Target, per task: evaluating rows sent as 100 batches (``Accumulator.update`` per batch, then
``result()``: what the service's stream doors run) costs at most 1.5x ``evaluate`` on all the
rows at once, in the same run. The peak memory of both is reported too (tracemalloc's peak
above the inputs, numpy reports its arrays to it).

The service part (``bench/stream_doors.py``, skipped with ``--core-only``) streams 500 and
20,000 one-row batches to a real server on each stream door (REST NDJSON, gRPC): the cost per
batch of the long stream at most 1.3x that of the short one; and it feeds 1M rows of 100
distinct scores in 10,000 batches through the use case's stream: its largest state under 1 MiB.

    python bench/stream_cost.py [--batches 100] [--repeats 3] [--quick] [--core-only]
        [--no-fail] [--results PATH]

Workloads (float64 scores practically all distinct, the worst case for the states, which grow
with distinct scores): binary 10^6 rows; multiclass and multilabel 2 x 10^5 rows of k = 10;
regression 10^6 rows; detection 2,000 images of 10 ground-truth and 20 predicted boxes over
5 classes. The script prints its table and rewrites its section of ``bench/RESULTS.md``; it
exits 1 when a target fails, unless ``--no-fail``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import shlex
import sys
import tracemalloc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import itertools

import numpy as np
import stream_doors
from machine import machine_description  # bench/ is on sys.path when run as a script
from results_md import RESULTS_PATH, write_section
from timing import Row, Usage, best_runs, load_average, progress, render_table, verdict

from evalserve.core import Accumulator, EvaluationResult, evaluate, task_spec

SECTION_TITLE = "streams against one-shot (bench/stream_cost.py)"
SCRIPT = "bench/stream_cost.py"
TARGET = 1.5


@dataclass(frozen=True, slots=True)
class Workload:
    task: str
    rows: int
    y_true: Any
    y_score: Any
    y_pred: Any = None
    classes: tuple[str, ...] | None = None

    def batches(self, count: int) -> list[dict[str, Any]]:
        """The rows in ``count`` consecutive batches (images for detection)."""
        bounds = np.linspace(0, self.rows, count + 1).astype(int)
        parts = []
        for start, stop in itertools.pairwise(bounds):
            parts.append(
                {
                    "y_true": self.y_true[start:stop],
                    "y_score": None if self.y_score is None else self.y_score[start:stop],
                    "y_pred": None if self.y_pred is None else self.y_pred[start:stop],
                }
            )
        return parts


def workloads(scale: float, seed: int) -> list[Workload]:
    rng = np.random.default_rng(seed)
    n = int(1_000_000 * scale)
    labels = rng.random(n) < 0.1
    binary = Workload("binary", n, labels, rng.random(n) + labels * 0.5)
    m, k = int(200_000 * scale), 10
    classes = rng.integers(0, k, m)
    logits = rng.standard_normal((m, k))
    logits[np.arange(m), classes] += 1.5
    probabilities = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    multiclass = Workload("multiclass", m, classes, probabilities)
    cells = rng.random((m, k)) < 0.3
    multilabel = Workload("multilabel", m, cells.astype(float), rng.random((m, k)) + cells * 0.4)
    targets = rng.standard_normal(n) * 10
    regression = Workload("regression", n, targets, None, targets + rng.standard_normal(n))
    return [binary, multiclass, multilabel, regression, detection(int(2_000 * scale), rng)]


def detection(images: int, rng: np.random.Generator) -> Workload:
    truth, found = [], []
    for _ in range(images):
        corners = rng.random((10, 2)) * 80
        boxes = np.hstack([corners, corners + 5 + rng.random((10, 2)) * 15])
        truth.append({"boxes": boxes, "classes": rng.integers(0, 5, 10)})
        jitter = np.vstack([boxes + rng.standard_normal((10, 4)), rng.random((10, 4)) * 90])
        jitter[:, 2:] = np.maximum(jitter[:, 2:], jitter[:, :2] + 1)
        found.append(
            {
                "boxes": jitter,
                "classes": np.concatenate([truth[-1]["classes"], rng.integers(0, 5, 10)]),
                "scores": rng.random(20),
            }
        )
    return Workload("detection", images, truth, found)


def one_shot(work: Workload) -> EvaluationResult:
    return evaluate(work.task, work.y_true, work.y_score, y_pred=work.y_pred, classes=work.classes)


def streamed(work: Workload, batches: list[dict[str, Any]]) -> EvaluationResult:
    accumulator = Accumulator(work.task, classes=work.classes)
    for batch in batches:
        accumulator.update(batch["y_true"], batch["y_score"], y_pred=batch["y_pred"])
    return accumulator.result()


def same_answer(first: Mapping[str, object]) -> None:
    """The stream's answer is the one-shot answer (every metric, to 1e-12 relative)."""
    whole, parts = first["one-shot"], first["100 batches"]
    assert isinstance(whole, EvaluationResult) and isinstance(parts, EvaluationResult)
    for name, value in whole.metrics.items():
        other = parts.metrics[name]
        if value is None or other is None:
            assert value is other, name
        else:
            assert abs(other - value) <= 1e-12 * max(1.0, abs(value)), (name, value, other)


def peak_mib(call: Callable[[], object]) -> float:
    tracemalloc.start()
    try:
        result = call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del result
    return peak / 2**20


def run(scale: float, count: int, repeats: int, seed: int) -> tuple[list[Row], list[str]]:
    rows: list[Row] = []
    memory: list[str] = []
    for work in workloads(scale, seed):
        progress(f"{work.task}: {work.rows:,} rows in one payload and in {count} batches ...")
        batches = work.batches(count)
        tasks: dict[str, Callable[[], object]] = {
            "one-shot": partial(one_shot, work),
            "100 batches": partial(streamed, work, batches),
        }
        usage: dict[str, Usage] = best_runs(tasks, repeats, check=same_answer)
        ours, reference = usage["100 batches"].wall, usage["one-shot"].wall
        unit = task_spec(work.task).unit
        rows.append(
            Row(
                f"{work.task}: {count} batches / one payload",
                work.rows,
                ours,
                "one-shot evaluate",
                reference,
                ours / reference,
                TARGET,
                gate=True,
            )
        )
        memory.append(
            f"| {work.task} | {work.rows:,} {unit} | {peak_mib(tasks['one-shot']):.1f} "
            f"| {peak_mib(tasks['100 batches']):.1f} |"
        )
    return rows, memory


def render_section(
    results: Sequence[Row],
    memory: Sequence[str],
    command: str,
    load: tuple[float, float],
    notes: Sequence[str] = (),
) -> str:
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    table = "\n".join(
        [
            "| task | size | one-shot peak (MiB) | 100 batches peak (MiB) |",
            "|---|---:|---:|---:|",
            *list(memory),
        ]
    )
    return f"""* Command: `{command}`
* Date: {now}
* Machine: {machine_description()}
* Timing: best of the timed rounds after one warm-up call, the two calls interleaved; same
  data, same process. 1-minute load average {load[0]:.2f} before the run, {load[1]:.2f} after.
  Before timing, the stream's metrics are checked against the one-shot ones (1e-12 relative).

**{verdict(results)}**

{render_table(results)}

Peak memory above the inputs (tracemalloc, one call each; the batches are views of the inputs):

{table}

* One-shot: `evaluate(task, ...)` on all rows. 100 batches: `Accumulator(task)`, `update` with
  each of 100 consecutive slices, then `result()`, which is what the REST NDJSON and gRPC
  stream doors run (the transports' own costs are in the service section).
* Workloads: see the script's docstring; scores practically all distinct, so every state holds
  about one entry per row and score column (its worst case).
* Stream doors (bench/stream_doors.py): a real server with default settings; each door's cost
  per batch is the best of the timed rounds (the two lengths interleaved), from sending the
  first byte to the answer. The state row feeds the use case's `StreamAccumulator` in this
  process (the object both doors feed) and reads its `state_bytes` after every batch: ratio
  is the largest state in MiB against the 1 MiB limit.
{"".join(f"* {note}{chr(10)}" for note in notes)}"""


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(prog=f"python {SCRIPT}", description=__doc__.split("\n")[0])
    parser.add_argument("--batches", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="smoke test: a tenth of the rows")
    parser.add_argument(
        "--core-only", action="store_true", help="skip the stream doors (no server started)"
    )
    parser.add_argument("--no-fail", action="store_true")
    parser.add_argument("--results", type=Path, default=RESULTS_PATH)
    args = parser.parse_args(argv)
    before = load_average()
    results, memory = run(0.1 if args.quick else 1.0, args.batches, args.repeats, args.seed)
    notes: list[str] = []
    if not args.core_only:
        results += stream_doors.per_batch_rows(args.repeats, args.quick)
        state, note = stream_doors.state_rows(args.seed)
        results.append(state)
        notes.append(note)
    load = (before, load_average())
    print(render_table(results))
    print("\n".join(memory))
    command = shlex.join(["python", SCRIPT, *argv])
    section = render_section(results, memory, command, load, notes)
    write_section(SECTION_TITLE, section, args.results)
    print(f"\n{verdict(results)}")
    return 1 if any(row.failed for row in results) and not args.no_fail else 0


if __name__ == "__main__":
    sys.exit(main())
