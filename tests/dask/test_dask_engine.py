"""``evalserve.dask`` on a real cluster: ``distributed.LocalCluster`` with two worker processes,
Parquet files written here, every task against ``evaluate`` on the same rows in memory; a
worker killed during a run; the exact ranges path with every state capped below the size of
the whole state; the command's progress line on a terminal."""

from __future__ import annotations

import json
import os
import pty
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dask.delayed import delayed
from dask.sizeof import sizeof
from dask.utils import key_split
from distributed import Client, LocalCluster
from distributed.diagnostics.plugin import SchedulerPlugin

from evalserve import dask as evalserve_dask
from evalserve.core import (
    Accumulator,
    InvalidInputError,
    StateTooLargeError,
    current_threads,
    evaluate,
    using_threads,
)
from evalserve.core.ranges import range_batch, range_classes, split_batch
from tests.cli.run import on_a_terminal
from tests.offline.images import image_columns, random_images

pytestmark = pytest.mark.slow

RNG = np.random.default_rng(3)


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    # The dashboard on any free port: two runs on one machine must not clash over 8787.
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


def _json(result: Any) -> str:
    return json.dumps(result.to_dict(), sort_keys=True)


def _binary_frame(n: int, tmp_path: Path, partitions: int = 6) -> tuple[dd.DataFrame, pd.DataFrame]:
    frame = pd.DataFrame(
        {
            "label": RNG.integers(0, 2, n),
            "score": np.round(RNG.random(n), 4),
            "weight": RNG.integers(0, 3, n).astype(float),
        }
    )
    folder = tmp_path / "binary"
    dd.from_pandas(frame, npartitions=partitions).to_parquet(folder)
    return dd.read_parquet(folder), frame


# Operating points on both Dask methods: the tree merges states, the ranges path combines each
# range's candidates.
OPERATING = {
    "recall_at_precision": [0.3, 0.9],
    "precision_at_recall": [0.5],
    "tpr_at_fpr": [0.01, 0.2],
    "specificity_at_sensitivity": [0.8],
    "flagged_share": [0.05],
}


def test_binary_tree_equals_in_process(client: Client, tmp_path: Path) -> None:
    data, frame = _binary_frame(20_000, tmp_path)
    options = {"head_k": [100], **OPERATING}
    got = evalserve_dask.evaluate(data, task="binary", options=options, split_every=2)
    want = evaluate(
        "binary",
        frame.label.to_numpy(),
        frame.score.to_numpy(),
        sample_weight=frame.weight.to_numpy(),
        options=options,
    )
    assert _json(got) == _json(want)


def test_the_auc_monitor_on_dask_equals_in_process(client: Client, tmp_path: Path) -> None:
    data, frame = _binary_frame(4000, tmp_path)
    baseline = {"roc_auc": 0.9, "roc_auc_variance": 1e-4}
    first = evaluate("binary", [0, 1, 0, 1], [0.1, 0.9, 0.2, 0.8], baseline=baseline)
    columns = (frame.label.to_numpy(), frame.score.to_numpy())
    weights = frame.weight.to_numpy()
    state, window = first.monitor_state, "day-2"
    got = evalserve_dask.evaluate(
        data, task="binary", baseline=baseline, monitor_state=state, window=window
    )
    want = evaluate(
        "binary", *columns, sample_weight=weights, baseline=baseline, monitor_state=state,
        window=window,
    )  # fmt: skip
    assert got.monitor_state == want.monitor_state
    assert got.monitor["roc_auc"] == want.monitor["roc_auc"]
    with pytest.raises(InvalidInputError, match="method 'tree' only"):
        evalserve_dask.evaluate(data, task="binary", method="ranges", monitor_state=state)


