"""One sweep over the score columns gives every one-vs-rest, one-vs-one and micro ranking
statistic, with no sort per column.

Every score is located among the distinct true-class scores T (``_locate``). For column j:

* One-vs-rest, class j. Its positives are the class-j rows' scores of column j, which are
  values of T. A positive at the i-th distinct class-j value u_i sits at *class slot* 2 i + 1;
  a negative sits at 2 i + 1 when it equals u_i and at 2 i when it lies strictly between
  u_{i-1} and u_i. The positive and negative weight per class slot is a ``BinaryStats`` whose
  "distinct scores" are the class slots: negatives between two positives merge into one
  entry, which changes no ROC point where a positive is added, so the ROC AUC, average
  precision, KS statistic and DeLong placements computed from it are exact. Its thresholds
  are slot numbers, not scores.
* One-vs-one, A(j|c) for every c at once (Hand & Till 2001): each row of class c adds its
  weight times the class-j weight strictly above its class slot plus half the weight at it;
  one ``np.bincount`` over the true classes sums them.
* Micro: every negative of column j (rows of another class) adds its weight to its place
  among T; the positives of the flattened problem are T itself (``_micro``).

The cost per column is one locate and a few linear passes: k columns cost about k sorts'
worth of work for one-vs-rest, one-vs-one and micro together (scikit-learn's one-vs-one makes
k (k - 1) / 2 passes over the rows and sorts each pair).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from evalserve.core._options import Options
from evalserve.core.binary._operating import KINDS
from evalserve.core.binary._stats import BinaryStats
from evalserve.core.multiclass._columns import column_groups
from evalserve.core.multiclass._inputs import MulticlassInputs
from evalserve.core.multiclass._locate import Located, TrueScores, order_keys
from evalserve.core.multiclass._operating import SlotScores, gap_scores, prefill

__all__ = ["Micro", "RankingStats", "distinct_with_mass", "ranking_stats", "true_class_scores"]

Floats = NDArray[np.float64]
Indices = NDArray[np.intp]
Bools = NDArray[np.bool_]


@dataclass(frozen=True, slots=True, eq=False)
class Micro:
    """The flattened problem: the distinct true-class scores T (``values``, ascending) with
    ``mass[p]`` positive weight at T[p] (0 for the scores of rows of weight zero only);
    negative weight strictly between T[p-1] and T[p] (``gap[p]``, n_T + 1 entries) and equal
    to T[p] (``tie[p]``); ``counts``: every weight is a count (the rows were unweighted)."""

    values: Floats
    mass: Floats
    gap: Floats
    tie: Floats
    counts: bool = False  # every weight is a count (unweighted rows)


@dataclass(frozen=True, slots=True, eq=False)
class RankingStats:
    """``one_vs_rest[j]``: class j against the rest on class slots; ``pairs[j, c]``: the
    weighted count of (class-j row, class-c row) pairs that column j ranks right, ties
    counting half (the diagonal is 0); ``micro``: the flattened problem on positions among T;
    ``class_mass``: the weight of each class; ``slots``: the scores behind each class's slots
    (``_operating``), empty when the one-vs-rest statistics are on scores; ``cross_ties``
    False: no row's score of another class equals a true-class score (so none equals its
    own), as far as the statistics know."""

    one_vs_rest: tuple[BinaryStats, ...]
    pairs: Floats
    micro: Micro
    class_mass: Floats
    slots: tuple[SlotScores, ...] = ()
    cross_ties: bool = True


def true_class_scores(scores: NDArray[np.float64], labels: Indices) -> Floats:
    """Each row's score of its true class (``scores`` C-contiguous), gathered from the flat
    matrix: faster than a two-index gather."""
    n_rows, n_classes = scores.shape
    flat = np.arange(0, n_rows * n_classes, n_classes)
    flat += labels
    return np.asarray(scores.ravel().take(flat), dtype=np.float64)


def distinct_with_mass(values: Floats, weights: Floats | None) -> tuple[Floats, Floats]:
    """Distinct values (ascending) and the weight (count) at each."""
    if weights is None:
        ordered = np.sort(values)
        starts = _run_starts(ordered)
        counts = np.diff(starts, append=ordered.size).astype(np.float64)
        return ordered.take(starts), counts
    order = np.argsort(values)
    ordered = values.take(order)
    starts = _run_starts(ordered)
    return ordered.take(starts), np.add.reduceat(weights.take(order), starts)


def _run_starts(ordered: Floats) -> Indices:
    new = np.empty(ordered.size, dtype=np.bool_)
    new[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    return np.flatnonzero(new)


def ranking_stats(
    inputs: MulticlassInputs, true_scores: Floats, options: Options | None = None
) -> RankingStats:
    """The ranking statistics of validated rows; ``options`` say which scores behind the
    one-vs-rest slots to keep while each column is at hand (``_operating``)."""
    labels, weights = inputs.labels, inputs.weights
    n_classes = inputs.n_classes
    nonnegative = inputs.low >= 0
    values, mass = distinct_with_mass(true_scores, weights)
    truth = TrueScores.build(values, mass, nonnegative=nonnegative)
    sweep = _Sweep(truth, labels, weights, n_classes)
    sweep.scores = inputs.scores
    if options is not None:
        sweep.budgets = options.flagged_share
        sweep.every_value = any(getattr(options, kind) for kind in KINDS[:-1])
    _add_columns(sweep, inputs, nonnegative=nonnegative)
    return sweep.result()


@dataclass(frozen=True, slots=True, eq=False)
class _RowBuffers:
    """Per-row arrays of one pass over the columns, reused column after column: fresh pages
    of that size cost about as much as a pass over them."""

    slot: Indices
    values: Floats

    @classmethod
    def of(cls, n_rows: int) -> _RowBuffers:
        return cls(np.empty(n_rows, np.intp), np.empty(n_rows))


def _add_columns(sweep: _Sweep, inputs: MulticlassInputs, *, nonnegative: bool) -> None:
    """Every score column into the sweep, a group of columns at a time (``column_groups``).
    A column's positions among T overwrite it in its group's block once it is located (the
    scores read later come from the matrix), so that the micro counts of a whole group are
    taken at once: one pass over the counts per group, not per column. The row buffers go
    before the result is built."""
    buffers = _RowBuffers.of(inputs.n_rows)
    # Without zeros there is no -0.0, and a positive float's bits are already its key.
    raw_bits = inputs.low > 0
    for first, block in column_groups(inputs.scores):
        positions = block.view(np.int64)
        for offset, column in enumerate(block):
            keys = (
                column.view(np.uint64) if raw_bits else order_keys(column, nonnegative=nonnegative)
            )
            located = sweep.truth.locate(keys, out=positions[offset])
            sweep.add(first + offset, located, buffers)
        sweep.count_rows(positions)


class _Sweep:
    """The statistics of the columns seen so far."""

    def __init__(
        self, truth: TrueScores, labels: Indices, weights: Floats | None, n_classes: int
    ) -> None:
        self.truth, self.labels, self.weights = truth, labels, weights
        self.n_classes = n_classes
        # A stable sort of small integers is a radix sort.
        small = labels.astype(np.uint16) if n_classes <= 1 << 16 else labels
        order = np.argsort(small, kind="stable")
        bounds = np.zeros(n_classes + 1, dtype=np.intp)
        np.cumsum(np.bincount(labels, minlength=n_classes), out=bounds[1:])
        self.rows = [order[bounds[c] : bounds[c + 1]] for c in range(n_classes)]
        self.one_vs_rest: list[BinaryStats] = []
        self.pairs = np.zeros((n_classes, n_classes))
        # Micro, per position p among T. Weighted: the negative weight strictly between T[p-1]
        # and T[p] ("gap") and equal to T[p] ("tie"). Unweighted: counts of every row at p
        # and of the tied ones (T's own rows included; ``result`` takes them out).
        size = truth.size + 1
        weighted = weights is not None
        self.micro_gap = np.zeros(size if weighted else 0)
        self.micro_tie = np.zeros(size if weighted else 0)
        self.micro_rows = np.zeros(0 if weighted else size, dtype=np.int64)
        self.micro_tied = np.zeros(0 if weighted else size, dtype=np.int64)
        self.has_class = np.zeros(truth.size + 1, dtype=np.bool_)
        self.class_below = np.zeros(truth.size + 1, dtype=np.intp)
        self.scores: Floats = np.empty((0, n_classes))
        self.budgets: tuple[float, ...] = ()
        self.every_value = False
        self.slots: list[SlotScores] = []
        # Whether a column had rows tied with a value of T besides its own class's (all are).
        self.cross_ties = False

    def add(self, j: int, located: Located, buffers: _RowBuffers) -> None:
        position, tied = located.position, located.tied
        tie_position = position.take(tied)
        own = self.rows[j]
        self.cross_ties |= tied.size > own.size
        slot = self._class_slots(position, own, tied, tie_position, buffers.slot)
        n_slots = 2 * int(self.class_below[-1]) + 1
        weights = self.weights
        if weights is None:
            counts = np.bincount(slot.take(own), minlength=n_slots)
            negative = np.subtract(np.bincount(slot, minlength=n_slots), counts, dtype=np.float64)
            positive = counts.astype(np.float64)
            rest = None
        else:
            rest = weights.copy()
            rest[own] = 0.0
            positive = _summed(slot.take(own), weights[own], n_slots)
            negative = _summed(slot, rest, n_slots)
        reduced = _reduced(positive, negative, self.labels.size, rest is not None)
        self.one_vs_rest.append(reduced)
        self._keep_slots(j, slot, reduced)
        # One-vs-one: a row at slot s is below the class weight above s plus half that at s.
        if weights is None:  # counts: their running sum in integers is exact, and faster
            placement = np.subtract(counts.sum(), np.cumsum(counts), dtype=np.float64)
            placement += 0.5 * positive
        else:
            placement = positive.sum() - np.cumsum(positive) + 0.5 * positive
        row_pairs = np.take(placement, slot, out=buffers.values, mode="clip")
        if weights is not None:
            row_pairs *= weights
        self.pairs[j] = np.bincount(self.labels, weights=row_pairs, minlength=self.n_classes)
        self.pairs[j, j] = 0.0
        self._micro(position, tied, tie_position, rest)

    def _keep_slots(self, j: int, slot: Indices, reduced: BinaryStats) -> None:
        """What class j's operating points will read of the scores behind its slots: the
        slots its equal error rate and alert budgets search (``prefill``), their scores (u_i,
        the values of T the class holds, marked by ``_class_slots``) or their negatives; and
        every u_i when a target is asked for."""
        known, gaps = {}, {}
        for kept in prefill(reduced.scores, reduced.pos, reduced.neg, self.budgets):
            if kept % 2:
                # The (kept // 2)-th value of T the class holds: class_below counts them.
                at = int(np.searchsorted(self.class_below, kept // 2 + 1, side="left")) - 1
                known[kept] = float(self.truth.values[at]) + 0.0
                continue
            rows = np.flatnonzero(slot == kept)
            weights = None if self.weights is None else self.weights[rows]
            gaps[kept] = gap_scores(self.scores[rows, j], weights)
        every = []
        if self.every_value:
            every.append(self.truth.values[np.flatnonzero(self.has_class[:-1])] + 0.0)
        self.slots.append(SlotScores(j, self.scores, self.labels, self.weights, known, gaps, every))

    def _class_slots(
        self, position: Indices, own: Indices, tied: Indices, tie_position: Indices, out: Indices
    ) -> Indices:
        """Each row's class slot (into ``out``): 2 (class-j values below it) + (it equals a
        class-j value). Gathers are ``take``s (with ``out``, mode "clip" writes straight into
        it; "raise" would buffer the whole result first)."""
        has, below = self.has_class, self.class_below
        has[:] = False
        has[position.take(own)] = True
        np.cumsum(has[:-1], out=below[1:])
        slot = np.take(below, position, out=out, mode="clip")
        slot <<= 1
        slot[tied] += has.take(tie_position)
        return slot

    def _micro(
        self, position: Indices, tied: Indices, tie_position: Indices, rest: Floats | None
    ) -> None:
        """Every row of the column, the class's own rows included (they are T's values, all
        tied: ``result`` takes T's weight back out of the ties)."""
        size = self.truth.size + 1
        if rest is None:  # every row is counted with its group (``count_rows``)
            np.add.at(self.micro_tied, tie_position, 1)
            return
        # Weighted: sums of the same weights in another order could leave a residue where a
        # difference should be 0, so gaps and ties are summed apart, the class's rows out.
        gap = rest.copy()
        gap[tied] = 0.0
        self.micro_gap += np.bincount(position, weights=gap, minlength=size)
        np.add.at(self.micro_tie, tie_position, rest[tied])

    def count_rows(self, positions: NDArray[np.int64]) -> None:
        """Unweighted: the micro count of every row of a group of columns at its position
        among T (a counting pass beats a scattered add). The class's own rows are counted too:
        they are T's values, all tied (``result`` takes T's weight back out of the ties)."""
        if self.weights is None:
            self.micro_rows += np.bincount(positions.ravel(), minlength=self.truth.size + 1)

    def result(self) -> RankingStats:
        truth = self.truth
        if self.weights is not None:
            gap, tie = self.micro_gap, self.micro_tie[:-1]
        else:  # counts: the differences are exact
            gap = np.subtract(self.micro_rows, self.micro_tied, dtype=np.float64)
            tie = self.micro_tied[:-1] - truth.mass
        class_mass = np.bincount(self.labels, weights=self.weights, minlength=self.n_classes)
        return RankingStats(
            tuple(self.one_vs_rest),
            self.pairs,
            Micro(truth.values, truth.mass, gap, tie, counts=self.weights is None),
            class_mass.astype(np.float64),
            tuple(self.slots),
            self.cross_ties,
        )


def _summed(index: Indices, weights: Floats, size: int) -> Floats:
    """The weight at each index 0..size-1."""
    return np.asarray(np.bincount(index, weights=weights, minlength=size), dtype=np.float64)


def _reduced(positive: Floats, negative: Floats, n_rows: int, weighted: bool) -> BinaryStats:
    """A ``BinaryStats`` over slots, empty slots dropped; slot numbers stand in for scores."""
    occupied = np.flatnonzero((positive > 0) | (negative > 0))
    return BinaryStats(
        occupied.astype(np.float64),
        positive.take(occupied),
        negative.take(occupied),
        n_rows,
        weighted,
    )
