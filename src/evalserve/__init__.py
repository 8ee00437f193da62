"""evalserve: exact model-quality metrics, curves and confidence intervals.

    from evalserve import evaluate
    result = evaluate("binary", [0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    result.metrics["roc_auc"]  # 0.75

The numpy core lives in :mod:`evalserve.core` (no I/O, no service imports); this package
re-exports its public names. The REST and gRPC service is :mod:`evalserve.service` (the
``service`` extra), the generated protobuf stubs are :mod:`evalserve.v1`, and the command line
is ``evalserve`` (:mod:`evalserve.cli`).
"""

from evalserve.core import (
    CATALOG,
    MAX_STRING_OPTION,
    OPERATING_KINDS,
    OPTIONS,
    REGISTRY,
    TASKS,
    Accumulator,
    BinaryStats,
    ClassRow,
    Comparison,
    CoverageReport,
    DriftTest,
    EvaluationResult,
    Interval,
    InvalidInputError,
    MemoryCost,
    MetricInfo,
    MetricRange,
    MonitorVerdict,
    Options,
    OptionSpec,
    StateTooLargeError,
    TaskInputs,
    TaskSpec,
    available_cpus,
    catalog_entries,
    catalog_entry,
    check_baseline,
    check_comparison,
    check_coverage,
    check_monitor,
    current_threads,
    evaluate,
    evaluate_binary_stats,
    operating_names,
    parse_options,
    target_label,
    task_spec,
    using_threads,
)

__version__ = "0.1.0"

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
    "__version__",
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
