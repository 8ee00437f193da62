"""The metric catalog classifies every name the core emits, task by task, and every entry names
a test that exists and checks it.

A metric the core starts to emit without a catalog entry fails here (sklearn
``metrics/tests/test_common.py``: "a test fails when a metric is not classified"), on inputs
that take every branch of each task (one class, absent classes, ties, weights with zeros,
scores that are not probabilities, predictions sent, options that add or remove metrics). So
does an entry whose reference test is missing or never names the metric: the test's function,
read with ``ast`` together with the module-level helpers and tables it uses, must contain the
metric's name as a string, or an f-string that spells it from the strings it has.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalserve import core
from evalserve.core import binary, detection, multiclass, multilabel, regression

ROOT = Path(__file__).resolve().parents[2]
TASK_CONVENTIONS: dict[str, Mapping[str, str]] = {
    "binary": binary.CONVENTIONS,
    "multiclass": multiclass.CONVENTIONS,
    "multilabel": multilabel.CONVENTIONS,
    "regression": regression.CONVENTIONS,
    "detection": detection.CONVENTIONS,
}

# --- inputs that take every branch of each task -----------------------------------------------

# Binary: both classes, one class, weights, scores outside [0, 1], all scores tied, under
# options that add (max_fpr, head_k) and remove (max_curve_points = 0) metrics.
BINARY_INPUTS: dict[str, tuple[list[int], list[float], list[float] | None]] = {
    "two-classes": ([0, 1, 1, 0, 1, 0, 1, 1], [0.1, 0.9, 0.8, 0.3, 0.35, 0.7, 0.5, 0.5], None),
    "weighted": ([0, 1, 1, 0, 1], [0.2, 0.6, 0.6, 0.9, 0.1], [1.0, 0.5, 0.0, 2.0, 3.0]),
    "one-class": ([1, 1, 1], [0.2, 0.4, 0.9], None),
    "raw-scores": ([0, 1, 0, 1], [-3.0, 2.5, 0.5, 7.0], None),
    "tied": ([0, 1, 0, 1], [0.5, 0.5, 0.5, 0.5], [1.0, 2.0, 3.0, 4.0]),
}
BINARY_OPTIONS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "head-k-and-max-fpr": {"head_k": [1, 2.5, 5, 100, 250_000], "max_fpr": 0.1},
    "full-max-fpr": {"max_fpr": 1.0, "threshold": 0.35, "beta": 0.5, "head_k": [3]},
    "small-k": {"head_k": [0.5, 0.001, 0.00001], "max_fpr": 0.5, "calibration_bins": 3},
    "no-curves": {"max_curve_points": 0, "threshold": 10.0, "head_k": [8]},
    "operating-points": {
        "recall_at_precision": [0.5, 1.0],
        "precision_at_recall": [0.5],
        "tpr_at_fpr": [0.0, 0.25],
        "specificity_at_sensitivity": [0.75],
        "flagged_share": [0.1, 0.5],
    },
}


# Multiclass and multilabel: per class and macro (a target no class reaches: a null macro).
OPERATING_OPTIONS: dict[str, Any] = {
    **BINARY_OPTIONS["operating-points"],
    "flagged_share": [0.5, 0.001],
}


def _binary() -> Iterator[tuple[str, core.EvaluationResult]]:
    for input_name, (labels, scores, weights) in BINARY_INPUTS.items():
        for option_name, options in BINARY_OPTIONS.items():
            yield (
                f"{input_name}/{option_name}",
                core.evaluate("binary", labels, scores, sample_weight=weights, options=options),
            )
    yield (
        "predictions-sent",
        core.evaluate("binary", [0, 1, 1, 0], [0.2, 0.7, 0.4, 0.6], y_pred=[0, 1, 0, 0]),
    )


def _softmax(logits: Any) -> Any:
    exp = np.exp(np.asarray(logits, dtype=np.float64))
    return exp / exp.sum(axis=1, keepdims=True)


def _multiclass() -> Iterator[tuple[str, core.EvaluationResult]]:
    rng = np.random.default_rng(11)
    labels = rng.integers(0, 4, 60)
    probabilities = _softmax(rng.normal(size=(60, 4)) + 1.5 * np.eye(4)[labels])
    top_k = {"top_k": [1, 2, 5]}  # 5 > k: null with a reason
    yield "probabilities", core.evaluate("multiclass", labels, probabilities, options=top_k)
    yield (
        "tied",
        core.evaluate("multiclass", labels, np.round(probabilities, 1), options={"top_k": [2]}),
    )
    yield "raw-scores", core.evaluate("multiclass", labels, rng.normal(size=(60, 4)))
    absent = np.where(labels == 3, 0, labels)  # class 3 never a label
    weights = rng.uniform(0, 2, 60)
    weights[:5] = 0.0
    yield (
        "absent-class-weighted",
        core.evaluate("multiclass", absent, probabilities, sample_weight=weights),
    )
    yield "named-with-predictions", core.evaluate(
        "multiclass", ["a", "b", "c", "a"], [[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.1, 0.8],
        [0.4, 0.4, 0.2]], y_pred=["a", "a", "a", "a"], classes=["a", "b", "c"],
    )  # fmt: skip
    yield (
        "two-classes",
        core.evaluate("multiclass", [0, 1, 1], [[0.7, 0.3], [0.4, 0.6], [0.5, 0.5]]),
    )
    yield (
        "one-class-present",
        core.evaluate("multiclass", [1, 1, 1], [[0.2, 0.5, 0.3], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4]]),
    )
    yield (
        "operating-points",
        core.evaluate("multiclass", absent, probabilities, options=OPERATING_OPTIONS),
    )


def _multilabel() -> Iterator[tuple[str, core.EvaluationResult]]:
    rng = np.random.default_rng(12)
    truth = (rng.random((40, 5)) < 0.4).astype(int)
    scores = np.clip(truth * 0.4 + rng.random((40, 5)) * 0.6, 0, 1)
    yield "scores", core.evaluate("multilabel", truth, scores)
    never = truth.copy()
    never[:, 4] = 0  # a label never positive
    never[:3] = 0  # rows with no true label
    weights = rng.uniform(0, 3, 40)
    weights[:2] = 0.0
    yield (
        "label-never-positive-weighted",
        core.evaluate("multilabel", never, scores, sample_weight=weights),
    )
    yield (
        "all-zero-predictions",
        core.evaluate("multilabel", truth, scores, y_pred=np.zeros_like(truth)),
    )
    yield "predictions-only", core.evaluate("multilabel", truth, y_pred=(scores > 0.5).astype(int))
    yield "nothing-positive", core.evaluate("multilabel", np.zeros((3, 2)), np.zeros((3, 2)))
    yield (
        "operating-points",
        core.evaluate("multilabel", never, scores, options=OPERATING_OPTIONS),
    )


def _regression() -> Iterator[tuple[str, core.EvaluationResult]]:
    y, y_hat = [1.0, 2.0, 3.0, 4.0], [1.5, 2.0, 2.0, 5.0]
    every = {"n_params": 1, "full_model_variance": 0.5, "quantiles": [0.1, 0.5, 0.9]}
    yield "every-option", core.evaluate("regression", y, y_pred=y_hat, options=every)
    yield "no-options", core.evaluate("regression", y, y_pred=y_hat, sample_weight=[2, 1, 0, 1])
    yield "constant-labels", core.evaluate("regression", [2.0] * 3, y_pred=[1.0, 2.0, 3.0])
    yield "zero-label", core.evaluate("regression", [0.0, 1.0], y_pred=[0.5, 1.0], options=every)
    yield "perfect-fit", core.evaluate("regression", y, y_pred=y, options=every)
    yield "too-many-params", core.evaluate("regression", y, y_pred=y_hat, options={"n_params": 5})


def _box(x: float) -> list[float]:
    return [x, 0.0, x + 10.0, 10.0]


def _detection() -> Iterator[tuple[str, core.EvaluationResult]]:
    targets = [
        {"boxes": [_box(0), _box(20)], "classes": [0, 1]},
        {"boxes": [_box(0)], "classes": [0]},
        {"boxes": [], "classes": []},
    ]
    predictions = [
        {"boxes": [_box(0), _box(21), _box(50)], "classes": [0, 1, 2], "scores": [0.9, 0.8, 0.7]},
        {"boxes": [_box(1), _box(0)], "classes": [0, 0], "scores": [0.6, 0.6]},
        {"boxes": [_box(5)], "classes": [1], "scores": [0.3]},
    ]
    yield "scene", core.evaluate("detection", targets, predictions, classes=["a", "b", "c", "d"])
    yield (
        "max-detections",
        core.evaluate("detection", targets, predictions, options={"max_detections": 1}),
    )
    yield "no-ground-truth", core.evaluate(
        "detection", [{"boxes": [], "classes": []}],
        [{"boxes": [_box(0)], "classes": [0], "scores": [0.5]}],
    )  # fmt: skip


RESULTS: dict[str, dict[str, core.EvaluationResult]] = {
    "binary": dict(_binary()),
    "multiclass": dict(_multiclass()),
    "multilabel": dict(_multilabel()),
    "regression": dict(_regression()),
    "detection": dict(_detection()),
}
EMITTED: dict[str, list[str]] = {
    task: sorted({name for result in results.values() for name in result.metrics})
    for task, results in RESULTS.items()
}
ENTRIES = [pytest.param(info, id=f"{task}/{name}") for (task, name), info in core.CATALOG.items()]


def test_every_task_is_exercised() -> None:
    assert set(RESULTS) == set(core.TASKS)
    for task, results in RESULTS.items():
        assert all(result.task == task for result in results.values())


# --- every emitted metric has an entry of its task, and every entry is emitted -----------------


@pytest.mark.parametrize(
    ("task", "name"),
    [
        pytest.param(task, name, id=f"{task}/{name}")
        for task in core.TASKS
        for name in EMITTED[task]
    ],
)
def test_every_emitted_metric_is_classified(task: str, name: str) -> None:
    info = core.catalog_entry(name, task)
    assert info is not None, f"{task} emits {name!r}, which has no entry in core.CATALOG"
    assert info.task == task


@pytest.mark.parametrize("task", core.TASKS)
def test_every_entry_is_emitted_by_some_input(task: str) -> None:
    # A stale entry (a metric the core no longer computes) fails here.
    emitted = EMITTED[task]
    for info in core.catalog_entries(task):
        if info.is_template:
            assert any(core.catalog_entry(name, task) is info for name in emitted), info.name
        else:
            assert info.name in emitted, f"{task}/{info.name} is catalogued but never emitted"


@pytest.mark.parametrize("task", core.TASKS)
def test_every_defined_value_lies_in_its_range(task: str) -> None:
    for label, result in RESULTS[task].items():
        for name, value in result.metrics.items():
            info = core.catalog_entry(name, task)
            assert info is not None
            if value is not None:
                assert value in info.range, f"{label}: {name} = {value} outside {info.range}"
            else:
                assert result.undefined[name], f"{label}: {name} is null without a reason"


@pytest.mark.parametrize("task", core.TASKS)
def test_the_inputs_reach_the_undefined_branches(task: str) -> None:
    # The range test above sees nulls too: every task's inputs make some metric undefined.
    assert any(result.undefined for result in RESULTS[task].values())


# --- each entry is complete, and its conventions are the ones its results carry ---------------


@pytest.mark.parametrize("info", ENTRIES)
def test_the_entry_is_complete(info: core.MetricInfo) -> None:
    assert isinstance(info, core.MetricInfo)
    assert core.CATALOG[info.task, info.name] is info
    assert info.task in core.TASKS and info.tasks == (info.task,)
    assert re.fullmatch(r"[a-z0-9_]+(\{k\}[a-z0-9_]*)?", info.name), info.name
    assert info.definition.strip() and info.reference.strip()
    assert info.higher_is_better in (True, False, None)
    assert isinstance(info.range, core.MetricRange)
    assert all(isinstance(alias, str) and alias for alias in info.aliases)
    conventions = TASK_CONVENTIONS[info.task]
    for key, text in info.conventions:
        assert conventions[key] == text, (info.name, key)
    assert info.convention == "; ".join(f"{key}: {text}" for key, text in info.conventions)


@pytest.mark.parametrize("task", core.TASKS)
def test_results_carry_the_conventions_their_entries_cite(task: str) -> None:
    for result in RESULTS[task].values():
        for name in result.metrics:
            info = core.catalog_entry(name, task)
            assert info is not None
            for key, text in info.conventions:
                assert result.conventions[key] == text, (name, key)


@pytest.mark.parametrize("task", core.TASKS)
def test_aliases_are_unique_and_never_names_of_their_task(task: str) -> None:
    entries = core.catalog_entries(task)
    aliases = [alias for info in entries for alias in info.aliases]
    assert len(aliases) == len(set(aliases)), "an alias is listed twice"
    for alias in aliases:
        assert core.catalog_entry(alias, task) is None, f"alias {alias!r} is a metric of {task}"
    emitted = set(EMITTED[task])
    assert not set(aliases) & emitted, "an alias is emitted as a key"


def test_directions_follow_the_naming_contract() -> None:
    # After sklearn _ranking.py: *_error / *_loss lower is better; counts, prevalence and
    # thresholds have no direction.
    for (task, name), info in core.CATALOG.items():
        if name.endswith(("_error", "_loss", "error_rate", "brier_score")):
            assert info.higher_is_better is False, (task, name)
        if name.startswith(("n_", "optimal_threshold_")) or name.endswith("_threshold"):
            assert info.higher_is_better is None, (task, name)
        if info.higher_is_better is None:
            assert (
                info.range.lower is None or info.range.lower >= 0 or name.endswith("threshold")
            ), (task, name)
    for name in ("tp", "fp", "tn", "fn", "prevalence"):
        assert core.CATALOG["binary", name].higher_is_better is None, name
    for name in ("roc_auc", "average_precision", "f1", "mcc", "accuracy", "precision_at_{k}"):
        assert core.CATALOG["binary", name].higher_is_better is True, name


# --- each entry names a test that exists and names the metric ----------------------------------


@functools.cache
def _module(path: str) -> ast.Module:
    return ast.parse((ROOT / path).read_text(encoding="utf-8"), filename=path)


@functools.cache
def _definitions(path: str) -> dict[str, ast.AST]:
    """The module-level functions, classes and assigned names of a test module."""
    found: dict[str, ast.AST] = {}
    for node in _module(path).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found[node.name] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found[target.id] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found[node.target.id] = node
    return found


def _test_function(node_id: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The function of ``path::test`` or ``path::Class::test`` (a parametrize id stripped)."""
    path, _, rest = node_id.partition("::")
    names = rest.split("[", 1)[0].split("::")
    scope: list[ast.stmt] = _module(path).body
    for index, name in enumerate(names):
        last = index == len(names) - 1
        kinds = (ast.FunctionDef, ast.AsyncFunctionDef) if last else (ast.ClassDef,)
        node = next((n for n in scope if isinstance(n, kinds) and n.name == name), None)
        if node is None:
            return None
        if last:
            assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            return node
        assert isinstance(node, ast.ClassDef)
        scope = node.body
    return None


