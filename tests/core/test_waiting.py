"""Waiting batches: their totals are kept as they join, and they fold when the policy says.

``Waiting`` (core/_state.py) holds the batches a state has not folded into its sorted statistic.
These tests check its bookkeeping, its fold policy, and what the policy promises end to end: a
long stream of repeated values holds a state that follows the distinct values (not the rows)
and gives the one-shot answer, for every task with waiting batches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from evalserve.core import Accumulator, evaluate
from evalserve.core._state import DISTINCT_SHARE, MAX_WAITING_PARTS, MIN_FOLD, SAMPLE, Waiting
from evalserve.core.binary._state import BinaryState


@dataclass(frozen=True)
class Part:
    entries: int
    nbytes: int
    values: NDArray[np.float64] | None = None

    def sample(self, limit: int) -> NDArray[np.float64]:
        values = np.zeros(self.entries) if self.values is None else self.values
        return values[:limit]


def test_joined_waiting_batches_add_their_totals() -> None:
    first = Waiting.of(Part(3, 24)).joined(Waiting.of(Part(5, 40)))
    assert (first.folded_in, first.folded_kept) == (0, 0)  # small: nothing sampled
    both = first.joined(Waiting.of(Part(7, 56)))
    assert [part.entries for part in both.parts] == [3, 5, 7]
    assert (both.entries, both.nbytes) == (15, 120)
    emptied = both.emptied(held_before=10, held_after=12)
    assert (emptied.parts, emptied.entries, emptied.nbytes) == ((), 0, 0)
    assert (emptied.folded_in, emptied.folded_kept) == (25, 12)
    # Fold histories add up when states join.
    assert emptied.joined(emptied).folded_in == 50


def test_a_state_without_folds_samples_its_values_once_when_they_pass_the_floor() -> None:
    distinct = np.arange(3 * SAMPLE, dtype=np.float64) + 0.5
    first = Waiting.of(Part(3 * SAMPLE, 0, distinct))
    joined = first.joined(Waiting.of(Part(2, 0, np.array([7.0, 7.0]))))
    # The newest batches first: the two 7s and SAMPLE - 2 distinct values.
    assert (joined.folded_in, joined.folded_kept) == (SAMPLE, SAMPLE - 1)
    assert not joined.due(held=0, lazy_min=1 << 20)  # distinct: waits for the lazy threshold
    repeated = first.joined(Waiting.of(Part(3 * SAMPLE, 0, distinct % 10)))
    assert (repeated.folded_in, repeated.folded_kept) == (SAMPLE, 10)
    assert repeated.due(held=0, lazy_min=1 << 20)
    # Sampled once: what it learned is history, carried by later joins.
    again = repeated.joined(Waiting.of(Part(5, 0, np.arange(5.0))))
    assert (again.folded_in, again.folded_kept) == (SAMPLE, 10)


def test_nothing_folds_below_the_floor() -> None:
    waiting = Waiting.of(Part(MIN_FOLD, 8 * MIN_FOLD))
    assert not waiting.due(held=0, lazy_min=1 << 20)


def test_before_any_fold_and_while_folds_compact_batches_fold_once_they_outweigh_the_state() -> (
    None
):
    fresh = Waiting.of(Part(MIN_FOLD + 1, 0))
    assert fresh.due(held=0, lazy_min=1 << 20)
    assert fresh.due(held=MIN_FOLD, lazy_min=1 << 20)
    assert not fresh.due(held=MIN_FOLD + 1, lazy_min=1 << 20)
    compacting = Waiting(fresh.parts, fresh.entries, 0, folded_in=10_000, folded_kept=100)
    assert compacting.due(held=200, lazy_min=1 << 20)


def test_while_folds_keep_distinct_values_batches_wait_for_the_lazy_threshold() -> None:
    """Distinct values fold only once more than MAX_WAITING_PARTS batches wait, past 3x the
    state and the lazy threshold: a few large batches wait for the result (one sort)."""
    kept = int(DISTINCT_SHARE * 10_000) + 1
    parts = MAX_WAITING_PARTS + 1

    def waiting(entries: int, count: int) -> Waiting[Part]:
        each = entries // count
        return Waiting(
            tuple(Part(each, 0) for _ in range(count)), each * count, 0,
            folded_in=10_000, folded_kept=kept,
        )  # fmt: skip

    assert not waiting(50_000, parts).due(held=10_000, lazy_min=1 << 20)  # under 3x and 1M
    many = waiting(2_000_000 + parts, parts)
    assert many.due(held=10_000, lazy_min=1 << 20)
    assert not many.due(held=700_000, lazy_min=1 << 20)  # under 3x the state
    few = waiting(2_000_000, 10)
    assert not few.due(held=10_000, lazy_min=1 << 20)  # large batches wait for the result


def _repeated(task: str, rows: int, rng: np.random.Generator) -> dict[str, Any]:
    """Rows whose scores (errors, for regression) take few distinct values."""
    if task == "binary":
        return {"y_true": rng.integers(0, 2, rows), "y_score": rng.integers(0, 50, rows) / 50}
    if task == "multiclass":
        return {
            "y_true": rng.integers(0, 3, rows),
            "y_score": rng.integers(0, 5, (rows, 3)) / 4.0,
        }
    if task == "multilabel":
        return {
            "y_true": rng.integers(0, 2, (rows, 3)),
            "y_score": rng.integers(0, 10, (rows, 3)) / 10,
        }
    truth = rng.integers(-50, 50, rows).astype(float)
    return {"y_true": truth, "y_score": None, "y_pred": truth + rng.integers(-3, 4, rows)}


def _numbers(value: Any, path: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        return {
            k: v for key, item in value.items() for k, v in _numbers(item, f"{path}.{key}").items()
        }
    if isinstance(value, list):
        return {
            k: v for i, item in enumerate(value) for k, v in _numbers(item, f"{path}[{i}]").items()
        }
    return {path: value}


@pytest.mark.parametrize("task", ["binary", "multiclass", "multilabel", "regression"])
def test_a_long_stream_of_repeated_values_holds_the_distinct_values_and_the_whole_answer(
    task: str,
) -> None:
    rng = np.random.default_rng(7)
    batches, size = 400, 50  # 20,000 rows: several folds past the floor
    rows = _repeated(task, batches * size, rng)
    accumulator = Accumulator(task)
    largest = 0
    for start in range(0, batches * size, size):
        part = {key: None if value is None else value[start : start + size]
                for key, value in rows.items()}  # fmt: skip
        accumulator.update(part["y_true"], part["y_score"], y_pred=part.get("y_pred"))
        largest = max(largest, accumulator.nbytes)
    # The rows alone take 16 bytes each (8 per score cell or error, at least); the state never
    # held more than the fold floor's worth of them beside its few distinct values.
    per_row = 16 if task == "binary" else 8 * max(1, np.asarray(rows["y_true"]).shape[-1])
    assert largest < 2 * (MIN_FOLD * 8 + 50 * per_row) + 64_000
    assert largest < batches * size * per_row / 4
    whole = evaluate(task, rows["y_true"], rows["y_score"], y_pred=rows.get("y_pred"))
    expected, got = _numbers(whole.to_dict()), _numbers(accumulator.result().to_dict())
    assert got.keys() == expected.keys()
    for path, value in expected.items():
        if isinstance(value, float) and isinstance(got[path], float):
            assert got[path] == pytest.approx(value, rel=1e-12, abs=1e-12), path
        else:
            assert got[path] == value, path


def test_a_stream_of_distinct_scores_folds_once_then_waits() -> None:
    rng = np.random.default_rng(8)
    labels, scores = rng.integers(0, 2, 100_000), rng.random(100_000)
    accumulator = Accumulator("binary")
    for start in range(0, 100_000, 1_000):
        accumulator.update(labels[start : start + 1_000], scores[start : start + 1_000])
    state = accumulator._state()
    assert isinstance(state, BinaryState)
    # Samples told every level that its scores are distinct: nothing was folded, every batch
    # waits for the lazy threshold (a million entries), so the stream costs one sort.
    waiting = state.scores.waiting
    assert waiting.folded_kept > DISTINCT_SHARE * waiting.folded_in
    assert state.scores.held == 0 and waiting.entries == 100_000
    assert accumulator.result().metrics == evaluate("binary", labels, scores).metrics
