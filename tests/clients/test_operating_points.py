"""Operating points in both clients, without a server: a target's place in a metric name is
written as the core writes it (``format_target`` in Python, ``formatTarget`` in TypeScript,
checked against the core's rule on fixed and random doubles, where JavaScript's own number
printing differs: ``1e-05`` against ``0.00001``), ``operating_point`` and ``flagged_share`` read
the same values, thresholds, intervals and reasons from the same answers (binary, the macro
average and the class rows of multiclass), and the list options are sent alike over both
transports (a single number as a list of one; a non-finite value refused with the server's
message). Once the core answers the operating points, the accessors read its own answer."""

from __future__ import annotations

import json
import math
import subprocess
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from evalserve_client import (
    EvaluationResult,
    FlaggedShare,
    InvalidArgument,
    OperatingPoint,
    _wire,
    format_target,
)
from evalserve_client._proto.evalserve.v1 import evaluation_pb2

from evalserve import core
from evalserve.core import target_label
from tests.clients.test_typescript import BIN, PACKAGE, _node_modules

INTERVAL = {"lower": 0.3, "upper": 0.7, "level": 0.95, "method": "wilson", "std_error": 0.1}
NO_POINT = "no threshold reaches a precision of 1"
NO_BUDGET = "no threshold flags at most 0.001 of the rows"

BINARY: dict[str, Any] = {
    "task": "binary",
    "n_samples": 8,
    "metrics": {
        "roc_auc": 0.8,
        "recall_at_precision_0.95": 0.5,
        "recall_at_precision_0.95_threshold": 0.7,
        "recall_at_precision_1": None,
        "recall_at_precision_1_threshold": None,
        "tpr_at_fpr_1e-05": 0.25,
        "tpr_at_fpr_1e-05_threshold": 0.9,
        "tpr_at_fpr_0": 0.0,
        "tpr_at_fpr_0_threshold": 0.95,
        "flagged_share_0.05_threshold": 0.8,
        "flagged_share_0.05_actual": 0.04,
        "precision_at_flagged_share_0.05": 1.0,
        "recall_at_flagged_share_0.05": 0.1,
        "flagged_share_0.001_threshold": None,
        "flagged_share_0.001_actual": None,
        "precision_at_flagged_share_0.001": None,
        "recall_at_flagged_share_0.001": None,
        "equal_error_rate": 0.25,
        "equal_error_rate_threshold": 0.5,
    },
    "undefined": {
        "recall_at_precision_1": NO_POINT,
        "recall_at_precision_1_threshold": NO_POINT,
        "flagged_share_0.001_threshold": NO_BUDGET,
        "flagged_share_0.001_actual": NO_BUDGET,
        "precision_at_flagged_share_0.001": NO_BUDGET,
        "recall_at_flagged_share_0.001": NO_BUDGET,
    },
    "per_class": [],
    "curves": {
        "det": {"fpr": [0.0, 0.5, 1.0], "fnr": [1.0, 0.5, 0.0], "thresholds": [None, 0.5, 0.1]}
    },
    "intervals": {"recall_at_precision_0.95": INTERVAL},
    "drift": {},
    "comparison": {},
    "conventions": {},
    "warnings": [],
    "coverage": {},
    "monitor": {},
    "monitor_state": None,
}


def _row(name: str, recall: float | None, threshold: float | None) -> dict[str, Any]:
    undefined = {} if recall is not None else {"precision_at_recall_0.5": NO_POINT}
    return {
        "class": name,
        "precision_at_recall_0.5": recall,
        "precision_at_recall_0.5_threshold": threshold,
        "specificity_at_sensitivity_0.9": 0.6,
        "specificity_at_sensitivity_0.9_threshold": 0.3,
        "undefined": undefined,
        "intervals": {"precision_at_recall_0.5": INTERVAL} if recall is not None else {},
    }


MULTICLASS: dict[str, Any] = {
    **BINARY,
    "task": "multiclass",
    "metrics": {
        "accuracy": 0.5,
        "precision_at_recall_0.5_macro": 0.75,
        "precision_at_recall_0.5_threshold_macro": 0.4,
        "specificity_at_sensitivity_0.9_macro": 0.6,
        "specificity_at_sensitivity_0.9_threshold_macro": 0.3,
    },
    "undefined": {},
    "intervals": {},
    "per_class": [_row("cat", 0.75, 0.4), _row("dog", None, None)],
}

