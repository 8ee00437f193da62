"""The arrays of task multilabel's state (:mod:`core._state_format` writes and reads them), and
the checks that rebuild a statistic only from arrays some state could have written.

Arrays (k labels, E entries over all labels, m groups of rows, L distinct LRAP values)::

    n_rows, weighted, sent.scores, sent.predictions      0-d
    labels.tp, labels.fp, labels.fn                      k     float64
    columns.offsets                                      k + 1 int64
    columns.scores, columns.positive, columns.negative   E     float64
    samples.cells                                        m x 3 int64
    samples.weight (float64), samples.rows (int64)       m
    samples.coverage                                     k     float64
    samples.lrap, samples.lrap_weight                    L     float64

Every mass is a sum of weights in [MIN_WEIGHT, MAX_WEIGHT] (or a count), so it is bounded by
``n_rows`` times the largest weight: the checks refuse larger ones, which keeps every product of
the metrics finite. Without weights every mass is a count, and the counts must agree with each
other exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalserve.core._errors import InvalidInputError
from evalserve.core._state import Arrays, array_of, check_masses, count_of, flag_of
from evalserve.core._validation import MAX_WEIGHT, MIN_WEIGHT
from evalserve.core.multilabel._columns import ColumnStats
from evalserve.core.multilabel._samples import SampleStats
from evalserve.core.multilabel._stats import MultilabelStats
from evalserve.core.multilabel._threshold import Counts

__all__ = ["stats_arrays", "stats_of_arrays"]

Floats = NDArray[np.float64]
Ints = NDArray[np.int64]

NAMES = frozenset(
    {
        "n_rows", "weighted", "sent.scores", "sent.predictions",
        "labels.tp", "labels.fp", "labels.fn",
        "columns.offsets", "columns.scores", "columns.positive", "columns.negative",
        "samples.cells", "samples.weight", "samples.rows", "samples.coverage",
        "samples.lrap", "samples.lrap_weight",
    }
)  # fmt: skip


def stats_arrays(stats: MultilabelStats, *, scores: bool, predictions: bool) -> Arrays:
    columns, samples = stats.columns, stats.samples
    return {
        "n_rows": np.array(stats.n_rows, dtype=np.int64),
        "weighted": np.array(stats.weighted),
        "sent.scores": np.array(scores),
        "sent.predictions": np.array(predictions),
        "labels.tp": stats.labels.tp,
        "labels.fp": stats.labels.fp,
        "labels.fn": stats.labels.fn,
        "columns.offsets": columns.offsets,
        "columns.scores": columns.scores,
        "columns.positive": columns.pos,
        "columns.negative": columns.neg,
        "samples.cells": samples.cells,
        "samples.weight": samples.weight,
        "samples.rows": samples.rows,
        "samples.coverage": samples.coverage,
        "samples.lrap": samples.lrap,
        "samples.lrap_weight": samples.lrap_weight,
    }


def _bad(message: str) -> InvalidInputError:
    return InvalidInputError("state", message)


def stats_of_arrays(arrays: Mapping[str, NDArray[Any]]) -> tuple[MultilabelStats, bool, bool]:
    """The statistic and the (scores, predictions) flags of ``stats_arrays``'s output."""
    unknown = sorted(set(arrays) - NAMES)
    if unknown:
        raise _bad(f"holds arrays no multilabel state has: {', '.join(map(repr, unknown))}")
    n_rows = count_of(arrays, "n_rows")
    if n_rows == 0:
        raise _bad("array 'n_rows' is 0; a state holds at least one row")
    weighted = flag_of(arrays, "weighted")
    scores, predictions = flag_of(arrays, "sent.scores"), flag_of(arrays, "sent.predictions")
    if not (scores or predictions):
        raise _bad("says its rows came with neither scores nor predictions")
    masses = _Masses(n_rows, weighted)
    columns = _columns(arrays, masses)
    k = columns.n_labels
    labels = Counts(*(masses.read(arrays, f"labels.{part}", k) for part in ("tp", "fp", "fn")))
    samples = _samples(arrays, masses, k)
    stats = MultilabelStats(n_rows, weighted, labels, columns, samples)
    _check_together(stats)
    return stats, scores, predictions


class _Masses:
    """Reads float64 masses: finite, >= 0, below ``n_rows`` x the largest weight, none (but 0)
    below the smallest weight; counts when unweighted."""

    def __init__(self, n_rows: int, weighted: bool) -> None:
        self.n_rows = n_rows
        self.most = float(n_rows) * (MAX_WEIGHT if weighted else 1.0)
        self.weighted = weighted

    def read(
        self, arrays: Mapping[str, NDArray[Any]], name: str, length: int, *, positive: bool = False
    ) -> Floats:
        values = array_of(arrays, name, np.float64, 1, length=length)
        check_masses(name, values)
        if values.size == 0:
            return values
        if float(values.max()) > self.most:
            raise _bad(f"array {name!r} holds a mass above what its rows could weigh")
        held = values[values > 0]
        if positive and held.size < values.size:
            raise _bad(f"array {name!r} holds a zero mass")
        if held.size and float(held.min()) < MIN_WEIGHT:
            raise _bad(f"array {name!r} holds a mass below the smallest weight")
        if not self.weighted and not bool((values == np.floor(values)).all()):
            raise _bad(f"array {name!r} holds a fraction, but the rows carried no weights")
        return values


