"""Benchmark: what a request costs in memory, per task and encoding, against the service's model.

The memory budget (``service/budget.py``) reserves, before each step of a request, what the
cost model says that step will take at its peak: decoding the body, evaluating the decoded
input (one payload), and computing a stream's result from its state. This script measures those
peaks on the service's own code paths (``service.rest``'s one-payload path for JSON and
protobuf bodies, the NDJSON stream's accumulator for streams) and writes them with the model's
figures for the same inputs to ``bench/memory_cost.json``; ``tests/service/test_budget.py``
checks that the model covers every measured peak, so a factor cannot be lowered below what was
measured. The sizing table (rows per GiB of budget) comes from the same runs.

    python bench/memory_cost.py [--quick] [--no-fail] [--task TASK ...] [--results PATH]
                                [--figures PATH]

How a peak is measured: each (task, encoding) runs in a fresh process with the server's
allocator setting (``retain_freed_memory``). After one small warm-up request on the same path,
the process gives its free pages back (``malloc_trim``), so that every page a step touches is a
new one; the kernel's high-water mark of the resident size (``VmHWM``) is reset before each step
(``/proc/self/clear_refs``) and read after it. A step's peak is that mark over the resident size
before the body existed, so it includes the body and the input, as the model does.

Workloads (float64 scores practically all distinct, the worst case): binary and regression
2 x 10^6 rows; multiclass and multilabel 2 x 10^5 rows of k = 10; detection 20,000 images of
10 ground-truth and 20 predicted boxes. ``--quick`` takes a tenth. Exits 1 when the model
does not cover a measured peak, unless ``--no-fail``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import itertools
import json
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import numpy as np
import orjson
from machine import machine_description  # bench/ is on sys.path when run as a script
from results_md import RESULTS_PATH, write_section
from timing import progress

SECTION_TITLE = "memory cost per request (bench/memory_cost.py)"
SCRIPT = "bench/memory_cost.py"
FIGURES_PATH = Path(__file__).with_name("memory_cost.json")
TASKS = ("binary", "multiclass", "multilabel", "regression", "detection")
ENCODINGS = ("json", "protobuf", "ndjson")
STREAM_BATCHES = 10
GIB = 1 << 30
MIB = 1 << 20


# --- workloads: the wire form of each task's request ----------------------------------------


def _binary(rng: np.random.Generator, n: int, m: int, k: int) -> dict[str, Any]:
    labels = rng.integers(0, 2, n)
    return {"labels": labels, "scores": rng.random(n) + labels * 0.3}


def _multiclass(rng: np.random.Generator, n: int, m: int, k: int) -> dict[str, Any]:
    labels = rng.integers(0, k, m)
    scores = rng.random((m, k))
    scores[np.arange(m), labels] += 1.0
    return {"labels": labels, "scores": scores / scores.sum(axis=1, keepdims=True)}


def _multilabel(rng: np.random.Generator, n: int, m: int, k: int) -> dict[str, Any]:
    cells = (rng.random((m, k)) < 0.3).astype(np.int64)
    return {"labels": cells, "scores": rng.random((m, k)) + cells * 0.4}


def _regression(rng: np.random.Generator, n: int, m: int, k: int) -> dict[str, Any]:
    targets = rng.standard_normal(n) * 10
    return {"labels": targets, "predictions": targets + rng.standard_normal(n)}


def _detection(rng: np.random.Generator, n: int, m: int, k: int) -> dict[str, Any]:
    images = []
    for _ in range(m // 10):
        corners = rng.random((10, 2)) * 80
        truth = np.hstack([corners, corners + 5 + rng.random((10, 2)) * 15])
        found = np.vstack([truth + rng.standard_normal((10, 4)), rng.random((10, 4)) * 80])
        found[:, 2:] = np.maximum(found[:, 2:], found[:, :2] + 1)
        gt_classes = rng.integers(0, 5, 10)
        images.append(
            {
                "gt_boxes": truth,
                "gt_classes": gt_classes,
                "pred_boxes": found,
                "pred_classes": np.concatenate([gt_classes, rng.integers(0, 5, 10)]),
                "pred_scores": rng.random(20),
            }
        )
    return {"images": images}


# Each task's workload: n rows (binary, regression), m rows of k classes, m / 10 images.
WORKLOADS: dict[str, Callable[[np.random.Generator, int, int, int], dict[str, Any]]] = {
    "binary": _binary,
    "multiclass": _multiclass,
    "multilabel": _multilabel,
    "regression": _regression,
    "detection": _detection,
}


def _columns(task: str, scale: float, seed: int) -> dict[str, Any]:
    """The request's columns as arrays (detection: its images)."""
    rng = np.random.default_rng(seed)
    return WORKLOADS[task](rng, int(2_000_000 * scale), int(200_000 * scale), 10)