def test_every_other_task_equals_in_process(client: Client, tmp_path: Path) -> None:
    n = 3000
    names = ["a", "b", "c"]
    mc_scores = RNG.dirichlet(np.ones(3), n)
    mc_labels = RNG.integers(0, 3, n)
    ml_labels = RNG.integers(0, 2, (n, 3))
    truth = RNG.normal(size=n)
    frame = pd.DataFrame(
        {
            "label": [names[i] for i in mc_labels],
            **{f"score_{k}": mc_scores[:, i] for i, k in enumerate(names)},
            **{f"tag_{k}": ml_labels[:, i] for i, k in enumerate(names)},
            "truth": truth,
            "guess": truth + RNG.normal(scale=0.2, size=n),
        }
    )
    dd.from_pandas(frame, npartitions=5).to_parquet(tmp_path / "tasks")
    data = dd.read_parquet(tmp_path / "tasks")
    got = evalserve_dask.evaluate(data, task="multiclass")
    assert _json(got) == _json(evaluate("multiclass", mc_labels, mc_scores, classes=names))
    got = evalserve_dask.evaluate(data, task="multilabel", label="tag_", score="score_")
    assert _json(got) == _json(evaluate("multilabel", ml_labels, mc_scores, classes=names))
    got = evalserve_dask.evaluate(data, task="regression", label="truth", prediction="guess")
    want = evaluate("regression", truth, y_pred=frame.guess.to_numpy())
    # The regression state merges its sums exactly except MAPE's, which may move by an ulp.
    assert got.undefined == want.undefined
    for name, value in want.metrics.items():
        assert got.metrics[name] == (None if value is None else pytest.approx(value, rel=1e-14))


@pytest.mark.parametrize("cells", ["lists", "json"])
def test_detection_images_as_rows(client: Client, tmp_path: Path, cells: str) -> None:
    targets, predictions = random_images(RNG, 60)
    columns = image_columns(targets, predictions)
    if cells == "json":  # as a CSV file would hold them
        columns = {name: [json.dumps(cell) for cell in values] for name, values in columns.items()}
    # Parquet list columns (pyarrow infers list<list<double>> for the boxes).
    pq.write_table(pa.table(columns), tmp_path / "images.parquet", row_group_size=15)
    data = dd.read_parquet(tmp_path / "images.parquet", split_row_groups=True)
    got = evalserve_dask.evaluate(data, task="detection")
    assert _json(got) == _json(evaluate("detection", targets, predictions))


def test_ranges_never_build_the_whole_state(client: Client, tmp_path: Path) -> None:
    n = 60_000
    data, frame = _binary_frame(n, tmp_path, partitions=8)
    frame = frame.assign(score=RNG.random(n))  # continuous: a state entry per row
    data = dd.from_pandas(frame, npartitions=8)
    whole = Accumulator("binary").update(frame.label, frame.score, sample_weight=frame.weight)
    cap = whole.nbytes // 3  # no worker may hold a third of the whole state
    with pytest.raises(StateTooLargeError):
        evalserve_dask.evaluate(data, task="binary", max_state_bytes=cap)
    got = evalserve_dask.evaluate(
        data,
        task="binary",
        method="ranges",
        ranges=8,
        max_state_bytes=cap,
        options={"max_fpr": 0.2, **OPERATING},
    )
    want = evaluate(
        "binary",
        frame.label.to_numpy(),
        frame.score.to_numpy(),
        sample_weight=frame.weight.to_numpy(),
        options={"max_fpr": 0.2, **OPERATING},
    )
    assert "tpr_at_fpr_0.01_threshold" in want.metrics
    assert got.undefined == want.undefined
    for name, value in want.metrics.items():
        if value is None:
            assert got.metrics[name] is None, name
        else:
            assert got.metrics[name] == pytest.approx(value, rel=1e-12, abs=1e-12), name
    assert got.intervals["roc_auc"].std_error == pytest.approx(
        want.intervals["roc_auc"].std_error, rel=1e-9
    )
    np.testing.assert_allclose(got.curves["roc"]["tpr"], want.curves["roc"]["tpr"], rtol=1e-12)
    np.testing.assert_allclose(got.curves["roc"]["fpr"], want.curves["roc"]["fpr"], rtol=1e-12)


def test_the_scheduler_weighs_the_ranges_objects_by_their_arrays() -> None:
    """Dask counts an unknown object as a few dozen bytes: a range's classes would move to
    another worker for a pass as readily as a number."""
    n = 10_000
    labels, scores = RNG.random(n) < 0.3, RNG.random(n)
    batch = range_batch(labels, scores, None)
    pieces = split_batch(batch, [0.5])
    classes = range_classes(pieces[:1])
    assert sizeof(batch) >= labels.nbytes + scores.nbytes
    assert sizeof(pieces) >= scores.nbytes
    held = classes.positives.scores.nbytes + classes.negatives.scores.nbytes
    assert sizeof(classes) >= held + sum(part.nbytes for part in classes.placement)


