"""Typed answers: an evaluation, in the JSON shape of the service (``core``'s to_dict), and the
entries of the metric catalog."""

from __future__ import annotations

import base64
import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalserve_client._operating import (
    FlaggedShare,
    OperatingOption,
    OperatingPoint,
    read_flagged_share,
    read_operating_point,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["EvaluationResult", "MetricInfo", "MetricRange"]


@dataclass(frozen=True)
class EvaluationResult:
    """One evaluation: ``metrics`` maps each metric to a float, or None with its reason in
    ``undefined``; curves are lists (the +inf start of a threshold list is None).

    With a ``baseline`` (task binary), ``monitor`` holds the AUC monitor's verdict after this
    window (``monitor["roc_auc"]``: ``statistic``, ``threshold``, ``alarm``, ``windows``,
    ``evalue``, ``status``, ``reason``) and ``monitor_state`` its next state, which the client
    keeps for the model and sends with its next window. Two fields are the client's, not the
    server's: ``window``, the window id the call sent (the caller's, or one the client made),
    and ``monitor_restarted``, why this call started a new monitor for a model that had one
    (a new baseline or new options, or a stored state the server refused), else None.

    With segments in the request, ``segments`` maps each segment's name to its own result (as
    a request of its rows alone would answer, with its own ``monitor`` and ``monitor_state``);
    otherwise it is empty."""

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
    # The share of the window's predictions that were labelled, when the request said.
    coverage: dict[str, float]
    _body: dict[str, Any] = field(repr=False, compare=False)
    monitor: dict[str, dict[str, Any]] = field(default_factory=dict)
    monitor_state: bytes | None = field(default=None, repr=False)
    window: str | None = None
    monitor_restarted: str | None = None
    segments: dict[str, EvaluationResult] = field(default_factory=dict)

    @classmethod
    def from_dict(
        cls,
        body: dict[str, Any],
        *,
        window: str | None = None,
        monitor_restarted: str | None = None,
    ) -> EvaluationResult:
        """The result of an answer's body; ``window`` and ``monitor_restarted`` as the call
        says (see the class)."""
        state = body.get("monitor_state")
        segments = {
            name: cls.from_dict(each, window=window)
            for name, each in (body.get("segments") or {}).items()
        }
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
            coverage=body.get("coverage", {}),
            _body=body,
            monitor=body.get("monitor", {}),
            monitor_state=None if state is None else base64.b64decode(state),
            window=window,
            monitor_restarted=monitor_restarted,
            segments=segments,
        )

    def to_dict(self) -> dict[str, Any]:
        """The response body, as the REST door and ``core``'s ``to_dict()`` give it."""
        return copy.deepcopy(self._body)

    def operating_point(
        self, option: OperatingOption, target: float, *, class_name: str | None = None
    ) -> OperatingPoint:
        """The operating point that the option ``option`` (``recall_at_precision``,
        ``precision_at_recall``, ``tpr_at_fpr`` or ``specificity_at_sensitivity``) asked for
        at ``target``: its value, threshold and interval, None where undefined with the
        ``reason``. Multiclass and multilabel: the macro average, or the row of
        ``class_name``. Raises ``KeyError`` when the answer does not hold it (the option was
        not sent with that target)."""
        return read_operating_point(self._body, self.metrics, option, target, class_name)

    def flagged_share(self, share: float, *, class_name: str | None = None) -> FlaggedShare:
        """The alert budget that the option ``flagged_share`` asked for at ``share``: the
        threshold flagging at most that share of the rows, the share it flags, and the
        precision and recall there (macro or ``class_name``'s, as ``operating_point``)."""
        return read_flagged_share(self._body, self.metrics, share, class_name)

    def plot(self, figure: Figure | None = None) -> Figure:
        """The ROC and PR curves and the confusion matrix that the answer carries, drawn with
        matplotlib (``pip install 'evalserve-client[plot]'``) on ``figure`` or a new one. A new
        figure is not registered with pyplot: show it in a notebook as it is, or save it with
        ``figure.savefig(path)``; pass ``plt.figure()`` for ``plt.show()``."""
        from evalserve_client._plot import plot

        return plot(self, figure)


@dataclass(frozen=True)
class MetricRange:
    """The closed interval every defined value of a metric lies in; None is an unbounded end
    (``MetricRange(0.0, None)`` is [0, inf))."""

    lower: float | None
    upper: float | None

    def __contains__(self, value: float) -> bool:
        above = self.lower is None or value >= self.lower
        return above and (self.upper is None or value <= self.upper)


@dataclass(frozen=True)
class MetricInfo:
    """One metric of one task in the server's catalog (``GET /v1/metrics``, gRPC
    ``ListMetrics``); (task, name) is unique, and a name two tasks share has an entry in each.

    ``higher_is_better`` is None for counts and thresholds, which have no direction. ``name``
    may be a template (``precision_at_{k}``). ``convention`` says which choice the metric
    follows where references disagree (``key: text; ...``, keys of a result's
    ``conventions``), ``reference`` what it is checked against and ``test`` the server's test
    that checks it. ``tasks`` is ``(task,)``, kept from the first version of the catalog; a
    server of that version sends no ``range`` (None), ``convention``, ``reference`` or ``test``
    ("")."""

    name: str
    tasks: tuple[str, ...]
    higher_is_better: bool | None
    definition: str
    aliases: tuple[str, ...]
    task: str
    range: MetricRange | None
    convention: str
    reference: str
    test: str

    @classmethod
    def from_dict(cls, entry: dict[str, Any]) -> MetricInfo:
        tasks = tuple(entry["tasks"])
        bounds = entry.get("range")
        return cls(
            name=entry["name"],
            tasks=tasks,
            higher_is_better=entry.get("higher_is_better"),
            definition=entry["definition"],
            aliases=tuple(entry.get("aliases", ())),
            task=entry.get("task") or (tasks[0] if tasks else ""),
            range=None if bounds is None else MetricRange(bounds["lower"], bounds["upper"]),
            convention=entry.get("convention", ""),
            reference=entry.get("reference", ""),
            test=entry.get("test", ""),
        )
