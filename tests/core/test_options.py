"""The options table (``evalserve.core.OPTIONS``) and the one parser that reads it.

Everything here is generic over the table: each option's default parses, each bound holds at
its edge (the last value inside passes, the first outside is refused, naming the field), values
drawn inside and outside the range by Hypothesis go the same way, and the tasks the table names
are the ones whose answers the option changes (the others check it and ignore it, without a
warning). ``edges`` is shared with ``tests/contract/test_option_edges.py``, which sends the same
values through every door.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalserve.core import OPTIONS, TASKS, InvalidInputError, Options, OptionSpec, evaluate
from evalserve.core import parse_options as parse
from evalserve.core._options import MAX_STRING_OPTION
from tests.core.test_worked_examples import FAWCETT_LABELS, FAWCETT_SCORES

SPECS = [pytest.param(spec, id=name) for name, spec in OPTIONS.items()]


# --- the edges of each option, from the table ---------------------------------------------------


@dataclass(frozen=True)
class Edge:
    """A value at an edge of an option's range, and whether the parser must take it."""

    option: str
    label: str
    value: Any
    passes: bool
    expected: Any = None  # what the parser makes of it, when not the value itself

    @property
    def id(self) -> str:
        return f"{self.option}-{self.label}-{'in' if self.passes else 'out'}"

    @property
    def parsed(self) -> Any:
        """What the parser makes of ``value`` when it passes."""
        spec = OPTIONS[self.option]
        if self.expected is not None:
            return self.expected
        values = self.value if spec.repeated else [self.value]
        kind = {"number": float, "integer": int, "choice": str, "string": str}[spec.kind]
        one = [kind(v) for v in values]
        return tuple(sorted(set(one))) if spec.repeated else one[0]


def _below(x: float, spec: OptionSpec) -> float:
    return x - 1 if spec.kind == "integer" else math.nextafter(x, -math.inf)


def _above(x: float, spec: OptionSpec) -> float:
    return x + 1 if spec.kind == "integer" else math.nextafter(x, math.inf)


def _inside(spec: OptionSpec, count: int) -> list[Any]:
    """``count`` distinct values inside the range (from the low end)."""
    if spec.kind == "choice":
        return list(spec.choices[:count])
    start = 1 if spec.low is None else math.floor(spec.low) + 1
    if spec.zero_means is not None:
        start = max(start, 2)
    values: list[float] = [start + i for i in range(count)]
    if spec.kind == "number" and spec.high is not None and values[-1] >= spec.high:
        # A narrow range of numbers (a share, a probability target): evenly inside it.
        low = spec.low if spec.low is not None else spec.high - 1
        values = [low + (spec.high - low) * (i + 1) / (count + 1) for i in range(count)]
    assert spec.high is None or values[-1] < spec.high, spec
    return [float(v) for v in values] if spec.kind == "number" else values


def edges(spec: OptionSpec) -> list[Edge]:
    """Both sides of every edge the table gives ``spec``: its bounds (open or closed), the 1 a
    count with ``zero_means`` refuses, the choices, the largest list. Values of a list option
    are sent as a list of one."""
    found: list[tuple[str, Any, bool]] = []
    if spec.kind == "string":
        # Texts that read as the number 1, so that numeric labels can be evaluated with them.
        text = "0" * (MAX_STRING_OPTION - 1) + "1"
        found += [("shortest", "1", True), ("empty", "", False)]
        found += [("longest-text", text, True), ("too-long-text", "0" + text, False)]
        return [Edge(spec.name, label, value, passes) for label, value, passes in found] + [
            Edge(spec.name, "whole-number", 1, True, expected="1"),
            Edge(spec.name, "whole-float", 1.0, True, expected="1"),
        ]
    if spec.kind == "choice":
        found += [(f"choice-{c}", c, True) for c in spec.choices]
        found += [(f"choice-{c.upper()}", c.upper(), False) for c in spec.choices]
    if spec.low is not None:
        low = spec.low
        inside, outside = (_above(low, spec), low) if spec.low_open else (low, _below(low, spec))
        found += [("low", inside, True), ("low", outside, False)]
    if spec.high is not None:
        high = spec.high
        inside, outside = (
            (_below(high, spec), high) if spec.high_open else (high, _above(high, spec))
        )
        found += [("high", inside, True), ("high", outside, False)]
    if spec.kind == "number" and spec.low is None and spec.high is None:
        largest = float(np.finfo(float).max)
        found += [("most-negative", -largest, True), ("largest", largest, True)]
        found += [("infinite", math.inf, False), ("nan", math.nan, False)]
    if spec.zero_means is not None:
        found += [("zero", 0, True), ("one", 1, False), ("two", 2, True)]
    edges_ = [
        Edge(spec.name, label, [value] if spec.repeated else value, passes)
        for label, value, passes in found
    ]
    if spec.repeated and spec.max_items is not None:
        longest = _inside(spec, spec.max_items + 1)
        edges_.append(Edge(spec.name, "longest", longest[:-1], True))
        edges_.append(Edge(spec.name, "longest", longest, False))
    return edges_