class _Transitions(SchedulerPlugin):
    """The scheduler's task transitions, by task name, in order."""

    name = "evalserve-transitions"

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    def transition(self, key: Any, start: str, finish: str, *args: Any, **kwargs: Any) -> None:
        name = key_split(key)  # the read and the check fused: "read_parquet"
        if name.startswith(("read_parquet", "range-split", "range-pass")):
            self.seen.append((name, start, finish))


def _transitions(dask_scheduler: Any) -> list[tuple[str, str, str]]:
    plugin = dask_scheduler.plugins[_Transitions.name]
    seen = list(plugin.seen)
    plugin.seen.clear()
    return seen


def test_ranges_read_each_partition_once_and_free_it_once_split(
    client: Client, tmp_path: Path
) -> None:
    """The ranges path reads and checks each partition once, in one task (its scores sampled
    for the cuts from the rows it keeps), and each partition's rows are freed on the worker as
    soon as they are split into the ranges, before any range's pass."""
    data, _ = _binary_frame(4000, tmp_path, partitions=5)
    client.register_plugin(_Transitions())
    evalserve_dask.evaluate(data, task="binary", method="ranges", ranges=3)
    seen = client.run_on_scheduler(_transitions)
    read = [name for name, start, finish in seen if finish == "memory"]
    assert read.count("read_parquet") == 5 and 1 <= read.count("range-split") <= 2
    freed = [
        i for i, (name, start, _) in enumerate(seen) if name == "read_parquet" and start == "memory"
    ]
    passes = [
        i
        for i, (name, start, _) in enumerate(seen)
        if name == "range-pass" and start == "processing"
    ]
    assert len(freed) == 5 and passes and max(freed) < min(passes), seen


class _Placed(SchedulerPlugin):
    """Where each ranges task ran: its key and its worker."""

    name = "evalserve-placed"

    def __init__(self) -> None:
        self.ran: list[tuple[Any, str]] = []

    def transition(self, key: Any, start: str, finish: str, *args: Any, **kwargs: Any) -> None:
        if finish == "memory" and key_split(key).startswith("range-"):
            self.ran.append((key, str(kwargs.get("worker", ""))))


def _placed(dask_scheduler: Any) -> list[tuple[Any, str]]:
    plugin = dask_scheduler.plugins.pop(_Placed.name)
    return list(plugin.ran)


def test_the_default_ranges_are_two_per_thread_of_the_cluster(
    client: Client, tmp_path: Path
) -> None:
    """Without ``ranges``, a few rows take two ranges per worker thread (2 workers of one
    thread: 4), the count the cluster's threads give (read once, with the workers that hold
    the partitions)."""
    data, _ = _binary_frame(3000, tmp_path, partitions=4)
    client.register_plugin(_Placed())
    evalserve_dask.evaluate(data, task="binary", method="ranges")
    ran = client.run_on_scheduler(_placed)
    assert sorted(key[1] for key, _ in ran if key_split(key) == "range-join") == [0, 1, 2, 3]


def test_ranges_take_each_workers_pieces_on_that_worker(client: Client, tmp_path: Path) -> None:
    """Each worker's pieces of a range are taken by one task on that worker, where its
    splits ran (a task per worker and range, not one per partition and range: nothing but
    the pieces moves), and each range's join and passes run on one worker, the ranges shared
    between the workers; the answer is the in-process one."""
    data, frame = _binary_frame(6000, tmp_path, partitions=8)
    client.register_plugin(_Placed())
    got = evalserve_dask.evaluate(data, task="binary", method="ranges", ranges=5)
    ran = client.run_on_scheduler(_placed)
    split_on = {key[1]: worker for key, worker in ran if key_split(key) == "range-split"}
    pieces = [(key, worker) for key, worker in ran if key_split(key) == "range-pieces"]
    assert len(split_on) == 2 and len(set(split_on.values())) == 2  # a group a worker
    assert len(pieces) == 5 * 2 and all(worker == split_on[key[1]] for key, worker in pieces)
    ranges: dict[int, set[str]] = {}
    for key, worker in ran:
        if key_split(key) in ("range-join", "range-totals", "range-pass", "range-finish"):
            ranges.setdefault(key[1], set()).add(worker)
    assert sorted(ranges) == list(range(5)) and all(len(each) == 1 for each in ranges.values())
    assert {worker for (worker,) in ranges.values()} == set(split_on.values())
    want = evaluate(
        "binary", frame.label.to_numpy(), frame.score.to_numpy(),
        sample_weight=frame.weight.to_numpy(),  # the frame's weight column is read
    )  # fmt: skip
    for name, value in want.metrics.items():
        if value is None:
            assert got.metrics[name] is None, name
        else:
            assert got.metrics[name] == pytest.approx(value, rel=1e-12, abs=1e-12), name