def _strings(node: ast.AST, path: str, seen: set[str]) -> set[str]:
    """The strings of ``node`` (its decorators included) and of the module-level helpers and
    tables it names, transitively; an f-string counts with each of its holes as ``{k}``."""
    found: set[str] = set()
    definitions = _definitions(path)
    for sub in ast.walk(node):
        if isinstance(sub, ast.JoinedStr):
            parts = [
                value.value if isinstance(value, ast.Constant) else "{k}" for value in sub.values
            ]
            found.add("".join(str(part) for part in parts))
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            found.add(sub.value)
        elif isinstance(sub, ast.Name) and sub.id in definitions and sub.id not in seen:
            seen.add(sub.id)
            found |= _strings(definitions[sub.id], path, seen)
    return found


def _mentions(strings: set[str], info: core.MetricInfo) -> bool:
    """Whether the strings spell the metric: its name (or, for a template, the template or a
    concrete name of it), or an f-string whose holes the other strings fill."""
    if info.name in strings:
        return True
    if any(core.catalog_entry(s, info.task) is info for s in strings if "{k}" not in s):
        return True
    words = sorted(s for s in strings if re.fullmatch(r"[a-z0-9_]+", s))
    hole = f"(?:{'|'.join(map(re.escape, words))})" if words else "(?!)"
    for template in (s for s in strings if "{k}" in s):
        if template == info.name:
            return True
        literal = [re.escape(part) for part in template.split("{k}")]
        if re.fullmatch(hole.join(literal), info.name):
            return True
    return False


