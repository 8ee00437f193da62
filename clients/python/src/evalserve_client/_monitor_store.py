"""``MonitorStates``: the AUC monitor's state of each model, kept for the caller between calls.

One state per model (name, version, segment) and question (the baseline and the monitor's two
options, ``_monitor_key``): a new baseline starts a new monitor, and the old one stays, resumed
if that baseline comes back. In memory by default; in a JSON file when given a path
(``_monitor_file``: atomic replacement under a lock file, states as base64), where it outlives
the process and several processes may share it.

A segmented call's segments are models too: the segment ``de`` of model ``m`` is kept under the
key (``m``, its version, ``de``), beside the model's overall monitor (segment "").

Each model keeps its ``keep`` most recently updated monitors, and as many set-aside ones
(``retired``: a state the server refused, with its reason); older ones are dropped.
"""

from __future__ import annotations

import base64
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from evalserve_client import _monitor_file
from evalserve_client._monitor_key import ModelKey

__all__ = ["MonitorEntry", "MonitorStates"]

Key = tuple[ModelKey, str]
T = TypeVar("T")


@dataclass(frozen=True)
class MonitorEntry:
    """One model's monitor: its ``state`` (send it with the next window), the ``question`` it
    answers (the fingerprint of the baseline and options, which are kept as given), the last
    ``window`` it counted, its ``windows``, ``statistic``, ``threshold`` and ``alarm`` after
    that window, when it was ``updated`` (ISO 8601, UTC), and for a set-aside state why it was
    ``retired``."""

    model: ModelKey
    question: str
    state: bytes
    window: str
    windows: int
    statistic: float
    threshold: float
    alarm: bool
    updated: str
    drift_tolerance: float | None = None
    monitor_arl_windows: float | None = None
    retired: str | None = None

    @property
    def key(self) -> Key:
        return (self.model, self.question)

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model.to_dict(),
            "question": self.question,
            "state": base64.b64encode(self.state).decode("ascii"),
            "window": self.window,
            "windows": self.windows,
            "statistic": self.statistic,
            "threshold": self.threshold,
            "alarm": self.alarm,
            "updated": self.updated,
            "drift_tolerance": self.drift_tolerance,
            "monitor_arl_windows": self.monitor_arl_windows,
            "retired": self.retired,
        }

    @classmethod
    def from_json(cls, entry: Mapping[str, Any]) -> MonitorEntry:
        try:
            return cls(
                model=ModelKey.of(entry["model"]),
                question=str(entry["question"]),
                state=base64.b64decode(entry["state"], validate=True),
                window=str(entry["window"]),
                windows=int(entry["windows"]),
                statistic=float(entry["statistic"]),
                threshold=float(entry["threshold"]),
                alarm=bool(entry["alarm"]),
                updated=str(entry["updated"]),
                drift_tolerance=_number(entry.get("drift_tolerance")),
                monitor_arl_windows=_number(entry.get("monitor_arl_windows")),
                retired=None if entry.get("retired") is None else str(entry["retired"]),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"not a monitor entry: {error!r}") from None


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class _Data:
    live: dict[Key, MonitorEntry]
    retired: list[MonitorEntry]

    @classmethod
    def of(cls, document: Mapping[str, Any]) -> _Data:
        live = [MonitorEntry.from_json(e) for e in document.get("monitors", [])]
        retired = [MonitorEntry.from_json(e) for e in document.get("retired", [])]
        return cls({entry.key: entry for entry in live}, retired)

    def document(self) -> dict[str, Any]:
        return {
            **_monitor_file.empty(),
            "monitors": [e.to_json() for e in _ordered(self.live.values())],
            "retired": [e.to_json() for e in _ordered(self.retired)],
        }

    def prune(self, keep: int) -> None:
        """Each model's ``keep`` newest monitors and set-aside states."""
        newest = _newest(self.live.values(), keep)
        self.live = {entry.key: entry for entry in newest}
        self.retired = _newest(self.retired, keep)


def _ordered(entries: Iterable[MonitorEntry]) -> list[MonitorEntry]:
    return sorted(entries, key=lambda e: (e.model, e.updated, e.question))


def _newest(entries: Iterable[MonitorEntry], keep: int) -> list[MonitorEntry]:
    kept: list[MonitorEntry] = []
    count: dict[ModelKey, int] = {}
    for entry in sorted(entries, key=lambda e: e.updated, reverse=True):
        count[entry.model] = count.get(entry.model, 0) + 1
        if count[entry.model] <= keep:
            kept.append(entry)
    return _ordered(kept)


