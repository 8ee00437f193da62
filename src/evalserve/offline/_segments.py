"""``--segment-column``: each row's segment, read as integer codes into the batch's distinct
names (a dictionary-encoded column), never as one Python string per row.

Parquet's segment column is read dictionary-encoded (``read_dictionary``: Parquet stores text
that way), CSV's as a dictionary column too; any other column is dictionary-encoded by Arrow in
C. A batch's codes and names go to ``Accumulator.update(segments=codes, segment_names=names)``.
Numbers in a segment column are named by their text (``7`` is segment ``"7"``).

``--fold-segments`` needs every row's segment before the first batch is evaluated (the largest
``max_segments - 1`` segments are kept, the rest become ``__other__``, as ``evaluate`` folds
them): a first pass reads the segment column alone and counts each segment's rows, then
``Folding`` renames each batch's folded names. The accumulator refuses ``__other__`` as a
name a row gives, so the folded rows travel under a name no row can give (it starts with a
NUL) and the result names them ``__other__``. Standard input cannot be read twice: folding is
refused there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from evalserve.core import EvaluationResult
from evalserve.core._segments import OTHER, folded_warning

__all__ = ["DICTIONARY", "Folding", "add_counts", "segment_codes"]

DICTIONARY = pa.dictionary(pa.int32(), pa.string())
_FOLDED = "\x00" + OTHER  # no row's name: a NUL starts it


def segment_codes(
    array: Any, rename: Callable[[str], str] | None = None
) -> tuple[NDArray[np.intp], list[str]]:
    """The codes (one per row) and the distinct names of a segment column without nulls (a
    pyarrow array); names no row uses are left out, and names that ``rename`` makes equal
    share one code."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    encoded = array if pa.types.is_dictionary(array.type) else pc.dictionary_encode(array)
    codes = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.intp)
    values = encoded.dictionary.to_pylist()
    used = np.flatnonzero(np.bincount(codes, minlength=len(values)))
    index: dict[str, int] = {}
    remap = np.full(len(values), -1, dtype=np.intp)
    for code in used:
        value = values[int(code)]
        name = value if isinstance(value, str) else str(value)
        if rename is not None:
            name = rename(name)
        remap[int(code)] = index.setdefault(name, len(index))
    return remap[codes], list(index)


@dataclass(frozen=True)
class Folding:
    """Which segments a folded run keeps; the rest are named ``__other__``."""

    kept: frozenset[str]
    folded: tuple[str, ...]

    @classmethod
    def of_counts(cls, counts: Mapping[str, int], max_segments: int) -> Folding | None:
        """The folding of segments with these row counts, as ``evaluate`` folds them (the
        ``max_segments - 1`` largest, ties by name); None when they fit."""
        if len(counts) <= max_segments:
            return None
        ranked = sorted(counts, key=lambda name: (-counts[name], name))
        kept = frozenset(ranked[: max_segments - 1])
        return cls(kept, tuple(sorted(ranked[max_segments - 1 :])))

    def name(self, name: str) -> str:
        return name if name in self.kept else _FOLDED

    def states(self, states: Mapping[str, bytes] | None) -> Mapping[str, bytes] | None:
        """Segments' monitor states as the accumulator knows them (``__other__``'s under the
        name the folded rows travel by)."""
        if states is None:
            return None
        return {_FOLDED if name == OTHER else name: state for name, state in states.items()}

    def named(self, result: EvaluationResult) -> EvaluationResult:
        """``result`` with the folded rows' segment named ``__other__`` (names sorted, as
        ``evaluate`` sorts them) and the warning ``evaluate`` gives for the same folding."""
        renamed = {
            OTHER if name == _FOLDED else name: each for name, each in result.segments.items()
        }
        result.segments = {name: renamed[name] for name in sorted(renamed)}
        result.warnings.append(folded_warning(self.folded) or "")
        return result


def add_counts(counts: dict[str, int], segments: tuple[NDArray[np.intp], list[str]]) -> None:
    """Add a batch's rows per segment (its codes and names) to ``counts``."""
    codes, names = segments
    for name, count in zip(names, np.bincount(codes, minlength=len(names)), strict=True):
        counts[name] = counts.get(name, 0) + int(count)
