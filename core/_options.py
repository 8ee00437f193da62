"""Evaluation options: one declarative table, read by one generic parser.

The fields of ``Options`` are the table: each is declared with ``_option`` (its default, bounds,
the tasks that use it and its doc string) and typed by its annotation (``float``, ``int``,
``float | None``, ``str | None``, ``tuple[int, ...]``, ``Literal[...]``). ``OPTIONS`` reads
them into one ``OptionSpec`` per option, and everything else derives from it: ``parse_options``
(one validation path, the same messages for every option of a kind), the REST model of
``service.rest_models``, the proto check in the tests, and ``docs/reference/options.md``
(``docs/generate_options.py``).

Every option is checked on every task, and a task that does not use an option ignores it
without a warning: a caller can send one set of options for all its tasks, and a value out of
range is refused wherever it is sent.
"""

from __future__ import annotations

import json
import math
import types
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from evalserve.core._errors import InvalidInputError

__all__ = ["OPTIONS", "OptionSpec", "Options", "parse_options"]

MAX_LIST_OPTION = 64  # values of one list option
# Targets of one operating-point or quantile option: each value adds metrics (and gauges), so
# the lists are short.
MAX_TARGETS = 8
MAX_BETA = 1e4  # beta^2 must stay far from overflow
MAX_COUNT = 1_000_000  # top-k, detections per image
# Curve points: each curve of the answer holds up to this many points per array (multiclass: a
# curve per class), so the bound keeps a small request's answer small.
MAX_CURVE_POINTS = 100_000
MAX_STRING_OPTION = 256  # characters of a string option (a class name)

Kind = Literal["number", "integer", "choice", "string"]
# The tasks whose classes (or labels) have scores: binary and one-vs-rest per class.
OPERATING_TASKS = ("binary", "multiclass", "multilabel")


@dataclass(frozen=True, slots=True)
class _Declared:
    """What a field of ``Options`` declares besides its type and default."""

    doc: str
    tasks: tuple[str, ...]
    low: float | None
    high: float | None
    low_open: bool
    high_open: bool
    zero_means: str | None
    noun: str | None
    max_items: int


def _option(
    default: Any,
    doc: str,
    *,
    tasks: tuple[str, ...],
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    zero_means: str | None = None,
    noun: str | None = None,
    max_items: int = MAX_LIST_OPTION,
) -> Any:
    """A field of ``Options``: its row of the table.

    ``low`` / ``high``: the bounds of a value (of each value of a list), inclusive unless
    ``*_open``. ``zero_means``: for a count whose 0 switches something off (what it means);
    1 is then refused (a curve needs two points, a bootstrap two replicates). ``noun``: how
    error messages name a value, when not "a number" / "an integer". ``max_items``: the most
    values a list option takes.
    """
    declared = _Declared(doc, tasks, low, high, low_open, high_open, zero_means, noun, max_items)
    return field(default=default, metadata={"option": declared})