class MonitorStates:
    """The monitors' states a client keeps, in memory or (``path``) in a JSON file.

    ``MonitorStates()`` lives as long as the process; ``MonitorStates(path="monitors.json")``
    is read again by a new client or process, and may be shared by processes on one machine
    (or a file system with atomic rename and exclusive create): no change is lost or torn,
    and two calls for one model that overlap are put one after the other by the client (the
    later call's window is sent again on the newer state). ``keep``: monitors (and set-aside
    states) kept per model; ``lock_timeout``: seconds to wait for another writer."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        keep: int = 16,
        lock_timeout: float = 30.0,
    ) -> None:
        if keep < 1:
            raise ValueError(f"keep: expected at least 1, but got {keep}")
        self.path = None if path is None else Path(path)
        self.keep = keep
        self.lock_timeout = lock_timeout
        self._lock = threading.Lock()
        self._memory = _Data({}, [])
        if self.path is not None:
            self._read()  # a file that is not a state file is refused now, not at the first call

    def __repr__(self) -> str:
        where = "memory" if self.path is None else str(self.path)
        return f"MonitorStates({where}, {len(self.entries())} monitors)"

    def _read(self) -> _Data:
        if self.path is None:
            with self._lock:
                return _Data(dict(self._memory.live), list(self._memory.retired))
        return _Data.of(_monitor_file.read(self.path))

    def _change(self, change: Callable[[_Data], T]) -> T:
        """Apply ``change`` to the newest data and keep the result, atomically."""
        with self._lock:
            if self.path is None:
                found = change(self._memory)
                self._memory.prune(self.keep)
                return found
            with _monitor_file.locked(self.path, self.lock_timeout):
                data = _Data.of(_monitor_file.read(self.path))
                found = change(data)
                data.prune(self.keep)
                _monitor_file.write(self.path, data.document())
                return found

    def entries(self) -> list[MonitorEntry]:
        """Every monitor kept, by model, oldest first."""
        return _ordered(self._read().live.values())

    def retired(self) -> list[MonitorEntry]:
        """The states set aside (refused by the server), with why, by model."""
        return _ordered(self._read().retired)

    def latest(self, model: Mapping[str, str]) -> MonitorEntry | None:
        """The model's most recently updated monitor."""
        key = ModelKey.of(model)
        mine = [entry for entry in self._read().live.values() if entry.model == key]
        return max(mine, key=lambda e: e.updated) if mine else None

    def get(self, model: Mapping[str, str] | ModelKey, question: str) -> MonitorEntry | None:
        key = model if isinstance(model, ModelKey) else ModelKey.of(model)
        return self._read().live.get((key, question))

    def get_all(self, keys: Iterable[Key]) -> dict[Key, MonitorEntry]:
        """The monitors of ``keys`` that are kept, read at once."""
        live = self._read().live
        return {key: live[key] for key in keys if key in live}

    def forget(self, model: Mapping[str, str]) -> None:
        """Drop every monitor and set-aside state of ``model``."""
        key = ModelKey.of(model)

        def change(data: _Data) -> None:
            data.live = {k: e for k, e in data.live.items() if e.model != key}
            data.retired = [e for e in data.retired if e.model != key]

        self._change(change)

    def swap(self, entry: MonitorEntry, expected: bytes | None) -> MonitorEntry | None:
        """Keep ``entry`` if its monitor's stored state is still ``expected`` (None: none);
        otherwise keep nothing and return the newer entry another call stored meanwhile."""

        def change(data: _Data) -> MonitorEntry | None:
            current = data.live.get(entry.key)
            if (None if current is None else current.state) != expected:
                return current
            data.live[entry.key] = entry
            return None

        return self._change(change)

    def swap_all(
        self, entries: Iterable[MonitorEntry], expected: Mapping[Key, bytes | None]
    ) -> bool:
        """Keep every one of ``entries`` if each monitor of ``expected`` still has that stored
        state (None: none), in one change; otherwise keep nothing and return False."""
        kept = list(entries)

        def change(data: _Data) -> bool:
            for key, state in expected.items():
                current = data.live.get(key)
                if (None if current is None else current.state) != state:
                    return False
            for entry in kept:
                data.live[entry.key] = entry
            return True

        return self._change(change)

    def retire(self, model: ModelKey, question: str, state: bytes, reason: str) -> None:
        """Set the monitor's stored state aside (if it is still ``state``), saying why."""

        def change(data: _Data) -> None:
            current = data.live.get((model, question))
            if current is not None and current.state == state:
                del data.live[current.key]
                data.retired.append(replace(current, retired=reason, updated=now()))

        self._change(change)
