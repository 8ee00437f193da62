"""Segments: one evaluation of every slice of the rows (a country, a channel, a customer tier).

A request may name a segment per row (per image for detection). The result then holds, beside
the overall result of every row (computed as without segments), one full result per segment:
the same task, options, baseline and challenger applied to that segment's rows alone, so a
segment's result equals a separate request of its rows (whose ``max_curve_points`` is the
request's ``segment_curve_points``: by default a segment's result has no curves, so that an
answer of many segments stays small). A segment that cannot be evaluated at
all (every row of it weighs nothing) is there too, with no metrics and the reason; one with
few rows gives what few rows give (undefined metrics with their reasons, drift tests with
``insufficient_data``), never an error of the request.

Caps: at most ``max_segments`` distinct segments (refused past it, naming ``segments``), or,
when the caller asks (``fold_segments``), the largest ``max_segments - 1`` kept and the rest
folded into one segment named ``__other__`` (a warning says how many and which).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalserve.core._errors import InvalidInputError
from evalserve.core._grouping import grouped
from evalserve.core._options import Options
from evalserve.core._result import EvaluationResult

__all__ = [
    "DEFAULT_MAX_SEGMENTS",
    "MAX_SEGMENT_CHARS",
    "OTHER",
    "Segmentation",
    "folded_warning",
    "insufficient_result",
    "segment_options",
    "segment_rows",
    "take_rows",
]

Indices = NDArray[np.intp]

DEFAULT_MAX_SEGMENTS = 100
MAX_SEGMENT_CHARS = 128  # as a model's segment label
OTHER = "__other__"
_NAMED_IN_WARNING = 10
FIELD = "segments"


@dataclass(frozen=True, slots=True)
class Segmentation:
    """The segments of a request: their names (sorted; each holds a row), each row's segment
    (``codes``: its position in ``names``) and the names folded into ``OTHER``."""

    names: tuple[str, ...]
    codes: NDArray[np.integer[Any]]
    folded: tuple[str, ...] = ()

    def rows(self) -> tuple[Indices, ...]:
        """Each segment's rows (ascending positions)."""
        order, bounds = grouped(self.codes, len(self.names))
        return tuple(order[bounds[i] : bounds[i + 1]] for i in range(len(self.names)))

    def warning(self) -> str | None:
        return folded_warning(self.folded)


def folded_warning(folded: Sequence[str]) -> str | None:
    """The warning of a request whose smallest segments ``folded`` went into ``OTHER``."""
    if not folded:
        return None
    shown = ", ".join(repr(name) for name in folded[:_NAMED_IN_WARNING])
    more = len(folded) - _NAMED_IN_WARNING
    tail = f" and {more} more" if more > 0 else ""
    return (
        f"{len(folded)} smallest segments folded into {OTHER!r} (over max_segments): {shown}{tail}"
    )


def segment_rows(
    segments: Any,
    n: int,
    *,
    unit: str,
    max_segments: int | None,
    fold: bool,
    names: Sequence[str] | None = None,
) -> Segmentation:
    """Check ``segments`` (one non-empty string of at most ``MAX_SEGMENT_CHARS`` characters per
    row or image; with ``names``, one integer code per row naming ``names[code]``, as a
    dictionary-encoded column holds them) and group the rows; raises ``InvalidInputError``
    naming ``segments`` (or ``segment_names``)."""
    if names is not None:
        return _cap(*_coded(segments, n, unit, names), max_segments, fold)
    if isinstance(segments, (str, bytes)) or not isinstance(segments, (Sequence, np.ndarray)):
        raise InvalidInputError(
            FIELD, f"expected a list of strings, one per {unit[:-1]}, but got "
            f"{type(segments).__name__}",
        )  # fmt: skip
    if len(segments) != n:
        raise InvalidInputError(
            FIELD, f"expected one segment per {unit[:-1]} ({n}), but got {len(segments)}"
        )
    values = segments.tolist() if isinstance(segments, np.ndarray) else segments
    try:
        distinct = set(values)  # in C, each name hashed once (a str keeps its hash)
    except TypeError:  # an unhashable value (a list) among the names
        distinct = set()
    if not distinct or any(not isinstance(name, str) for name in distinct):
        _first_bad(values, unit)
    names = sorted(distinct)  # the codes in the names' order: no remapping
    bad = [name for name in names if _problem(name) is not None]
    if bad:  # the earliest row of a bad name, for the message: a scan of the rows
        row = min(_first_row(values, name) for name in bad)
        _check_name(values[row], row, unit)
    index = {name: code for code, name in enumerate(names)}
    codes = np.fromiter(map(index.__getitem__, values), dtype=_code_type(len(names)), count=n)
    # numpy's strings (a list made from an array) name the segments as plain strings.
    return _cap([str(name) for name in names], codes, max_segments, fold)


def _code_type(count: int) -> type[np.integer[Any]]:
    """Few segments: 16-bit codes (a quarter of numpy's index type per row)."""
    return np.uint16 if count < 2**16 else np.intp


