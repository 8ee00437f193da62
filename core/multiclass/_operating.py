"""Each class's operating points, one-vs-rest: task binary's (``core.binary._operating``) on the
class's column, its rows positive and every other row negative; and their macro averages.

Every search is task binary's own. Its inputs come from the class's one-vs-rest statistic,
which holds the class's scores in one of two forms:

* from an ``Accumulator``'s blocks (``_blocks``), the distinct scores themselves: the sweep is
  the binary sweep of those rows, and binary's functions run on it as they are;
* from rows (``_ranking``), *class slots*: slot 2 i + 1 is u_i, the i-th distinct score of the
  class's rows in its column, and slot 2 i holds, as one entry, the other rows scored strictly
  between u_(i-1) and u_i. The hits (slots 2 i + 1) are exact, so recall at a precision,
  precision at a recall, TPR at an FPR and specificity at a sensitivity are found on the slots
  and their thresholds read back as u_i. The alert budgets and the equal error rate may fall
  between two hits, among the negatives one slot merged: ``SlotClasses`` finds the slot on
  either side of the answer, reads those slots' negatives at their scores (``SlotScores.gap``)
  and runs binary's search again on them, with the mass of the slots above (``Classes``'
  ``pos_above`` / ``neg_above``). The answer is the one binary gives on the rows: the points
  the merged slots hide lie between the two slots read, and the search's condition holds from
  the top down and fails below some point.

While a column is at hand (``_ranking``), the slots the equal error rate and the alert budgets
will read are found on the slot sums and their negatives kept (``prefill``); a slot not kept is
read from the score matrix when a search asks for it (a strided pass over one column).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from evalserve.core._options import Options
from evalserve.core._result import MetricSink
from evalserve.core.binary._classes import ClassScores, class_scores
from evalserve.core.binary._operating import (
    KINDS,
    TOLERANCE,
    Classes,
    Hits,
    Holds,
    Point,
    add_operating_points,
    undefine_operating,
    value_names,
    write_flagged,
)
from evalserve.core.binary._sweep import Sweep
from evalserve.core.binary._threshold import NO_NEGATIVES, NO_POSITIVES, ONE_CLASS

__all__ = [
    "SlotClasses",
    "SlotScores",
    "class_operating",
    "gap_scores",
    "macro_name",
    "operating_macros",
    "operating_order",
    "prefill",
]

Floats = NDArray[np.float64]
Indices = NDArray[np.intp]


def gap_scores(values: Floats, weights: Floats | None) -> ClassScores:
    """One slot's negatives at their scores: distinct, ascending, with their mass."""
    values = values + 0.0  # -0.0 is 0.0, as the blocks hold it
    if values.size == 0:
        return class_scores(values, None)
    distinct, inverse = np.unique(values, return_inverse=True)
    mass = np.bincount(inverse, weights=weights, minlength=distinct.size)
    return class_scores(distinct, np.asarray(mass, dtype=np.float64))