@pytest.mark.parametrize("method", ["tree", "ranges"])
def test_a_bad_row_names_its_partition(client: Client, method: str) -> None:
    frame = pd.DataFrame({"label": [0, 1] * 10, "score": np.linspace(0, 1, 20)})
    frame.loc[13, "score"] = np.nan
    data = dd.from_pandas(frame, npartitions=2)
    with pytest.raises(InvalidInputError, match=r"^score: partition 1: row 3 is missing"):
        evalserve_dask.evaluate(data, task="binary", method=method)


def test_a_bad_label_in_a_range_names_its_row_in_the_partition(client: Client) -> None:
    """The ranges path splits each partition into its ranges in one task: a bad row found in
    one range's rows is named by its row in the partition."""
    frame = pd.DataFrame({"label": [0, 1] * 10, "score": np.linspace(1, 0, 20)})
    frame.loc[17, "label"] = 5
    data = dd.from_pandas(frame, npartitions=2)
    with pytest.raises(InvalidInputError, match=r"^labels: partition 1: .*row 7\b"):
        evalserve_dask.evaluate(data, task="binary", method="ranges", ranges=4)


@pytest.mark.parametrize("method", ["tree", "ranges"])
def test_label_names_with_positive_label_equal_1_0_labels(client: Client, method: str) -> None:
    """options.positive_label reads a text label column on both methods: the answer of the
    same rows with 1/0 labels on the same method (the tree's is the in-process answer)."""
    rng = np.random.default_rng(9)
    labels = rng.integers(0, 2, 3000)
    scores = np.round(rng.random(3000) * 0.6 + labels * 0.3, 3)
    frame = pd.DataFrame({"label": np.where(labels == 1, "yes", "no"), "score": scores})
    data = dd.from_pandas(frame, npartitions=3)
    options = {"positive_label": "yes", "max_curve_points": 0}
    got = evalserve_dask.evaluate(data, task="binary", options=options, method=method, ranges=3)
    plain = dd.from_pandas(pd.DataFrame({"label": labels, "score": scores}), npartitions=3)
    same = {"max_curve_points": 0}
    want = evalserve_dask.evaluate(plain, task="binary", options=same, method=method, ranges=3)
    assert _json(got) == _json(want)
    if method == "tree":
        assert _json(got) == _json(evaluate("binary", labels, scores, options=same))


def _slow_part(seed: int) -> pd.DataFrame:
    time.sleep(1.0)
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"label": rng.integers(0, 2, 500), "score": rng.random(500)})


@pytest.mark.parametrize("method", ["tree", "ranges"])
def test_a_killed_worker_is_recovered(client: Client, method: str) -> None:
    """A worker killed while the partitions are read (the ranges path persists them): Dask
    reads its partitions again elsewhere, and the ranges take each worker's pieces where the
    partitions then are."""
    parts = [delayed(_slow_part)(seed) for seed in range(8)]
    meta = pd.DataFrame({"label": pd.Series(dtype="int64"), "score": pd.Series(dtype="float64")})
    data = dd.from_delayed(parts, meta=meta)
    whole = pd.concat([_slow_part(seed) for seed in range(8)])
    pids = client.run(os.getpid)
    victim = sorted(pids.values())[0]

    def kill_soon() -> None:
        time.sleep(1.5)
        os.kill(victim, signal.SIGKILL)

    import threading

    killer = threading.Thread(target=kill_soon)
    killer.start()
    got = evalserve_dask.evaluate(data, task="binary", method=method)
    killer.join()
    assert victim not in client.run(os.getpid).values()  # the nanny started a new worker
    want = evaluate("binary", whole.label.to_numpy(), whole.score.to_numpy())
    if method == "tree":
        assert _json(got) == _json(want)
        return
    for name, value in want.metrics.items():
        if value is None:
            assert got.metrics[name] is None, name
        else:
            assert got.metrics[name] == pytest.approx(value, rel=1e-12, abs=1e-12), name


