"""evalserve's numpy core: arrays in, numbers and arrays out. No I/O, no service imports."""

from evalserve.core._catalog import CATALOG, MetricInfo, catalog_entry
from evalserve.core._coverage import check_coverage
from evalserve.core._errors import InvalidInputError
from evalserve.core._evaluate import TASKS, check_baseline, evaluate, evaluate_binary_stats
from evalserve.core._options import OPTIONS, Options, OptionSpec, parse_options
from evalserve.core._result import EvaluationResult
from evalserve.core.binary._stats import BinaryStats

__all__ = [
    "CATALOG",
    "OPTIONS",
    "TASKS",
    "BinaryStats",
    "EvaluationResult",
    "InvalidInputError",
    "MetricInfo",
    "OptionSpec",
    "Options",
    "catalog_entry",
    "check_baseline",
    "check_coverage",
    "evaluate",
    "evaluate_binary_stats",
    "parse_options",
]