def _rows(task: str, columns: dict[str, Any]) -> int:
    return len(columns["images"]) if "images" in columns else len(columns["labels"])


def json_body(task: str, columns: dict[str, Any]) -> bytes:
    return orjson.dumps({"task": task, **columns}, option=orjson.OPT_SERIALIZE_NUMPY)


def protobuf_body(task: str, columns: dict[str, Any]) -> bytes:
    from evalserve.v1 import evaluation_pb2 as pb

    request = pb.EvaluateRequest(task=pb.Task.Value(f"TASK_{task.upper()}"))
    if "images" in columns:
        for image in columns["images"]:
            request.images.add(**{name: np.ravel(value) for name, value in image.items()})
        return request.SerializeToString()
    labels = np.asarray(columns["labels"], dtype="<f8")
    request.labels_f64 = labels.tobytes()
    if "scores" in columns:
        scores = np.asarray(columns["scores"], dtype="<f8")
        request.scores_f64 = scores.tobytes()
        if scores.ndim == 2:
            request.n_classes = scores.shape[1]
    if "predictions" in columns:
        request.predictions_f64 = np.asarray(columns["predictions"], dtype="<f8").tobytes()
    return request.SerializeToString()


def ndjson_lines(task: str, columns: dict[str, Any]) -> list[bytes]:
    """A stream's lines: the header, then ``STREAM_BATCHES`` batches of consecutive rows."""
    rows = _rows(task, columns)
    bounds = np.linspace(0, rows, STREAM_BATCHES + 1).astype(int)
    lines = [orjson.dumps({"task": task})]
    for start, stop in itertools.pairwise(bounds):
        part = {name: value[start:stop] for name, value in columns.items()}
        lines.append(orjson.dumps(part, option=orjson.OPT_SERIALIZE_NUMPY))
    return lines


# --- the measuring process -------------------------------------------------------------------


def _status_bytes(key: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"{key} is not in /proc/self/status")


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")  # resets VmHWM to the current resident size


def _release() -> None:
    from evalserve.service.memory import trim_freed_memory

    gc.collect()
    trim_freed_memory()


class _Recorder:
    """Stands in for a reservation: at each resize, the peak of the step that ended (VmHWM
    over ``baseline``) and the model's figure for the step that begins."""

    def __init__(self, baseline: int) -> None:
        from evalserve.service.budget import MemoryBudget

        self.budget = MemoryBudget(1 << 50)  # what a stream checks its result against
        self.baseline = baseline
        # (model bytes of the step, peak over the baseline, growth during the step)
        self.steps: list[tuple[int, int, int]] = []
        self.model: int | None = None
        self.start = 0

    def close_step(self) -> None:
        if self.model is not None:
            peak = _status_bytes("VmHWM")
            self.steps.append((self.model, peak - self.baseline, peak - self.start))

    def resize(self, nbytes: int, field: str = "body", wait: float = 0.0) -> None:
        self.close_step()
        self.model = nbytes
        _reset_peak()
        self.start = _status_bytes("VmRSS")


