"""A stream's answer against the one-shot answer for the same rows, with fractional weights:
the per-score sums are added in another order, so the two may differ in the last digits only.
docs/api/streams.md quotes the bound this test checks (section "Exactness")."""

from __future__ import annotations

from typing import Any

import numpy as np

from evalserve.core import BinaryStats, evaluate, evaluate_binary_stats, parse_options

BOUND = 1e-15  # relative, over every number of the answer


def _numbers(value: Any, path: str = "") -> dict[str, float]:
    """Every float of a JSON-shaped answer, by its path."""
    if isinstance(value, dict):
        return {
            k: v for key, item in value.items() for k, v in _numbers(item, f"{path}.{key}").items()
        }
    if isinstance(value, list):
        return {
            k: v for i, item in enumerate(value) for k, v in _numbers(item, f"{path}[{i}]").items()
        }
    if isinstance(value, float):
        return {path: value}
    return {}


def test_a_million_rows_with_fractional_weights_in_four_batches() -> None:
    rng = np.random.default_rng(1)
    n = 1_000_000
    labels = rng.random(n) < 0.3
    scores = np.round(rng.random(n) * 0.5 + labels * 0.2, 4).astype(np.float64)
    weights = rng.random(n) * 3
    one_shot = evaluate("binary", labels.astype(float), scores, sample_weight=weights).to_dict()
    stats = BinaryStats.empty()
    for part in np.array_split(np.arange(n), 4):
        stats = stats.update(labels[part], scores[part], weights[part])
    streamed = evaluate_binary_stats(stats, parse_options(None)).to_dict()
    expected, got = _numbers(one_shot), _numbers(streamed)
    assert got.keys() == expected.keys()
    worst = max(_error(path, got[path], value) for path, value in expected.items())
    assert worst <= BOUND, worst


def _error(path: str, got: float, value: float) -> float:
    """Relative error; absolute for the DET curve's FNR, which is 1 - TPR (P - TP over P, as
    scikit-learn's det_curve): near 0 it keeps the absolute error of the TPR, not a relative
    one."""
    if path.startswith(".curves.det.fnr"):
        return abs(got - value)
    return abs(got - value) / max(abs(value), 1e-300)
