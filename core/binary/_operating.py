"""Operating points: what a model does at the threshold a team runs it at.

AUC says how well a model ranks; a fraud, ads or medical team runs it at one threshold and
reads what happens there. Each operating point is read off the exact curve, with the rule every
binary metric follows: a row is flagged when ``score >= t``, the thresholds are the distinct
scores, and tied scores form one point (no interpolation between points, no random order among
ties). Each answers the value and the threshold that achieves it:

- ``recall_at_precision_{p}``: the highest recall of a threshold whose precision is >= p; ties
  in recall go to the higher precision, then the higher threshold (torchmetrics' order). No
  threshold reaching precision p: undefined, with the reason (torchmetrics answers 0 there and
  the threshold 1e6).
- ``precision_at_recall_{r}``: the highest precision of a threshold whose recall is >= r; ties
  in precision (within ``TOLERANCE``) go to the higher recall, then the higher threshold.
- ``tpr_at_fpr_{f}``: the highest TPR of a threshold whose FPR is <= f; ties in TPR go to the
  lower FPR (the higher threshold). Flagging nothing always qualifies (FPR 0, TPR 0): when no
  threshold does, the value is 0 and the threshold undefined (torchmetrics' sensitivity at
  specificity answers 0 there too, with the threshold 1 of the point it prepends).

On a tie in the value, each picks the point that dominates the others (as good in the target's
rate, better in the other), then the higher threshold.
- ``specificity_at_sensitivity_{s}``: the highest specificity of a threshold whose sensitivity
  is >= s; ties in specificity go to the higher sensitivity (torchmetrics takes the higher
  threshold there, whose sensitivity is lower).
- ``flagged_share_{q}_*``: the alert budget. The lowest threshold that flags at most a share q
  of the rows (in sample weight): its threshold, the share it flags (``_actual``, at most q:
  ties at the cut are flagged together or not at all) and its precision and recall.
- ``equal_error_rate``: where FPR = FNR. FPR - FNR grows along the curve from the top; of the
  two points around its sign change, the one where |FPR - FNR| is smaller (the higher threshold
  on a tie) gives (FPR + FNR) / 2 and its threshold, as torchmetrics' ``binary_eer``.

Recall, TPR and specificity change only at the hits (distinct scores holding a positive), and
between two hits only false positives are added: so the best point of a target is always a hit,
and the searches run over the hits (``Hits``). The flagged share and the equal error rate also
move at the scores that hold negatives only, so they search both classes' distinct scores
(``Classes``). Every search takes the mass above its scores (``pos_above``, ``neg_above``) and
the class totals, so the ranges path (``_ranges.py``) runs the same code on each range.

Targets are met within a relative ``TOLERANCE``: a precision of exactly 0.95 in exact arithmetic
meets a 0.95 target after rounding (19 / 20 does; 0.95 * 20 weighted rows may not).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalserve.core._options import Options
from evalserve.core._result import MetricSink
from evalserve.core.binary._classes import ClassScores
from evalserve.core.binary._ranking import TIE_TOLERANCE
from evalserve.core.binary._sweep import Sweep

__all__ = [
    "KINDS",
    "OPERATING_VALUE_DEFINITIONS",
    "TOLERANCE",
    "Classes",
    "Hits",
    "Holds",
    "Point",
    "add_operating_points",
    "best_precision",
    "eer_point",
    "eer_sides",
    "flagged_point",
    "operating_names",
    "precision_point",
    "recall_point",
    "specificity_point",
    "target_label",
    "tpr_point",
    "undefine_operating",
    "value_names",
    "write_eer",
    "write_flagged",
    "write_precision",
    "write_recall",
    "write_specificity",
    "write_tpr",
]

Floats = NDArray[np.float64]

TOLERANCE = 1e-12
# The searches over both classes' scores test this many positions a step (see
# ``Classes._first_holding``).
PROBES = 64
# A search's condition on (TP, FP): floats or, element-wise, arrays of them (``counts_of``).
Holds = Callable[[Any, Any], Any]

# The list options of the operating points, in the order their metrics are written.
KINDS = (
    "recall_at_precision",
    "precision_at_recall",
    "tpr_at_fpr",
    "specificity_at_sensitivity",
    "flagged_share",
)


# The operating-point values that have an interval and a macro average, as templates (k = each
# target), with what each is: the catalogs of the tasks with classes define their macros by it.
OPERATING_VALUE_DEFINITIONS = (
    ("recall_at_precision_{k}", "the highest recall of a threshold whose precision is >= k"),
    ("precision_at_recall_{k}", "the highest precision of a threshold whose recall is >= k"),
    ("tpr_at_fpr_{k}", "the highest true positive rate of a threshold whose FPR is <= k"),
    (
        "specificity_at_sensitivity_{k}",
        "the highest specificity of a threshold whose sensitivity is >= k",
    ),
    (
        "precision_at_flagged_share_{k}",
        "the precision at the lowest threshold flagging at most a share k of the rows",
    ),
    (
        "recall_at_flagged_share_{k}",
        "the recall at the lowest threshold flagging at most a share k of the rows",
    ),
    ("equal_error_rate", "(FPR + FNR) / 2 where the two are nearest each other on the curve"),
)


def target_label(k: float) -> str:
    """A target as metric names write it: whole numbers without a fraction (100, 1), others as
    Python's repr (0.95, 0.001, 1e-05, 2.5), so distinct targets never share a name."""
    return str(int(k)) if float(k).is_integer() and abs(k) < 1e15 else repr(float(k))