def _one_payload(encoding: str, body: bytes, settings: Any) -> Callable[[Any], Any]:
    from evalserve.service.rest import payload_codec
    from evalserve.service.usecase import evaluate_payload

    if encoding == "protobuf":
        codec = payload_codec("protobuf", "protobuf", settings)
    else:
        codec = payload_codec("json", "json", settings)

    def run(reservation: Any) -> Any:
        return evaluate_payload(body, codec, settings, None, reservation)  # no model series

    return run


def _streamed(lines: list[bytes], settings: Any) -> Callable[[Any], Any]:
    from evalserve.service.json_codec import stream_line_from_json
    from evalserve.service.json_parse import parse_json
    from evalserve.service.streams import StreamAccumulator

    def run(reservation: Any) -> Any:
        accumulator = None
        for line in lines:
            header, batch = stream_line_from_json(parse_json(line), settings)
            if header is not None:
                accumulator = StreamAccumulator(header, settings, None, reservation)
            assert accumulator is not None
            accumulator.add(batch, held_bytes=len(line))
        assert accumulator is not None
        state = accumulator.state_bytes
        return accumulator.finish(), state

    return run


def measure(task: str, encoding: str, scale: float, seed: int) -> dict[str, Any]:
    """One (task, encoding) in this process: run in a fresh one (``--worker``)."""
    from evalserve.service.budget import COST_MODEL, input_bytes, json_counts
    from evalserve.service.config import Settings
    from evalserve.service.json_codec import request_from_json
    from evalserve.service.json_parse import parse_json
    from evalserve.service.memory import retain_freed_memory

    retain_freed_memory()
    settings = Settings(max_rows=10**9, max_request_bytes=1 << 40, max_stream_state_bytes=1 << 40)
    # warm-up on the same path, with a small request of the task
    small = _columns(task, 0.001, seed + 1)
    warm = _Recorder(0)
    if encoding == "ndjson":
        _streamed(ndjson_lines(task, small), settings)(warm)
    else:
        body = (protobuf_body if encoding == "protobuf" else json_body)(task, small)
        _one_payload(encoding, body, settings)(warm)
    del warm, small
    columns = _columns(task, scale, seed)
    rows = _rows(task, columns)
    lines = ndjson_lines(task, columns) if encoding == "ndjson" else []
    body = b"" if lines else (protobuf_body if encoding == "protobuf" else json_body)(task, columns)
    decoded = input_bytes(request_from_json(parse_json(json_body(task, columns)), settings).batch)
    del columns
    _release()
    held = len(body) + sum(len(line) for line in lines)
    baseline = _status_bytes("VmRSS") - held
    recorder = _Recorder(baseline)
    figures: dict[str, Any] = {"task": task, "encoding": encoding, "rows": rows,
                               "body_bytes": held, "input_bytes": decoded}  # fmt: skip
    if encoding == "ndjson":
        _result, state = _streamed(lines, settings)(recorder)
        recorder.close_step()
        # The last step is the result's, from the state: what it allocates, and the state.
        # (A batch's step is an evaluation of its rows, as the one-payload runs measure.)
        model, _, growth = recorder.steps[-1]
        figures.update(state_bytes=state, result_model=model, result_peak=growth + state)
        assert model == COST_MODEL.result(task, state)
    else:
        _one_payload(encoding, body, settings)(recorder)
        recorder.close_step()
        (decode_model, decode_peak, _), (eval_model, eval_peak, _) = recorder.steps[-2:]
        values, strings = json_counts(body) if encoding == "json" else (0, 0)
        figures.update(
            values=values, strings=strings,
            decode_model=COST_MODEL.decode(encoding, len(body), values, strings),
            decode_peak=decode_peak,
            eval_model=COST_MODEL.evaluation(task, decoded, len(body)), eval_peak=eval_peak,
        )  # fmt: skip
        assert figures["decode_model"] == decode_model and figures["eval_model"] == eval_model
    return figures


# --- the driver -------------------------------------------------------------------------------


