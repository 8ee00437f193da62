"""The ranges path of task binary, public for engines that spread a state over machines.

The score axis is cut into ranges; each batch of rows is checked once (``range_batch``, its
scores sampled for the cuts) and split into every range at once (``split_batch``), each
range's pieces are joined into its classes (``range_classes``, on a
worker), and each range is summarised there with the class totals of the ranges above it, in
passes that need only small summaries from the other ranges; ``combine_ranges`` adds the
summaries up into the result that one state of all the rows would give. ``evalserve.dask``
drives it (``method="ranges"``); the design note docs/distributed.md describes the protocol.
"""

from evalserve.core.binary._range_rows import (
    RangeBatch,
    RangeClasses,
    RangeRows,
    range_batch,
    range_classes,
    range_cuts,
    range_rows,
    split_batch,
)
from evalserve.core.binary._ranges import (
    Bests,
    RangeContext,
    RangeFinish,
    RangePass,
    RangeTotals,
    bests_of,
    combine_ranges,
    range_context,
    range_finish,
    range_pass,
    range_totals,
)

__all__ = [
    "Bests",
    "RangeBatch",
    "RangeClasses",
    "RangeContext",
    "RangeFinish",
    "RangePass",
    "RangeRows",
    "RangeTotals",
    "bests_of",
    "combine_ranges",
    "range_batch",
    "range_classes",
    "range_context",
    "range_cuts",
    "range_finish",
    "range_pass",
    "range_rows",
    "range_totals",
    "split_batch",
]
