"""Input files: paths, directories and globs to a list of CSV and Parquet files, each read in
record batches with pyarrow, so that memory follows the batch and not the file.

A batch is a ``Batch``: its file, its first row's number in the file and a column getter that
the column plan reads from. Parquet is read one row group at a time (``iter_batches``), CSV
with pyarrow's streaming reader (blocks of a few MiB, types inferred from the first block unless
the plan fixes them); ``-`` is CSV on stdin. Compressed CSV (``.csv.gz``, ``.csv.bz2``,
``.csv.zst``) is decompressed on the fly.
"""

from __future__ import annotations

import csv
import glob
import io
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
from numpy.typing import NDArray

from evalserve.offline._segments import DICTIONARY, segment_codes

__all__ = [
    "DELIMITER_HINTS",
    "Batch",
    "FileError",
    "NullValueError",
    "Source",
    "TextValueError",
    "batches",
    "column_names",
    "csv_header",
    "delimiter_hint",
    "display_name",
    "release_read_memory",
    "sources",
]

PARQUET_SUFFIXES = (".parquet", ".pq", ".parq")
CSV_SUFFIXES = (".csv", ".csv.gz", ".csv.bz2", ".csv.zst", ".tsv")
STDIN = "-"
BATCH_ROWS = 1 << 20  # rows per Parquet batch: ~8 MiB per float column
CSV_BLOCK_BYTES = 16 << 20


class FileError(ValueError):
    """A file that cannot be found or read; the message names it."""


def display_name(path: str) -> str:
    """How messages name a path: ``<stdin>`` for ``-``."""
    return "<stdin>" if path == STDIN else path


@dataclass(frozen=True)
class Source:
    path: str  # "-" for stdin
    kind: str  # "csv" or "parquet"
    delimiter: str = ","  # CSV: the field delimiter

    @property
    def name(self) -> str:
        return display_name(self.path)

    @property
    def rows_are_lines(self) -> bool:
        return self.kind == "csv"


@dataclass(frozen=True)
class Batch:
    source: Source
    first_row: int  # the row number (0-based, header not counted) of the batch's first row
    table: pa.RecordBatch

    @property
    def n_rows(self) -> int:
        return int(self.table.num_rows)

    def check_numbers(self, name: str) -> None:
        """Raise ``TextValueError`` at the first cell of a text column that is not a number."""
        array = self.table.column(name)
        if not (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)):
            return
        for row, value in enumerate(array.to_pylist()):
            if value is None:
                raise NullValueError(name, row)
            try:
                float(value)
            except ValueError:
                raise TextValueError(name, row, value) from None

    def segments(
        self, name: str, rename: Callable[[str], str] | None = None
    ) -> tuple[NDArray[np.intp], list[str]]:
        """The segment column ``name`` as codes into its distinct names (renamed by
        ``rename``); nulls raise ``NullValueError``."""
        array = self.table.column(name)
        if array.null_count:
            first = int(np.flatnonzero(np.asarray(array.is_null()))[0])
            raise NullValueError(name, first)
        return segment_codes(array, rename)

    def column(self, name: str) -> Any:
        """A column as numpy (numbers, strings) or, for list columns, a list of rows; nulls
        raise ``NullValueError`` naming the first one."""
        array = self.table.column(name)
        if array.null_count:
            first = int(np.flatnonzero(np.asarray(array.is_null()))[0])
            raise NullValueError(name, first)
        if pa.types.is_string(array.type) or pa.types.is_large_string(array.type):
            return _strings(name, array)
        if pa.types.is_list(array.type) or pa.types.is_large_list(array.type):
            return _list_column(array)
        if pa.types.is_fixed_size_list(array.type):
            width = array.type.list_size
            return array.flatten().to_numpy(zero_copy_only=False).reshape(-1, width)
        if pa.types.is_dictionary(array.type):
            array = array.dictionary_decode()
        return array.to_numpy(zero_copy_only=False)