@dataclass(frozen=True, slots=True)
class Options:
    """Every knob of an evaluation, with its default; ``OPTIONS`` has each one's row (type,
    bounds, tasks, doc), and ``parse_options`` builds this value from a mapping."""

    threshold: float = _option(
        0.5,
        "A score >= threshold is predicted positive (multilabel: per label cell).",
        tasks=("binary", "multilabel"),
    )
    beta: float = _option(
        1.0,
        "The F-beta weight of recall (f_beta).",
        tasks=("binary", "multiclass"),
        low=0.0,
        low_open=True,
        high=MAX_BETA,
    )
    top_k: tuple[int, ...] = _option(
        (1, 5),
        "The k of multiclass top-k accuracy (top_k_accuracy_{k}).",
        tasks=("multiclass",),
        low=1,
        high=MAX_COUNT,
    )
    head_k: tuple[float, ...] = _option(
        (),
        "The k of precision_at_{k}, recall_at_{k} and ndcg_at_{k}, in units of sample weight "
        "(rows when unweighted).",
        tasks=("binary",),
        low=0.0,
        low_open=True,
        noun="k",
    )
    max_fpr: float | None = _option(
        None,
        "The FPR bound of the McClish-standardized partial AUC (roc_auc_partial); null skips it.",
        tasks=("binary",),
        low=0.0,
        low_open=True,
        high=1.0,
    )
    max_curve_points: int = _option(
        1000,
        "Curves are thinned to at most this many points (every one on the exact curve); the "
        "metrics always use the exact curve.",
        tasks=("binary", "multiclass", "regression"),
        low=0,
        high=MAX_CURVE_POINTS,
        zero_means="no curves",
    )
    confidence_level: float = _option(
        0.95,
        "The level of every interval.",
        tasks=("binary", "multiclass"),
        low=0.0,
        low_open=True,
        high=1.0,
        high_open=True,
    )
    n_params: int | None = _option(
        None,
        "Parameters of the regression model, for adjusted_r2, aic, bic and mallows_cp; null "
        "leaves them undefined.",
        tasks=("regression",),
        low=0,
        high=1_000_000_000,
    )
    calibration_bins: int = _option(
        10,
        "Equal-width bins of expected_calibration_error and of the binary calibration curve.",
        tasks=("binary", "multiclass"),
        low=1,
        high=10_000,
    )
    auc_interval: Literal["wald", "logit"] = _option(
        "logit",
        'The DeLong interval of the ROC AUC: "logit" (on the logit scale, inside (0, 1); it '
        "covers better than Wald at small samples and near 1, bench/RESULTS.md) or "
        '"wald" (as pROC, clipped to [0, 1]).',
        tasks=("binary", "multiclass"),
    )
    alpha: float = _option(
        0.05,
        "The significance level of the drift test and of the challenger comparison.",
        tasks=("binary",),
        low=0.0,
        low_open=True,
        high=1.0,
        high_open=True,
    )
    drift_min_samples: float = _option(
        20.0,
        "The fewest positives and negatives (each, in units of weight) the current data and a "
        'baseline payload need for a drift or comparison verdict; below it the status is "'
        'insufficient_data".',
        tasks=("binary",),
        low=2.0,
        high=1e12,
    )
    drift_tolerance: float = _option(
        0.01,
        "The AUC monitor's tolerance delta (absolute AUC): it alarms on evidence that the AUC "
        "fell more than delta below the baseline's; a smaller drop never counts as evidence, "
        "however large the window.",
        tasks=("binary",),
        low=0.0,
        high=0.5,
    )
    monitor_arl_windows: float = _option(
        8760.0,
        "The AUC monitor's promise: while the AUC stays within drift_tolerance of the "
        "baseline's, the expected number of windows before a false alarm is at least this "
        "(8760: a year of hourly windows); its alarm threshold.",
        tasks=("binary",),
        low=1.0,
        high=1e12,
    )
    bootstrap_replicates: int = _option(
        0,
        "Replicates of the stratified bootstrap intervals of average_precision, f1, "
        "ks_statistic, break_even_point, equal_error_rate and the operating points (1000 for "
        "a smooth 95% interval); 0 skips them: at small requests they cost several times the "
        "rest of the evaluation.",
        tasks=("binary",),
        low=0,
        high=100_000,
        zero_means="no bootstrap",
    )
    bootstrap_seed: int = _option(
        0,
        "The seed of the bootstrap: the same request gives the same intervals.",
        tasks=("binary",),
        low=0,
        high=2**63 - 1,
    )
    full_model_variance: float | None = _option(
        None,
        "The residual variance (sigma^2) of the full regression model, for mallows_cp; null "
        "leaves it undefined.",
        tasks=("regression",),
        low=0.0,
        low_open=True,
    )
    max_detections: int = _option(
        100,
        "The highest-scoring predictions kept per image, over all classes (COCO's maxDets).",
        tasks=("detection",),
        low=1,
        high=MAX_COUNT,
    )
    recall_at_precision: tuple[float, ...] = _option(
        (),
        "Operating points: for each precision target p, the highest recall of a threshold "
        "whose precision is >= p (recall_at_precision_{p}) and that threshold "
        "(recall_at_precision_{p}_threshold); multiclass and multilabel per class, and macro.",
        tasks=OPERATING_TASKS,
        low=0.0,
        low_open=True,
        high=1.0,
        noun="a precision target",
        max_items=MAX_TARGETS,
    )
    precision_at_recall: tuple[float, ...] = _option(
        (),
        "Operating points: for each recall target r, the highest precision of a threshold "
        "whose recall is >= r (precision_at_recall_{r}) and that threshold.",
        tasks=OPERATING_TASKS,
        low=0.0,
        low_open=True,
        high=1.0,
        noun="a recall target",
        max_items=MAX_TARGETS,
    )
    tpr_at_fpr: tuple[float, ...] = _option(
        (),
        "Operating points: for each false-positive-rate bound f, the highest true positive "
        "rate of a threshold whose FPR is <= f (tpr_at_fpr_{f}) and that threshold.",
        tasks=OPERATING_TASKS,
        low=0.0,
        high=1.0,
        noun="an FPR bound",
        max_items=MAX_TARGETS,
    )
    specificity_at_sensitivity: tuple[float, ...] = _option(
        (),
        "Operating points: for each sensitivity target s, the highest specificity of a "
        "threshold whose sensitivity (recall) is >= s (specificity_at_sensitivity_{s}) and "
        "that threshold.",
        tasks=OPERATING_TASKS,
        low=0.0,
        low_open=True,
        high=1.0,
        noun="a sensitivity target",
        max_items=MAX_TARGETS,
    )
    flagged_share: tuple[float, ...] = _option(
        (),
        "Alert budgets: for each share q of the rows (in sample weight), the lowest threshold "
        "that flags at most q of them (flagged_share_{q}_threshold), the share it flags and "
        "its precision and recall there.",
        tasks=OPERATING_TASKS,
        low=0.0,
        low_open=True,
        high=1.0,
        noun="a share",
        max_items=MAX_TARGETS,
    )
    quantiles: tuple[float, ...] = _option(
        (),
        "The quantile levels of the regression pinball loss (pinball_loss_{q}), each in (0, 1).",
        tasks=("regression",),
        low=0.0,
        low_open=True,
        high=1.0,
        high_open=True,
        noun="a quantile level",
        max_items=MAX_TARGETS,
    )
    segment_curve_points: int = _option(
        0,
        "With segments, each segment's curves are thinned to at most this many points (the "
        "overall result's: max_curve_points); 0 gives the segments' results no curves, which "
        "keeps the answer of many segments small.",
        tasks=("binary", "multiclass", "regression"),
        low=0,
        high=MAX_CURVE_POINTS,
        zero_means="no curves for the segments",
    )
    positive_label: str | None = _option(
        None,
        "The label of the positive class of task binary, as scikit-learn's pos_label: labels "
        "equal to it are positive, every other label negative, so labels may be names "
        '("yes"/"no") or two numbers other than 0/1 (1 and 2, -1 and 1). A number (or a '
        "string that reads as one) is compared with numeric labels as a number. At most two "
        "distinct labels, and with two one of them must be it; null: labels are 0 or 1. Hard "
        "predictions stay 0 or 1.",
        tasks=("binary",),
    )