def _columns(arrays: Mapping[str, NDArray[Any]], masses: _Masses) -> ColumnStats:
    offsets = array_of(arrays, "columns.offsets", np.int64, 1)
    scores = array_of(arrays, "columns.scores", np.float64, 1)
    if offsets.size < 2:
        raise _bad("array 'columns.offsets' holds no label")
    if offsets[0] != 0 or offsets[-1] != scores.size:
        raise _bad(f"array 'columns.offsets' does not run from 0 to its {scores.size} entries")
    if not bool(((offsets >= 0) & (offsets <= scores.size)).all()):
        raise _bad("array 'columns.offsets' points outside 'columns.scores'")
    if not bool((offsets[1:] >= offsets[:-1]).all()):
        raise _bad("array 'columns.offsets' is not ascending")
    if not bool(np.isfinite(scores).all()):
        raise _bad("array 'columns.scores' holds a value that is not finite")
    rising = scores[1:] > scores[:-1]
    ends = offsets[1:-1]
    rising[ends[(ends > 0) & (ends < scores.size)] - 1] = True  # a label starts afresh
    if not bool(rising.all()):
        raise _bad("array 'columns.scores' is not strictly ascending within a label")
    pos = masses.read(arrays, "columns.positive", scores.size)
    neg = masses.read(arrays, "columns.negative", scores.size)
    if not bool((pos + neg > 0).all()):
        raise _bad("arrays 'columns.positive' and 'columns.negative' hold an empty entry")
    return ColumnStats(offsets, scores, pos, neg)


def _samples(arrays: Mapping[str, NDArray[Any]], masses: _Masses, k: int) -> SampleStats:
    cells = array_of(arrays, "samples.cells", np.int64, 2)
    if cells.shape[1] != 3:
        raise _bad(f"array 'samples.cells' has shape {cells.shape}, expected (m, 3)")
    if not bool(((cells >= 0) & (cells <= k)).all()) or not bool((cells.sum(axis=1) <= k).all()):
        raise _bad(f"array 'samples.cells' holds counts that {k} labels cannot have")
    tp, fp, fn = cells[:, 0], cells[:, 1], cells[:, 2]
    later = (tp[1:] > tp[:-1]) | (
        (tp[1:] == tp[:-1]) & ((fp[1:] > fp[:-1]) | ((fp[1:] == fp[:-1]) & (fn[1:] > fn[:-1])))
    )
    if not bool(later.all()):
        raise _bad("array 'samples.cells' is not strictly ascending")
    m = cells.shape[0]
    weight = masses.read(arrays, "samples.weight", m, positive=True)
    rows = array_of(arrays, "samples.rows", np.int64, 1, length=m)
    if not bool((rows >= 1).all()) or sum(rows.tolist()) > masses.n_rows:
        raise _bad("array 'samples.rows' does not count between 1 and 'n_rows' rows")
    coverage = masses.read(arrays, "samples.coverage", k)
    lrap = array_of(arrays, "samples.lrap", np.float64, 1)
    if lrap.size and not bool(((lrap > 0) & (lrap <= 1)).all()):
        raise _bad("array 'samples.lrap' holds a value outside (0, 1]")
    if lrap.size > 1 and not bool((lrap[1:] > lrap[:-1]).all()):
        raise _bad("array 'samples.lrap' is not strictly ascending")
    lrap_weight = masses.read(arrays, "samples.lrap_weight", lrap.size, positive=True)
    return SampleStats(cells, weight, rows, coverage, lrap, lrap_weight)


def _check_together(stats: MultilabelStats) -> None:
    """What the parts of one state say about the same rows must agree: exactly where a mass is
    zero or not, and (without weights, every mass a count) in every count."""
    columns, samples, labels = stats.columns, stats.samples, stats.labels
    if samples.rows.size == 0:  # every row weighed nothing: nothing else may be held
        held = (columns.size, labels.tp.any(), labels.fp.any(), labels.fn.any())
        if not stats.weighted or any(held) or samples.coverage.any() or samples.lrap.size:
            raise _bad("holds masses, but no row of weight > 0")
        return
    if not bool((np.diff(columns.offsets) > 0).all()):
        raise _bad("array 'columns.offsets' leaves a label without entries")
    entries = columns.label_of_entries()
    positives = np.bincount(entries, weights=columns.pos, minlength=columns.n_labels)
    if not bool(((positives > 0) == (labels.tp + labels.fn > 0)).all()):
        raise _bad("its label counts and its label scores disagree on which labels have positives")
    with_true = samples.cells[:, 0] + samples.cells[:, 2] > 0
    ranked = (bool(with_true.any()), bool(samples.coverage.any()), samples.lrap.size > 0)
    if len(set(ranked)) > 1:
        raise _bad("its sample counts, coverage and ranking disagree on the rows with a true label")
    if stats.weighted:
        return
    rows = samples.rows.astype(np.float64)
    negatives = np.bincount(entries, weights=columns.neg, minlength=columns.n_labels)
    agree = (
        sum(samples.rows.tolist()) == stats.n_rows
        and bool((samples.weight == rows).all())
        and bool((positives + negatives == stats.n_rows).all())
        and bool((positives == labels.tp + labels.fn).all())
        and float(samples.coverage.sum()) == float(rows[with_true].sum())
        and float(samples.lrap_weight.sum()) == float(rows[with_true].sum())
        and all(
            float((rows * samples.cells[:, part]).sum()) == float(total.sum())
            for part, total in enumerate((labels.tp, labels.fp, labels.fn))
        )
    )
    if not agree:
        raise _bad("its counts disagree (rows without weights must add up the same everywhere)")