class NullValueError(ValueError):
    """A missing value (an empty cell, NaN or null in CSV, a null in Parquet)."""

    def __init__(self, column: str, row: int) -> None:
        super().__init__("is missing (an empty cell, NaN or null)")
        self.column = column
        self.row = row


class TextValueError(ValueError):
    """Text in a column where the task expects numbers."""

    def __init__(self, column: str, row: int, value: str) -> None:
        super().__init__(f"expected a number, got {value[:40]!r}")
        self.column = column
        self.row = row


def _strings(name: str, array: Any) -> Any:
    """A text column: numbers written as text become numbers (mixed files: pyarrow typed the
    column from its first block); otherwise the strings, for class names."""
    values = array.to_numpy(zero_copy_only=False)
    try:
        return values.astype(np.float64)
    except ValueError:
        pass
    return values


def _list_column(array: Any) -> Any:
    """Rows of a list column: an n x k array when every row has k numbers, else a list."""
    offsets = np.asarray(array.offsets)
    lengths = np.diff(offsets)
    values = array.flatten()
    if lengths.size and (lengths == lengths[0]).all() and not pa.types.is_nested(values.type):
        flat = values.to_numpy(zero_copy_only=False)
        return flat.reshape(lengths.size, int(lengths[0]))
    return array.to_pylist()


def sources(paths: Sequence[str], delimiter: str | None = None) -> list[Source]:
    """Files named by ``paths``: files, directories (their CSV and Parquet files, recursively,
    in name order) and globs; raises ``FileError`` for a path that names nothing. CSV fields
    are split at ``delimiter`` (default: a tab in ``.tsv`` files, else a comma)."""
    found: list[Source] = []

    def source(path: str, kind: str | None) -> Source:
        kind = kind or "csv"
        if kind != "csv":
            return Source(path, kind)
        default = "\t" if path.lower().endswith(".tsv") else ","
        return Source(path, kind, delimiter or default)

    for path in paths:
        if path == STDIN:
            found.append(source(STDIN, "csv"))
            continue
        if os.path.isdir(path):
            inside = sorted(str(p) for p in Path(path).rglob("*") if p.is_file() and _kind(str(p)))
            if not inside:
                raise FileError(f"{path}: no CSV or Parquet files in this directory")
            found.extend(source(p, _kind(p)) for p in inside)
            continue
        if os.path.exists(path):
            found.append(source(path, _kind(path)))
            continue
        if glob.has_magic(path):
            matched = sorted(p for p in glob.glob(path, recursive=True) if os.path.isfile(p))
            if not matched:
                raise FileError(f"{path}: no file matches this pattern")
            found.extend(source(p, _kind(p)) for p in matched)
            continue
        raise FileError(f"{path}: No such file or directory")
    return found


# Delimiters a one-column CSV header likely holds when the file was split at the wrong one.
DELIMITER_HINTS = (";", "\t", "|", ",")


def delimiter_hint(source: Source, names: Sequence[str]) -> str:
    """For a CSV file read as one column whose name holds another delimiter: the flag that
    reads it right (`` (... give --delimiter ';')``); else ""."""
    if source.kind != "csv" or len(names) != 1:
        return ""
    for candidate in DELIMITER_HINTS:
        if candidate != source.delimiter and candidate in names[0]:
            shown = "'\\t'" if candidate == "\t" else repr(candidate)
            return (
                f" (the header read as one column: are the fields separated by {shown}? "
                f"give --delimiter {shown})"
            )
    return ""


def _kind(path: str) -> str | None:
    lowered = path.lower()
    if lowered.endswith(PARQUET_SUFFIXES):
        return "parquet"
    if lowered.endswith(CSV_SUFFIXES):
        return "csv"
    return None


def column_names(source: Source) -> list[str] | None:
    """The columns of a Parquet file (from its footer); None for CSV (known at the first
    batch)."""
    if source.kind != "parquet":
        return None
    try:
        return list(pq.read_schema(source.path).names)
    except (OSError, pa.ArrowException) as error:
        raise FileError(f"{source.name}: not a readable Parquet file ({error})") from None


