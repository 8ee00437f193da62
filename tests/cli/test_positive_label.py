"""``evalserve evaluate --positive-label NAME``: a binary label column of names (yes/no, in CSV
or Parquet, plain or dictionary-encoded) or of two numbers other than 0/1 is read as
scikit-learn's ``pos_label`` reads it, and answers as the same file with 1/0 labels; the
refusals are one line naming the file, the line and the column, exit status 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.cli.run import assert_refused, evalserve


def _rows(n: int = 3000) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    rng = np.random.default_rng(5)
    labels = rng.integers(0, 2, n)
    return labels, np.round(rng.random(n) * 0.6 + labels * 0.3, 3)


def _csv(path: Path, labels: Any, scores: Any) -> Path:
    lines = [f"{y},{p}" for y, p in zip(labels, scores, strict=True)]
    path.write_text("\n".join(["label,score", *lines]) + "\n")
    return path


def _answer(*args: str) -> dict[str, Any]:
    done = evalserve("evaluate", *args)
    assert done.returncode == 0, done.stderr
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    labels, scores = _rows()
    return _answer(str(_csv(tmp_path_factory.mktemp("plain") / "plain.csv", labels, scores)))


@pytest.mark.parametrize(
    ("positive", "negative", "flag"),
    [("yes", "no", "yes"), (2, 1, "2"), (1, -1, "1"), (0, 1, "0")],
    ids=["yes-no", "1-2", "minus-1-1", "0-1-swapped"],
)
def test_a_csv_label_column_read_with_the_flag_answers_as_1_0_labels(
    tmp_path: Path, plain: dict[str, Any], positive: Any, negative: Any, flag: str
) -> None:
    labels, scores = _rows()
    if (positive, negative) == (0, 1):  # the swap: the positives of the plain file are 0
        named = np.where(labels == 1, 0, 1)
    else:
        named = np.where(labels == 1, positive, negative)
    path = _csv(tmp_path / "named.csv", named, scores)
    assert _answer("--positive-label", flag, str(path)) == plain


@pytest.mark.parametrize("dictionary", [False, True], ids=["strings", "dictionary"])
def test_a_parquet_label_column_of_names_and_the_options_json(
    tmp_path: Path, plain: dict[str, Any], dictionary: bool
) -> None:
    labels, scores = _rows()
    names = pa.array(np.where(labels == 1, "yes", "no"))
    if dictionary:
        names = names.dictionary_encode()
    path = tmp_path / "named.parquet"
    pq.write_table(pa.table({"label": names, "score": scores}), path, row_group_size=700)
    options = json.dumps({"positive_label": "yes"})
    assert _answer("--options", options, str(path)) == plain


def test_a_baseline_file_of_names_is_read_with_the_flag(tmp_path: Path) -> None:
    labels, scores = _rows()
    names = np.where(labels == 1, "yes", "no")
    data = _csv(tmp_path / "data.csv", names, scores)
    baseline = _csv(tmp_path / "baseline.csv", names[::-1], scores)
    plain_data = _csv(tmp_path / "plain.csv", labels, scores)
    plain_baseline = _csv(tmp_path / "plain-baseline.csv", labels[::-1], scores)
    got = _answer("--positive-label", "yes", "--baseline", str(baseline), str(data))
    assert got["drift"]["roc_auc"]["method"] == "delong-unpaired"
    assert got == _answer("--baseline", str(plain_baseline), str(plain_data))


def test_names_without_the_flag_say_to_give_it(tmp_path: Path) -> None:
    path = _csv(tmp_path / "named.csv", ["yes", "no", "no"], [0.9, 0.2, 0.4])
    assert_refused(
        evalserve("evaluate", str(path)),
        f"{path}, line 2, column label: expected a number, got 'yes'",
        "(label names need --positive-label NAME, the positive class's name)",
    )


def test_a_positive_label_none_of_the_two_labels_is_refused(tmp_path: Path) -> None:
    path = _csv(tmp_path / "named.csv", ["yes", "no", "no"], [0.9, 0.2, 0.4])
    assert_refused(
        evalserve("evaluate", "--positive-label", "maybe", str(path)),
        f"{path}, line 2 to line 4, column label: options.positive_label is 'maybe', but the "
        "labels are 'yes' and 'no': expected one of them",
    )


def test_a_third_label_is_refused_at_its_line(tmp_path: Path) -> None:
    path = _csv(tmp_path / "named.csv", ["yes", "no", "maybe"], [0.9, 0.2, 0.4])
    assert_refused(
        evalserve("evaluate", "--positive-label", "yes", str(path)),
        f"{path}, line 4, column label: expected two distinct labels for task 'binary', but "
        "line 4 is 'maybe', a third after 'yes' and 'no'",
    )


def test_a_name_for_numeric_labels_is_refused(tmp_path: Path) -> None:
    path = _csv(tmp_path / "numbers.csv", [1, 2, 2], [0.9, 0.2, 0.4])
    assert_refused(
        evalserve("evaluate", "--positive-label", "yes", str(path)),
        "options.positive_label the labels are numbers, so expected a number, but got 'yes'",
    )
