"""One call's part in its model's AUC monitor: which state and window id it sends, and what it
keeps of the answer.

A call of task binary with a ``model`` and a ``baseline`` is monitored. It sends the state
stored for its model and question (``_monitor_key``), or none for a first window, and a window
id: the caller's, or one made for the call. Every attempt of the call (the transport's retries,
and the sends below) carries the same window id, so the server counts the window once.

- A new baseline or new monitor options are a new question: a new monitor starts, and the
  model's previous monitor stays in the store (the result's ``monitor_restarted`` says so).
- A stored state the server refuses (``monitor_state``: made by another version of the
  monitor, or for a server default that changed) is set aside in the store's ``retired`` list
  with the server's reason, and the window is sent again with no state: a new monitor, said in
  ``monitor_restarted``.
- When another call stored a newer state for the monitor meanwhile (two processes sharing a
  file, overlapping calls), this call's answer is not stored over it: the window is sent again
  on the newer state, so neither window's evidence is lost.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, replace
from typing import Any

from evalserve_client._errors import EvalserveError
from evalserve_client._monitor_key import MONITOR_OPTIONS, ModelKey, fingerprint, new_window
from evalserve_client._monitor_store import MonitorEntry, MonitorStates, now
from evalserve_client._wire import Request

__all__ = ["MAX_RESENDS", "Track"]

# Sends of one window on a newer state before the call gives up (calls racing on one model).
MAX_RESENDS = 8


@dataclass
class Track:
    store: MonitorStates
    model: ModelKey
    question: str
    window: str
    state: bytes | None
    options: dict[str, float]
    restarted: str | None = None
    resends: int = 0

    @classmethod
    def start(cls, store: MonitorStates, request: Request, window: str | None) -> Track | None:
        """The call's track, or None when it is not monitored (no binary task, model or
        baseline)."""
        if request.task != "binary" or request.model is None or request.baseline is None:
            return None
        model = ModelKey.of(request.model)
        question = fingerprint(request.baseline, request.options)
        options = {k: float(v) for k, v in (request.options or {}).items() if k in MONITOR_OPTIONS}
        entry = store.get(model, question)
        track = cls(store, model, question, window or new_window(), None, options)
        if entry is not None:
            track.state = entry.state
            return track
        latest = store.latest(model.to_dict())
        if latest is not None:
            track.restarted = (
                "a new monitor started: the baseline or the monitor's options differ from those"
                f" of this model's last monitor (window {latest.window!r}, {latest.windows}"
                " windows), which stays in the store"
            )
        return track

    def refused(self, error: EvalserveError) -> bool:
        """Whether to send the window again as a new monitor's first: the server refused the
        state sent (which is set aside in the store, with the server's reason)."""
        if self.state is None or error.field != "monitor_state":
            return False
        self.store.retire(self.model, self.question, self.state, error.message)
        self.restarted = (
            f"a new monitor started: the server refused this model's stored state"
            f" ({error.message}); that state is kept in the store's retired list"
        )
        self.state = None
        return True

    def settle(self, answer: dict[str, Any]) -> bool:
        """Store the answer's state; False when another call stored a newer state meanwhile:
        then send the window again, on that state (now ``self.state``)."""
        encoded, verdicts = answer.get("monitor_state"), answer.get("monitor") or {}
        if encoded is None or not verdicts:
            return True  # a server without the monitor
        verdict = next(iter(verdicts.values()))
        entry = MonitorEntry(
            model=self.model,
            question=self.question,
            state=base64.b64decode(encoded),
            window=self.window,
            windows=int(verdict["windows"]),
            statistic=float(verdict["statistic"]),
            threshold=float(verdict["threshold"]),
            alarm=bool(verdict["alarm"]),
            updated=now(),
            drift_tolerance=self.options.get("drift_tolerance"),
            monitor_arl_windows=self.options.get("monitor_arl_windows"),
        )
        newer = self.store.swap(entry, self.state)
        if newer is None:
            return True
        self.resends += 1
        if self.resends > MAX_RESENDS:
            raise EvalserveError(
                f"other calls kept changing this model's monitor state: window {self.window!r}"
                f" was sent {self.resends} times and not stored",
                field="monitor_state",
                code="monitor_conflict",
            )
        self.state = newer.state
        return False

    def request(self, request: Request) -> Request:
        """``request`` carrying this track's state and window."""
        return replace(request, monitor_state=self.state, window=self.window)
