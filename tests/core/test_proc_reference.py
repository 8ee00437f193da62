"""DeLong AUC statistics of the core against the R package pROC 1.18.0.

``tests/fixtures/proc/cases.json`` holds 43 seeded cases (labels, scores, a challenger on the same
rows, an independent baseline) with pROC's AUC, DeLong variance, DeLong Wald intervals at 95% and
90% (clipped to [0, 1]), paired DeLong test (champion vs challenger) and unpaired DeLong test
(current vs baseline; a t test with Welch-Satterthwaite degrees of freedom). Every ROC curve was
built with ``levels = c(0, 1), direction = "<"``. A ``null`` in the fixture is a value pROC gave
as NA/NaN (one positive; two perfect curves in the unpaired test); it is not checked.

Regenerate with ``make proc-fixtures`` (``Rscript tests/fixtures/proc/generate.R``; needs
Debian's r-base-core, r-cran-proc and r-cran-jsonlite). The generator is deterministic: the same
pROC version rewrites the same bytes.

Sign conventions: the core's drift ``z`` is (current - baseline) / se, pROC's statistic of
``roc.test(current, baseline, paired = FALSE)``; the core's comparison ``z`` is (challenger -
champion) / se, minus pROC's statistic of ``roc.test(champion, challenger, paired = TRUE)``.

Values agree to 1e-9 relative, with an absolute floor of 1e-12 for values at or near zero (a
clipped interval bound, a zero variance, a z of 0, a p-value in the far tail). The standard
error is compared with sqrt(pROC's variance), which keeps the floor far below 1e-9 of it.
"""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from evalserve.core import evaluate

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "proc" / "cases.json"
PROC_VERSION = "1.18.0"
REL = 1e-9
ABS = 1e-12
ALPHA = 0.05  # the core's default significance level
LEVELS = (0.95, 0.90)
# Every fixture case has at least 2 positives and 2 negatives wherever pROC gives a test; the
# option's lower bound in core/_options.py is 2.
DRIFT_MIN_SAMPLES = 2

CASE_KEYS = {
    "name",
    "description",
    "seed",
    "n_positive",
    "n_negative",
    "labels",
    "scores",
    "auc",
    "var",
    "ci95",
    "ci90",
    "challenger_scores",
    "paired",
    "baseline",
    "unpaired",
    "warnings",
}
INTERVAL_KEYS = {"lower", "upper"}
PAIRED_KEYS = {"statistic", "p_value", "auc1", "auc2"}
BASELINE_KEYS = {"labels", "scores", "auc", "var"}
UNPAIRED_KEYS = {"statistic", "df", "p_value", "auc1", "auc2"}

DOCUMENT: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))
CASES: dict[str, dict[str, Any]] = {case["name"]: case for case in DOCUMENT["cases"]}


def close(expected: float) -> Any:
    return pytest.approx(expected, rel=REL, abs=ABS)


def ci_key(level: float) -> str:
    return f"ci{round(level * 100)}"


@cache
def run(name: str, level: float, with_baseline: bool, with_challenger: bool) -> dict[str, Any]:
    """``core.evaluate`` on one fixture case, as the REST body; memoized across the tests."""
    case = CASES[name]
    baseline = None
    if with_baseline:
        baseline = {"labels": case["baseline"]["labels"], "scores": case["baseline"]["scores"]}
    challenger = {"scores": case["challenger_scores"]} if with_challenger else None
    result = evaluate(
        "binary",
        case["labels"],
        case["scores"],
        options={
            "confidence_level": level,
            "drift_min_samples": DRIFT_MIN_SAMPLES,
            "auc_interval": "wald",  # pROC's interval (our default is the logit one)
        },
        baseline=baseline,
        challenger=challenger,
    )
    return result.to_dict()


def names_where(predicate: Any) -> list[str]:
    return [name for name, case in CASES.items() if predicate(case)]


def has_paired_test(case: dict[str, Any]) -> bool:
    return case["paired"] is not None and case["paired"]["statistic"] is not None


def has_unpaired_test(case: dict[str, Any]) -> bool:
    return case["unpaired"] is not None and case["unpaired"]["statistic"] is not None


# ---------------------------------------------------------------------------------------------
# The fixture file itself


def test_fixture_header() -> None:
    assert DOCUMENT["pROC_version"] == PROC_VERSION, "regenerated with another pROC: update"
    assert DOCUMENT["generator"] == "tests/fixtures/proc/generate.R"
    assert len(DOCUMENT["cases"]) == len(CASES) == 43, "case names must be unique"