def batches(
    source: Source,
    columns: Sequence[str] | None,
    *,
    batch_rows: int = BATCH_ROWS,
    dictionary: Sequence[str] = (),
) -> Iterator[Batch]:
    """The file's rows in batches, reading only ``columns`` (all when None), the columns
    ``dictionary`` dictionary-encoded (CSV: as text)."""
    try:
        if source.kind == "parquet":
            yield from _parquet(source, columns, batch_rows, dictionary)
        else:
            yield from _csv(source, columns, dictionary)
    except (OSError, pa.ArrowException) as error:
        message = _arrow_message(source, error)
        joint = ", " if message.startswith("line ") else ": "
        raise FileError(f"{source.name}{joint}{message}") from None
    finally:
        release_read_memory()


def release_read_memory() -> None:
    """Give back to the system what pyarrow's allocator (mimalloc or jemalloc) keeps of a
    file's freed buffers for reads to come: once a file is read, before the evaluation's
    arrays are built (20M rows of Parquet: the result's peak 1,175 -> 1,008 MiB)."""
    pa.default_memory_pool().release_unused()


def _parquet(
    source: Source, columns: Sequence[str] | None, batch_rows: int, dictionary: Sequence[str]
) -> Iterator[Batch]:
    first = 0
    # read_dictionary: text columns as Parquet stores them (codes into a dictionary).
    with pq.ParquetFile(source.path, read_dictionary=list(dictionary) or None) as file:
        for table in file.iter_batches(batch_size=batch_rows, columns=columns):
            yield Batch(source, first, table)
            first += table.num_rows


def _csv(
    source: Source, columns: Sequence[str] | None, dictionary: Sequence[str]
) -> Iterator[Batch]:
    if source.path == STDIN:
        yield from _stdin_csv(source, columns, dictionary)
        return
    with (
        pa.input_stream(source.path, compression="detect") as stream,
        pa_csv.open_csv(
            stream,
            read_options=pa_csv.ReadOptions(block_size=CSV_BLOCK_BYTES),
            parse_options=pa_csv.ParseOptions(delimiter=source.delimiter),
            convert_options=_convert_options(columns, None, dictionary),
        ) as reader,
    ):
        first = 0
        for table in reader:
            yield Batch(source, first, table)
            first += table.num_rows


def _convert_options(
    columns: Sequence[str] | None, types: pa.Schema | None = None, dictionary: Sequence[str] = ()
) -> pa_csv.ConvertOptions:
    given: pa.Schema | dict[str, pa.DataType] | None = types
    if types is None and dictionary:
        given = dict.fromkeys(dictionary, DICTIONARY)
    return pa_csv.ConvertOptions(
        include_columns=list(columns) if columns is not None else None,
        column_types=given,
        strings_can_be_null=False,
    )


