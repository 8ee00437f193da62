"""What a monitor's state is valid for: the model it watches and the question it answers.

A state belongs to one model (name, version, segment) and one question: the baseline it tests
against and the options ``drift_tolerance`` and ``monitor_arl_windows``. The server refuses a
state made for another question, so the client keeps one state per (model, question), the
question reduced to a fingerprint: SHA-256 of a canonical text that both clients (Python and
TypeScript) write alike, so a state file can be read by either::

    evalserve-monitor-question/1
    baseline.<name>=<hex of the value(s) as little-endian float64>   (names sorted)
    options.drift_tolerance=<hex>                                     (when given)
    options.monitor_arl_windows=<hex>                                 (when given)

A baseline column given as ``labels`` or as raw ``labels_f64`` bytes is the same column. An
option left to the server's default is not part of the question: the default is the server's.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

__all__ = ["MONITOR_OPTIONS", "ModelKey", "fingerprint", "new_window"]

MONITOR_OPTIONS = ("drift_tolerance", "monitor_arl_windows")
_HEADER = "evalserve-monitor-question/1"


@dataclass(frozen=True, order=True)
class ModelKey:
    """A model as the service names it; an absent version or segment is ""."""

    name: str
    version: str = ""
    segment: str = ""

    @classmethod
    def of(cls, model: Mapping[str, Any]) -> ModelKey:
        return cls(
            str(model.get("name") or ""),
            str(model.get("version") or ""),
            str(model.get("segment") or ""),
        )

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "version": self.version, "segment": self.segment}


def _hex(value: Any) -> str:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()  # raw little-endian float64, as sent
    array = np.ascontiguousarray(np.asarray(value, dtype=np.float64).reshape(-1), dtype="<f8")
    return array.tobytes().hex()


def fingerprint(baseline: Mapping[str, Any], options: Mapping[str, Any] | None) -> str:
    """The question a monitor's state answers, as 64 hex digits (see the module's doc)."""
    lines = [_HEADER]
    given = {key.removesuffix("_f64"): v for key, v in baseline.items() if v is not None}
    lines += [f"baseline.{key}={_hex(given[key])}" for key in sorted(given)]
    for name in MONITOR_OPTIONS:
        value = (options or {}).get(name)
        if value is not None:
            lines.append(f"options.{name}={_hex(value)}")
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def new_window() -> str:
    """A window id for a call that named none: its start time (UTC) and a random tag, unique
    enough that two calls never share one (the server counts a window id once)."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return f"{now}/{secrets.token_hex(4)}"
