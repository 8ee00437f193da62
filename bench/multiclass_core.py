"""Benchmark of the multiclass core against its performance target.

Target: with k = 10 and k = 100 classes and n = 10^6 rows, the whole multiclass suite
(``compute_multiclass`` with the default options: every metric, per-class rows with DeLong
intervals, the confusion matrix and the macro-average ROC curve) against scikit-learn's
``roc_auc_score(multi_class="ovr")`` (macro) plus ``roc_auc_score(multi_class="ovo")`` plus
``f1_score`` with average micro, macro and weighted, same data, same run: at least 10x faster
in total (scikit-learn's five calls summed over both k, against our suite summed over both k).
Each k's ratio is reported too.

Timing follows ``bench/binary_core.py`` (whose helpers it imports): every task is called once
to warm up, then the tasks of one k run in interleaved rounds (the order rotated each round)
and each keeps its best time. As there, freed memory stays in the process heap
(``service.memory.retain_freed_memory``, what ``evalserve`` does at start-up).

    python bench/multiclass_core.py [--rows 1000000] [--repeats 2] [--repeats-small 5]
        [--quick] [--no-fail] [--results PATH]

``--repeats`` rounds time the k = 100 tasks (scikit-learn's one-vs-one alone takes about a
minute there); the k = 10 tasks are cheap and get ``--repeats-small`` rounds, which keeps
their best time clear of other processes' bursts on a shared machine.

The benchmark prints its table and rewrites its own section of the results file
(``bench/RESULTS.md`` by default). It exits with status 1 when the gated target (the total)
fails, unless ``--no-fail``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The checkout this script belongs to goes first on sys.path (as bench/binary_core.py).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
from binary_core import (  # bench/ is on sys.path when run as a script
    Row,
    Usage,
    best_runs,
    load_average,
    machine_description,
    progress,
    render_table,
    render_usage,
    warn_if_busy,
)
from numpy.typing import NDArray
from results_md import RESULTS_PATH, write_section
from sklearn.metrics import f1_score, roc_auc_score

from evalserve.core import Options
from evalserve.core._result import TaskOutput
from evalserve.core.multiclass import compute_multiclass
from evalserve.service.memory import retain_freed_memory

SECTION_TITLE = "multiclass core (bench/multiclass_core.py)"
SCRIPT = "bench/multiclass_core.py"
DEFAULT_ROWS = 1_000_000
QUICK_ROWS = 100_000
CLASSES = (10, 100)
TARGET = 10.0  # scikit-learn's calls / our suite, at least
TRUE_CLASS_SHIFT = 1.5
SKLEARN_TASKS = (
    "sklearn roc_auc_score ovr macro",
    "sklearn roc_auc_score ovo macro",
    "sklearn f1_score micro",
    "sklearn f1_score macro",
    "sklearn f1_score weighted",
)
# (our metric, scikit-learn task): checked on the warm-up results before any timing.
CHECKS = (
    ("roc_auc_ovr_macro", "sklearn roc_auc_score ovr macro"),
    ("roc_auc_ovo_macro", "sklearn roc_auc_score ovo macro"),
    ("f1_micro", "sklearn f1_score micro"),
    ("f1_macro", "sklearn f1_score macro"),
    ("f1_weighted", "sklearn f1_score weighted"),
)


@dataclass(frozen=True, slots=True)
class Data:
    """Labels uniform over k classes; scores the softmax of unit normal logits with the true
    class's logit shifted up (practically all distinct); predictions their argmax."""

    labels: NDArray[np.int64]
    scores: NDArray[np.float64]
    predicted: NDArray[np.int64]

    @property
    def rows(self) -> int:
        return int(self.labels.size)

    @property
    def classes(self) -> int:
        return int(self.scores.shape[1])


def make_data(rows: int, classes: int, seed: int) -> Data:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, rows)
    logits = rng.standard_normal((rows, classes))
    logits[np.arange(rows), labels] += TRUE_CLASS_SHIFT
    logits -= logits.max(axis=1, keepdims=True)
    np.exp(logits, out=logits)
    logits /= logits.sum(axis=1, keepdims=True)
    return Data(labels, logits, np.asarray(logits.argmax(axis=1), dtype=np.int64))


