"""The tasks the core evaluates, in the order the API lists them."""

from __future__ import annotations

from evalserve.core._errors import InvalidInputError

__all__ = ["TASKS", "check_task"]

TASKS = ("binary", "multiclass", "multilabel", "regression", "detection")


def check_task(task: object) -> str:
    """``task`` when it names a task; otherwise ``InvalidInputError`` naming the field."""
    if not isinstance(task, str) or task not in TASKS:
        raise InvalidInputError("task", f"expected one of {list(TASKS)}, but got {task!r}")
    return task
