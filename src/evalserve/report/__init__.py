"""The evaluation report: one self-contained HTML page of a result (metrics with intervals and
definitions, undefined values with reasons, charts), written by ``evalserve report`` and
answered by ``POST /v1/evaluate`` with ``Accept: text/html``.

Charts are Vega-Lite specifications made with Altair and drawn in the browser by the vendored
Vega scripts, inlined in the page: it opens without network access.
"""

from __future__ import annotations

from evalserve.report._page import render_report

__all__ = ["render_report"]