def suite(data: Data) -> TaskOutput:
    """The timed call: everything the core computes for a multiclass task."""
    return compute_multiclass(data.labels, data.scores, options=Options())


def tasks(data: Data) -> dict[str, Any]:
    labels, scores, predicted = data.labels, data.scores, data.predicted
    return {
        "our suite": lambda: suite(data),
        f"{data.classes} column sorts": lambda: np.sort(scores, axis=0),
        "sklearn roc_auc_score ovr macro": lambda: float(
            roc_auc_score(labels, scores, multi_class="ovr")
        ),
        "sklearn roc_auc_score ovo macro": lambda: float(
            roc_auc_score(labels, scores, multi_class="ovo")
        ),
        "sklearn f1_score micro": lambda: float(f1_score(labels, predicted, average="micro")),
        "sklearn f1_score macro": lambda: float(f1_score(labels, predicted, average="macro")),
        "sklearn f1_score weighted": lambda: float(f1_score(labels, predicted, average="weighted")),
    }


def check(first: Mapping[str, object]) -> None:
    """The timed calls compute the same numbers (to 1e-9) and our suite computed everything."""
    output = first["our suite"]
    if not isinstance(output, TaskOutput):
        raise TypeError(f"compute_multiclass returned {type(output).__name__}")
    metrics = output.sink.metrics
    missing = [name for name, value in metrics.items() if value is None]
    if missing or {"confusion_matrix", "roc_macro"} - set(output.curves):
        raise AssertionError(f"the suite left {missing} undefined or skipped curves")
    for ours, theirs in CHECKS:
        value, expected = metrics[ours], first[theirs]
        if not isinstance(expected, float) or not math.isclose(
            value or math.nan, expected, rel_tol=1e-9, abs_tol=1e-12
        ):
            raise AssertionError(f"{ours}: ours {value!r} but scikit-learn {expected!r}")


def bench_classes(data: Data, repeats: int) -> dict[str, Usage]:
    progress(f"timing {data.rows:,} rows x {data.classes} classes (best of {repeats}) ...")
    return best_runs(tasks(data), repeats, check=check)


def rows_for(data: Data, usage: Mapping[str, Usage]) -> list[Row]:
    ours = usage["our suite"].wall
    theirs = sum(usage[name].wall for name in SKLEARN_TASKS)
    sorts = usage[f"{data.classes} column sorts"].wall
    k, n = data.classes, data.rows
    status = "pass (info)" if theirs / ours >= TARGET else "fail (info)"
    rows = [
        Row(f"k={k}: sklearn ovr + ovo + 3 f1 / our suite", n, ours, theirs, theirs / ours,
            f">= {TARGET:g}x", status),
        Row(f"k={k}: our suite / {k} column sorts (np.sort axis 0)", n, ours, sorts,
            ours / sorts, "report", "info"),
    ]  # fmt: skip
    rows += [
        Row(f"k={k}: {name} / our suite", n, ours, usage[name].wall, usage[name].wall / ours,
            "report (speed-up)", "info")
        for name in SKLEARN_TASKS
    ]  # fmt: skip
    return rows


def total_row(usages: Mapping[int, Mapping[str, Usage]], rows: int) -> Row:
    ours = sum(usage["our suite"].wall for usage in usages.values())
    theirs = sum(usage[name].wall for usage in usages.values() for name in SKLEARN_TASKS)
    ratio = theirs / ours
    classes = " + ".join(f"k={k}" for k in usages)
    return Row(
        f"total ({classes}): sklearn ovr + ovo + 3 f1 / our suite",
        rows,
        ours,
        theirs,
        ratio,
        f">= {TARGET:g}x",
        "pass" if ratio >= TARGET else "FAIL",
        gate=True,
    )


def run_benchmark(
    rows: int, repeats: dict[int, int], seed: int
) -> tuple[list[Row], dict[int, dict[str, Usage]]]:
    results: list[Row] = []
    usages: dict[int, dict[str, Usage]] = {}
    for classes in CLASSES:
        progress(f"generating {rows:,} rows x {classes} classes ...")
        data = make_data(rows, classes, seed)
        usages[classes] = bench_classes(data, repeats[classes])
        results += rows_for(data, usages[classes])
        del data
    return [total_row(usages, rows), *results], usages