def _bound(value: float) -> str:
    """A bound as messages show it: integers in full, floats short (1e4 as 10000, 1e12)."""
    if isinstance(value, int):
        return str(value)
    return f"{value:g}".replace("e+", "e")


@dataclass(frozen=True, slots=True)
class OptionSpec:
    """One option of ``evaluate``: its row of the options table.

    ``kind``: what one value is: ``"number"`` (a finite float; an int is taken), ``"integer"``
    (an int; a whole float is taken), ``"choice"`` (one of ``choices``) or ``"string"`` (a
    non-empty string of at most ``MAX_STRING_OPTION`` characters; a finite number is taken
    as its text, 2 and 2.0 both as "2"). ``repeated``: a
    list of at most ``max_items`` such values (a single number is a list of one), kept sorted
    without duplicates. ``nullable``: the default is None, and what the option tunes is
    skipped (or undefined) unless it is sent; for every option None means the default.
    ``low`` / ``high``: the bounds of each value, inclusive unless ``low_open`` /
    ``high_open``; ``zero_means``: what 0 means for a count that refuses 1. ``tasks``: the
    tasks that use the option; the others check it and ignore it, without a warning.
    """

    name: str
    kind: Kind
    default: Any
    doc: str
    tasks: tuple[str, ...]
    repeated: bool = False
    nullable: bool = False
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple[str, ...] = ()
    zero_means: str | None = None
    noun: str | None = None
    max_items: int | None = None

    @property
    def field(self) -> str:
        """The name errors give: ``options.<name>``."""
        return f"options.{self.name}"

    @property
    def type_text(self) -> str:
        """The type in words: "number", "list of integers", "integer or null", "string"."""
        one = {"number": "number", "integer": "integer", "choice": "string", "string": "string"}[
            self.kind
        ]
        text = f"list of {one}s" if self.repeated else one
        return f"{text} or null" if self.nullable else text

    @property
    def default_text(self) -> str:
        """The default as JSON."""
        default = list(self.default) if isinstance(self.default, tuple) else self.default
        return json.dumps(default)

    @property
    def range_text(self) -> str:
        """The allowed values: "(0, 1]", "> 0", "0 (no bootstrap) or [2, 100000]", ..."""
        if self.kind == "choice":
            text = ", ".join(f'"{choice}"' for choice in self.choices)
        elif self.kind == "string":
            text = f"a string of 1 to {MAX_STRING_OPTION} characters, or a number"
        elif self.zero_means is not None:
            text = f"0 ({self.zero_means}) or [2, {_bound(self.high or 0)}]"
        else:
            text = self._interval() or ("any finite number" if self.kind == "number" else "any")
        return f"each {text}; at most {self.max_items} values" if self.repeated else text

    def _interval(self) -> str:
        low, high = self.low, self.high
        if low is not None and high is not None:
            left = "(" if self.low_open else "["
            right = ")" if self.high_open else "]"
            return f"{left}{_bound(low)}, {_bound(high)}{right}"
        if low is not None:
            return f"{'>' if self.low_open else '>='} {_bound(low)}"
        if high is not None:
            return f"{'<' if self.high_open else '<='} {_bound(high)}"
        return ""

    def parse(self, value: Any) -> Any:
        """The option's value from what was sent, checked; raises ``InvalidInputError`` naming
        ``options.<name>``. None (JSON null) is the default."""
        if value is None:
            return self.default
        if not self.repeated:
            return self._one(value)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = [value]
        if not isinstance(value, (list, tuple)):
            raise InvalidInputError(
                self.field, f"expected a list of {self.kind}s, but got {value!r}"
            )
        if self.max_items is not None and len(value) > self.max_items:
            raise InvalidInputError(
                self.field, f"expected at most {self.max_items} values, but got {len(value)}"
            )
        return tuple(sorted({self._one(item) for item in value}))

    def _one(self, value: Any) -> Any:
        if self.kind == "choice":
            if not isinstance(value, str) or value not in self.choices:
                raise InvalidInputError(
                    self.field, f"expected one of {list(self.choices)}, but got {value!r}"
                )
            return value
        if self.kind == "integer":
            return self._integer(value)
        if self.kind == "string":
            return self._string(value)
        return self._number(value)

    def _string(self, value: Any) -> str:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            number = self._number(value)
            return str(int(number)) if number.is_integer() else repr(number)
        if not isinstance(value, str):
            raise InvalidInputError(self.field, f"expected a string or a number, but got {value!r}")
        if not value or len(value) > MAX_STRING_OPTION:
            raise InvalidInputError(
                self.field,
                f"expected a string of 1 to {MAX_STRING_OPTION} characters, but got "
                f"{len(value)} characters",
            )
        return value

    def _number(self, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InvalidInputError(self.field, f"expected a number, but got {value!r}")
        try:
            number = float(value)
        except OverflowError:  # an int beyond the largest float
            number = math.inf
        if not math.isfinite(number):
            raise InvalidInputError(self.field, f"expected a finite number, but got {value!r}")
        if not self._within(number):
            noun = self.noun or "a number"
            raise InvalidInputError(
                self.field, f"expected {noun} {self._phrase()}, but got {number}"
            )
        return number

    def _integer(self, value: Any) -> int:
        whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        if isinstance(value, bool) or not whole:
            raise InvalidInputError(self.field, f"expected an integer, but got {value!r}")
        number = int(value)
        if not self._within(number):
            noun = self.noun or "an integer"
            raise InvalidInputError(
                self.field, f"expected {noun} {self._phrase()}, but got {number}"
            )
        if self.zero_means is not None and 0 < number < 2:
            raise InvalidInputError(
                self.field, f"expected 0 ({self.zero_means}) or at least 2, but got {number}"
            )
        return number

    def _phrase(self) -> str:
        interval = self._interval()
        return f"in {interval}" if interval[0] in "([" else interval

    def _within(self, number: float) -> bool:
        low, high = self.low, self.high
        above = low is None or (number > low if self.low_open else number >= low)
        below = high is None or (number < high if self.high_open else number <= high)
        return above and below


def _shape(annotation: Any) -> tuple[Kind, bool, bool, tuple[str, ...]]:
    """(kind, repeated, nullable, choices) of a field's annotation."""
    nullable = False
    if get_origin(annotation) in (Union, types.UnionType):
        inner = [arg for arg in get_args(annotation) if arg is not type(None)]
        nullable, annotation = True, inner[0]
        assert len(inner) == 1, annotation
    repeated = get_origin(annotation) is tuple
    if repeated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) is Literal:
        return "choice", repeated, nullable, get_args(annotation)
    kinds: dict[Any, Kind] = {float: "number", int: "integer", str: "string"}
    if annotation not in kinds:
        raise TypeError(f"an option cannot have type {annotation!r}")
    return kinds[annotation], repeated, nullable, ()


