"""evalserve's numpy core: arrays in, numbers and arrays out. No I/O, no service imports."""

from core._catalog import CATALOG, MetricInfo, catalog_entry
from core._coverage import check_coverage
from core._errors import InvalidInputError
from core._evaluate import TASKS, check_baseline, evaluate, evaluate_binary_stats
from core._options import Options, parse_options
from core._result import EvaluationResult
from core.binary._stats import BinaryStats

__all__ = [
    "CATALOG",
    "TASKS",
    "BinaryStats",
    "EvaluationResult",
    "InvalidInputError",
    "MetricInfo",
    "Options",
    "catalog_entry",
    "check_baseline",
    "check_coverage",
    "evaluate",
    "evaluate_binary_stats",
    "parse_options",
]