def _in_fresh_process(task: str, encoding: str, scale: float, seed: int) -> dict[str, Any]:
    command = [sys.executable, __file__, "--worker", task, encoding, str(scale), str(seed)]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"{task}/{encoding}: {done.stderr[-3000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def _steps(figure: dict[str, Any]) -> list[tuple[str, int, int]]:
    """(step, model bytes, measured peak) of one run."""
    if figure["encoding"] == "ndjson":
        return [("stream result", figure["result_model"], figure["result_peak"])]
    return [("decode", figure["decode_model"], figure["decode_peak"]),
            ("evaluate", figure["eval_model"], figure["eval_peak"])]  # fmt: skip


def _sizing(figure: dict[str, Any]) -> tuple[int, int]:
    """Rows per GiB of budget: by the model's largest step (what the budget admits) and by
    the largest measured peak."""
    steps = _steps(figure)
    model = max(m for _, m, _ in steps)
    peak = max(p for _, _, p in steps)
    return int(GIB * figure["rows"] / model), int(GIB * figure["rows"] / max(peak, 1))


def render(figures: list[dict[str, Any]], command: str) -> tuple[str, bool]:
    covered = all(m >= p for f in figures for _, m, p in _steps(f))
    lines = [
        f"* Command: `{command}`",
        f"* Date: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC",
        f"* Machine: {machine_description()}",
        "* Peaks: the kernel's high-water mark (VmHWM) of a fresh process over its resident "
        "size before the body existed, reset before each step; model: the service's "
        "`COST_MODEL` for the same inputs (what the request reserves). Figures: "
        "`bench/memory_cost.json`.",
        "",
        "**The model covers every measured peak.**"
        if covered
        else "**FAIL: the model is below a measured peak.**",
        "",
        "| task | encoding | rows | body (MiB) | input (MiB) | step | model (MiB) "
        "| peak (MiB) | model / peak |",
        "|---|---|---:|---:|---:|---|---:|---:|---:|",
    ]
    for figure in figures:
        for step, model, peak in _steps(figure):
            lines.append(
                f"| {figure['task']} | {figure['encoding']} | {figure['rows']:,} "
                f"| {figure['body_bytes'] / MIB:,.1f} | {figure['input_bytes'] / MIB:,.1f} "
                f"| {step} | {model / MIB:,.1f} | {peak / MIB:,.1f} | {model / max(peak, 1):.2f} |"
            )
    lines += [
        "",
        "Rows (images for detection) per GiB of `memory_budget_bytes`: what the budget admits "
        "at once (by the model's largest step) and what the measured peaks would allow.",
        "",
        "| task | encoding | rows per GiB (budget) | rows per GiB (measured) |",
        "|---|---|---:|---:|",
    ]
    for figure in figures:
        admitted, measured = _sizing(figure)
        lines.append(f"| {figure['task']} | {figure['encoding']} | {admitted:,} | {measured:,} |")
    return "\n".join(lines) + "\n", covered


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the rows")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-fail", action="store_true", help="exit 0 even when a check fails")
    parser.add_argument("--task", action="append", choices=TASKS, dest="tasks",
                        help="this task only (repeatable; default: every task)")  # fmt: skip
    parser.add_argument("--results", type=Path, default=RESULTS_PATH)
    parser.add_argument("--figures", type=Path, default=FIGURES_PATH)
    parser.add_argument("--worker", nargs=4, metavar=("TASK", "ENCODING", "SCALE", "SEED"),
                        help=argparse.SUPPRESS)  # fmt: skip
    args = parser.parse_args(argv)
    if args.worker:
        task, encoding, scale, seed = args.worker
        print(json.dumps(measure(task, encoding, float(scale), int(seed))))
        return 0
    scale = 0.1 if args.quick else 1.0
    figures = []
    for task in args.tasks or TASKS:
        for encoding in ENCODINGS:
            progress(f"{task} / {encoding} ...")
            figures.append(_in_fresh_process(task, encoding, scale, args.seed))
    command = shlex.join(["python", SCRIPT, *(argv if argv is not None else sys.argv[1:])])
    body, covered = render(figures, command)
    print(body)
    write_section(SECTION_TITLE, body, args.results)
    args.figures.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    return 0 if covered or args.no_fail else 1


if __name__ == "__main__":
    raise SystemExit(main())
