"""Evaluation options: parsed and range-checked once, then passed around as a frozen value."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from evalserve.core._errors import InvalidInputError

__all__ = ["Options", "parse_options"]

MAX_CURVE_POINTS_LIMIT = 1_000_000
MAX_LIST_OPTION = 64
MAX_BETA = 1e4  # beta^2 must stay far from overflow
MAX_BOOTSTRAP_REPLICATES = 100_000
AUC_INTERVALS = ("wald", "logit")


@dataclass(frozen=True, slots=True)
class Options:
    """Every knob of an evaluation, with its default.

    ``threshold``: a score ``>= threshold`` is predicted positive.
    ``beta``: the F-beta weight of recall (beta > 0).
    ``top_k``: the k of multiclass top-k accuracy.
    ``head_k``: the k of binary precision@k / recall@k, in units of sample weight (rows when
    unweighted).
    ``max_fpr``: the FPR bound of the McClish-standardized partial AUC; None skips it.
    ``max_curve_points``: curves are thinned to at most this many points (0 omits curves).
    ``confidence_level``: the level of every interval.
    ``n_params``: model parameters, for adjusted R2, AIC, BIC and Mallows' Cp.
    ``calibration_bins``: equal-width bins of the expected calibration error.
    ``auc_interval``: ``"logit"`` (the default: DeLong on the logit scale, inside (0, 1); it
    covers better than Wald at small samples and near 1, bench/RESULTS.md) or ``"wald"``
    (pROC's DeLong interval, clipped to [0, 1]).
    ``alpha``: the significance level of the drift test and the challenger comparison.
    ``drift_min_samples``: the fewest positives and negatives (each, in units of weight) the
    current data and a baseline payload need for a drift verdict; below it the drift result
    says "insufficient data".
    ``bootstrap_replicates``: replicates of the bootstrap intervals; 0 (the default) skips
    them: at small requests they cost several times the rest of the evaluation.
    ``bootstrap_seed``: the seed of the bootstrap: the same request gives the same intervals.
    ``full_model_variance``: the residual variance (sigma^2) of the full regression model, for
    Mallows' Cp; None leaves Cp undefined.
    ``max_detections``: detection: the highest-scoring predictions kept per image (COCO: 100).
    """

    threshold: float = 0.5
    beta: float = 1.0
    top_k: tuple[int, ...] = (1, 5)
    head_k: tuple[float, ...] = ()
    max_fpr: float | None = None
    max_curve_points: int = 1000
    confidence_level: float = 0.95
    n_params: int | None = None
    calibration_bins: int = 10
    auc_interval: str = "logit"
    alpha: float = 0.05
    drift_min_samples: float = 20.0
    bootstrap_replicates: int = 0
    bootstrap_seed: int = 0
    full_model_variance: float | None = None
    max_detections: int = 100


def _number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(f"options.{name}", f"expected a number, but got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise InvalidInputError(f"options.{name}", f"expected a finite number, but got {value!r}")
    return number


def _integer(name: str, value: Any, *, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise InvalidInputError(f"options.{name}", f"expected an integer, but got {value!r}")
    if not low <= int(value) <= high:
        raise InvalidInputError(
            f"options.{name}", f"expected an integer in [{low}, {high}], but got {int(value)}"
        )
    return int(value)


def _number_list(name: str, value: Any) -> list[Any]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise InvalidInputError(
            f"options.{name}", f"expected a list of integers, but got {value!r}"
        )
    if len(value) > MAX_LIST_OPTION:
        raise InvalidInputError(
            f"options.{name}", f"expected at most {MAX_LIST_OPTION} values, but got {len(value)}"
        )
    return list(value)


def parse_options(options: Mapping[str, Any] | Options | None) -> Options:
    """Check every option once; unknown names and out-of-range values raise InvalidInputError."""
    if options is None:
        return Options()
    if isinstance(options, Options):
        return options
    if not isinstance(options, Mapping):
        raise InvalidInputError("options", f"expected an object, but got {type(options).__name__}")
    known = {f.name for f in fields(Options)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise InvalidInputError(
            f"options.{unknown[0]}", f"unknown option; expected one of {sorted(known)}"
        )
    parsed: dict[str, Any] = {}
    for name, value in options.items():
        if value is None and name in ("max_fpr", "n_params", "full_model_variance"):
            parsed[name] = None
        elif value is None:
            continue  # null means "the default"
        elif name == "threshold":
            parsed[name] = _number(name, value)
        elif name == "beta":
            beta = _number(name, value)
            if not 0 < beta <= MAX_BETA:
                raise InvalidInputError(
                    "options.beta", f"expected a number in (0, {MAX_BETA:g}], but got {beta}"
                )
            parsed[name] = beta
        elif name == "max_fpr":
            max_fpr = _number(name, value)
            if not 0 < max_fpr <= 1:
                raise InvalidInputError(
                    "options.max_fpr", f"expected a number in (0, 1], but got {max_fpr}"
                )
            parsed[name] = max_fpr
        elif name == "confidence_level":
            level = _number(name, value)
            if not 0 < level < 1:
                raise InvalidInputError(
                    "options.confidence_level", f"expected a number in (0, 1), but got {level}"
                )
            parsed[name] = level
        elif name == "top_k":
            ks = [_integer(name, k, low=1, high=1_000_000) for k in _number_list(name, value)]
            parsed[name] = tuple(sorted(set(ks)))
        elif name == "head_k":
            heads = [_number(name, k) for k in _number_list(name, value)]
            for k in heads:
                if k <= 0:
                    raise InvalidInputError("options.head_k", f"expected k > 0, but got {k}")
            parsed[name] = tuple(sorted(set(heads)))
        elif name == "max_curve_points":
            points = _integer(name, value, low=0, high=MAX_CURVE_POINTS_LIMIT)
            if points == 1:
                raise InvalidInputError(
                    "options.max_curve_points", "expected 0 (no curves) or at least 2, but got 1"
                )
            parsed[name] = points
        elif name == "n_params":
            parsed[name] = _integer(name, value, low=0, high=1_000_000_000)
        elif name == "calibration_bins":
            parsed[name] = _integer(name, value, low=1, high=10_000)
        elif name == "auc_interval":
            if value not in AUC_INTERVALS:
                raise InvalidInputError(
                    "options.auc_interval",
                    f"expected one of {list(AUC_INTERVALS)}, but got {value!r}",
                )
            parsed[name] = value
        elif name == "alpha":
            alpha = _number(name, value)
            if not 0 < alpha < 1:
                raise InvalidInputError(
                    "options.alpha", f"expected a number in (0, 1), but got {alpha}"
                )
            parsed[name] = alpha
        elif name == "drift_min_samples":
            least = _number(name, value)
            if not 2 <= least <= 1e12:
                raise InvalidInputError(
                    "options.drift_min_samples", f"expected a number in [2, 1e12], but got {least}"
                )
            parsed[name] = least
        elif name == "bootstrap_replicates":
            count = _integer(name, value, low=0, high=MAX_BOOTSTRAP_REPLICATES)
            if count == 1:
                raise InvalidInputError(
                    "options.bootstrap_replicates",
                    "expected 0 (no bootstrap) or at least 2, but got 1",
                )
            parsed[name] = count
        elif name == "full_model_variance":
            variance = _number(name, value)
            if not variance > 0:
                raise InvalidInputError(
                    "options.full_model_variance", f"expected a number > 0, but got {variance}"
                )
            parsed[name] = variance
        elif name == "max_detections":
            parsed[name] = _integer(name, value, low=1, high=1_000_000)
        elif name == "bootstrap_seed":
            parsed[name] = _integer(name, value, low=0, high=2**63 - 1)
    return Options(**parsed)