def render_section(
    results: Sequence[Row],
    usages: Mapping[int, Mapping[str, Usage]],
    command: str,
    repeats: Mapping[int, int],
    load: tuple[float, float],
) -> str:
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    usage_tables = "\n\n".join(
        f"k = {classes}:\n\n{render_usage(usage)}" for classes, usage in usages.items()
    )
    rounds = ", ".join(f"{count} at k = {classes}" for classes, count in repeats.items())
    return f"""* Command: `{command}`
* Date: {now}
* Machine: {machine_description()}
* Timing: best of the timed rounds ({rounds}) after one warm-up call; tasks
  interleaved, the order rotated each round; same data, same process, same run for every
  ratio; freed memory kept in the heap as the service does. 1-minute load average
  {load[0]:.2f} before the run, {load[1]:.2f} after it (this run itself adds about 1).

{render_table(results)}

* Our suite: `compute_multiclass(labels, scores, options=Options())`: every multiclass metric
  (accuracy, balanced accuracy, MCC, kappa, log loss, Brier, top-label ECE, top-1 and top-5
  accuracy, precision/recall/F1 micro/macro/weighted, ROC AUC one-vs-rest macro/weighted/micro,
  one-vs-one macro/weighted, average precision macro/weighted/micro), per-class rows (precision,
  recall, F1, F-beta, ROC AUC with its DeLong interval, AP, KS), the confusion matrix and the
  macro-average ROC curve (1000 points). The argmax predictions are part of it.
* scikit-learn: `roc_auc_score(labels, scores, multi_class="ovr")` and `(..., "ovo")` (macro),
  `f1_score(labels, predicted, average=...)` for micro, macro and weighted, on the same arrays;
  `predicted` (the argmax) is computed once outside the timing. Before timing, our values of
  those five metrics are checked against scikit-learn's to 1e-9.
* Data: labels uniform over k classes; scores the softmax of unit normal logits, the true
  class's shifted by {TRUE_CLASS_SHIFT} (float64, practically all distinct).
* The gated row is the total over both k (the target: at least 10x faster in total); each k's
  ratio is reported with it. "k column sorts" is `np.sort(scores, axis=0)`: one sort of every
  column, the cost of one-vs-rest by sorting; one-vs-one here adds no sort of its own.

Where the time of the best runs went (CPU time in user mode and in the kernel; user above wall
means helper threads, such as OpenBLAS's):

{usage_tables}
"""


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=f"python {SCRIPT}", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    parser.add_argument("--rows", type=int, default=DEFAULT_ROWS, help="rows (default 10^6)")
    parser.add_argument(
        "--repeats", type=int, default=2, help="timed rounds at k = 100; best is kept"
    )
    parser.add_argument(
        "--repeats-small", type=int, default=5, help="timed rounds at k = 10; best is kept"
    )
    parser.add_argument("--quick", action="store_true", help="smoke test: 10^5 rows, 1 repeat")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated data")
    parser.add_argument("--no-fail", action="store_true", help="exit 0 even when the target fails")
    parser.add_argument(
        "--results", type=Path, default=RESULTS_PATH, help="the results file to update"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.repeats, args.repeats_small = QUICK_ROWS, 1, 1
    if args.rows < 1000 or min(args.repeats, args.repeats_small) < 1:
        parser.error("--rows must be at least 1000 and the repeats at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    retain_freed_memory()
    before = load_average()
    warn_if_busy(before)
    repeats = {CLASSES[0]: args.repeats_small, CLASSES[1]: args.repeats}
    results, usages = run_benchmark(args.rows, repeats, args.seed)
    load = (before, load_average())
    command = shlex.join(["python", SCRIPT, *argv])
    print(render_table(results))
    for classes, usage in usages.items():
        print(f"\nk = {classes}:\n{render_usage(usage)}")
    write_section(
        SECTION_TITLE, render_section(results, usages, command, repeats, load), args.results
    )
    print(f"\nwrote section '{SECTION_TITLE}' of {args.results}")
    failed = [row.scenario for row in results if row.failed]
    if failed and not args.no_fail:
        print(f"target failed: {'; '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
