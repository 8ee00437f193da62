"""The evaluation report: one self-contained HTML page of a result (metrics with intervals and
definitions, undefined values with reasons, charts), written by ``evalserve report`` and
answered by ``POST /v1/evaluate`` with ``Accept: text/html``.

Charts are Vega-Lite specifications made with Altair and drawn in the browser by the vendored
Vega scripts, inlined in the page: it opens without network access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalserve.report._request import SEGMENT_POINTS, report_options

if TYPE_CHECKING:
    from evalserve.report._page import render_report

__all__ = ["SEGMENT_POINTS", "render_report", "report_options"]


def __getattr__(name: str) -> Any:
    # The page (Altair) is imported when it is first asked for: the server and the command
    # read ``report_options`` before they evaluate, with or without the report extra.
    if name == "render_report":
        from evalserve.report._page import render_report

        return render_report
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