def _table() -> Mapping[str, OptionSpec]:
    hints = get_type_hints(Options)
    specs: dict[str, OptionSpec] = {}
    for declared_field in fields(Options):
        declared: _Declared = declared_field.metadata["option"]
        kind, repeated, nullable, choices = _shape(hints[declared_field.name])
        specs[declared_field.name] = OptionSpec(
            name=declared_field.name,
            kind=kind,
            default=declared_field.default,
            doc=declared.doc,
            tasks=declared.tasks,
            repeated=repeated,
            nullable=nullable,
            low=declared.low,
            high=declared.high,
            low_open=declared.low_open,
            high_open=declared.high_open,
            choices=choices,
            zero_means=declared.zero_means,
            noun=declared.noun,
            max_items=declared.max_items if repeated else None,
        )
    return types.MappingProxyType(specs)


OPTIONS: Mapping[str, OptionSpec] = _table()
"""Every option of ``evaluate``, by name, in declaration order."""


def parse_options(options: Mapping[str, Any] | Options | None) -> Options:
    """Check every option once; unknown names and out-of-range values raise InvalidInputError."""
    if options is None:
        return Options()
    if isinstance(options, Options):
        return options
    if not isinstance(options, Mapping):
        raise InvalidInputError("options", f"expected an object, but got {type(options).__name__}")
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise InvalidInputError(
            f"options.{unknown[0]}", f"unknown option; expected one of {sorted(OPTIONS)}"
        )
    parsed = {name: OPTIONS[name].parse(value) for name, value in options.items()}
    return Options(**parsed)
