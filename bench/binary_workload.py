"""The binary benchmark's data and timed calls, shared by ``bench/binary_core.py`` and its
worker processes (``bench/binary_worker.py``), so both sides time exactly the same thing on
exactly the same rows."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalserve.core import EvaluationResult, evaluate

__all__ = [
    "EXPECTED_INTERVALS",
    "EXPECTED_METRICS",
    "OPERATING_OPTIONS",
    "POSITIVE_RATE",
    "SUITE_OPTIONS",
    "THREADED",
    "WEIGHTED_THREADED",
    "WITH_OPERATING",
    "Data",
    "check_suite",
    "make_data",
    "same_summary",
    "suite",
    "summary",
    "tasks",
]

POSITIVE_RATE = 0.1
# The suite's options: every other option at its default (DeLong and Wilson intervals, curves
# thinned to 1000 points).
SUITE_OPTIONS: dict[str, Any] = {"head_k": [100, 10000], "max_fpr": 0.1}
# The suite with four operating points (one target each), timed beside it: the equal error
# rate and the DET curve are in both (every binary result has them).
OPERATING_OPTIONS: dict[str, Any] = {
    **SUITE_OPTIONS,
    "recall_at_precision": [0.5],
    "precision_at_recall": [0.5],
    "tpr_at_fpr": [0.01],
    "specificity_at_sensitivity": [0.9],
}
OPERATING_METRICS = (
    "recall_at_precision_0.5",
    "precision_at_recall_0.5",
    "tpr_at_fpr_0.01",
    "specificity_at_sensitivity_0.9",
    "equal_error_rate",
)
WITH_OPERATING = "our suite with operating points"
# The suites on every CPU this process may run on (``evaluate``'s threads); the others take one.
THREADED = "our suite, threaded"
WEIGHTED_THREADED = "our weighted suite, threaded"
# Metrics that must come out as numbers, so that the timed call really computed "everything".
EXPECTED_METRICS = (
    "roc_auc",
    "roc_auc_partial",
    "average_precision",
    "ap_11_point",
    "ks_statistic",
    "precision_at_100",
    "recall_at_10000",
    "log_loss",
    "expected_calibration_error",
    "mcc",
)
# Intervals that must be there: DeLong's for the ROC AUC, Wilson's for the proportions.
EXPECTED_INTERVALS = ("roc_auc", "accuracy", "precision", "recall", "specificity")
_FILES = ("labels", "scores", "weights")

Floats = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Data:
    """One benchmark data set: int64 0/1 labels, float64 probability scores, float weights."""

    labels: NDArray[np.int64]
    scores: Floats
    weights: Floats

    @property
    def rows(self) -> int:
        return int(self.labels.size)

    def head(self, rows: int) -> Data:
        """The first ``rows`` rows (copies), e.g. for a small warm-up call."""
        return Data(
            self.labels[:rows].copy(), self.scores[:rows].copy(), self.weights[:rows].copy()
        )

    def save(self, folder: Path) -> None:
        """Write the three arrays as .npy files into ``folder`` (for a worker process)."""
        for name in _FILES:
            np.save(folder / f"{name}.npy", getattr(self, name), allow_pickle=False)

    @staticmethod
    def load(folder: Path) -> Data:
        labels, scores, weights = (
            np.load(folder / f"{name}.npy", allow_pickle=False) for name in _FILES
        )
        return Data(labels, scores, weights)


def make_data(rows: int, seed: int) -> Data:
    """Exactly 10% positives at random rows; scores are the logistic of a unit normal shifted by
    1.5 for positives (in (0, 1), so the calibration metrics run too; practically all distinct);
    weights uniform on [0.1, 10)."""
    rng = np.random.default_rng(seed)
    labels = np.zeros(rows, dtype=np.int64)
    labels[: round(rows * POSITIVE_RATE)] = 1
    rng.shuffle(labels)
    logits = rng.standard_normal(rows) + 1.5 * labels
    scores = 1.0 / (1.0 + np.exp(-logits))
    weights = rng.uniform(0.1, 10.0, rows)
    return Data(labels, scores, weights)


def suite(
    data: Data, *, weighted: bool, operating: bool = False, threads: int | None = 1
) -> EvaluationResult:
    """The timed call: everything the core computes for a binary task, through the public
    ``evaluate``, as a data job or a worker calls the library (``operating``: with four
    operating points), on ``threads`` threads (None: the CPUs this process may run on)."""
    weights = data.weights if weighted else None
    options = OPERATING_OPTIONS if operating else SUITE_OPTIONS
    return evaluate(
        "binary", data.labels, data.scores, sample_weight=weights, options=options,
        threads=threads,
    )  # fmt: skip


def tasks(data: Data) -> dict[str, Callable[[], object]]:
    """The calls a benchmark round can time, by name (the same names in every process)."""
    scores = data.scores
    return {
        "np.sort": lambda: np.sort(scores),
        "np.argsort": lambda: np.argsort(scores),
        "our suite": lambda: suite(data, weighted=False),
        "our weighted suite": lambda: suite(data, weighted=True),
        WITH_OPERATING: lambda: suite(data, weighted=False, operating=True),
        THREADED: lambda: suite(data, weighted=False, threads=None),
        WEIGHTED_THREADED: lambda: suite(data, weighted=True, threads=None),
    }


def check_suite(result: object, *, weighted: bool) -> EvaluationResult:
    """``result`` is a whole suite: every expected metric a number, the intervals and the ROC
    and PR curves there (and the calibration curve when the scores are probabilities)."""
    if not isinstance(result, EvaluationResult):
        raise TypeError(f"evaluate returned {type(result).__name__}")
    missing = [name for name in EXPECTED_METRICS if result.metrics.get(name) is None]
    missing += [f"{name} interval" for name in EXPECTED_INTERVALS if name not in result.intervals]
    curves = set(result.curves)
    if missing or not {"roc", "pr", "det"} <= curves <= {"roc", "pr", "det", "calibration"}:
        kind = "weighted" if weighted else "unweighted"
        raise AssertionError(f"the {kind} suite skipped {missing} or curves {set(result.curves)}")
    return result


def summary(name: str, result: object, data: Data) -> dict[str, float]:
    """A few numbers that identify what a task computed, small enough to send between
    processes: two processes agree on them only if they timed the same call on the same rows."""
    if name == "np.sort":
        ordered = np.asarray(result)
        return {
            "first": float(ordered[0]),
            "middle": float(ordered[ordered.size // 2]),
            "last": float(ordered[-1]),
        }
    if name == "np.argsort":
        order = np.asarray(result)
        return {
            "first": float(data.scores[order[0]]),
            "middle": float(data.scores[order[order.size // 2]]),
            "last": float(data.scores[order[-1]]),
        }
    weighted = name in ("our weighted suite", WEIGHTED_THREADED)
    metrics = check_suite(result, weighted=weighted).metrics
    expected: tuple[str, ...] = EXPECTED_METRICS
    if name == WITH_OPERATING:
        expected = (*EXPECTED_METRICS, *OPERATING_METRICS)
    return {metric: float(metrics[metric] or math.nan) for metric in expected}


def same_summary(
    name: str, ours: Mapping[str, float], theirs: Mapping[str, float], where: str
) -> None:
    """Raise unless two summaries of ``name`` agree (to 1e-12: the suites may sum in another
    SIMD order in another process)."""
    if set(ours) != set(theirs) or not all(
        math.isclose(ours[key], theirs[key], rel_tol=1e-12, abs_tol=1e-15) for key in ours
    ):
        raise AssertionError(f"{name} {where} computed {dict(theirs)}, this process {dict(ours)}")
