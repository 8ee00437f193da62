"""Segments (core/_segments.py): a request with a segment per row answers, beside its overall
result, one result per segment that equals a separate request of that segment's rows (to the
last bit with integer weights), and its overall result equals the request without segments."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from evalserve import core
from evalserve.core import InvalidInputError
from tests.offline.images import random_images

properties = settings(max_examples=150, deadline=None)
NAMES = st.sampled_from(["de", "fr", "us", "tier:1", "a/b"])
OPTIONS: dict[str, Any] = {
    "recall_at_precision": [0.5], "head_k": [3], "max_curve_points": 50,
    "segment_curve_points": 20,
}  # fmt: skip


def _json(result: core.EvaluationResult) -> str:
    return json.dumps(result.to_dict(), sort_keys=True)


def _same(left: core.EvaluationResult, right: core.EvaluationResult) -> None:
    assert _json(left) == _json(right)


def _rows(column: Any, rows: list[int]) -> Any:
    if column is None:
        return None
    if isinstance(column, np.ndarray):
        return column[rows]
    return [column[i] for i in rows]


def _check(task: str, y_true: Any, y_score: Any, segments: list[str], **kwargs: Any) -> None:
    segmented = core.evaluate(task, y_true, y_score, segments=segments, **kwargs)
    _same(_without_segments(segmented), core.evaluate(task, y_true, y_score, **kwargs))
    assert list(segmented.segments) == sorted(set(segments))
    for name, result in segmented.segments.items():
        rows = [i for i, each in enumerate(segments) if each == name]
        alone = {
            key: _rows(value, rows) if key in ("y_pred", "sample_weight") else value
            for key, value in kwargs.items()
        }
        # A segment's curves are thinned to segment_curve_points (0 by default: none).
        options = dict(kwargs.get("options") or {})
        alone["options"] = {**options, "max_curve_points": options.get("segment_curve_points", 0)}
        expected = core.evaluate(task, _rows(y_true, rows), _rows(y_score, rows), **alone)
        _same(result, expected)


def _without_segments(result: core.EvaluationResult) -> core.EvaluationResult:
    return dataclasses.replace(result, segments={})


@properties
@given(st.integers(2, 40).flatmap(lambda n: st.tuples(
    arrays(np.bool_, n), arrays(np.float64, n, elements=st.integers(0, 8).map(lambda i: i / 8)),
    arrays(np.float64, n, elements=st.integers(0, 3).map(float)),
    st.lists(NAMES, min_size=n, max_size=n), st.booleans(), st.booleans(),
)))  # fmt: skip
def test_binary_segments_equal_separate_requests(data: Any) -> None:
    y, s, w, segments, weighted, curves = data
    w[0] = 1.0
    # A segment whose rows all weigh nothing cannot be evaluated alone: give each some weight.
    for name in set(segments):
        w[segments.index(name)] = max(w[segments.index(name)], 1.0)
    options = OPTIONS if curves else {**OPTIONS, "segment_curve_points": 0}
    _check("binary", y, s, segments, sample_weight=w if weighted else None, options=options)


def test_every_task_segments_equal_separate_requests() -> None:
    rng = np.random.default_rng(4)
    n = 120
    segments = [str(x) for x in rng.choice(["north", "south", "east"], n)]
    labels = rng.integers(0, 3, n)
    scores = rng.dirichlet(np.ones(3), n)
    _check("multiclass", labels, scores, segments, options={"recall_at_precision": [0.5]})
    tags = rng.integers(0, 2, (n, 3))
    _check("multilabel", tags, scores, segments)
    truth = rng.normal(size=n)
    _check("regression", truth, truth + rng.normal(scale=0.3, size=n), segments,
           options={"quantiles": [0.5]})  # fmt: skip
    targets, predictions = random_images(rng, 30)
    image_segments = [segments[i] for i in range(30)]
    _check("detection", targets, predictions, image_segments)


def test_each_segment_has_its_own_drift_test_and_monitor() -> None:
    rng = np.random.default_rng(5)
    y = rng.random(600) < 0.3
    s = rng.normal(y * 1.2, 1.0)
    segments = ["a"] * 300 + ["b"] * 300
    baseline = {"roc_auc": 0.8, "roc_auc_variance": 0.0}
    first = core.evaluate("binary", y, s, baseline=baseline, segments=segments, window="w1")
    states = {name: each.monitor_state for name, each in first.segments.items()}
    assert all(state is not None for state in states.values())
    second = core.evaluate(
        "binary", y, s, baseline=baseline, segments=segments, window="w2",
        segment_monitor_states=states,  # type: ignore[arg-type]
    )  # fmt: skip
    for name, each in second.segments.items():
        rows = [i for i, seg in enumerate(segments) if seg == name]
        alone = core.evaluate(
            "binary", y[rows], s[rows], baseline=baseline, window="w2",
            monitor_state=states[name],
        )  # fmt: skip
        assert each.monitor["roc_auc"] == alone.monitor["roc_auc"]
        assert each.drift["roc_auc"] == alone.drift["roc_auc"]
        assert each.monitor["roc_auc"].windows == 2


def test_a_weightless_segment_says_so_and_the_rest_is_answered() -> None:
    result = core.evaluate(
        "binary", [0, 1, 1, 0], [0.2, 0.8, 0.6, 0.4], sample_weight=[1, 1, 0, 0],
        segments=["a", "a", "b", "b"],
    )  # fmt: skip
    assert result.segments["a"].metrics["roc_auc"] == 1.0
    assert result.segments["b"].metrics == {}
    assert result.segments["b"].warnings[0].startswith("insufficient_data")


def test_the_smallest_segments_fold_into_other_when_asked() -> None:
    segments = ["a"] * 5 + ["b"] * 4 + ["c"] * 2 + ["d"]
    y = [i % 2 for i in range(12)]
    s = [i / 12 for i in range(12)]
    with pytest.raises(InvalidInputError, match="at most 3 distinct segments, but got 4"):
        core.evaluate("binary", y, s, segments=segments, max_segments=3)
    result = core.evaluate("binary", y, s, segments=segments, max_segments=3, fold_segments=True)
    assert list(result.segments) == ["__other__", "a", "b"]
    assert result.segments["__other__"].n_samples == 3
    assert "2 smallest segments folded into '__other__'" in result.warnings[-1]


@pytest.mark.parametrize(
    ("segments", "message"),
    [
        (["a"], "expected one segment per row (2), but got 1"),
        (["a", ""], "the segment name at row 1 is empty"),
        (["a", "x" * 200_000], "has 200000 characters, over 128"),
        (["a", 3], "expected a string at row 1, but got int"),
        (["a", "__other__"], "is '__other__', which is reserved"),
        ("ab", "expected a list of strings, one per row, but got str"),
    ],
)
def test_bad_segments_are_refused_naming_the_field(segments: Any, message: str) -> None:
    with pytest.raises(InvalidInputError) as refused:
        core.evaluate("binary", [0, 1], [0.2, 0.7], segments=segments)
    assert refused.value.field == "segments"
    assert message in refused.value.message


def test_monitor_states_name_segments_of_the_request() -> None:
    baseline = {"roc_auc": 0.8, "roc_auc_variance": 0.0}
    with pytest.raises(InvalidInputError, match="names a segment the rows lack: 'c'"):
        core.evaluate(
            "binary", [0, 1], [0.2, 0.7], baseline=baseline, segments=["a", "a"],
            segment_monitor_states={"c": b"x"},
        )  # fmt: skip
    with pytest.raises(InvalidInputError) as refused:
        core.evaluate(
            "binary", [0, 1], [0.2, 0.7], baseline=baseline, segments=["a", "a"],
            segment_monitor_states={"a": b"not a state"},
        )  # fmt: skip
    assert refused.value.field == "segment_monitor_states.a"


def test_coded_segments_equal_named_ones() -> None:
    """A dictionary-encoded column (codes into segment_names, as Parquet and pandas hold one)
    gives the answer of the names themselves."""
    rng = np.random.default_rng(6)
    y = rng.random(300) < 0.4
    s = rng.normal(y * 1.0, 1.0)
    names = ["de", "fr", "us"]
    codes = rng.integers(0, 3, 300)
    coded = core.evaluate("binary", y, s, segments=codes, segment_names=names)
    named = core.evaluate("binary", y, s, segments=[names[c] for c in codes])
    _same(coded, named)


def test_names_of_a_dictionary_that_no_row_holds_are_no_segments() -> None:
    """A dictionary-encoded column may list categories no row holds (a pandas categorical
    after a filter): they are no segments of the answer, nor counted against the cap."""
    y, s = [0, 1, 0, 1], [0.1, 0.9, 0.2, 0.8]
    names = ["unused", "b", "a", "gone"]
    coded = core.evaluate(
        "binary", y, s, segments=[2, 2, 1, 1], segment_names=names, max_segments=2
    )
    _same(coded, core.evaluate("binary", y, s, segments=["a", "a", "b", "b"]))
    assert list(coded.segments) == ["a", "b"]


def test_binary_with_predictions_and_a_challenger_segments_equal_separate_requests() -> None:
    """Hard predictions and a challenger take the general path: each segment's rows as a
    request of their own, with their own comparison."""
    rng = np.random.default_rng(7)
    n = 200
    y = rng.random(n) < 0.4
    s = rng.normal(y * 1.0, 1.0)
    segments = [str(x) for x in rng.choice(["de", "fr"], n)]
    _check("binary", y, s, segments, y_pred=(s > 0.3).astype(int))
    challenger = rng.normal(y * 0.5, 1.0)
    segmented = core.evaluate("binary", y, s, segments=segments, challenger={"scores": challenger})
    for name, result in segmented.segments.items():
        rows = [i for i, each in enumerate(segments) if each == name]
        alone = core.evaluate(
            "binary", y[rows], s[rows], challenger={"scores": challenger[rows]},
            options={"max_curve_points": 0},
        )  # fmt: skip
        _same(result, alone)


@pytest.mark.parametrize(
    ("codes", "names", "field", "message"),
    [
        ([0, 3], ["a", "b"], "segments", "the code at row 1 is 3, not one of the 2"),
        ([0, -1], ["a", "b"], "segments", "the code at row 1 is -1"),
        ([0.0, 1.0], ["a", "b"], "segments", "one integer code per row (2)"),
        ([0], ["a", "b"], "segments", "one integer code per row (2)"),
        ([0, 1], ["a", "a"], "segment_names", "expected distinct names"),
        ([0, 1], ["a", ""], "segment_names", "name 1 is empty"),
    ],
)
def test_bad_codes_and_names_are_refused(
    codes: list[Any], names: list[str], field: str, message: str
) -> None:
    with pytest.raises(InvalidInputError) as refused:
        core.evaluate("binary", [0, 1], [0.2, 0.7], segments=codes, segment_names=names)
    assert refused.value.field == field
    assert message in refused.value.message


def test_segment_fields_need_segments() -> None:
    fields: dict[str, Any] = {"segment_names": ["a"], "segment_monitor_states": {"a": b""}}
    for field, value in fields.items():
        with pytest.raises(InvalidInputError) as refused:
            core.evaluate("binary", [0, 1], [0.2, 0.7], **{field: value})
        assert refused.value.field == field


# --- accumulators: batches, shards and bytes with segments --------------------------------------


@properties
@given(
    st.integers(4, 40).flatmap(
        lambda n: st.tuples(
            arrays(np.bool_, n),
            arrays(np.float64, n, elements=st.integers(0, 8).map(lambda i: i / 8)),
            st.lists(NAMES, min_size=n, max_size=n),
            st.integers(1, n - 1),
        )
    )
)
def test_merged_segmented_shards_equal_evaluate(data: Any) -> None:
    y, s, segments, cut = data
    whole = core.evaluate("binary", y, s, segments=segments, options=OPTIONS)
    left = core.Accumulator("binary", OPTIONS).update(y[:cut], s[:cut], segments=segments[:cut])
    right = core.Accumulator("binary", OPTIONS).update(y[cut:], s[cut:], segments=segments[cut:])
    merged = core.Accumulator.from_bytes(left.merge(right).to_bytes())
    _same(merged.result(), whole)


def test_every_task_accumulates_segments_batch_by_batch() -> None:
    rng = np.random.default_rng(8)
    n = 90
    segments = [str(x) for x in rng.choice(["north", "south", "east"], n)]
    labels, scores = rng.integers(0, 3, n), rng.dirichlet(np.ones(3), n)
    truth = rng.normal(size=n)
    cases: list[tuple[str, Any, Any]] = [
        ("multiclass", labels, scores),
        ("multilabel", rng.integers(0, 2, (n, 3)), scores),
        ("regression", truth, truth + rng.normal(scale=0.3, size=n)),
    ]
    for task, y_true, y_score in cases:
        accumulator = core.Accumulator(task)
        for part in np.array_split(np.arange(n), 3):
            accumulator.update(y_true[part], y_score[part], segments=[segments[i] for i in part])
        whole = core.evaluate(task, y_true, y_score, segments=segments)
        got = core.Accumulator.from_bytes(accumulator.to_bytes()).result()
        # Regression's sums are added batch by batch: equal to the last few bits.
        for mine, theirs in ((got, whole), *zip(got.segments.values(), whole.segments.values(),
                                                strict=True)):  # fmt: skip
            assert set(mine.metrics) == set(theirs.metrics), task
            for name, value in theirs.metrics.items():
                expected = None if value is None else pytest.approx(value, rel=1e-12, abs=1e-12)
                assert mine.metrics[name] == expected, (task, name)
        assert list(got.segments) == list(whole.segments)


def test_an_accumulators_batches_all_carry_segments_or_none() -> None:
    plain = core.Accumulator("binary").update([0, 1], [0.2, 0.7])
    with pytest.raises(InvalidInputError, match="earlier batches carry no segments"):
        plain.update([0, 1], [0.2, 0.7], segments=["a", "b"])
    segmented = core.Accumulator("binary").update([0, 1], [0.2, 0.7], segments=["a", "b"])
    with pytest.raises(InvalidInputError, match="every batch must"):
        segmented.update([0, 1], [0.2, 0.7])
    with pytest.raises(InvalidInputError, match="with segments and one without"):
        plain.merge(segmented)
    assert segmented.segment_names == ("a", "b")


def test_the_segments_of_merged_accumulators_are_capped() -> None:
    left = core.Accumulator("binary", max_segments=2).update(
        [0, 1], [0.2, 0.7], segments=["a", "b"]
    )
    with pytest.raises(InvalidInputError, match="at most 2 distinct segments, but the batches"):
        left.update([0], [0.3], segments=["c"])
    assert left.segment_names == ("a", "b")  # unchanged
    right = core.Accumulator("binary", max_segments=2).update(
        [0, 1], [0.1, 0.9], segments=["c", "c"]
    )
    with pytest.raises(InvalidInputError, match="the merged accumulators have 3"):
        left.merge(right)


def test_a_segmented_state_read_by_an_older_layout_is_refused_clearly() -> None:
    state = core.Accumulator("binary").update([0, 1], [0.2, 0.7], segments=["a", "b"]).to_bytes()
    restored = core.Accumulator.from_bytes(state)
    assert restored.segment_names == ("a", "b")
    assert restored.result().segments["b"].n_samples == 1


def test_numpy_strings_name_segments_as_plain_strings() -> None:
    names = list(np.array(["de", "fr", "de"]))  # numpy's str_ values
    result = core.evaluate("binary", [0, 1, 1], [0.2, 0.7, 0.6], segments=names)
    assert [type(name) for name in result.segments] == [str, str]
    folded = core.evaluate(
        "binary", [0, 1, 1], [0.2, 0.7, 0.6], segments=names, max_segments=1, fold_segments=True
    )
    assert "np.str_" not in folded.warnings[-1]


def test_a_segments_state_of_another_baseline_is_refused_naming_the_segment() -> None:
    rng = np.random.default_rng(9)
    y = rng.random(400) < 0.3
    s = rng.normal(y * 1.0, 1.0)
    segments = ["a"] * 200 + ["b"] * 200
    first = core.evaluate(
        "binary", y, s, baseline={"roc_auc": 0.8, "roc_auc_variance": 0.0}, segments=segments
    )
    states = {"b": first.segments["b"].monitor_state or b""}
    other = {"roc_auc": 0.7, "roc_auc_variance": 0.0}  # another baseline
    with pytest.raises(InvalidInputError) as refused:
        core.evaluate("binary", y, s, baseline=other, segments=segments,
                      segment_monitor_states=states)  # fmt: skip
    assert refused.value.field == "segment_monitor_states.b"
    accumulator = core.Accumulator("binary").update(y, s, segments=segments)
    with pytest.raises(InvalidInputError) as refused:
        accumulator.result(baseline=other, segment_monitor_states=states)
    assert refused.value.field == "segment_monitor_states.b"
