"""The typed result of an evaluation, the JSON shape of the service (``core``'s to_dict)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

__all__ = ["EvaluationResult"]


@dataclass(frozen=True)
class EvaluationResult:
    """One evaluation: ``metrics`` maps each metric to a float, or None with its reason in
    ``undefined``; curves are lists (the +inf start of a threshold list is None)."""

    task: str
    n_samples: int
    metrics: dict[str, float | None]
    undefined: dict[str, str]
    per_class: list[dict[str, Any]]
    curves: dict[str, dict[str, list[float | None]]]
    intervals: dict[str, dict[str, Any]]
    drift: dict[str, dict[str, Any]]
    comparison: dict[str, dict[str, Any]]
    conventions: dict[str, str]
    warnings: list[str]
    _body: dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, body: dict[str, Any]) -> EvaluationResult:
        return cls(
            task=body["task"],
            n_samples=int(body["n_samples"]),
            metrics=body.get("metrics", {}),
            undefined=body.get("undefined", {}),
            per_class=body.get("per_class", []),
            curves=body.get("curves", {}),
            intervals=body.get("intervals", {}),
            drift=body.get("drift", {}),
            comparison=body.get("comparison", {}),
            conventions=body.get("conventions", {}),
            warnings=body.get("warnings", []),
            _body=body,
        )

    def to_dict(self) -> dict[str, Any]:
        """The response body, as the REST door and ``core``'s ``to_dict()`` give it."""
        return copy.deepcopy(self._body)