def test_the_command_line_on_a_scheduler(client: Client, tmp_path: Path) -> None:
    _, frame = _binary_frame(5000, tmp_path)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "evalserve",
            "evaluate",
            str(tmp_path / "binary"),
            "--engine",
            "dask",
            "--scheduler",
            str(client.scheduler_info()["address"]),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    want = _in_process(frame)
    assert json.loads(done.stdout) == json.loads(_json(want))


def test_the_report_on_a_scheduler(client: Client, tmp_path: Path) -> None:
    _, frame = _binary_frame(5000, tmp_path)
    page = tmp_path / "report.html"
    done = subprocess.run(
        [
            sys.executable, "-m", "evalserve", "report", str(tmp_path / "binary"),
            "--engine", "dask", "--scheduler", str(client.scheduler_info()["address"]),
            "-o", str(page),
        ],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    want = _in_process(frame)
    html = page.read_text(encoding="utf-8")
    assert f'data-value="{want.metrics["roc_auc"]!r}"' in html
    assert f'data-value="{want.metrics["average_precision"]!r}"' in html


def _in_process(frame: Any) -> Any:
    """``evaluate`` on a binary frame's columns, with its weights."""
    return evaluate(
        "binary",
        frame.label.to_numpy(),
        frame.score.to_numpy(),
        sample_weight=frame.weight.to_numpy(),
    )


def _segmented_frame(n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "label": RNG.integers(0, 2, n),
            "score": np.round(RNG.random(n), 3),
            "weight": RNG.integers(0, 3, n).astype(float),
            "country": RNG.choice(["DE", "FR", "US", "NL"], n),
        }
    )


def _segmented_in_process(frame: pd.DataFrame, **kwargs: Any) -> Any:
    return evaluate(
        "binary",
        frame.label.to_numpy(),
        frame.score.to_numpy(),
        sample_weight=frame.weight.to_numpy(),
        segments=frame.country.tolist(),
        **kwargs,
    )


@pytest.mark.parametrize("dtype", ["object", "category"])
def test_the_tree_with_segments_equals_in_process(client: Client, dtype: str) -> None:
    frame = _segmented_frame(8000)
    data = dd.from_pandas(frame.astype({"country": dtype}), npartitions=7)
    got = evalserve_dask.evaluate(data, task="binary", segment="country", split_every=2)
    want = _segmented_in_process(frame)
    assert sorted(got.segments) == ["DE", "FR", "NL", "US"]
    assert _json(got) == _json(want)
    # Each segment's own AUC monitor, its state carried in by name.
    baseline = {"roc_auc": 0.9, "roc_auc_variance": 1e-4}
    first = _segmented_in_process(frame, baseline=baseline)
    states = {name: each.monitor_state for name, each in first.segments.items()}
    got = evalserve_dask.evaluate(
        data, task="binary", segment="country", baseline=baseline, segment_monitor_states=states
    )
    want = _segmented_in_process(frame, baseline=baseline, segment_monitor_states=states)
    assert _json(got) == _json(want)


def test_segments_on_dask_are_capped_and_refused_by_the_ranges(client: Client) -> None:
    frame = _segmented_frame(2000)
    # Each partition holds two of the four segments: only the merges see all four.
    odd = np.arange(2000) % 2 == 1
    frame["country"] = np.where(np.arange(2000) < 1000, np.where(odd, "DE", "FR"),
                                np.where(odd, "US", "NL"))  # fmt: skip
    data = dd.from_pandas(frame, npartitions=2)
    with pytest.raises(InvalidInputError, match="at most 3 distinct segments"):
        evalserve_dask.evaluate(data, task="binary", segment="country", max_segments=3)
    with pytest.raises(InvalidInputError, match="the ranges method does not take segments"):
        evalserve_dask.evaluate(data, task="binary", segment="country", method="ranges")
    frame.loc[5, "country"] = "x" * 200_000
    with pytest.raises(InvalidInputError, match=r"^segments: partition 0: the segment name at "):
        evalserve_dask.evaluate(dd.from_pandas(frame, npartitions=2), segment="country")


