"""Each label's operating points, one-vs-rest on its column: task binary's
(``core.binary._operating``) on the label's statistic (``_columns``: its distinct scores with the
positive and the negative mass at each, which is binary's), and their macro averages.

The equal error rate is in every result: its two points come out of the sums that rank every
label at once (``_ranking.EerSides``), and binary's ``eer_point`` and ``write_eer`` pick and
write the answer, with no loop over labels beyond that. With a target asked for, each label's
sweep is built and binary's ``add_operating_points`` and ``write_flagged`` answer everything,
the equal error rate included (the same sums, the same answer).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from evalserve.core._options import Options
from evalserve.core._result import MetricSink
from evalserve.core.binary._operating import (
    KINDS,
    Classes,
    Hits,
    Point,
    add_operating_points,
    eer_point,
    undefine_operating,
    value_names,
    write_eer,
    write_flagged,
)
from evalserve.core.binary._stats import BinaryStats
from evalserve.core.binary._sweep import sweep_of
from evalserve.core.binary._threshold import NO_NEGATIVES, NO_POSITIVES, ONE_CLASS
from evalserve.core.multilabel._columns import ColumnStats
from evalserve.core.multilabel._ranking import ColumnRanking

__all__ = ["label_operating", "operating_macros"]

Floats = NDArray[np.float64]
Bools = NDArray[np.bool_]


def label_operating(
    columns: ColumnStats, ranked: ColumnRanking, options: Options
) -> list[MetricSink]:
    """Every label's operating points and equal error rate, a sink each, as task binary writes
    them for the label's column."""
    targets = any(getattr(options, kind) for kind in KINDS)
    eer, offsets, scores = ranked.eer, columns.offsets, columns.scores
    sinks = []
    for j in range(columns.n_labels):
        sink = MetricSink()
        sinks.append(sink)
        positives, negatives = float(eer.positives[j]), float(eer.negatives[j])
        if targets:
            entries = slice(int(offsets[j]), int(offsets[j + 1]))
            sweep = sweep_of(
                BinaryStats(scores[entries], columns.pos[entries], columns.neg[entries])
            )
            positives, negatives = sweep.n_positive, sweep.n_negative
            classes = Classes(sweep.positives, sweep.negatives)
            if positives > 0 and negatives > 0:
                add_operating_points(sink, Hits.of(sweep), classes, options)
            else:
                _one_class(sink, options, positives)
            total = positives + negatives
            write_flagged(sink, options, classes, total=total, positives=positives)
        elif positives > 0 and negatives > 0:
            sides: list[Point | None] = []
            for place, tp, fp in (
                (eer.before[j], eer.tp_before[j], eer.fp_before[j]),
                (eer.after[j], eer.tp_after[j], eer.fp_after[j]),
            ):
                if place < 0:
                    sides.append(None)
                    continue
                threshold = float(scores[int(offsets[j]) + int(place)])
                sides.append(Point(float(tp), float(fp), threshold))
            point = eer_point(sides[0], sides[1], positives, negatives)
            write_eer(sink, point, positives, negatives)
        else:
            _one_class(sink, options, positives)
    return sinks


def _one_class(sink: MetricSink, options: Options, positives: float) -> None:
    reason = NO_POSITIVES if positives == 0 else NO_NEGATIVES
    undefine_operating(sink, options, ONE_CLASS + reason)


def operating_macros(
    sink: MetricSink, labels: list[MetricSink], support: Floats, options: Options
) -> list[tuple[str, Bools, str]]:
    """``{value}_macro`` of every operating-point value: the mean over the labels with positives
    whose value is defined (the rule of every macro average here). Returns, per value, the
    labels with positives it left out and one of their reasons, for the warnings."""
    present = support > 0
    left: list[tuple[str, Bools, str]] = []
    for name in value_names(options):
        values = np.array([row.metrics.get(name) for row in labels], dtype=object)
        defined = np.array([value is not None for value in values], dtype=np.bool_) & present
        out = present & ~defined
        if out.any():
            left.append((name, out, labels[int(np.argmax(out))].undefined[name]))
        macro = f"{name}_macro"
        if not defined.any():
            if not present.any():
                sink.undefine(macro, "no label has a positive (every label is absent from labels)")
            else:
                example = labels[int(np.argmax(present))].undefined[name]
                sink.undefine(macro, f"undefined for every label with positives ({example})")
            continue
        sink.set(macro, float(np.mean(values[defined].astype(np.float64))))
    return left
