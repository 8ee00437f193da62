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
- A segmented call (``segments``) keeps one monitor per segment beside the model's overall one:
  the segment's name is the model key's ``segment``. It sends the stored state of each segment
  it names (and of ``__other__`` when folding) as ``segment_monitor_states``, and stores each
  segment's answer with the overall one, in one change. A segment's state the server refuses
  (field ``segment_monitor_states.<name>``) is set aside as above and the window sent again
  without it; a state refused as ``monitor_state`` in a segmented call (the server does not
  say whose) sets aside every state sent. A state of a segment the rows lack (folded into
  ``__other__``) is not sent again for this window, and stays in the store.
- When another call stored a newer state for the monitor meanwhile (two processes sharing a
  file, overlapping calls), this call's answer is not stored over it: the window is sent again
  on the newer state, so neither window's evidence is lost.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field, replace
from typing import Any

from evalserve_client._errors import EvalserveError
from evalserve_client._monitor_key import MONITOR_OPTIONS, ModelKey, fingerprint, new_window
from evalserve_client._monitor_store import Key, MonitorEntry, MonitorStates, now
from evalserve_client._wire import Request

__all__ = ["MAX_RESENDS", "Track"]

# Sends of one window on a newer state before the call gives up (calls racing on one model).
MAX_RESENDS = 8
# The segment the server folds the smallest segments into (``fold_segments``).
OTHER = "__other__"
SEGMENT_FIELD = "segment_monitor_states."


def _segment_names(request: Request) -> list[str]:
    """The segments a request names (none: not segmented), ``__other__`` when it folds."""
    names = request.segments or request.segment_names or []
    if not names:
        return []
    if request.segment_codes and request.segment_names:  # the names the codes use
        listed = request.segment_names
        names = [listed[c] for c in set(request.segment_codes) if 0 <= c < len(listed)]
    distinct = sorted(set(names))
    return [*distinct, OTHER] if request.fold_segments and OTHER not in distinct else distinct


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
    # a segmented call's segments: the states sent, by name, and why a segment restarted
    segments: list[str] = field(default_factory=list)
    segment_states: dict[str, bytes] = field(default_factory=dict)
    segment_restarted: dict[str, str] = field(default_factory=dict)

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
        track.segments = _segment_names(request)
        track.load_segments()
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

    def segment_key(self, name: str) -> Key:
        return (replace(self.model, segment=name), self.question)

    def load_segments(self) -> None:
        """The stored state of each segment this call names."""
        keys = {self.segment_key(name): name for name in self.segments}
        stored = self.store.get_all(keys)
        self.segment_states = {keys[key]: entry.state for key, entry in stored.items()}

    def refused(self, error: EvalserveError) -> bool:
        """Whether to send the window again: the server refused a state sent (set aside in
        the store, with the server's reason: that monitor starts anew), or a segment's state
        for a segment the rows lack (folded, say: not sent this time, and kept)."""
        field = error.field or ""
        if field == SEGMENT_FIELD.rstrip("."):
            lacking = [n for n in self.segment_states if repr(n) in error.message]
            for name in lacking:
                del self.segment_states[name]
            return bool(lacking)
        if field.startswith(SEGMENT_FIELD):
            name = field.removeprefix(SEGMENT_FIELD)
            if name not in self.segment_states:
                return False
            self._retire_segment(name, error.message)
            return True
        if field != "monitor_state" or (self.state is None and not self.segment_states):
            return False
        # The state of the model or of one of its segments: the server does not say which, and
        # what makes one stale (a new monitor version, a changed server default) makes all so.
        for name in list(self.segment_states):
            self._retire_segment(name, error.message)
        if self.state is not None:
            self.store.retire(self.model, self.question, self.state, error.message)
            self.restarted = (
                f"a new monitor started: the server refused this model's stored state"
                f" ({error.message}); that state is kept in the store's retired list"
            )
            self.state = None
        return True

    def _retire_segment(self, name: str, reason: str) -> None:
        state = self.segment_states.pop(name)
        model, question = self.segment_key(name)
        self.store.retire(model, question, state, reason)
        self.segment_restarted[name] = (
            f"a new monitor started: the server refused this segment's stored state"
            f" ({reason}); that state is kept in the store's retired list"
        )

    def _entry(self, model: ModelKey, answer: dict[str, Any]) -> MonitorEntry | None:
        """The monitor entry of an answer (overall or a segment's), if it has a state."""
        encoded, verdicts = answer.get("monitor_state"), answer.get("monitor") or {}
        if encoded is None or not verdicts:
            return None  # a server without the monitor, or a segment with no monitor
        verdict = next(iter(verdicts.values()))
        return MonitorEntry(
            model=model,
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

    def settle(self, answer: dict[str, Any]) -> bool:
        """Store the answer's states (overall and each segment's, at once); False when another
        call stored a newer state meanwhile: then send the window again, on the newer states
        (now ``self.state`` and ``self.segment_states``)."""
        entries: list[MonitorEntry] = []
        expected: dict[Key, bytes | None] = {}
        overall = self._entry(self.model, answer)
        if overall is not None:
            entries.append(overall)
            expected[overall.key] = self.state
        for name, each in (answer.get("segments") or {}).items():
            entry = self._entry(replace(self.model, segment=name), each)
            if entry is not None:
                entries.append(entry)
                expected[entry.key] = self.segment_states.get(name)
        if not entries or self.store.swap_all(entries, expected):
            return True
        self.resends += 1
        if self.resends > MAX_RESENDS:
            raise EvalserveError(
                f"other calls kept changing this model's monitor state: window {self.window!r}"
                f" was sent {self.resends} times and not stored",
                field="monitor_state",
                code="monitor_conflict",
            )
        newer = self.store.get(self.model, self.question)
        self.state = None if newer is None else newer.state
        self.load_segments()
        return False

    def request(self, request: Request) -> Request:
        """``request`` carrying this track's state and window."""
        states = dict(self.segment_states) if self.segment_states else None
        return replace(
            request, monitor_state=self.state, window=self.window, segment_monitor_states=states
        )
