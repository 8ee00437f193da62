"""``options.positive_label``: scikit-learn's ``pos_label`` for task binary.

Labels equal to the option are positive, every other label negative: the answer for names
("yes"/"no") or for two numbers other than 0/1 ({1, 2}, {-1, 1}) is exactly the answer for the
same rows as 1/0 labels, on every path of the core (one call, segments, a baseline payload, an
``Accumulator`` fed in batches). More than two distinct labels, or two of which none is the
option, are refused naming the field.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalserve.core import Accumulator, InvalidInputError, evaluate

# Rows of both classes (the result of one class only has its own warnings, compared too).
ROWS = st.lists(
    st.tuples(st.booleans(), st.floats(0, 1, allow_nan=False), st.floats(0.1, 4)),
    min_size=1,
    max_size=40,
)
# (positive, negative, option): the vocabularies the option opens, and the option for them.
VOCABULARIES = [
    ("yes", "no", "yes"),
    (2, 1, "2"),
    (2, 1, 2),
    (1, -1, 1),
    (1.0, -1.0, "1"),
    (0, 1, 0),  # the classes of 0/1 labels swapped
    ("1", "0", 1),  # names that read as numbers are still names, compared as text
]


def _labels(rows: list[tuple[bool, float, float]], positive: Any, negative: Any) -> list[Any]:
    return [positive if hit else negative for hit, _, _ in rows]


def _plain(rows: list[tuple[bool, float, float]]) -> dict[str, Any]:
    return {
        "y_true": [int(hit) for hit, _, _ in rows],
        "y_score": [score for _, score, _ in rows],
        "sample_weight": [weight for _, _, weight in rows],
    }


@pytest.mark.parametrize(("positive", "negative", "option"), VOCABULARIES)
@settings(max_examples=40, deadline=None)
@given(rows=ROWS)
def test_the_labels_read_with_the_option_answer_as_1_0_labels(
    rows: list[tuple[bool, float, float]], positive: Any, negative: Any, option: Any
) -> None:
    plain = _plain(rows)
    expected = evaluate("binary", **plain).to_dict()
    named = {**plain, "y_true": _labels(rows, positive, negative)}
    assert evaluate("binary", **named, options={"positive_label": option}).to_dict() == expected
    # As a numpy array too (a column of a file, a transport's decoded column).
    named["y_true"] = np.asarray(named["y_true"])
    assert evaluate("binary", **named, options={"positive_label": option}).to_dict() == expected


@settings(max_examples=25, deadline=None)
@given(rows=ROWS, cut=st.integers(0, 40))
def test_an_accumulator_fed_names_in_batches_answers_as_1_0_labels(
    rows: list[tuple[bool, float, float]], cut: int
) -> None:
    plain = _plain(rows)
    expected = evaluate("binary", **plain).to_dict()
    names = _labels(rows, "yes", "no")
    accumulator = Accumulator("binary", options={"positive_label": "yes"})
    for part in (slice(0, cut), slice(cut, None)):
        if names[part]:
            accumulator.update(
                names[part], plain["y_score"][part], sample_weight=plain["sample_weight"][part]
            )
    assert accumulator.result().to_dict() == expected


def test_segments_and_a_baseline_read_the_labels_with_the_option() -> None:
    labels = [1, 0, 1, 1, 0, 0, 1, 0]
    scores = [0.9, 0.1, 0.8, 0.3, 0.4, 0.2, 0.7, 0.6]
    segments = ["a", "b"] * 4
    names = ["yes" if label else "no" for label in labels]
    baseline = {"labels": labels[::-1], "scores": scores}
    named_baseline = {"labels": names[::-1], "scores": scores}
    options = {"drift_min_samples": 2}
    expected = evaluate(
        "binary", labels, scores, segments=segments, baseline=baseline, options=options
    ).to_dict()
    got = evaluate(
        "binary", names, scores, segments=segments, baseline=named_baseline,
        options={**options, "positive_label": "yes"},
    ).to_dict()  # fmt: skip
    assert got == expected


def test_one_distinct_label_is_all_positive_or_all_negative() -> None:
    scores = [0.2, 0.7, 0.4]
    assert evaluate("binary", ["yes"] * 3, scores, options={"positive_label": "yes"}).to_dict() == (
        evaluate("binary", [1, 1, 1], scores).to_dict()
    )
    assert evaluate("binary", ["no"] * 3, scores, options={"positive_label": "yes"}).to_dict() == (
        evaluate("binary", [0, 0, 0], scores).to_dict()
    )
    assert evaluate("binary", [5, 5, 5], scores, options={"positive_label": 1}).to_dict() == (
        evaluate("binary", [0, 0, 0], scores).to_dict()
    )


def test_hard_predictions_stay_0_1_with_the_option() -> None:
    labels, scores, predictions = [2, 1, 2, 1], [0.9, 0.2, 0.4, 0.6], [1, 0, 0, 1]
    got = evaluate("binary", labels, scores, y_pred=predictions, options={"positive_label": 2})
    expected = evaluate("binary", [1, 0, 1, 0], scores, y_pred=predictions)
    assert got.to_dict() == expected.to_dict()


REFUSALS = [
    pytest.param(
        ["a", "b", "c", "a"], "a", "labels",
        "expected two distinct labels for task 'binary', but row 2 is 'c', a third after 'a' "
        "and 'b'",
        id="three-names",
    ),
    pytest.param(
        ["b", "c", "d", "b"], "a", "labels",
        "expected two distinct labels for task 'binary', but row 2 is 'd', a third after 'b' "
        "and 'c'",
        id="three-names-none-positive",
    ),
    pytest.param(
        [1, 2, 3, 1], 1, "labels",
        "expected two distinct labels for task 'binary', but row 2 is 3, a third after 1 and 2",
        id="three-numbers",
    ),
    pytest.param(
        ["no", "maybe", "no", "maybe"], "yes", "options.positive_label",
        "is 'yes', but the labels are 'no' and 'maybe': expected one of them",
        id="positive-none-of-two",
    ),
    pytest.param(
        [1, 2, 1, 2], 3, "options.positive_label",
        "is 3, but the labels are 1 and 2: expected one of them",
        id="numeric-positive-none-of-two",
    ),
    pytest.param(
        [1, 2, 1, 2], "yes", "options.positive_label",
        "the labels are numbers, so expected a number, but got 'yes'",
        id="name-for-numbers",
    ),
    pytest.param(
        [1.0, float("nan"), 1.0, 2.0], 1, "labels",
        "expected finite labels, but row 1 is nan",
        id="nan-label",
    ),
    pytest.param(
        ["p", "n", "p", "n"], None, "labels",
        "expected labels 0 or 1 for task 'binary', but got names ('p', 'n'): set "
        "options.positive_label to the name of the positive class (for example 'p'), or send 1 "
        "for the positive class and 0 for the other",
        id="names-without-the-option",
    ),
    pytest.param(
        [1, 2, 1, 2], None, "labels",
        "expected labels 0 or 1 for task 'binary' (or set options.positive_label), but row 1 "
        "is 2",
        id="numbers-without-the-option",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("labels", "option", "field", "message"), REFUSALS)
def test_refusals_name_the_field_and_say_what_was_wrong(
    labels: list[Any], option: Any, field: str, message: str
) -> None:
    with pytest.raises(InvalidInputError) as refused:
        evaluate("binary", labels, [0.9, 0.2, 0.4, 0.6], options={"positive_label": option})
    assert (refused.value.field, refused.value.message) == (field, message)


def test_a_baseline_refusal_names_the_baseline() -> None:
    with pytest.raises(InvalidInputError) as refused:
        evaluate(
            "binary", ["yes", "no"], [0.9, 0.1], options={"positive_label": "yes"},
            baseline={"labels": ["yes", "no", "maybe"], "scores": [0.1, 0.2, 0.3]},
        )  # fmt: skip
    assert refused.value.field == "baseline.labels"
    assert "a third after 'yes' and 'no'" in refused.value.message


def test_predictions_are_refused_as_names_even_with_the_option() -> None:
    with pytest.raises(InvalidInputError) as refused:
        evaluate(
            "binary", ["yes", "no"], [0.9, 0.1], y_pred=["yes", "no"],
            options={"positive_label": "yes"},
        )  # fmt: skip
    assert refused.value.field == "predictions"
    assert "hard predictions are numbers" in refused.value.message