@dataclass(frozen=True, slots=True, eq=False)
class SlotScores:
    """The scores behind one class's slots (see the module's docstring): ``known`` holds the
    score u_i of some odd slots 2 i + 1 and ``gaps`` the negatives of some even slots, those
    kept while the column was at hand; ``every`` all the u_i when they were kept too. Any
    other is read from the rows: ``scores[:, column]``, ``labels`` and ``weights``."""

    column: int
    scores: Floats
    labels: Indices
    weights: Floats | None
    known: dict[int, float] = field(default_factory=dict)
    gaps: dict[int, ClassScores] = field(default_factory=dict)
    every: list[Floats] = field(default_factory=list)

    @property
    def values(self) -> Floats:
        """Every u_i: the distinct scores of the class's rows in its column, ascending."""
        if not self.every:
            own = self.scores[self.labels == self.column, self.column]
            self.every.append(np.unique(own + 0.0))
        return self.every[0]

    def score(self, slot: float) -> float:
        """The score of an odd slot."""
        found = self.known.get(int(slot))
        return float(self.values[int(slot) // 2]) + 0.0 if found is None else found

    def scores_of(self, slots: Floats) -> Floats:
        """The scores of odd slots."""
        found: Floats = self.values[(slots.astype(np.intp) // 2)] + 0.0
        return found

    def bounds(self, slot: int) -> tuple[float, float]:
        """The scores an even slot lies strictly between."""
        i, values = slot // 2, self.values
        low = float(values[i - 1]) if i > 0 else -math.inf
        high = float(values[i]) if i < values.size else math.inf
        return low, high

    def gap(self, slot: int) -> ClassScores:
        """The negatives of an even slot at their scores."""
        found = self.gaps.get(slot)
        if found is None:
            low, high = self.bounds(slot)
            column = self.scores[:, self.column]
            inside = np.flatnonzero((column > low) & (column < high))
            weights = None if self.weights is None else self.weights[inside]
            found = gap_scores(column[inside], weights)
            self.gaps[slot] = found
        return found


@dataclass(frozen=True, slots=True)
class SlotClasses(Classes):
    """Binary's ``Classes`` of one class's slots, whose searches answer on the scores (see the
    module's docstring); ``counts`` takes a score too."""

    slots: SlotScores = field(kw_only=True)

    windows: dict[Holds, Classes] = field(default_factory=dict, kw_only=True)

    def _coarse(self) -> Classes:
        return Classes(self.positives, self.negatives)

    def _window(self, holds: Holds) -> Classes:
        """The scores of the lowest slot where ``holds`` and of the slot below it (the top
        slot when it holds nowhere), with the mass of the slots above them."""
        found = self.windows.get(holds)
        if found is None:
            found = self.windows[holds] = self._window_of(holds)
        return found

    def _window_of(self, holds: Holds) -> Classes:
        coarse = self._coarse()
        top = coarse.lowest_where(holds)
        sides = [side.scores for side in (self.positives, self.negatives) if side.size]
        if top is None:
            window = [max(float(scores[-1]) for scores in sides)]
        else:
            window = [top.threshold]
            below = [
                float(scores[index - 1])
                for scores in sides
                if (index := int(np.searchsorted(scores, top.threshold, side="left"))) > 0
            ]
            if below:
                window.insert(0, max(below))
        pos_above, neg_above = coarse.counts(window[-1] + 0.5)
        pos_scores: list[float] = []
        pos_mass: list[float] = []
        negatives: list[tuple[Floats, Floats]] = []
        for slot in window:  # ascending
            if int(slot) % 2 == 0:
                gap = self.slots.gap(int(slot))
                negatives.append((gap.scores, gap.masses()))
                continue
            score = self.slots.score(slot)
            for side, scores, masses in (
                (self.positives, pos_scores, pos_mass),
                (self.negatives, None, None),
            ):
                index = int(np.searchsorted(side.scores, slot, side="left"))
                if index < side.size and side.scores[index] == slot:
                    mass = float(side.masses()[index])
                    if scores is not None and masses is not None:
                        scores.append(score)
                        masses.append(mass)
                    else:
                        negatives.append((np.array([score]), np.array([mass])))
        return Classes(
            class_scores(np.array(pos_scores, dtype=np.float64), np.array(pos_mass)),
            _joined(negatives),
            pos_above,
            neg_above,
        )

    def lowest_where(self, holds: Holds) -> Point | None:
        return self._window(holds).lowest_where(holds)

    def around(self, holds: Holds) -> tuple[Point | None, Point | None]:
        return self._window(holds).around(holds)

    def counts(self, threshold: float) -> tuple[float, float]:
        """(TP, FP) when ``score >= threshold`` is flagged, ``threshold`` a score."""
        values = self.slots.values
        i = int(np.searchsorted(values, threshold, side="left"))
        tp, fp = self._coarse().counts(2 * i + 1)
        if i < values.size and values[i] == threshold:
            return tp, fp
        gap = self.slots.gap(2 * i)
        position = np.searchsorted(gap.scores, [threshold], side="left")
        return tp, fp + float(gap.mass_at_or_above(position)[0])


def _joined(parts: list[tuple[Floats, Floats]]) -> ClassScores:
    """Negatives of consecutive slots (ascending, disjoint) as one class."""
    if not parts:
        return class_scores(np.empty(0), None)
    scores = np.concatenate([part[0] for part in parts])
    mass = np.concatenate([part[1] for part in parts])
    return class_scores(scores, mass)


# --- while the column is at hand --------------------------------------------------------------


def prefill(
    slots: Floats, positive: Floats, negative: Floats, budgets: tuple[float, ...]
) -> list[int]:
    """The slots the equal error rate and the alert budgets ``budgets`` will read, from the
    occupied slots (ascending) and their positive and negative mass: for each, the lowest slot
    where its condition holds and the slot below it (binary's conditions; a slot missed here,
    by a rounding of float weights summed in another order, is read later)."""
    if slots.size == 0:
        return []
    pos, neg = positive[::-1], negative[::-1]  # from the top
    positives, negatives = float(positive.sum()), float(negative.sum())
    conditions: list[Holds] = []
    if positives > 0 and negatives > 0:
        conditions.append(lambda tp, fp: fp * positives < (positives - tp) * negatives)
    for q in budgets:
        limit = q * (positives + negatives) * (1.0 + TOLERANCE)
        conditions.append(_within(limit))
    found = set()
    for holds in conditions:
        # It holds on the first ``low`` slots from the top: a bisection that sums each slice
        # once (the mass above ``low`` is carried), linear in all.
        low, high, tp_above, fp_above = 0, slots.size, 0.0, 0.0
        while low < high:
            middle = (low + high) // 2
            tp = tp_above + float(pos[low : middle + 1].sum())
            fp = fp_above + float(neg[low : middle + 1].sum())
            if holds(tp, fp):
                low, tp_above, fp_above = middle + 1, tp, fp
            else:
                high = middle
        for index in (low - 1, low):
            if 0 <= index < slots.size:
                found.add(int(slots[slots.size - 1 - index]))
    return sorted(found)


def _within(limit: float) -> Holds:
    return lambda tp, fp: tp + fp <= limit


# --- the metrics ------------------------------------------------------------------------------


def class_operating(sweep: Sweep, slots: SlotScores | None, options: Options) -> MetricSink:
    """One class's operating points and equal error rate in a sink of their own, as task
    binary writes them for the class's one-vs-rest rows. ``sweep``: of the class's statistic;
    ``slots``: the scores behind its class slots (None when the sweep is on scores)."""
    sink = MetricSink()
    positives, negatives = sweep.n_positive, sweep.n_negative
    classes: Classes
    if slots is None:
        classes = Classes(sweep.positives, sweep.negatives)
        hits = Hits.of(sweep)
    else:
        classes = SlotClasses(sweep.positives, sweep.negatives, slots=slots)
        thresholds = sweep.thresholds
        if any(getattr(options, kind) for kind in KINDS[:-1]):
            thresholds = slots.scores_of(thresholds)
        hits = Hits(thresholds, sweep.tps, sweep.fps)
    if positives == 0 or negatives == 0:
        reason = NO_POSITIVES if positives == 0 else NO_NEGATIVES
        undefine_operating(sink, options, ONE_CLASS + reason)
    else:
        add_operating_points(sink, hits, classes, options)
    write_flagged(sink, options, classes, total=positives + negatives, positives=positives)
    return sink


def macro_name(name: str) -> str:
    return f"{name}_macro"


def operating_macros(
    sink: MetricSink,
    rows: list[MetricSink],
    present: NDArray[np.bool_],
    describe: Callable[[NDArray[np.intp]], str],
    options: Options,
    *,
    unit: str = "class",
) -> None:
    """``{value}_macro`` of every operating-point value: the mean over the classes present in
    labels whose value is defined; a present class whose value is undefined is left out and
    named in ``warnings``; none left: undefined with the reason."""
    for name in value_names(options):
        values = [row.metrics.get(name) for row in rows]
        defined = np.array([value is not None for value in values]) & present
        left_out = np.flatnonzero(present & ~defined)
        if left_out.size:
            reason = rows[int(left_out[0])].undefined.get(name, "undefined")
            sink.warn(
                f"{name}: {describe(left_out)} undefined ({reason}), left out of {macro_name(name)}"
            )
        if not defined.any():
            reason = (
                f"no {unit} is present in labels"
                if not present.any()
                else f"undefined for every {unit} present in labels "
                f"({rows[int(np.argmax(present))].undefined.get(name, 'undefined')})"
            )
            sink.undefine(macro_name(name), reason)
            continue
        kept = np.array([values[i] for i in np.flatnonzero(defined)], dtype=np.float64)
        sink.set(macro_name(name), float(kept.mean()))


# The macro averages' names without their target, as the catalog's templates spell them.
_TEMPLATES = (
    "recall_at_precision_",
    "precision_at_recall_",
    "tpr_at_fpr_",
    "specificity_at_sensitivity_",
    "precision_at_flagged_share_",
    "recall_at_flagged_share_",
)


def operating_order(name: str) -> str | None:
    """The catalog template of an operating point's macro average (None for other names)."""
    if not name.endswith("_macro"):
        return None
    for prefix in _TEMPLATES:
        if name.startswith(prefix):
            return prefix + "{k}_macro"
    return None