@pytest.mark.parametrize("info", ENTRIES)
def test_the_reference_test_exists_and_names_the_metric(info: core.MetricInfo) -> None:
    assert info.test, f"{info.task}/{info.name} names no test"
    path, separator, _ = info.test.partition("::")
    assert separator and re.fullmatch(r"tests/(\w+/)*test_\w+\.py", path), info.test
    assert (ROOT / path).is_file(), f"{path} does not exist"
    function = _test_function(info.test)
    assert function is not None, f"{info.test} is not a test function of {path}"
    assert function.name.startswith("test_"), info.test
    strings = _strings(function, path, set())
    assert _mentions(strings, info), f"{info.test} never names {info.name!r}"


def test_the_mention_check_is_not_vacuous() -> None:
    # A test that checks another metric does not count, nor does an unrelated f-string.
    accuracy = core.CATALOG["binary", "accuracy"]
    assert _mentions({"accuracy"}, accuracy)
    assert not _mentions({"balanced_accuracy", "{k}_rate", "error"}, accuracy)
    macro = core.CATALOG["multiclass", "precision_macro"]
    assert _mentions({"{k}_{k}", "precision", "macro"}, macro)
    assert not _mentions({"{k}_{k}", "recall", "macro"}, macro)
    head = core.CATALOG["binary", "precision_at_{k}"]
    assert _mentions({"precision_at_{k}"}, head) and _mentions({"precision_at_5"}, head)
    assert not _mentions({"recall_at_{k}"}, head)
    node = _test_function("tests/core/test_catalog.py::test_the_mention_check_is_not_vacuous")
    assert node is not None
    assert _test_function("tests/core/test_catalog.py::test_no_such_test") is None


