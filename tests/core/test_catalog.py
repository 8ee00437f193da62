"""The metric catalog classifies every name the core emits.

A metric the core starts to emit without a catalog entry fails here (sklearn
``metrics/tests/test_common.py``: "a test fails when a metric is not classified").
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from evalserve import core

# Inputs that take every branch of the binary suite: both classes, one class, weights, scores
# outside [0, 1], all scores tied.
INPUTS: dict[str, tuple[list[int], list[float], list[float] | None]] = {
    "two-classes": ([0, 1, 1, 0, 1, 0, 1, 1], [0.1, 0.9, 0.8, 0.3, 0.35, 0.7, 0.5, 0.5], None),
    "weighted": ([0, 1, 1, 0, 1], [0.2, 0.6, 0.6, 0.9, 0.1], [1.0, 0.5, 0.0, 2.0, 3.0]),
    "one-class": ([1, 1, 1], [0.2, 0.4, 0.9], None),
    "raw-scores": ([0, 1, 0, 1], [-3.0, 2.5, 0.5, 7.0], None),
    "tied": ([0, 1, 0, 1], [0.5, 0.5, 0.5, 0.5], [1.0, 2.0, 3.0, 4.0]),
}
OPTION_SETS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "head-k-and-max-fpr": {"head_k": [1, 2.5, 5, 100, 250_000], "max_fpr": 0.1},
    "full-max-fpr": {"max_fpr": 1.0, "threshold": 0.35, "beta": 0.5, "head_k": [3]},
    "small-k": {"head_k": [0.5, 0.001, 0.00001], "max_fpr": 0.5, "calibration_bins": 3},
    "no-curves": {"max_curve_points": 0, "threshold": 10.0, "head_k": [8]},
}


def _results() -> dict[str, core.EvaluationResult]:
    return {
        f"{input_name}/{option_name}": core.evaluate(
            "binary", labels, scores, sample_weight=weights, options=options
        )
        for input_name, (labels, scores, weights) in INPUTS.items()
        for option_name, options in OPTION_SETS.items()
    }


RESULTS = _results()
EMITTED = sorted({name for result in RESULTS.values() for name in result.metrics})
ALIASES = [alias for info in core.CATALOG.values() for alias in info.aliases]

# API.md "Canonical metric names" for task binary (the contract: rename nothing).
CANONICAL_BINARY = (
    # at the threshold
    "tp", "fp", "tn", "fn", "n_samples", "n_positive", "n_negative", "n_predicted_positive",
    "n_predicted_negative", "accuracy", "error_rate", "precision", "recall", "specificity",
    "fpr", "fnr", "npv", "f1", "f_beta", "balanced_accuracy", "mcc", "cohen_kappa", "youden_j",
    "prevalence",
    # over all thresholds
    "roc_auc", "roc_auc_partial", "average_precision", "pr_auc_trapezoid", "ap_11_point",
    "ap_all_point", "break_even_point", "ks_statistic", "ks_threshold",
    "optimal_threshold_youden", "optimal_threshold_f1",
    # calibration
    "log_loss", "brier_score", "expected_calibration_error",
)  # fmt: skip


@pytest.mark.parametrize("name", [pytest.param(name, id=name) for name in EMITTED])
def test_every_emitted_metric_is_classified(name: str) -> None:
    info = core.catalog_entry(name)
    assert info is not None, f"metric {name!r} is emitted but missing from core.CATALOG"
    assert "binary" in info.tasks


def test_api_md_binary_names_are_all_emitted() -> None:
    result = RESULTS["two-classes/head-k-and-max-fpr"]
    missing = sorted(set(CANONICAL_BINARY) - set(result.metrics))
    assert not missing
    assert {"precision_at_5", "recall_at_5", "precision_at_2.5", "recall_at_2.5"} <= set(
        result.metrics
    )


def test_aliases_are_never_emitted_as_keys() -> None:
    # API.md: aliases (sensitivity, tpr, ppv, tnr) belong in the catalog, not as duplicate keys
    assert {"sensitivity", "tpr", "ppv", "tnr"} <= set(ALIASES)
    assert not set(ALIASES) & set(EMITTED)


@pytest.mark.parametrize("k", [pytest.param(k, id=f"k={k}") for k in (1, 2.5, 0.001, 1e-05)])
def test_head_metric_names_are_classified_for_any_k(k: float) -> None:
    result = core.evaluate("binary", [0, 1, 1], [0.2, 0.9, 0.4], options={"head_k": [k]})
    names = [name for name in result.metrics if name.startswith(("precision_at_", "recall_at_"))]
    assert len(names) == 2
    for name in names:
        assert core.catalog_entry(name) is not None, f"{name!r} is not classified"


def test_distinct_head_k_get_distinct_metric_names() -> None:
    # k counts sample weight, so k in the millions is an ordinary request on a large data set;
    # each k needs its own key, and the key should say which k it is.
    head_k = [1_234_567.0, 1_234_568.0, 1_000_001.0]
    labels = [1, 0, 1, 1, 0, 0, 1, 0]
    scores = np.linspace(0.0, 1.0, len(labels))
    weights = np.full(len(labels), 500_000.0)
    result = core.evaluate(
        "binary", labels, scores, sample_weight=weights, options={"head_k": head_k}
    )
    names = sorted(name for name in result.metrics if name.startswith("precision_at_"))
    assert len(names) == len(head_k), names
    assert sorted(float(name.removeprefix("precision_at_")) for name in names) == sorted(head_k)


@pytest.mark.parametrize(
    "info", [pytest.param(info, id=name) for name, info in core.CATALOG.items()]
)
def test_catalog_entry_is_complete(info: core.MetricInfo) -> None:
    assert isinstance(info, core.MetricInfo)
    assert core.CATALOG[info.name] is info
    assert core.catalog_entry(info.name) is info
    assert isinstance(info.definition, str) and info.definition.strip()
    assert info.higher_is_better in (True, False, None)
    assert info.tasks and set(info.tasks) <= set(core.TASKS)
    assert all(isinstance(alias, str) and alias for alias in info.aliases)


def test_aliases_do_not_collide_with_names_or_each_other() -> None:
    assert len(ALIASES) == len(set(ALIASES)), "an alias is listed twice"
    for alias in ALIASES:
        assert alias not in core.CATALOG, f"alias {alias!r} is also a metric name"
        assert core.catalog_entry(alias) is None, f"alias {alias!r} matches a metric pattern"


def test_directions_follow_the_naming_contract() -> None:
    # STYLE.md, after sklearn _ranking.py: *_error / *_loss lower is better; counts, prevalence
    # and thresholds have no direction
    for name, info in core.CATALOG.items():
        if name.endswith(("_error", "_loss", "error_rate", "brier_score")):
            assert info.higher_is_better is False, name
        if name.startswith(("n_", "optimal_threshold_")) or name.endswith("_threshold"):
            assert info.higher_is_better is None, name
    for name in ("tp", "fp", "tn", "fn", "prevalence"):
        assert core.CATALOG[name].higher_is_better is None, name
    for name in ("roc_auc", "average_precision", "f1", "mcc", "accuracy", "precision_at_{k}"):
        assert core.CATALOG[name].higher_is_better is True, name
