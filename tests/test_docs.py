"""Where the documentation restates the code, it says what the code does: the settings table, the
error table, the keys of the conventions each response carries, and the benchmark figures the
performance page quotes. (The metric catalog and the options pages are generated from the code
and checked in tests/docs; the metrics contract is checked against the export in
tests/service/test_metrics.py and against the dashboard in tests/deploy.)"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from evalserve import core
from tests.docs.pages import DOCS, ROOT, between, section, table_rows


def _page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def test_settings_table_matches_the_settings() -> None:
    from evalserve.service.config import Settings

    rows = table_rows(between(_page("configuration.md"), "settings"))
    documented = {
        name.strip("`"): (default, meaning.replace("`", "")) for name, default, meaning in rows
    }
    expected = {
        name: (str(field.default), field.description)
        for name, field in Settings.model_fields.items()
    }
    assert documented == expected


def test_error_table_matches_the_error_mapping() -> None:
    from evalserve.service.errors import _TABLE

    rows = table_rows(between(_page("api/errors.md"), "errors"))
    documented = [(code.strip("`"), http.split(",")[0], grpc) for _, code, http, grpc in rows]
    expected = {
        (code, str(http), "-" if http == 415 else status.name)  # a content type is REST's alone
        for _, http, status, code in _TABLE
    }
    assert set(documented) == expected


_DETECTION_IMAGE: dict[str, Any] = {"boxes": np.array([[0.0, 0.0, 10.0, 10.0]]), "classes": [0]}
_ONE_OF_EACH_TASK: dict[str, Any] = {
    "binary": lambda: core.evaluate("binary", [0, 1], [0.2, 0.8]),
    "multiclass": lambda: core.evaluate(
        "multiclass", [0, 1, 2], [[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]]
    ),
    "multilabel": lambda: core.evaluate("multilabel", [[0, 1], [1, 0]], [[0.2, 0.8], [0.7, 0.3]]),
    "regression": lambda: core.evaluate("regression", [1.0, 2.0, 3.0], y_pred=[1.1, 1.9, 3.2]),
    "detection": lambda: core.evaluate(
        "detection", [_DETECTION_IMAGE], [{**_DETECTION_IMAGE, "scores": [0.9]}]
    ),
}


@pytest.mark.parametrize("task", core.TASKS)
def test_conventions_page_explains_every_key_a_response_carries(task: str) -> None:
    body = section(_page("conventions.md"), task.capitalize())
    documented = re.findall(r"^- \*\*`(\w+)`\*\*", body, flags=re.MULTILINE)
    assert len(documented) == len(set(documented)), f"a key twice under '## {task}'"
    assert set(documented) == set(_ONE_OF_EACH_TASK[task]().conventions)


def test_performance_page_quotes_the_benchmark_results() -> None:
    figures = between(_page("performance.md"), "figures")
    results = (ROOT / "bench" / "RESULTS.md").read_text(encoding="utf-8")
    quoted = re.findall(r"\d+\.\d+", figures)
    assert len(quoted) >= 10
    assert [figure for figure in quoted if figure not in results] == []
