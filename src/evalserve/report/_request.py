"""What a report asks of the evaluation (no charting imports: the server and the command read
it before they evaluate)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["SEGMENT_POINTS", "report_options"]

# Points per curve in a segment's charts (the overall charts keep every point of the result).
SEGMENT_POINTS = 100


def report_options(
    options: Mapping[str, Any] | None, max_points: int | None = None
) -> dict[str, Any]:
    """The options a report evaluates with: each segment's curves (drawn on demand) thinned
    to ``SEGMENT_POINTS`` points (at most ``max_points``, a server's limit) unless
    ``segment_curve_points`` is given."""
    points = SEGMENT_POINTS if max_points is None else min(SEGMENT_POINTS, max_points)
    return {"segment_curve_points": points, **(options or {})}
