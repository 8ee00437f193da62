"""The ranges path of task binary, public for engines that spread a state over machines.

The score axis is cut into ranges; each range's state is built on its own (on a worker), and
summarised there with the class totals of the ranges above it, in passes that need only small
summaries from the other ranges; ``combine_ranges`` adds the summaries up into the result that
one state of all the rows would give. ``evalserve.dask`` drives it (``method="ranges"``); the
design note docs/distributed.md describes the protocol.
"""

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
    "RangeContext",
    "RangeFinish",
    "RangePass",
    "RangeTotals",
    "bests_of",
    "combine_ranges",
    "range_context",
    "range_finish",
    "range_pass",
    "range_totals",
]