# --- the binary contract -----------------------------------------------------------------------

# The canonical metric names of task binary (the contract: rename nothing).
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


def test_the_canonical_binary_names_are_all_emitted() -> None:
    result = RESULTS["binary"]["two-classes/head-k-and-max-fpr"]
    missing = sorted(set(CANONICAL_BINARY) - set(result.metrics))
    assert not missing
    assert {"precision_at_5", "recall_at_5", "precision_at_2.5", "recall_at_2.5"} <= set(
        result.metrics
    )


def test_aliases_belong_in_the_catalog_not_in_results() -> None:
    aliases = {alias for info in core.catalog_entries("binary") for alias in info.aliases}
    assert {"sensitivity", "tpr", "ppv", "tnr"} <= aliases


@pytest.mark.parametrize("k", [pytest.param(k, id=f"k={k}") for k in (1, 2.5, 0.001, 1e-05)])
def test_head_metric_names_are_classified_for_any_k(k: float) -> None:
    result = core.evaluate("binary", [0, 1, 1], [0.2, 0.9, 0.4], options={"head_k": [k]})
    names = [name for name in result.metrics if name.startswith(("precision_at_", "recall_at_"))]
    assert len(names) == 2
    for name in names:
        assert core.catalog_entry(name, "binary") is not None, f"{name!r} is not classified"


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


