"""Tasks and expected outputs of an imported benchmark, from ``test_set_with_outputs.csv``.

A task's inputs are exactly the input columns: passing the whole row would hand the agent the
expected outputs and every intermediate column. Expected outputs are the output columns; there
is no reference policy, so there are no gold calls.
"""

from __future__ import annotations

from typing import Any

from sopgym.core.exceptions import DataError
from sopgym.core.tasks import Task
from sopgym.importers.layout import METADATA, WITHOUT_OUTPUTS, Benchmark
from sopgym.types import JSON


class InputColumnsError(DataError, ValueError):
    """The task inputs cannot be determined safely."""


def input_columns_for(bench: Benchmark, given: list[str] | None = None) -> list[str]:
    """``metadata.json``'s input_columns, else the ones the user named, else those inferred
    from ``test_set_without_outputs.csv`` or the tool specs' arguments
    (:attr:`Benchmark.inferred_input_columns`); never the whole row."""
    columns = bench.input_columns or given or bench.inferred_input_columns
    if not columns:
        raise InputColumnsError(
            f"{bench.name}: {METADATA} names no input_columns, there is no "
            f"{WITHOUT_OUTPUTS} to read them from and no tool takes a column as an argument; "
            "name them with --input-columns a,b,c (the whole row would hand the answer to "
            "the agent)"
        )
    known = bench.table.columns if bench.table else []
    absent = [c for c in columns if c not in known]
    if absent:
        raise InputColumnsError(
            f"{bench.name}: input column(s) not in the CSV: {', '.join(absent)}"
        )
    leaked = [c for c in columns if c in bench.output_columns]
    if leaked:
        raise InputColumnsError(
            f"{bench.name}: input column(s) are also output columns: {', '.join(leaked)}"
        )
    return list(dict.fromkeys(columns))


def task_id(name: str, row: int) -> str:
    """``sopbench-<name>-<row>``: the row is SOP-Bench's own task id (0-based data row)."""
    return f"sopbench-{name}-{row:03d}"


def empty_outputs(bench: Benchmark, row: JSON) -> list[str]:
    """The output columns whose expected value is empty in ``row``."""
    return [c for c in bench.output_columns if c in row and row[c] in (None, "")]


def build_tasks(
    bench: Benchmark, inputs: list[str]
) -> tuple[list[Task], dict[str, JSON], dict[int, list[str]]]:
    """One task per well-formed row, its expected outputs keyed by task id, and the rows
    whose expected output is empty (with those columns). SOP-Bench scores such rows (any
    null-like answer matches an empty expected value), so they are kept, flagged: the
    ``sopbench`` profile scores them as the source does, and our strict view expects the
    field present with a ``null``."""
    tasks: list[Task] = []
    expected: dict[str, JSON] = {}
    empty_expected: dict[int, list[str]] = {}
    rows = bench.table.rows if bench.table else {}
    for row_index, row in sorted(rows.items()):
        if blank := empty_outputs(bench, row):
            empty_expected[row_index] = blank
        task = Task(
            id=task_id(bench.name, row_index),
            domain=bench.domain_name,
            inputs={c: row.get(c) for c in inputs},
        )
        tasks.append(task)
        expected[task.id] = {
            c: None if c in (blank or ()) else row.get(c) for c in bench.output_columns
        }
    return tasks, expected, empty_expected


def columns_schema(bench: Benchmark, columns: list[str]) -> JSON:
    """A JSON Schema object whose properties are ``columns``, typed from the CSV's values."""
    rows = list(bench.table.rows.values()) if bench.table else []
    return {
        "type": "object",
        "properties": {c: _value_schema([r.get(c) for r in rows]) for c in columns},
        "required": list(columns),
    }


_TYPE_NAMES = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
}


def _value_schema(values: list[Any]) -> JSON:
    kinds = {_TYPE_NAMES.get(type(v), "string") for v in values if v is not None}
    if kinds == {"integer", "number"}:
        kinds = {"number"}
    if len(kinds) != 1:
        return {}  # mixed or all empty: any value
    (kind,) = kinds
    return {"type": [kind, "null"]} if None in values else {"type": kind}