@pytest.mark.parametrize("name", list(CASES))
def test_fixture_shape(name: str) -> None:
    """Every case has the keys and types the generator writes, consistent with its rows."""
    case = CASES[name]
    assert set(case) == CASE_KEYS
    labels, scores = case["labels"], case["scores"]
    assert isinstance(case["description"], str) and case["description"]
    assert isinstance(case["seed"], int)
    assert all(type(label) is int and label in (0, 1) for label in labels)
    assert all(type(score) is float and math.isfinite(score) for score in scores)
    assert len(labels) == len(scores) == case["n_positive"] + case["n_negative"]
    assert sum(labels) == case["n_positive"] >= 1
    assert case["n_negative"] >= 1
    assert isinstance(case["auc"], float) and 0.0 <= case["auc"] <= 1.0
    assert isinstance(case["warnings"], list)
    assert all(isinstance(warning, str) for warning in case["warnings"])

    estimable = case["n_positive"] >= 2 and case["n_negative"] >= 2
    assert (case["var"] is not None) == estimable
    for level in LEVELS:
        interval = case[ci_key(level)]
        assert set(interval) == INTERVAL_KEYS
        if estimable:
            assert 0.0 <= interval["lower"] <= case["auc"] <= interval["upper"] <= 1.0
        else:
            assert interval == {"lower": None, "upper": None}

    assert (case["challenger_scores"] is None) == (case["paired"] is None)
    if case["paired"] is not None:
        challenger = case["challenger_scores"]
        assert len(challenger) == len(labels)
        assert all(type(score) is float and math.isfinite(score) for score in challenger)
        assert set(case["paired"]) == PAIRED_KEYS
        assert case["paired"]["auc1"] == case["auc"]
        assert (case["paired"]["statistic"] is not None) == estimable
        assert (case["paired"]["p_value"] is not None) == estimable

    assert (case["baseline"] is None) == (case["unpaired"] is None)
    if case["baseline"] is not None:
        baseline = case["baseline"]
        assert set(baseline) == BASELINE_KEYS
        assert len(baseline["labels"]) == len(baseline["scores"])
        assert len(baseline["labels"]) != len(labels), "a baseline has its own n"
        assert all(type(label) is int and label in (0, 1) for label in baseline["labels"])
        assert 0 < sum(baseline["labels"]) < len(baseline["labels"])
        assert all(type(score) is float and math.isfinite(score) for score in baseline["scores"])
        unpaired = case["unpaired"]
        assert set(unpaired) == UNPAIRED_KEYS
        assert unpaired["auc1"] == case["auc"]
        assert unpaired["auc2"] == baseline["auc"]
        assert (unpaired["statistic"] is None) == (unpaired["df"] is None)
        assert (unpaired["statistic"] is None) == (unpaired["p_value"] is None)


def test_fixture_coverage() -> None:
    """The cases the fixture promises are there (a regeneration must not lose them)."""
    cases = list(CASES.values())

    def prevalence(case: dict[str, Any]) -> float:
        return float(case["n_positive"]) / len(case["labels"])

    assert any(len(c["labels"]) <= 10 for c in cases)
    assert any(c["n_positive"] == 3 and c["n_negative"] == 4 for c in cases)
    assert any(c["n_positive"] == 2 for c in cases)
    assert any(prevalence(c) <= 0.005 and len(c["labels"]) == 5000 for c in cases)
    assert any(0.005 < prevalence(c) <= 0.01 for c in cases)
    assert any(c["auc"] == 1.0 for c in cases)
    assert any(c["auc"] < 0.5 for c in cases)
    assert any(len(set(c["scores"])) <= 5 and len(c["scores"]) >= 500 for c in cases)
    assert any(len(set(c["scores"])) == len(c["scores"]) >= 1000 for c in cases)
    assert sum(c["paired"] is not None for c in cases) >= 30
    assert sum(c["unpaired"] is not None for c in cases) >= 30


# ---------------------------------------------------------------------------------------------
# The core against pROC


@pytest.mark.parametrize("name", list(CASES))
def test_auc(name: str) -> None:
    result = run(name, 0.95, False, False)
    assert result["metrics"]["roc_auc"] == close(CASES[name]["auc"])


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("name", names_where(lambda case: case["var"] is not None))
def test_delong_interval(name: str, level: float) -> None:
    case = CASES[name]
    interval = run(name, level, False, False)["intervals"]["roc_auc"]
    expected = case[ci_key(level)]
    assert interval["method"] == "delong"
    assert interval["level"] == close(level)
    assert interval["std_error"] == close(math.sqrt(case["var"]))
    assert interval["lower"] == close(expected["lower"])
    assert interval["upper"] == close(expected["upper"])


@pytest.mark.parametrize("name", names_where(has_unpaired_test))
def test_drift_unpaired_delong(name: str) -> None:
    case = CASES[name]
    expected = case["unpaired"]
    drift = run(name, 0.95, True, False)["drift"]["roc_auc"]
    assert drift["method"] == "delong-unpaired"
    assert drift["status"] == "ok"
    assert drift["baseline"] == close(expected["auc2"])
    assert drift["delta"] == close(expected["auc1"] - expected["auc2"])
    assert drift["std_error"] == close(math.sqrt(case["var"] + case["baseline"]["var"]))
    assert drift["z"] == close(expected["statistic"])
    assert drift["df"] == close(expected["df"])
    assert drift["p_value"] == close(expected["p_value"])
    assert drift["significant"] is (expected["p_value"] < ALPHA)


@pytest.mark.parametrize("name", names_where(has_paired_test))
def test_comparison_paired_delong(name: str) -> None:
    expected = CASES[name]["paired"]
    comparison = run(name, 0.95, False, True)["comparison"]["roc_auc"]
    assert comparison["method"] == "delong-paired"
    assert comparison["challenger"] == close(expected["auc2"])
    assert comparison["delta"] == close(expected["auc2"] - expected["auc1"])
    assert comparison["z"] == close(-expected["statistic"])
    assert comparison["p_value"] == close(expected["p_value"])
    assert comparison["significant"] is (expected["p_value"] < ALPHA)