# --- the public lookups ------------------------------------------------------------------------


def test_the_catalog_is_keyed_by_task_and_name_and_read_only() -> None:
    assert all(isinstance(key, tuple) and len(key) == 2 for key in core.CATALOG)
    assert [task for task, _ in core.CATALOG] == sorted(
        (task for task, _ in core.CATALOG), key=core.TASKS.index
    )
    with pytest.raises(TypeError):
        core.CATALOG["binary", "new"] = core.CATALOG["binary", "f1"]  # type: ignore[index]
    binary_brier = core.CATALOG["binary", "brier_score"]
    multiclass_brier = core.CATALOG["multiclass", "brier_score"]
    assert binary_brier.definition != multiclass_brier.definition
    assert (binary_brier.range.upper, multiclass_brier.range.upper) == (1, 2)


def test_catalog_entry_resolves_templates_and_takes_a_task() -> None:
    assert (
        core.catalog_entry("precision_at_100", "binary")
        is core.CATALOG["binary", "precision_at_{k}"]
    )
    assert (
        core.catalog_entry("top_3_accuracy", "multiclass")
        is core.CATALOG["multiclass", "top_{k}_accuracy"]
    )
    assert core.catalog_entry("top_3_accuracy", "binary") is None
    assert core.catalog_entry("precision_at_", "binary") is None
    # without a task, the first task in TASKS order that has the name
    assert core.catalog_entry("accuracy") is core.CATALOG["binary", "accuracy"]
    assert core.catalog_entry("top_3_accuracy") is core.CATALOG["multiclass", "top_{k}_accuracy"]
    assert core.catalog_entry("map") is core.CATALOG["detection", "map"]
    assert core.catalog_entry("no_such_metric") is None
    assert core.catalog_entry("auc") is None  # an alias is not a key


@pytest.mark.parametrize(
    "call", [core.catalog_entries, lambda task: core.catalog_entry("f1", task)]
)
def test_an_unknown_task_names_the_field(call: Any) -> None:
    with pytest.raises(core.InvalidInputError) as refused:
        call("regresion")
    assert refused.value.field == "task"
    assert "regresion" in refused.value.message


def test_catalog_entries_lists_a_task_in_catalog_order() -> None:
    assert core.catalog_entries() == tuple(core.CATALOG.values())
    for task in core.TASKS:
        assert core.catalog_entries(task) == tuple(
            info for (each, _), info in core.CATALOG.items() if each == task
        )


@pytest.mark.parametrize(
    ("value_range", "text"),
    [
        (core.MetricRange(0, 1), "[0, 1]"),
        (core.MetricRange(-1, 1), "[-1, 1]"),
        (core.MetricRange(0, None), "[0, ∞)"),
        (core.MetricRange(None, 1), "(-∞, 1]"),
        (core.MetricRange(None, None), "(-∞, ∞)"),
    ],
)
def test_ranges_read_as_intervals(value_range: core.MetricRange, text: str) -> None:
    assert str(value_range) == text
    assert 0.5 in value_range
    assert float("nan") not in value_range
    if value_range.upper is not None:
        assert value_range.upper + 1e-9 not in value_range
    else:
        assert 1e300 in value_range