# (option or "flagged", target, class name or None); each read from an answer by both clients
Call = tuple[str, float, str | None]
BINARY_CALLS: list[Call] = [
    ("recall_at_precision", 0.95, None),
    ("recall_at_precision", 1, None),
    ("recall_at_precision", 1.0, None),
    ("tpr_at_fpr", 1e-05, None),
    ("tpr_at_fpr", 0, None),
    ("flagged", 0.05, None),
    ("flagged", 0.001, None),
    ("recall_at_precision", 0.9, None),  # not sent: an error
    ("precision_at_recall", 0.95, None),  # not sent: an error
    ("flagged_share", 0.05, None),  # an alert budget, read by flagged_share: an error
    ("flagged", 0.5, None),  # not sent: an error
]
MULTICLASS_CALLS: list[Call] = [
    ("precision_at_recall", 0.5, None),
    ("precision_at_recall", 0.5, "cat"),
    ("precision_at_recall", 0.5, "dog"),
    ("specificity_at_sensitivity", 0.9, "dog"),
    ("specificity_at_sensitivity", 0.9, None),
    ("precision_at_recall", 0.5, "owl"),  # no such class: an error
    ("precision_at_recall", 0.25, "cat"),  # not sent: an error
]


def _python(answer: dict[str, Any], call: Call) -> dict[str, Any]:
    """A call of the Python client, as the TypeScript script prints it (camelCase)."""
    option, target, class_name = call
    result = EvaluationResult.from_dict(answer)
    try:
        if option == "flagged":
            found: OperatingPoint | FlaggedShare = result.flagged_share(
                target, class_name=class_name
            )
        else:
            found = result.operating_point(option, target, class_name=class_name)  # type: ignore[arg-type]
    except (KeyError, ValueError) as error:
        return {"error": str(error)}
    fields = asdict(found)
    fields["className"] = fields.pop("class_name")
    return fields


