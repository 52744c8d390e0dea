"""Reading a SOP-Bench ``test_set_with_outputs.csv``: structure first, then values.

The structure (header, one record per row, field counts) is read with the ``csv`` module so
that a malformed row is reported by number instead of shifting every later value. Values are
then typed exactly as pandas types them, because the benchmark's own ``tools.py`` reads the
same file with pandas and compares what agents send against those types. Cells holding Python
literals (``['a', 'b']``, ``{'k': 1}``) become lists and dicts.
"""

from __future__ import annotations

import ast
import csv
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from sopgym.core.exceptions import DataError


class CsvError(DataError, ValueError):
    """The file cannot be read as CSV at all (encoding, quoting, no header)."""


@dataclass
class CsvTable:
    columns: list[str]
    rows: dict[int, dict[str, Any]]  # data row index (0-based, blank lines skipped) -> values
    malformed: dict[int, str] = field(default_factory=dict)  # row index -> what is wrong
    lines: dict[int, int] = field(default_factory=dict)  # row index -> first line in the file

    @property
    def row_count(self) -> int:
        return len(self.rows) + len(self.malformed)


def read_csv(path: Path) -> CsvTable:
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise CsvError(f"not UTF-8 text ({error.reason} at byte {error.start})") from None
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    header: list[str] | None = None
    records: dict[int, list[str]] = {}
    table = CsvTable(columns=[], rows={})
    line = 1
    try:
        for record in reader:
            start, line = line, reader.line_num + 1
            if not record or (len(record) == 1 and not record[0].strip()):
                continue  # blank line, as pandas skips them
            if header is None:
                header = [name.strip() for name in record]
                continue
            index = len(records) + len(table.malformed)
            table.lines[index] = start
            if len(record) != len(header):
                table.malformed[index] = f"{len(record)} fields, header has {len(header)}"
            else:
                records[index] = record
    except csv.Error as error:  # e.g. a quote never closed: name where the record began
        raise CsvError(f"record starting at line {line}: {error}") from None
    if header is None:
        raise CsvError("no header row")
    table.columns = header
    table.rows = _typed(header, records)
    return table


def _typed(header: list[str], records: dict[int, list[str]]) -> dict[int, dict[str, Any]]:
    """Type the well-formed records column by column, as ``pandas.read_csv`` would."""
    if not records:
        return {}
    buffer = io.StringIO()
    csv.writer(buffer).writerows(records.values())
    buffer.seek(0)
    frame = pd.read_csv(buffer, header=None, names=list(range(len(header))))
    typed: dict[int, dict[str, Any]] = {}
    for index, values in zip(records, frame.itertuples(index=False, name=None), strict=True):
        typed[index] = {name: cell_value(value) for name, value in zip(header, values, strict=True)}
    return typed


def cell_value(value: Any) -> Any:
    """A pandas cell as a plain JSON value: NaN is None, literals become lists and dicts."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()  # numpy scalar
    if isinstance(value, str) and value and value[0] in "[{(" and value[-1] in "]})":
        try:
            parsed = ast.literal_eval(value)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return value
        return _plain(parsed)
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, (list, tuple, set)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value