def _coded(
    segments: Any, n: int, unit: str, names: Sequence[str]
) -> tuple[list[str], NDArray[np.integer[Any]]]:
    """The names and codes of a dictionary-encoded segments column."""
    if isinstance(names, (str, bytes)) or not isinstance(names, (Sequence, np.ndarray)):
        raise InvalidInputError("segment_names", "expected a list of strings")
    listed = [str(name) if isinstance(name, np.str_) else name for name in names]
    for position, name in enumerate(listed):
        if (problem := _problem(name)) is not None:
            raise InvalidInputError("segment_names", f"name {position} {problem}")
    if len(set(listed)) != len(listed):
        raise InvalidInputError("segment_names", "expected distinct names")
    try:
        raw = np.asarray(segments)
    except (TypeError, ValueError):
        raw = np.asarray([], dtype=np.float64)
    if raw.ndim != 1 or raw.dtype.kind not in "iu" or raw.size != n:
        raise InvalidInputError(
            FIELD,
            f"expected one integer code per {unit[:-1]} ({n}) into segment_names, but got "
            f"{raw.size} values of type {raw.dtype}",
        )
    if raw.size and (int(raw.min()) < 0 or int(raw.max()) >= len(listed)):
        bad = int(np.argmax((raw < 0) | (raw >= len(listed))))
        raise InvalidInputError(
            FIELD,
            f"the code at {unit[:-1]} {bad} is {int(raw[bad])}, not one of the "
            f"{len(listed)} segment_names",
        )
    return listed, raw.astype(_code_type(len(listed)), copy=False)


def _cap(
    names: list[str], codes: NDArray[np.integer[Any]], max_segments: int | None, fold: bool
) -> Segmentation:
    """The segments of ``codes`` into ``names`` (a name no row holds is no segment), capped."""
    counts = np.bincount(codes, minlength=len(names))
    present = np.flatnonzero(counts).tolist()
    if max_segments is not None and len(present) > max_segments:
        if not fold:
            raise InvalidInputError(
                FIELD,
                f"expected at most {max_segments} distinct segments, but got {len(present)}: "
                f"send fewer, or fold the smallest into {OTHER!r} (fold_segments)",
            )
        ranked = sorted(present, key=lambda code: (-int(counts[code]), names[code]))
        folded = tuple(sorted(names[code] for code in ranked[max_segments - 1 :]))
        kept = [*ranked[: max_segments - 1], len(names)]
        return _sorted([*names, OTHER], codes, kept, folded)
    return _sorted(names, codes, present, ())


def _sorted(
    names: list[str],
    codes: NDArray[np.integer[Any]],
    kept: list[int],
    folded: tuple[str, ...],
) -> Segmentation:
    """The segments ``kept`` (codes into ``names``), named in sorted order; a row of any other
    code goes to the last kept (``OTHER`` when folding)."""
    ordered = sorted(kept, key=names.__getitem__)
    if not kept or ordered == list(range(len(names))):  # already canonical: the codes stand
        return Segmentation(tuple(names), codes, folded)
    remap = np.full(len(names), ordered.index(kept[-1]), dtype=codes.dtype)
    remap[ordered] = np.arange(len(ordered))
    return Segmentation(tuple(names[i] for i in ordered), remap[codes], folded)


def _first_row(values: Sequence[Any], name: str) -> int:
    return next(row for row, value in enumerate(values) if value == name)


def _first_bad(values: Sequence[Any], unit: str) -> None:
    """Raise for the first value that is not a string (there is one)."""
    for row, value in enumerate(values):
        _check_name(value, row, unit)


def _problem(name: Any) -> str | None:
    """What is wrong with a segment name (None: nothing), without saying where."""
    if not isinstance(name, str):
        return f"expected a string, but got {type(name).__name__}"
    if not name:
        return "is empty"
    if len(name) > MAX_SEGMENT_CHARS:
        return f"has {len(name)} characters, over {MAX_SEGMENT_CHARS}"
    if name == OTHER:
        return f"is {OTHER!r}, which is reserved"
    return None


def _check_name(name: Any, row: int, unit: str) -> None:
    problem = _problem(name)
    if problem is None:
        return
    where = f"{unit[:-1]} {row}"
    if not isinstance(name, str):
        raise InvalidInputError(
            FIELD, f"expected a string at {where}, but got {type(name).__name__}"
        )
    raise InvalidInputError(FIELD, f"the segment name at {where} {problem}")


def segment_options(options: Options) -> Options:
    """The options of each segment's result: ``segment_curve_points`` for its curves."""
    if options.max_curve_points == options.segment_curve_points:
        return options
    return dataclasses.replace(options, max_curve_points=options.segment_curve_points)


def take_rows(value: Any, rows: Indices) -> Any:
    """The rows ``rows`` of a column as it was given (array, list of values or of per-row
    lists, mapping of columns as a challenger), None as None."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        return {key: take_rows(column, rows) for key, column in value.items()}
    if isinstance(value, np.ndarray) or hasattr(value, "__array__"):
        return np.asarray(value)[rows]
    return [value[int(i)] for i in rows]


def insufficient_result(task: str, n_samples: int, error: InvalidInputError) -> EvaluationResult:
    """The result of a segment whose rows cannot be evaluated (they all weigh nothing): no
    metrics, and a warning that says why, instead of an error of the whole request."""
    return EvaluationResult(
        task=task,
        n_samples=n_samples,
        metrics={},
        undefined={},
        warnings=[f"insufficient_data: {error.message}"],
    )


def segment_result(
    task: str, name: str, n_samples: int, compute: Callable[[], EvaluationResult]
) -> EvaluationResult:
    """A segment's result, from ``evaluate``'s rows or an accumulator's state: rows that weigh
    nothing give ``insufficient_result``; a monitor state its monitor refuses is named as that
    segment's (``segment_monitor_states.<name>``)."""
    try:
        return compute()
    except InvalidInputError as error:
        if "nothing to evaluate" in error.message:
            return insufficient_result(task, n_samples, error)
        if error.field == "monitor_state":
            raise InvalidInputError(f"segment_monitor_states.{name}", error.message) from None
        raise