EDGES = [edge for spec in OPTIONS.values() for edge in edges(spec)]


def test_every_bound_of_the_table_has_its_edges() -> None:
    for spec in OPTIONS.values():
        labels = {edge.label for edge in EDGES if edge.option == spec.name}
        assert ("low" in labels) == (spec.low is not None), spec.name
        assert ("high" in labels) == (spec.high is not None), spec.name
        assert ("longest" in labels) == spec.repeated, spec.name
    assert len({edge.id for edge in EDGES}) == len(EDGES)


# --- the table -----------------------------------------------------------------------------------


def test_the_table_is_the_fields_of_options() -> None:
    declared = dataclasses.fields(Options)
    assert list(OPTIONS) == [f.name for f in declared]
    assert {name: spec.default for name, spec in OPTIONS.items()} == dataclasses.asdict(Options())
    for spec in OPTIONS.values():
        assert spec.doc.endswith("."), spec.name
        assert spec.field == f"options.{spec.name}"


@pytest.mark.parametrize("spec", SPECS)
def test_each_option_names_its_tasks_in_the_order_of_tasks(spec: OptionSpec) -> None:
    assert spec.tasks
    assert list(spec.tasks) == [task for task in TASKS if task in spec.tasks]


@pytest.mark.parametrize("spec", SPECS)
def test_an_option_is_nullable_exactly_when_its_default_is_null(spec: OptionSpec) -> None:
    assert spec.nullable == (spec.default is None)


@pytest.mark.parametrize("spec", SPECS)
def test_every_default_parses_to_itself(spec: OptionSpec) -> None:
    as_json = json.loads(spec.default_text)  # the default as a client sends it
    assert parse({spec.name: as_json}) == Options()
    assert parse({spec.name: spec.default}) == Options()
    assert parse({spec.name: None}) == Options()  # null is the default
    assert parse({}) == parse(None) == Options()


# --- the bounds, at the edge and inside/outside --------------------------------------------------


@pytest.mark.parametrize("edge", [pytest.param(edge, id=edge.id) for edge in EDGES])
def test_each_bound_holds_at_its_edge(edge: Edge) -> None:
    if edge.passes:
        assert getattr(parse({edge.option: edge.value}), edge.option) == edge.parsed
    else:
        with pytest.raises(InvalidInputError) as refused:
            parse({edge.option: edge.value})
        assert refused.value.field == f"options.{edge.option}"
        assert refused.value.message.startswith("expected ")


def _one_inside(spec: OptionSpec) -> st.SearchStrategy[Any]:
    if spec.kind == "choice":
        return st.sampled_from(spec.choices)
    if spec.kind == "string":
        return st.text(min_size=1, max_size=MAX_STRING_OPTION)
    if spec.kind == "integer":
        assert spec.low is not None and spec.high is not None, "integers are bounded"
        low, high = int(spec.low), int(spec.high)
        if spec.zero_means is not None:
            return st.just(0) | st.integers(2, high)
        return st.integers(low, high)
    return st.floats(
        min_value=spec.low,
        max_value=spec.high,
        exclude_min=spec.low is not None and spec.low_open,
        exclude_max=spec.high is not None and spec.high_open,
        allow_nan=False,
        allow_infinity=False,
    )