def _typescript(payload: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    _node_modules()
    path = tmp_path / "input.json"
    path.write_text(json.dumps(payload, allow_nan=False))
    done = subprocess.run(
        [str(BIN / "tsx"), "test/operating-points.ts", str(path)],
        cwd=PACKAGE,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def _ts_calls(calls: list[Call]) -> list[dict[str, Any]]:
    out = []
    for option, target, class_name in calls:
        call: dict[str, Any] = {"kind": "flagged" if option == "flagged" else "point"}
        if option != "flagged":
            call["option"] = option
        call["target"] = target
        if class_name is not None:
            call["className"] = class_name
        out.append(call)
    return out


# --- the names ---------------------------------------------------------------------------------

FIXED = [
    1, 1.0, 0, 0.0, -0.0, 0.95, 0.5, 0.001, 1e-05, 0.0001, 9.999e-05, 1e-06, 1.5e-07, 1e-100,
    5e-324, 2.2250738585072014e-308, 0.1 + 0.2, 1 / 3, 2 / 3, 0.999999, 0.9999999999999999,
    123456.5, 999999999999999.0, 1e15, 1e16, 1.5e16, 12345678901234567.0, 2.5e20, 1e21, 1e22,
    1.7976931348623157e308, -0.5, -1e-05, -1e16, math.nan, math.inf, -math.inf,
]  # fmt: skip


def _random_doubles(count: int) -> list[float]:
    """Doubles of every magnitude: uniform digits times a power of ten, and random bit patterns
    (every finite double is as likely as its exponent)."""
    rng = np.random.default_rng(20261128)
    scaled = rng.uniform(0, 1, count) * 10.0 ** rng.integers(-30, 30, count)
    digits = zip(rng.uniform(0, 1, count), rng.integers(1, 6, count), strict=True)
    short = [round(float(value), int(places)) for value, places in digits]  # 0.95, 0.001, ...
    bits = rng.integers(0, 2**63 - 1, count, dtype=np.int64).view(np.float64)
    values = [float(v) for v in (*scaled, *short, *bits) if math.isfinite(v)]
    return values


def _core_label(target: float) -> str:
    """The core's rule for a number in a metric name (precision_at_{k}, the operating points)."""
    return target_label(target)


def _wire_target(target: float) -> float | str:
    return target if math.isfinite(target) else repr(target)  # JSON has no nan nor inf


def test_format_target_follows_the_cores_rule() -> None:
    assert [format_target(t) for t in (1, 1.0, 0.95, 0.001, 1e-05, 0.5)] == [
        "1", "1", "0.95", "0.001", "1e-05", "0.5"
    ]  # fmt: skip
    for target in FIXED + _random_doubles(500):
        assert (
            format_target(target)
            == _core_label(target)
            == (
                str(int(target))
                if float(target).is_integer() and abs(target) < 1e15
                else repr(target)
            )
        ), target


def test_both_clients_name_a_target_alike(tmp_path: Path) -> None:
    targets = FIXED + _random_doubles(2000)
    payload = {"targets": [_wire_target(t) for t in targets], "answers": [], "options": []}
    names = _typescript(payload, tmp_path)["names"]
    # JavaScript's String(1e-05) is "0.00001" and String(1e21) "1e+21": formatTarget is Python's
    assert names[FIXED.index(1e-05)] == "1e-05"
    assert names[FIXED.index(1e16)] == "1e+16"
    assert names[FIXED.index(1e15)] == "1000000000000000.0"
    assert names[FIXED.index(0.1 + 0.2)] == "0.30000000000000004"
    mismatches = [
        (target, name) for target, name in zip(targets, names, strict=True)
        if name != _core_label(target)
    ]  # fmt: skip
    assert mismatches == []


# --- the accessors -----------------------------------------------------------------------------


def test_operating_point_reads_value_threshold_interval_and_reason() -> None:
    result = EvaluationResult.from_dict(BINARY)
    point = result.operating_point("recall_at_precision", 0.95)
    assert point == OperatingPoint(
        "recall_at_precision", 0.95, "recall_at_precision_0.95", 0.5, 0.7, INTERVAL, None
    )
    none = result.operating_point("recall_at_precision", 1)
    assert (none.name, none.value, none.threshold, none.reason) == (
        "recall_at_precision_1", None, None, NO_POINT
    )  # fmt: skip
    assert result.operating_point("tpr_at_fpr", 1e-05).value == 0.25
    assert result.operating_point("tpr_at_fpr", 0).threshold == 0.95
    budget = result.flagged_share(0.05)
    assert budget == FlaggedShare(0.05, 0.8, 0.04, 1.0, 0.1, None)
    assert result.flagged_share(0.001).reason == NO_BUDGET
    with pytest.raises(KeyError, match=r"recall_at_precision_0\.9 is not in the answer"):
        result.operating_point("recall_at_precision", 0.9)
    with pytest.raises(ValueError, match="flagged_share"):
        result.operating_point("flagged_share", 0.05)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        result.operating_point("tpr_at_fpr", "0.1")  # type: ignore[arg-type]
    # the DET curve is one more named curve, as every curve besides ROC and PR
    assert set(result.curves["det"]) == {"fpr", "fnr", "thresholds"}


def test_operating_point_reads_the_macro_average_and_class_rows() -> None:
    result = EvaluationResult.from_dict(MULTICLASS)
    macro = result.operating_point("precision_at_recall", 0.5)
    assert (macro.name, macro.value, macro.threshold, macro.class_name) == (
        "precision_at_recall_0.5_macro", 0.75, 0.4, None
    )  # fmt: skip
    cat = result.operating_point("precision_at_recall", 0.5, class_name="cat")
    assert (cat.name, cat.value, cat.threshold, cat.interval) == (
        "precision_at_recall_0.5", 0.75, 0.4, INTERVAL
    )  # fmt: skip
    dog = result.operating_point("precision_at_recall", 0.5, class_name="dog")
    assert (dog.value, dog.threshold, dog.reason, dog.class_name) == (None, None, NO_POINT, "dog")
    with pytest.raises(KeyError, match="owl"):
        result.operating_point("precision_at_recall", 0.5, class_name="owl")


def _named(call: Call) -> str:
    """What the error of a call that cannot be answered names."""
    option, target, class_name = call
    if class_name == "owl" or option == "flagged_share":
        return class_name or option
    if option == "flagged":
        return f"flagged_share_{format_target(target)}_threshold"
    return f"{option}_{format_target(target)}"


def test_both_clients_read_the_same_operating_points(tmp_path: Path) -> None:
    row = MULTICLASS["per_class"][0]
    answers: list[tuple[dict[str, Any], list[Call]]] = [
        (BINARY, BINARY_CALLS),
        (MULTICLASS, MULTICLASS_CALLS),
    ]
    row_calls: list[Call] = [
        ("precision_at_recall", 0.5, None),
        ("specificity_at_sensitivity", 0.9, None),
    ]
    payload = {
        "targets": [],
        "answers": [{"result": a, "calls": _ts_calls(c)} for a, c in answers]
        + [{"result": row, "calls": _ts_calls(row_calls)}],
        "options": [],
    }
    found = _typescript(payload, tmp_path)["answers"]
    for (answer, calls), typescript in zip(answers, found, strict=False):
        for call, ts in zip(calls, typescript, strict=True):
            python = _python(answer, call)
            if "error" in python:
                assert "error" in ts, call
                word = _named(call)  # both errors name the missing metric, class or option
                assert word in python["error"] and word in ts["error"], (python, ts)
            else:
                assert ts == python, call
    # a class row given as it is reads as the multiclass answer's row of that class
    for call, ts in zip(row_calls, found[2], strict=True):
        assert ts == _python(MULTICLASS, (call[0], call[1], "cat")), call


# --- sending the options -----------------------------------------------------------------------


def _sent(options: dict[str, Any]) -> dict[str, Any] | None:
    request = _wire.build(
        "binary", [0, 1], [0.2, 0.7], y_pred=None, sample_weight=None, options=options,
        classes=None, model=None, baseline=None, challenger=None,
    )  # fmt: skip
    return request.options


def test_list_options_are_sent_as_lists() -> None:
    assert _sent({"recall_at_precision": 0.9, "top_k": 3}) == {
        "recall_at_precision": [0.9], "top_k": [3]
    }  # fmt: skip
    assert _sent({"quantiles": np.array([0.1, 0.9]), "tpr_at_fpr": (0.01,)}) == {
        "quantiles": [0.1, 0.9], "tpr_at_fpr": [0.01]
    }  # fmt: skip
    sent = _sent({"flagged_share": 0.05, "threshold": 0.3})
    assert sent is not None
    assert list(evaluation_pb2.Options(**sent).flagged_share) == [0.05]  # gRPC can encode it
    for bad in (math.nan, math.inf):
        with pytest.raises(InvalidArgument) as refused:
            _sent({"precision_at_recall": [0.5, bad]})
        assert refused.value.field == "options.precision_at_recall"
        assert refused.value.message == f"expected a finite number, but got {bad}"


def test_typescript_sends_list_options_alike(tmp_path: Path) -> None:
    options = [
        {"recall_at_precision": [0.9, 0.95], "flagged_share": [0.05], "quantiles": [0.5]},
        {"specificity_at_sensitivity": 0.9, "top_k": 3},  # a JavaScript caller's single number
        {"tpr_at_fpr": [0.01, "nan"]},
        {"precision_at_recall": None, "threshold": 0.3},
    ]
    payload = {"targets": [], "answers": [], "options": options}  # the script reads "nan" as NaN
    found = _typescript(payload, tmp_path)["options"]
    assert found[0] == {
        "json": {"recall_at_precision": [0.9, 0.95], "flagged_share": [0.05], "quantiles": [0.5]},
        "proto": {"recallAtPrecision": [0.9, 0.95], "flaggedShare": [0.05], "quantiles": [0.5]},
    }
    assert found[1] == {
        "json": {"specificity_at_sensitivity": [0.9], "top_k": [3]},
        "proto": {"specificityAtSensitivity": [0.9], "topK": ["3"]},
    }
    assert found[2] == {
        "error": "options.tpr_at_fpr: expected a finite number, but got nan"
    }  # as the Python client and the server say it
    assert found[3] == {"json": {"threshold": 0.3}, "proto": {"threshold": 0.3}}


# --- the core's own answer ---------------------------------------------------------------------


def _core_answer(task: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
    answer: dict[str, Any] = json.loads(json.dumps(core.evaluate(task, *args, **kwargs).to_dict()))
    return answer


def _answered(answer: dict[str, Any], name: str) -> bool:
    return name in answer["metrics"] or name in answer["undefined"]


def test_the_accessors_read_the_cores_answer() -> None:
    rng = np.random.default_rng(7)
    labels = (rng.uniform(size=400) < 0.3).astype(float)
    scores = rng.normal(labels, 1.0)
    targets = [0.5, 0.9, 1]
    options = {option: targets for option in ("recall_at_precision", "precision_at_recall",
               "specificity_at_sensitivity", "flagged_share")}  # fmt: skip
    options["tpr_at_fpr"] = [1e-05, 0.1, 0.5]
    answer = _core_answer("binary", labels, scores, options=options)
    if not _answered(answer, "recall_at_precision_0.5"):
        pytest.skip("the core does not answer the operating points yet")
    result = EvaluationResult.from_dict(answer)
    for option, values in options.items():
        for target in values:
            if option == "flagged_share":
                budget = result.flagged_share(target)
                label = format_target(target)
                assert budget.threshold == answer["metrics"].get(f"flagged_share_{label}_threshold")
                continue
            point = result.operating_point(option, target)  # type: ignore[arg-type]
            assert point.value == answer["metrics"].get(point.name)
            assert point.threshold == answer["metrics"].get(f"{point.name}_threshold")
            assert (point.reason is None) == (point.value is not None)
    assert _answered(answer, "equal_error_rate") and _answered(answer, "equal_error_rate_threshold")
    assert {"fpr", "fnr", "thresholds"} <= set(result.curves["det"])
    classes = ["a", "b", "c"]
    y_true = [classes[i % 3] for i in range(90)]
    y_score = rng.dirichlet([1, 1, 1], size=90)
    multi = _core_answer(
        "multiclass", y_true, y_score, classes=classes, options={"recall_at_precision": [0.5]}
    )
    result = EvaluationResult.from_dict(multi)
    macro = result.operating_point("recall_at_precision", 0.5)
    assert macro.name == "recall_at_precision_0.5_macro"
    for name in classes:
        row = result.operating_point("recall_at_precision", 0.5, class_name=name)
        assert row.class_name == name and row.name == "recall_at_precision_0.5"
