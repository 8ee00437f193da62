"""Label coverage: labels often arrive late, so an evaluation sees only the predictions labelled
so far. The caller, which joins predictions with labels, knows how many predictions the window
made and how late its labels are; the result reports the share that was labelled, so a fine
AUC on 3% of the traffic is not read as a fine model."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from evalserve.core._errors import InvalidInputError
from evalserve.core._result_parts import CoverageReport

__all__ = ["COVERAGE_FIELDS", "check_coverage", "coverage_report"]

COVERAGE_FIELDS = ("n_predictions", "label_delay_seconds")


def check_coverage(coverage: Mapping[str, Any]) -> dict[str, int | float]:
    """The coverage fields, checked: ``n_predictions`` a whole number >= 1,
    ``label_delay_seconds`` a finite number >= 0, at least one of them."""
    if not isinstance(coverage, Mapping):
        raise InvalidInputError(
            "coverage", f"expected an object, but got {type(coverage).__name__}"
        )
    unknown = sorted(set(coverage) - set(COVERAGE_FIELDS))
    if unknown:
        raise InvalidInputError(
            f"coverage.{unknown[0]}", f"unknown field; expected one of {list(COVERAGE_FIELDS)}"
        )
    checked: dict[str, int | float] = {}
    predictions = coverage.get("n_predictions")
    if predictions is not None:
        if isinstance(predictions, bool) or not isinstance(predictions, int | float):
            raise InvalidInputError("coverage.n_predictions", "expected a whole number")
        if not (math.isfinite(predictions) and predictions == int(predictions)):
            raise InvalidInputError(
                "coverage.n_predictions", f"expected a whole number, but got {predictions}"
            )
        if predictions < 1:
            raise InvalidInputError(
                "coverage.n_predictions", f"expected at least 1, but got {int(predictions)}"
            )
        checked["n_predictions"] = int(predictions)
    delay = coverage.get("label_delay_seconds")
    if delay is not None:
        if isinstance(delay, bool) or not isinstance(delay, int | float):
            raise InvalidInputError("coverage.label_delay_seconds", "expected a number")
        if not math.isfinite(delay) or delay < 0:
            raise InvalidInputError(
                "coverage.label_delay_seconds",
                f"expected a finite number of seconds >= 0, but got {delay}",
            )
        checked["label_delay_seconds"] = float(delay)
    if not checked:
        raise InvalidInputError(
            "coverage", f"expected at least one of {list(COVERAGE_FIELDS)}, but got none"
        )
    return checked


def coverage_report(coverage: Mapping[str, Any], n_labelled: int) -> CoverageReport:
    """The ``coverage`` part of a result: the checked fields, ``n_labelled`` (the rows
    evaluated; images for detection) and ``label_coverage`` = n_labelled / n_predictions."""
    checked = check_coverage(coverage)
    delay = checked.get("label_delay_seconds")
    predictions = checked.get("n_predictions")
    if predictions is None:
        return CoverageReport(n_labelled=n_labelled, label_delay_seconds=delay)
    if predictions < n_labelled:
        raise InvalidInputError(
            "coverage.n_predictions",
            f"expected at least the {n_labelled} labelled rows evaluated, "
            f"but got {int(predictions)}",
        )
    return CoverageReport(
        n_labelled=n_labelled,
        n_predictions=int(predictions),
        label_coverage=n_labelled / predictions,
        label_delay_seconds=delay,
    )