def operating_names(kind: str, k: float) -> tuple[str, ...]:
    """The metrics of one target: the value, then its threshold; for an alert budget the
    threshold, the share it flags, and the precision and the recall there."""
    label = target_label(k)
    if kind == "flagged_share":
        return (
            f"flagged_share_{label}_threshold",
            f"flagged_share_{label}_actual",
            f"precision_at_flagged_share_{label}",
            f"recall_at_flagged_share_{label}",
        )
    return f"{kind}_{label}", f"{kind}_{label}_threshold"


def targets(options: Options, kind: str) -> tuple[float, ...]:
    """The targets ``options`` asks for of option ``kind`` (one of ``KINDS``)."""
    values: tuple[float, ...] = getattr(options, kind)
    return values


def value_names(options: Options) -> tuple[str, ...]:
    """The operating-point metrics that have an interval (values, not thresholds)."""
    names: list[str] = []
    for kind in KINDS:
        for k in targets(options, kind):
            found = operating_names(kind, k)
            names.extend(found[2:] if kind == "flagged_share" else found[:1])
    return (*names, "equal_error_rate")


# --- the searches -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Point:
    """A point of the curve: TP and FP (of every row, ranges above included) at ``threshold``."""

    tp: float
    fp: float
    threshold: float


@dataclass(frozen=True, slots=True)
class Hits:
    """The hits, from the top score down: their scores and the TP and FP at each (the mass of
    the ranges above included)."""

    thresholds: Floats
    tps: Floats
    fps: Floats

    @classmethod
    def of(cls, sweep: Sweep, pos_above: float = 0.0, neg_above: float = 0.0) -> Hits:
        if pos_above == 0.0 and neg_above == 0.0:
            return cls(sweep.thresholds, sweep.tps, sweep.fps)
        return cls(sweep.thresholds, sweep.tps + pos_above, sweep.fps + neg_above)

    def point(self, index: int) -> Point:
        return Point(float(self.tps[index]), float(self.fps[index]), float(self.thresholds[index]))


def recall_point(hits: Hits, precision: float) -> Point | None:
    """The lowest hit whose precision is >= ``precision``: the highest recall there is."""
    if not hits.tps.size:
        return None
    met = hits.tps * (1.0 + TOLERANCE) >= precision * (hits.tps + hits.fps)
    last = met.size - 1 - int(np.argmax(met[::-1]))
    return hits.point(last) if met[last] else None


def _from_recall(hits: Hits, needed_tp: float) -> int:
    """The first hit whose TP reaches ``needed_tp`` (``hits.tps.size`` when none does)."""
    return int(np.searchsorted(hits.tps, needed_tp * (1.0 - TOLERANCE), side="left"))


def best_precision(hits: Hits, needed_tp: float) -> float:
    """The highest precision of the hits whose TP is >= ``needed_tp`` (-inf when none is)."""
    first = _from_recall(hits, needed_tp)
    if first >= hits.tps.size:
        return -math.inf
    tps, fps = hits.tps[first:], hits.fps[first:]
    return float((tps / (tps + fps)).max())


def precision_point(hits: Hits, needed_tp: float, best: float) -> Point | None:
    """The lowest hit whose TP is >= ``needed_tp`` and whose precision ties with ``best``."""
    first = _from_recall(hits, needed_tp)
    if first >= hits.tps.size:
        return None
    tps, fps = hits.tps[first:], hits.fps[first:]
    tied = tps / (tps + fps) >= best - TIE_TOLERANCE * abs(best)
    last = tied.size - 1 - int(np.argmax(tied[::-1]))
    return hits.point(first + last) if tied[last] else None


def tpr_point(hits: Hits, max_fp: float) -> Point | None:
    """The lowest hit whose FP is <= ``max_fp`` (FP grows down the hits)."""
    within = int(np.searchsorted(hits.fps, max_fp * (1.0 + TOLERANCE), side="right"))
    return hits.point(within - 1) if within else None