def _one_outside(spec: OptionSpec) -> st.SearchStrategy[Any] | None:
    if spec.kind == "choice":
        return st.text(max_size=8).filter(lambda text: text not in spec.choices)
    if spec.kind == "string":
        return st.just("") | st.text(min_size=MAX_STRING_OPTION + 1, max_size=MAX_STRING_OPTION + 8)
    sides: list[st.SearchStrategy[Any]] = []
    if spec.kind == "integer":
        assert spec.low is not None and spec.high is not None
        sides += [
            st.integers(max_value=int(spec.low) - 1),
            st.integers(min_value=int(spec.high) + 1),
        ]
        if spec.zero_means is not None:
            sides.append(st.just(1))
    else:
        if spec.low is not None:
            below = st.floats(max_value=spec.low, exclude_max=not spec.low_open, allow_nan=False)
            sides.append(below.filter(math.isfinite))
        if spec.high is not None:
            above = st.floats(min_value=spec.high, exclude_min=not spec.high_open, allow_nan=False)
            sides.append(above.filter(math.isfinite))
    return st.one_of(sides) if sides else None


@pytest.mark.parametrize("spec", SPECS)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_values_inside_the_range_parse_to_themselves(spec: OptionSpec, data: st.DataObject) -> None:
    one = _one_inside(spec)
    if spec.repeated:
        values = data.draw(st.lists(one, max_size=spec.max_items))
        assert getattr(parse({spec.name: values}), spec.name) == tuple(sorted(set(values)))
    else:
        value = data.draw(one)
        assert getattr(parse({spec.name: value}), spec.name) == value


BOUNDED = [
    pytest.param(spec, id=spec.name) for spec in OPTIONS.values() if _one_outside(spec) is not None
]


