"""evalserve's numpy core: arrays in, numbers and arrays out. No I/O, no service imports."""

from evalserve.core._accumulator import Accumulator
from evalserve.core._catalog import CATALOG, catalog_entries, catalog_entry
from evalserve.core._coverage import check_coverage
from evalserve.core._errors import InvalidInputError, StateTooLargeError
from evalserve.core._evaluate import (
    check_baseline,
    check_comparison,
    check_monitor,
    evaluate,
    evaluate_binary_stats,
)
from evalserve.core._metric_info import MetricInfo, MetricRange
from evalserve.core._options import (
    MAX_STRING_OPTION,
    OPTIONS,
    Options,
    OptionSpec,
    parse_options,
)
from evalserve.core._result import EvaluationResult
from evalserve.core._result_parts import (
    ClassRow,
    Comparison,
    CoverageReport,
    DriftTest,
    Interval,
    MonitorVerdict,
)
from evalserve.core._task_spec import MemoryCost, TaskInputs, TaskSpec
from evalserve.core._tasks import REGISTRY, TASKS, task_spec
from evalserve.core._threads import available_cpus, current_threads, using_threads
from evalserve.core.binary._operating import KINDS as OPERATING_KINDS
from evalserve.core.binary._operating import operating_names, target_label
from evalserve.core.binary._stats import BinaryStats

__all__ = [
    "CATALOG",
    "MAX_STRING_OPTION",
    "OPERATING_KINDS",
    "OPTIONS",
    "REGISTRY",
    "TASKS",
    "Accumulator",
    "BinaryStats",
    "ClassRow",
    "Comparison",
    "CoverageReport",
    "DriftTest",
    "EvaluationResult",
    "Interval",
    "InvalidInputError",
    "MemoryCost",
    "MetricInfo",
    "MetricRange",
    "MonitorVerdict",
    "OptionSpec",
    "Options",
    "StateTooLargeError",
    "TaskInputs",
    "TaskSpec",
    "available_cpus",
    "catalog_entries",
    "catalog_entry",
    "check_baseline",
    "check_comparison",
    "check_coverage",
    "check_monitor",
    "current_threads",
    "evaluate",
    "evaluate_binary_stats",
    "operating_names",
    "parse_options",
    "target_label",
    "task_spec",
    "using_threads",
]