def specificity_point(hits: Hits, needed_tp: float) -> Point | None:
    """The highest hit whose TP is >= ``needed_tp`` has the fewest false positives there are;
    of the hits below it with as few (no negative in between), the lowest: the same
    specificity at a higher sensitivity."""
    first = _from_recall(hits, needed_tp)
    if first >= hits.tps.size:
        return None
    return hits.point(int(np.searchsorted(hits.fps, hits.fps[first], side="right")) - 1)


@dataclass(frozen=True, slots=True)
class Classes:
    """Both classes' distinct scores, for the searches over every point of the curve, with the
    class masses above them (of the ranges above)."""

    positives: ClassScores
    negatives: ClassScores
    pos_above: float = 0.0
    neg_above: float = 0.0

    def counts(self, threshold: float) -> tuple[float, float]:
        """(TP, FP) when ``score >= threshold`` is flagged."""
        tps, fps = self.counts_of(np.array([threshold]))
        return float(tps[0]), float(fps[0])

    def counts_of(self, thresholds: Floats) -> tuple[Floats, Floats]:
        """``counts`` of each of ``thresholds`` at once (the same arithmetic, element-wise)."""
        counts = []
        for side, above in ((self.positives, self.pos_above), (self.negatives, self.neg_above)):
            position = np.searchsorted(side.scores, thresholds, side="left")
            counts.append(above + side.mass_at_or_above(position))
        return counts[0], counts[1]

    def lowest_where(self, holds: Holds) -> Point | None:
        """The point of the lowest distinct score where ``holds(TP, FP)``; ``holds`` must be
        true down from the top and false below some score (it is searched for)."""
        return self._lowest(self._firsts(holds))

    def around(self, holds: Holds) -> tuple[Point | None, Point | None]:
        """``lowest_where(holds)`` and the point of the highest distinct score where ``holds``
        is false, from one search of each class."""
        firsts = self._firsts(holds)
        highest = [
            float(side.scores[first - 1])
            for side, first in zip((self.positives, self.negatives), firsts, strict=True)
            if first > 0
        ]
        return self._lowest(firsts), self._point(max(highest)) if highest else None

    def _firsts(self, holds: Holds) -> tuple[int, int]:
        return self._first_holding(self.positives, holds), self._first_holding(
            self.negatives, holds
        )

    def _lowest(self, firsts: tuple[int, int]) -> Point | None:
        found = [
            float(side.scores[first])
            for side, first in zip((self.positives, self.negatives), firsts, strict=True)
            if first < side.size
        ]
        return self._point(min(found)) if found else None

    def _first_holding(self, side: ClassScores, holds: Holds) -> int:
        """The lowest position of ``side`` whose score holds (``side.size`` when none does),
        ``holds`` being true from some position up: a search that tests ``PROBES`` evenly
        spaced positions at once, narrowing the range ``PROBES``-fold a step (three steps for
        20,000 scores, where a bisection takes fifteen, each a round of Python), and tests
        the last ``PROBES`` positions or fewer all at once."""
        low, high = 0, side.size
        while low < high:
            if high - low <= PROBES:
                probes = np.arange(low, high)
            else:
                probes = low + np.arange(PROBES) * (high - low) // PROBES
            held = np.asarray(holds(*self.counts_of(side.scores[probes])), dtype=np.bool_)
            first = int(np.argmax(held)) if held.any() else probes.size
            if high - low <= PROBES:
                return low + first
            if first < probes.size:
                high = int(probes[first])
            if first > 0:
                low = int(probes[first - 1]) + 1
        return low

    @property
    def size(self) -> int:
        """Distinct scores of both classes (a score in both counted twice)."""
        return self.positives.size + self.negatives.size

    def _point(self, threshold: float) -> Point:
        return Point(*self.counts(threshold), threshold)


def flagged_point(classes: Classes, budget: float) -> Point | None:
    """The lowest distinct score that flags a mass of at most ``budget``."""
    limit = budget * (1.0 + TOLERANCE)
    return classes.lowest_where(lambda tp, fp: tp + fp <= limit)


def eer_sides(
    classes: Classes, positives: float, negatives: float
) -> tuple[Point | None, Point | None]:
    """The last point (lowest score) where FPR < FNR, and the first where FPR >= FNR."""

    def below(tp: Floats, fp: Floats) -> NDArray[np.bool_]:
        return np.less(fp * positives, (positives - tp) * negatives)

    return classes.around(below)