@pytest.mark.parametrize("spec", BOUNDED)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_values_outside_the_range_are_refused(spec: OptionSpec, data: st.DataObject) -> None:
    outside = _one_outside(spec)
    assert outside is not None
    value = data.draw(outside)
    if spec.repeated and spec.max_items is not None:  # one bad value among good ones
        good = data.draw(st.lists(_one_inside(spec), max_size=spec.max_items - 1))
        value = [*good[: len(good) // 2], value, *good[len(good) // 2 :]]
    with pytest.raises(InvalidInputError) as refused:
        parse({spec.name: value})
    assert refused.value.field == f"options.{spec.name}"


def _wrong_types(spec: OptionSpec) -> Iterator[Any]:
    yield True
    yield {"value": 1}
    if spec.kind == "choice":
        yield 1.0
    elif spec.kind == "string":
        yield ["yes"]
        yield math.nan
    else:
        yield "1"
    if spec.kind == "integer":
        yield 1.5
        yield math.inf
    if spec.kind == "number":
        yield math.nan
        yield -math.inf
        yield 10**400  # an int no float holds (float() would raise OverflowError)
    if spec.repeated:
        yield [_inside(spec, 1)[0], "1"]


@pytest.mark.parametrize("spec", SPECS)
def test_values_of_the_wrong_type_are_refused(spec: OptionSpec) -> None:
    for value in _wrong_types(spec):
        with pytest.raises(InvalidInputError) as refused:
            parse({spec.name: value})
        assert refused.value.field == f"options.{spec.name}", value
        assert refused.value.message.startswith("expected "), value


# The messages of the hand-written parser this table replaced, one per shape; clients and the
# contract tests (tests/contract/test_bad_input.py) match on them.
MESSAGES = {
    "beta-range": ({"beta": 0}, "options.beta", "expected a number in (0, 10000], but got 0.0"),
    "drift-range": (
        {"drift_min_samples": 1},
        "options.drift_min_samples",
        "expected a number in [2, 1e12], but got 1.0",
    ),
    "half-bounded": (
        {"full_model_variance": -1},
        "options.full_model_variance",
        "expected a number > 0, but got -1.0",
    ),
    "head-k": ({"head_k": [3, 0]}, "options.head_k", "expected k > 0, but got 0.0"),
    "integer-range": (
        {"calibration_bins": 0},
        "options.calibration_bins",
        "expected an integer in [1, 10000], but got 0",
    ),
    "zero-or-two": (
        {"max_curve_points": 1},
        "options.max_curve_points",
        "expected 0 (no curves) or at least 2, but got 1",
    ),
    "choice": (
        {"auc_interval": "exact"},
        "options.auc_interval",
        "expected one of ['wald', 'logit'], but got 'exact'",
    ),
    "too-many": (
        {"top_k": list(range(1, 66))},
        "options.top_k",
        "expected at most 64 values, but got 65",
    ),
    "not-finite": (
        {"threshold": math.nan},
        "options.threshold",
        "expected a finite number, but got nan",
    ),
    "not-a-number": (
        {"threshold": "high"},
        "options.threshold",
        "expected a number, but got 'high'",
    ),
    "not-an-integer": ({"top_k": [1.5]}, "options.top_k", "expected an integer, but got 1.5"),
    "not-a-list": ({"top_k": "1"}, "options.top_k", "expected a list of integers, but got '1'"),
    "unknown": (
        {"treshold": 0.5},
        "options.treshold",
        f"unknown option; expected one of {sorted(OPTIONS)}",
    ),
    "not-an-object": ([1, 2], "options", "expected an object, but got list"),
}


@pytest.mark.parametrize(("options", "field", "message"), MESSAGES.values(), ids=list(MESSAGES))
def test_refusals_keep_their_messages(options: Any, field: str, message: str) -> None:
    with pytest.raises(InvalidInputError) as refused:
        parse(options)
    assert (refused.value.field, refused.value.message) == (field, message)


def test_a_non_finite_float_for_an_integer_is_refused_as_such() -> None:
    """``int(inf)`` raises OverflowError: the check must not get that far."""
    for value in (math.inf, -math.inf, math.nan):
        with pytest.raises(InvalidInputError, match="expected an integer"):
            parse({"n_params": value})


# --- which tasks use which option ----------------------------------------------------------------

BASELINE = {"roc_auc": 0.8, "roc_auc_variance": 0.0004}

# One small request per task (the arguments of ``evaluate`` besides the task and the options).
REQUESTS: dict[str, dict[str, Any]] = {
    "binary": {
        "y_true": FAWCETT_LABELS,
        "y_score": FAWCETT_SCORES,
        "baseline": BASELINE,
        "challenger": {"scores": FAWCETT_SCORES[::-1]},
    },
    "multiclass": {
        "y_true": [0, 2, 1, 1, 0, 2, 2, 1],
        "y_score": [
            [0.7, 0.2, 0.1],
            [0.1, 0.3, 0.6],
            [0.2, 0.5, 0.3],
            [0.3, 0.3, 0.4],
            [0.5, 0.4, 0.1],
            [0.2, 0.2, 0.6],
            [0.4, 0.1, 0.5],
            [0.1, 0.8, 0.1],
        ],
    },
    "multilabel": {
        "y_true": [[1, 0, 1], [0, 1, 0], [1, 1, 0], [0, 0, 0], [1, 0, 1]],
        "y_score": [
            [0.9, 0.2, 0.7],
            [0.1, 0.8, 0.4],
            [0.6, 0.6, 0.3],
            [0.2, 0.1, 0.5],
            [0.7, 0.3, 0.3],
        ],
    },
    "regression": {
        "y_true": [3.0, -0.5, 2.0, 7.0, 4.25, 4.25, 0.0],
        "y_pred": [2.5, 0.0, 2.0, 8.0, 4.0, 4.5, 0.25],
    },
    "detection": {
        "y_true": [
            {"boxes": [[0, 0, 10, 10], [20, 20, 30, 30]], "classes": [0, 1]},
            {"boxes": [[5, 5, 15, 15]], "classes": [0]},
        ],
        "y_score": [
            {
                "boxes": [[1, 1, 10, 10], [21, 19, 30, 31], [50, 50, 60, 60]],
                "classes": [0, 1, 1],
                "scores": [0.9, 0.8, 0.3],
            },
            {"boxes": [[5, 6, 15, 15], [0, 0, 4, 4]], "classes": [0, 0], "scores": [0.6, 0.7]},
        ],
    },
}

# A value other than the default for each option, with the options it needs to matter (a drift
# verdict needs drift_min_samples at most the 10 + 10 rows of the Fawcett example; the seed
# matters with replicates; Mallows' Cp needs n_params too).
CHANGED: dict[str, tuple[Any, Mapping[str, Any]]] = {
    "threshold": (0.3, {}),
    "beta": (2.0, {"threshold": 0.3}),  # at 0.5 the Fawcett example has precision = recall
    "top_k": ([2], {}),
    "head_k": ([5], {}),
    "max_fpr": (0.5, {}),
    "max_curve_points": (0, {}),
    "confidence_level": (0.9, {}),
    "n_params": (2, {}),
    "calibration_bins": (3, {}),
    "auc_interval": ("wald", {}),
    "alpha": (0.5, {"drift_min_samples": 5}),
    "drift_min_samples": (5, {}),
    "drift_tolerance": (0.05, {"drift_min_samples": 5}),
    "monitor_arl_windows": (100.0, {}),
    "bootstrap_replicates": (10, {}),
    "bootstrap_seed": (1, {"bootstrap_replicates": 10}),
    "full_model_variance": (0.4, {"n_params": 2}),
    "max_detections": (1, {}),
    "recall_at_precision": ([0.5], {}),
    "precision_at_recall": ([0.5], {}),
    "tpr_at_fpr": ([0.1], {}),
    "specificity_at_sensitivity": ([0.5], {}),
    "flagged_share": ([0.25], {}),
    "quantiles": ([0.9], {}),
    "segment_curve_points": (5, {}),
    "positive_label": ("0", {}),  # the Fawcett example's classes swapped
}
# Options that matter only for a request with segments (every row in one segment here).
SEGMENTED = frozenset({"segment_curve_points"})


def run(task: str, options: Mapping[str, Any]) -> dict[str, Any]:
    request = dict(REQUESTS[task])
    if SEGMENTED & set(options):
        request["segments"] = ["only"] * len(request["y_true"])
    result = evaluate(task, options=options, **request).to_dict()
    json.dumps(result, allow_nan=False)  # a JSON answer: no NaN or infinity anywhere
    return result


def test_every_option_has_a_changed_value() -> None:
    assert set(CHANGED) == set(OPTIONS)
    assert set(REQUESTS) == set(TASKS)


USES = [
    pytest.param(name, task, id=f"{name}-{task}")
    for name, spec in OPTIONS.items()
    for task in TASKS
    if task in spec.tasks
]
IGNORES = [
    pytest.param(name, task, id=f"{name}-{task}")
    for name, spec in OPTIONS.items()
    for task in TASKS
    if task not in spec.tasks
]


@pytest.mark.parametrize(("name", "task"), USES)
def test_a_task_uses_the_options_the_table_gives_it(name: str, task: str) -> None:
    value, needs = CHANGED[name]
    if name in SEGMENTED:  # the segments in both requests
        needs = {**needs, name: OPTIONS[name].default}
    assert run(task, {**needs, name: value}) != run(task, needs)


@pytest.mark.parametrize(("name", "task"), IGNORES)
def test_a_task_ignores_the_other_options_without_a_warning(name: str, task: str) -> None:
    value, needs = CHANGED[name]
    if name in SEGMENTED:  # the segments in both requests
        needs = {**needs, name: OPTIONS[name].default}
    assert run(task, {**needs, name: value}) == run(task, needs)


def test_an_ignored_option_is_still_checked() -> None:
    with pytest.raises(InvalidInputError) as refused:
        evaluate("binary", [0, 1], [0.2, 0.7], options={"max_detections": 0})
    assert refused.value.field == "options.max_detections"


INSIDE_EDGES = [
    pytest.param(edge, task, id=f"{edge.id}-{task}")
    for edge in EDGES
    if edge.passes
    for task in OPTIONS[edge.option].tasks
]


@pytest.mark.parametrize(("edge", "task"), INSIDE_EDGES)
def test_every_task_evaluates_at_the_edges_of_its_options(edge: Edge, task: str) -> None:
    """The last value inside each bound is not only parsed: the evaluation works with it and
    answers in finite numbers (the largest confidence level below 1 once gave an infinite z)."""
    _, needs = CHANGED[edge.option]
    run(task, {**needs, edge.option: edge.value})