def _stdin_csv(
    source: Source, columns: Sequence[str] | None, dictionary: Sequence[str]
) -> Iterator[Batch]:
    """CSV on stdin, read here in blocks cut at line ends and parsed by Arrow from memory.

    Arrow's streaming reader would read a Python file object on Arrow's own I/O threads; a read
    still pending when the interpreter shuts down (after an error in the first rows, say) then
    takes the GIL during finalization, and the process aborts ("terminate called without an
    active exception"). Here Arrow only ever sees native buffers. As with the streaming reader,
    the first block's header and inferred types hold for the blocks after it, and a line end is
    a record's end (values hold no line breaks).
    """
    names: list[str] | None = None
    types: pa.Schema | None = None
    first = 0
    lines = 0  # the lines of stdin before this block
    parse = pa_csv.ParseOptions(delimiter=source.delimiter)
    for block in _line_blocks(sys.stdin.buffer, CSV_BLOCK_BYTES):
        try:
            table = pa_csv.read_csv(
                pa.py_buffer(block),
                read_options=pa_csv.ReadOptions(
                    column_names=names, block_size=max(len(block), 1 << 16), use_threads=False
                ),
                parse_options=parse,
                convert_options=_convert_options(columns, types, dictionary),
            )
        except pa.ArrowInvalid as error:
            # Arrow numbers the block's lines; number stdin's.
            raise pa.ArrowInvalid(_shift_rows(str(error), lines)) from None
        if names is None:
            header = block[: block.find(b"\n") + 1] if b"\n" in block else block + b"\n"
            no_threads = pa_csv.ReadOptions(use_threads=False)
            names = list(
                pa_csv.read_csv(
                    pa.py_buffer(header), read_options=no_threads, parse_options=parse
                ).schema.names
            )
        if types is None and table.num_rows:
            types = table.schema  # inferred from the first rows
        lines += block.count(b"\n")
        for piece in table.to_batches():
            yield Batch(source, first, piece)
            first += piece.num_rows
    if names is None:
        raise pa.ArrowInvalid("Empty CSV file")


def _shift_rows(text: str, lines: int) -> str:
    return _ROW.sub(lambda row: f"Row #{lines + int(row.group(1))}", text)


def _line_blocks(stream: Any, size: int) -> Iterator[bytes]:
    """``stream``'s bytes in blocks of about ``size`` bytes that end at a line end (the last
    block: at the end of the stream, given one)."""
    carry = b""
    while chunk := stream.read(size):
        data = carry + chunk
        end = data.rfind(b"\n") + 1
        carry = data[end:]
        if end:
            yield data[:end]
    if carry:
        yield carry + b"\n"


def csv_header(source: Source) -> list[str]:
    """A CSV file's column names (its first line), read without its rows."""
    try:
        if source.path == STDIN:
            raise FileError("internal: stdin's header is read with its first batch")
        with pa.input_stream(source.path, compression="detect") as stream:
            reader = pa_csv.open_csv(
                stream,
                read_options=pa_csv.ReadOptions(block_size=1 << 16),
                parse_options=pa_csv.ParseOptions(delimiter=source.delimiter),
            )
            return list(reader.schema.names)
    except (OSError, pa.ArrowException) as error:
        message = _arrow_message(source, error)
        joint = ", " if message.startswith("line ") else ": "  # as batches() says it
        raise FileError(f"{source.name}{joint}{message}") from None


_ROW = re.compile(r"Row #(\d+)")
_FIELDS = re.compile(r"Expected (\d+) columns, got (\d+): (.*)", re.DOTALL)


def _arrow_message(source: Source, error: BaseException) -> str:
    """pyarrow's message, with the CSV line it is about."""
    text = str(error).strip()
    if isinstance(error, pa.ArrowInvalid) and "Empty CSV file" in text:
        return "the file is empty; expected a header line with the column names"
    fields = _FIELDS.search(text)
    if fields and source.kind == "csv":
        expected, got = int(fields.group(1)), int(fields.group(2))
        row = _ROW.search(text)
        line = int(row.group(1)) if row else _line_with_fields(source, expected)
        where = f"line {line}" if line else f"the row {fields.group(3)[:60]!r}"
        return f"{where}: expected {expected} fields, got {got}"
    match = _ROW.search(text)
    if match and source.kind == "csv":
        text = f"line {int(match.group(1))}: " + _ROW.sub("", text).replace("  ", " ")
    return text


def _line_with_fields(source: Source, expected: int) -> int | None:
    """The first line of a CSV file whose field count is not ``expected`` (stdin: None, it
    was read)."""
    if source.path == STDIN:
        return None
    with pa.input_stream(source.path, compression="detect") as stream:
        text = io.TextIOWrapper(stream, encoding="utf-8", errors="replace", newline="")
        for number, row in enumerate(csv.reader(text, delimiter=source.delimiter), start=1):
            if row and len(row) != expected:
                return number
    return None
