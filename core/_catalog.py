"""The metric catalog: one registry of every metric name, its task, direction and definition.

``GET /v1/metrics`` serves it; tests are parametrized over it, and a metric the core emits that
is missing here fails them. ``higher_is_better`` is None for counts and thresholds, which have
no direction.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

__all__ = ["CATALOG", "EntryBuilder", "MetricInfo", "catalog_entry", "entry_builder", "register"]


@dataclass(frozen=True, slots=True)
class MetricInfo:
    name: str
    tasks: tuple[str, ...]
    higher_is_better: bool | None
    definition: str
    aliases: tuple[str, ...] = ()


class EntryBuilder(Protocol):
    def __call__(
        self, name: str, better: bool | None, definition: str, *aliases: str
    ) -> MetricInfo: ...


def entry_builder(task: str) -> EntryBuilder:
    """The catalog-entry builder of one task's package: ``m(name, better, definition,
    *aliases)``."""

    def entry(name: str, better: bool | None, definition: str, *aliases: str) -> MetricInfo:
        return MetricInfo(name, (task,), better, definition, tuple(aliases))

    return entry


_B = ("binary",)


def _m(
    name: str, better: bool | None, definition: str, *aliases: str, tasks: tuple[str, ...] = _B
) -> MetricInfo:
    return MetricInfo(name, tasks, better, definition, tuple(aliases))


_ENTRIES = (
    # Counts at the threshold (weighted sums when sample weights are given).
    _m("n_samples", None, "Number of rows received (weight-zero rows included)."),
    _m("tp", None, "True positives: positives with score >= threshold."),
    _m("fp", None, "False positives: negatives with score >= threshold."),
    _m("tn", None, "True negatives: negatives with score < threshold."),
    _m("fn", None, "False negatives: positives with score < threshold."),
    _m("n_positive", None, "Actual positives P = TP + FN."),
    _m("n_negative", None, "Actual negatives N = TN + FP."),
    _m("n_predicted_positive", None, "Predicted positives P' = TP + FP."),
    _m("n_predicted_negative", None, "Predicted negatives N' = TN + FN."),
    # Rates at the threshold.
    _m("accuracy", True, "(TP + TN) / (P + N)."),
    _m("error_rate", False, "(FP + FN) / (P + N) = 1 - accuracy."),
    _m("precision", True, "TP / (TP + FP).", "ppv"),
    _m("recall", True, "TP / (TP + FN) = TP / P.", "sensitivity", "tpr", "hit_rate"),
    _m("specificity", True, "TN / (TN + FP) = TN / N.", "tnr", "selectivity"),
    _m("fpr", False, "FP / (FP + TN) = 1 - specificity.", "fall_out"),
    _m("fnr", False, "FN / (FN + TP) = 1 - recall.", "miss_rate"),
    _m("npv", True, "TN / (TN + FN)."),
    _m("f1", True, "2 TP / (2 TP + FP + FN): harmonic mean of precision and recall."),
    _m("f_beta", True, "(1 + b^2) TP / ((1 + b^2) TP + b^2 FN + FP), b = options.beta."),
    _m("balanced_accuracy", True, "(recall + specificity) / 2."),
    _m("mcc", True, "Matthews: (TP TN - FP FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN))."),
    _m("cohen_kappa", True, "(p_o - p_e) / (1 - p_e); p_e from the marginals."),
    _m("youden_j", True, "recall + specificity - 1.", "informedness"),
    _m("prevalence", None, "P / (P + N)."),
    # Over all thresholds.
    _m(
        "roc_auc", True,
        "Area under the tie-grouped ROC curve = Mann-Whitney U / (P N) with averaged ranks.",
        "auc", "auroc",
    ),
    _m(
        "roc_auc_partial", True,
        "McClish-standardized area under the ROC curve for FPR <= options.max_fpr.",
    ),
    _m(
        "average_precision", True,
        "Step-wise AP = sum_n (R_n - R_{n-1}) P_n over thresholds (scikit-learn).", "ap",
    ),
    _m("pr_auc_trapezoid", True, "Trapezoidal area under the PR curve from (0, 1)."),
    _m("ap_11_point", True, "VOC 2007: mean of max precision at recall >= r, r = 0, .1, ..., 1."),
    _m("ap_all_point", True, "VOC 2010+: area under the monotone precision envelope."),
    _m(
        "break_even_point", True,
        "Precision = recall point, as R-precision (precision at k = P; ties pro rata).",
        "bep", "r_precision",
    ),
    _m("ks_statistic", True, "Kolmogorov-Smirnov: max |TPR - FPR| over thresholds.", "ks"),
    _m("ks_threshold", None, "The highest threshold where the KS statistic is reached."),
    _m("optimal_threshold_youden", None, "Threshold maximizing Youden's J = TPR - FPR."),
    _m("optimal_threshold_f1", None, "Threshold maximizing F1."),
    _m(
        "precision_at_{k}", True,
        "Positive share of the top k (by score, in sample weight); ties at the cut pro rata.",
    ),
    _m("recall_at_{k}", True, "Share of all positives found in the top k; ties pro rata."),
    # Calibration.
    _m("log_loss", False, "-mean(y log p + (1 - y) log(1 - p)), p clipped to [eps, 1 - eps]."),
    _m("brier_score", False, "mean((p - y)^2)."),
    _m(
        "expected_calibration_error", False,
        "sum over equal-width bins of |sum(y) - sum(p)| / total weight "
        "(options.calibration_bins bins).",
        "ece",
    ),
)  # fmt: skip

CATALOG: dict[str, MetricInfo] = {}
_PATTERNS: list[tuple[re.Pattern[str], str]] = []


def register(entries: tuple[MetricInfo, ...]) -> None:
    """Add a task's metrics. A name another task has already registered keeps one entry: the
    tasks are joined, and a different definition is appended after the task's name."""
    for entry in entries:
        known = CATALOG.get(entry.name)
        if known is None:
            CATALOG[entry.name] = entry
            if "{k}" in entry.name:
                pattern = re.escape(entry.name).replace(r"\{k\}", r"[0-9.e+-]+")
                _PATTERNS.append((re.compile(f"^{pattern}$"), entry.name))
            continue
        definition = known.definition
        if entry.definition != known.definition:
            definition += f" {'/'.join(entry.tasks).capitalize()}: {entry.definition}"
        if known.higher_is_better != entry.higher_is_better:
            raise ValueError(f"metric {entry.name}: the tasks disagree on its direction")
        CATALOG[entry.name] = MetricInfo(
            entry.name,
            tuple(dict.fromkeys(known.tasks + entry.tasks)),
            known.higher_is_better,
            definition,
            tuple(dict.fromkeys(known.aliases + entry.aliases)),
        )


register(_ENTRIES)


def catalog_entry(name: str) -> MetricInfo | None:
    """The catalog entry of a metric name, resolving ``{k}`` patterns such as precision_at_100."""
    if name in CATALOG:
        return CATALOG[name]
    for pattern, key in _PATTERNS:
        if pattern.match(name):
            return CATALOG[key]
    return None
