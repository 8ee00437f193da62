"""The task registry: every task's ``TaskSpec``, registered once, in the order the API lists
them. Adding a task is a package under ``core/`` with its ``_spec.py``, and one line here."""

from __future__ import annotations

from types import MappingProxyType

from evalserve.core._errors import InvalidInputError
from evalserve.core._task_spec import TaskSpec
from evalserve.core.binary._spec import SPEC as BINARY
from evalserve.core.detection._spec import SPEC as DETECTION
from evalserve.core.multiclass._spec import SPEC as MULTICLASS
from evalserve.core.multilabel._spec import SPEC as MULTILABEL
from evalserve.core.regression._spec import SPEC as REGRESSION

__all__ = ["REGISTRY", "TASKS", "check_task", "comparing_tasks", "task_spec"]

REGISTRY: tuple[TaskSpec, ...] = (BINARY, MULTICLASS, MULTILABEL, REGRESSION, DETECTION)
TASKS = tuple(spec.name for spec in REGISTRY)
_BY_NAME = MappingProxyType({spec.name: spec for spec in REGISTRY})


def task_spec(task: object) -> TaskSpec:
    """The spec of the task ``task`` names; otherwise ``InvalidInputError`` naming the field."""
    spec = _BY_NAME.get(task) if isinstance(task, str) else None
    if spec is None:
        raise InvalidInputError("task", f"expected one of {list(TASKS)}, but got {task!r}")
    return spec


def check_task(task: object) -> str:
    """``task`` when it names a task; otherwise ``InvalidInputError`` naming the field."""
    return task_spec(task).name


def comparing_tasks() -> str:
    """The tasks that take a baseline and a challenger, quoted for messages."""
    return ", ".join(repr(spec.name) for spec in REGISTRY if spec.compares)