def test_segments_on_the_command_line_on_a_scheduler(client: Client, tmp_path: Path) -> None:
    frame = _segmented_frame(5000)
    folder = tmp_path / "segmented"
    dd.from_pandas(frame, npartitions=4).to_parquet(folder)
    command = [
        sys.executable, "-m", "evalserve", "evaluate", str(folder), "--engine", "dask",
        "--scheduler", str(client.scheduler_info()["address"]), "--segment-column", "country",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == json.loads(_json(_segmented_in_process(frame)))
    done = subprocess.run(
        [*command, "--max-segments", "2", "--fold-segments"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and "the dask engine does not fold" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "task",
    ["_partition_state", "_range_batch", "_split", "_merged", "_range_classes", "_pass", "_finish"],
)
def test_every_task_of_the_cluster_sorts_on_one_thread(task: str) -> None:
    """The cluster's workers are the parallelism: a task's own sorts take one thread."""
    wrapped = getattr(evalserve_dask, task)
    assert wrapped.__wrapped__.__name__ == task
    with using_threads(4):
        assert evalserve_dask._one_thread(current_threads)() == 1
        assert current_threads() == 4


def test_the_cluster_computes_with_one_thread_a_task(client: Client) -> None:
    seen = client.submit(evalserve_dask._one_thread(current_threads), pure=False).result()
    assert seen == 1


@pytest.mark.skipif(not hasattr(pty, "openpty"), reason="needs a pseudo-terminal")
@pytest.mark.parametrize("method", ["tree", "ranges"])
def test_a_progress_line_on_a_terminal(client: Client, tmp_path: Path, method: str) -> None:
    data, frame = _binary_frame(5000, tmp_path, partitions=4)
    partitions = data.npartitions
    command = [
        sys.executable, "-m", "evalserve", "evaluate", str(tmp_path / "binary"), "--engine",
        "dask", "--scheduler", str(client.scheduler_info()["address"]), "--dask-method", method,
    ]  # fmt: skip
    status, text = on_a_terminal(command, tmp_path / "out.json")
    assert status == 0, text
    got = json.loads((tmp_path / "out.json").read_text())
    assert got["metrics"]["roc_auc"] == pytest.approx(_in_process(frame).metrics["roc_auc"])
    # The last drawing of the line: every partition and row, then the cursor on a fresh line.
    last = text.rstrip("\r\n").split("\r")[-1].strip()
    assert re.fullmatch(
        rf"evaluating: 5,000 rows, [\d,]+ rows/s, {partitions}/{partitions} partitions", last
    ), text
    assert text.endswith("\n") and "Traceback" not in text
    if method == "ranges":  # its first pass reads the partitions: that line ends, then the next
        sampled = r"\rreading: 5,000 rows, [\d,]+ rows/s, (\d+)/\1 partitions\r?\n\revaluating: "
        assert re.search(sampled, text), text


def test_no_progress_line_when_stderr_is_not_a_terminal(client: Client, tmp_path: Path) -> None:
    _binary_frame(2000, tmp_path, partitions=3)
    done = subprocess.run(
        [
            sys.executable, "-m", "evalserve", "evaluate", str(tmp_path / "binary"), "--engine",
            "dask", "--scheduler", str(client.scheduler_info()["address"]),
        ],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "rows/s" not in done.stderr and "partition" not in done.stderr
    assert json.loads(done.stdout)["n_samples"] == 2000


def test_the_progress_callback_counts_every_partition(client: Client, tmp_path: Path) -> None:
    data, frame = _binary_frame(3000, tmp_path, partitions=3)
    calls: list[tuple[str, int, int, int]] = []
    got = evalserve_dask.evaluate(data, task="binary", progress=lambda *call: calls.append(call))
    assert _json(got) == _json(_in_process(frame))
    total = data.npartitions
    assert calls[0] == ("evaluating", 0, total, 0)
    assert calls[-1] == ("evaluating", total, total, 3000)
    assert [call[1] for call in calls] == list(range(total + 1))
    # A bad row: the cluster's error, as without the callback.
    broken = dd.from_pandas(pd.DataFrame({"label": [0, 2], "score": [0.1, 0.2]}), npartitions=1)
    with pytest.raises(InvalidInputError, match="partition 0"):
        evalserve_dask.evaluate(broken, progress=lambda *call: None)