def eer_point(
    before: Point | None, after: Point | None, positives: float, negatives: float
) -> Point | None:
    """Of the two points around the crossing, the one nearer FPR = FNR (``before`` on a tie)."""

    def gap(point: Point) -> float:
        return abs(point.fp / negatives - (positives - point.tp) / positives)

    if before is None or after is None:
        return before or after
    near, far = gap(before), gap(after)
    return before if near <= far + TIE_TOLERANCE * max(far, 1e-300) else after


# --- the metrics ------------------------------------------------------------------------------


def add_operating_points(sink: MetricSink, hits: Hits, classes: Classes, options: Options) -> None:
    """Every operating point of ``options`` but the alert budgets (``write_flagged``), and the
    equal error rate, of one sweep with both classes present (``hits`` and ``classes`` of the
    same rows)."""
    positives, negatives = float(hits.tps[-1]), classes.negatives.total + classes.neg_above
    for p in options.recall_at_precision:
        write_recall(sink, p, recall_point(hits, p), positives)
    for r in options.precision_at_recall:
        best = best_precision(hits, r * positives)
        write_precision(sink, r, precision_point(hits, r * positives, best))
    for f in options.tpr_at_fpr:
        write_tpr(sink, f, tpr_point(hits, f * negatives), positives)
    for s in options.specificity_at_sensitivity:
        write_specificity(sink, s, specificity_point(hits, s * positives), negatives)
    write_eer(
        sink, eer_point(*eer_sides(classes, positives, negatives), positives, negatives),
        positives, negatives,
    )  # fmt: skip


def write_recall(sink: MetricSink, p: float, point: Point | None, positives: float) -> None:
    value, threshold = operating_names("recall_at_precision", p)
    if point is None:
        reason = f"no threshold reaches precision >= {p:g}"
        sink.undefine(value, reason)
        sink.undefine(threshold, reason)
        return
    sink.set(value, point.tp / positives)
    sink.set(threshold, point.threshold)


def write_precision(sink: MetricSink, r: float, point: Point | None) -> None:
    value, threshold = operating_names("precision_at_recall", r)
    assert point is not None, "the lowest hit has recall 1"
    sink.set(value, point.tp / (point.tp + point.fp))
    sink.set(threshold, point.threshold)


def write_tpr(sink: MetricSink, f: float, point: Point | None, positives: float) -> None:
    value, threshold = operating_names("tpr_at_fpr", f)
    if point is None:
        sink.set(value, 0.0)
        sink.undefine(
            threshold,
            f"no score keeps FPR <= {f:g} while flagging a positive: only flagging nothing "
            "does (TPR 0)",
        )
        return
    sink.set(value, point.tp / positives)
    sink.set(threshold, point.threshold)


def write_specificity(sink: MetricSink, s: float, point: Point | None, negatives: float) -> None:
    value, threshold = operating_names("specificity_at_sensitivity", s)
    assert point is not None, "the lowest hit has sensitivity 1"
    sink.set(value, 1.0 - point.fp / negatives)
    sink.set(threshold, point.threshold)


def write_flagged(
    sink: MetricSink,
    options: Options,
    classes: Classes | None,
    *,
    total: float,
    positives: float,
    points: dict[float, Point | None] | None = None,
) -> None:
    """The alert budgets: from ``classes`` searched here, or from ``points`` found per range."""
    for q in options.flagged_share:
        names = operating_names("flagged_share", q)
        if total <= 0:
            point = None
        elif points is not None:
            point = points[q]
        else:
            assert classes is not None
            point = flagged_point(classes, q * total)
        if point is None:
            reason = (
                "no samples"
                if total <= 0
                else f"the rows tied at the highest score alone are more than {q:g} of the rows"
            )
            for name in names:
                sink.undefine(name, reason)
            continue
        flagged = point.tp + point.fp
        sink.set(names[0], point.threshold)
        sink.set(names[1], flagged / total)
        sink.set(names[2], point.tp / flagged)
        sink.ratio(names[3], point.tp, positives, "no actual positives (TP + FN = 0)")


def write_eer(sink: MetricSink, point: Point | None, positives: float, negatives: float) -> None:
    assert point is not None, "a sweep with both classes has a point"
    fpr = point.fp / negatives
    fnr = (positives - point.tp) / positives
    sink.set("equal_error_rate", (fpr + fnr) / 2.0)
    sink.set("equal_error_rate_threshold", point.threshold)


def undefine_operating(sink: MetricSink, options: Options, reason: str) -> None:
    """Only one class is present: every operating point but the alert budgets is undefined."""
    for kind in KINDS[:-1]:
        for k in targets(options, kind):
            for name in operating_names(kind, k):
                sink.undefine(name, reason)
    sink.undefine("equal_error_rate", reason)
    sink.undefine("equal_error_rate_threshold", reason)
