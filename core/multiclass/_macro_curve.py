"""The macro-average ROC curve: vertical averaging of the per-class one-vs-rest curves.

At each FPR value f the averaged TPR is the mean of the classes' TPR at f. A class's curve is
a polyline through its ROC points; at a value of f where it is vertical (positives added with
no negatives: several points share f) it has two TPRs at f, the one where it arrives and the
one where it leaves, and the averaged curve keeps both: it is vertical there too. Between
consecutive values of the union of every class's FPR values each class's curve is a straight
segment, so the average is one as well. The averaged curve built that way is exact, and since
area is linear its area equals the mean of the per-class areas, ``roc_auc_ovr_macro``.

scikit-learn's ``plot_roc`` example (its gallery's multiclass ROC) averages
``np.interp(all_fpr, fpr_i, tpr_i)``: np.interp returns a single value where ``fpr_i`` repeats,
one end of the vertical segment, so the averaged curve cuts the corner of every step that other
classes do not share and its area is not the mean AUC (scikit-learn issue #13546).

Large curves are not averaged at every point of the union: each class contributes its points
sampled along its own curve, and the average is evaluated exactly (both ends) at the union of
those FPR values, so every point sent lies on the exact averaged curve. A class's curve is built
from its sweep when it is read, once to sample it and once to average it: one class's arrays at
a time, which reuse the same memory (every class's at once would be fresh pages, each touched).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np
from numpy.typing import NDArray

from evalserve.core._curves import sample_along
from evalserve.core.binary._sweep import Sweep

__all__ = [
    "ClassCurve",
    "class_curve",
    "class_roc_curves",
    "macro_roc_curve",
    "vertical_average",
]

Floats = NDArray[np.float64]
ClassCurve = tuple[Floats, Floats]  # (fpr, tpr), both non-decreasing, from (0, 0) to (1, 1)


def class_curve(sweep: Sweep) -> ClassCurve:
    """The ROC curve of one class from (0, 0) to (1, 1), as the corners of its polyline (the
    points between corners lie on straight segments and add nothing)."""
    fps, tps = sweep.roc_corners()
    fps /= sweep.n_negative  # in place: fresh arrays of this size cost a pass over them
    tps /= sweep.n_positive
    return fps, tps


def _ends(curve: ClassCurve, at: Floats) -> tuple[Floats, Floats]:
    """The TPR where the curve arrives at each FPR value and where it leaves it (they differ
    only where the curve is vertical)."""
    fpr, tpr = curve
    first = np.searchsorted(fpr, at, side="left")
    after = np.searchsorted(fpr, at, side="right")
    on_point = after > first
    arrive = np.empty(at.size)
    leave = np.empty(at.size)
    arrive[on_point] = tpr[first[on_point]]
    leave[on_point] = tpr[after[on_point] - 1]
    between = np.flatnonzero(~on_point)
    if between.size:
        right = first[between]
        left = right - 1
        fraction = (at[between] - fpr[left]) / (fpr[right] - fpr[left])
        inside = tpr[left] + (tpr[right] - tpr[left]) * fraction
        arrive[between] = inside
        leave[between] = inside
    return arrive, leave


def vertical_average(curves: Iterable[ClassCurve], count: int, at: Floats) -> ClassCurve:
    """The exact vertical average of the ``count`` ``curves`` at the FPR values ``at``
    (ascending, distinct, within [0, 1]): one point per value, two where the average is
    vertical."""
    arrive = np.zeros(at.size)
    leave = np.zeros(at.size)
    for curve in curves:
        up_to, from_ = _ends(curve, at)
        arrive += up_to
        leave += from_
    arrive /= count
    leave /= count
    vertical = leave > arrive
    points = at.size + int(vertical.sum())
    # Point t of ``at`` lands after the extra (leave) points of the values before it.
    land = np.arange(at.size) + np.concatenate(([0], np.cumsum(vertical)[:-1]))
    fpr = np.empty(points)
    tpr = np.empty(points)
    fpr[land] = at
    tpr[land] = arrive
    fpr[land[vertical] + 1] = at[vertical]
    tpr[land[vertical] + 1] = leave[vertical]
    return fpr, tpr


def _sampled_fprs(curve: ClassCurve, points: int) -> Floats:
    """The FPR values of at most ``points`` points spread along the curve (L1 arc length)."""
    fpr, tpr = curve
    kept = sample_along(lambda i: fpr[i] + tpr[i], fpr.size, points)
    return fpr[kept]


def macro_roc_curve(sweeps: Sequence[Sweep], max_points: int) -> dict[str, Floats]:
    """The averaged curve of the classes' sweeps at the union of their FPR values (sampled per
    class when the curves hold more than ``max_points`` points in all), thinned to
    ``max_points``."""
    # A curve's points: the corners before and at each hit, and both ends (``roc_corners``).
    total = sum(2 * sweep.size + 2 for sweep in sweeps)
    if total <= max_points:
        union = np.unique(np.concatenate([class_curve(sweep)[0] for sweep in sweeps]))
    else:
        per_class = max(2, max_points // len(sweeps))
        sampled = [_sampled_fprs(class_curve(sweep), per_class) for sweep in sweeps]
        union = np.unique(np.concatenate([[0.0, 1.0], *sampled]))
    fpr, tpr = vertical_average((class_curve(sweep) for sweep in sweeps), len(sweeps), union)
    if fpr.size > max_points:
        # fpr + tpr grows at every point: each point moves right or up.
        kept = sample_along(lambda i: fpr[i] + tpr[i], fpr.size, max_points)
        fpr, tpr = fpr[kept], tpr[kept]
    return {"fpr": fpr, "tpr": tpr}


def class_roc_curves(sweeps: Sequence[tuple[int, Sweep]], max_points: int) -> dict[str, Floats]:
    """Each class's one-vs-rest ROC curve (``(class index, sweep)`` pairs), its corners
    sampled along the curve to at most ``max(2, max_points // classes)`` points, end to end in
    one flat curve: ``fpr``, ``tpr`` and ``class_index`` (the class's position in
    ``per_class``), as a report draws them beside the macro average."""
    per_class = max(2, max_points // max(1, len(sweeps)))
    fprs, tprs, indices = [], [], []
    for index, sweep in sweeps:
        fpr, tpr = class_curve(sweep)
        kept = sample_along(_arc(fpr, tpr), fpr.size, per_class)
        fprs.append(fpr[kept])
        tprs.append(tpr[kept])
        indices.append(np.full(kept.size, float(index)))
    if not fprs:
        return {"fpr": np.zeros(0), "tpr": np.zeros(0), "class_index": np.zeros(0)}
    return {
        "fpr": np.concatenate(fprs),
        "tpr": np.concatenate(tprs),
        "class_index": np.concatenate(indices),
    }


def _arc(fpr: Floats, tpr: Floats) -> Callable[[NDArray[np.intp]], Floats]:
    """A curve's L1 arc length at the given point indices (``sample_along``'s measure)."""

    def at(index: NDArray[np.intp]) -> Floats:
        return fpr[index] + tpr[index]

    return at
