"""``sopgym audit sop-bench``: which of a published benchmark's tasks are sound.

Static checks read the files (see :mod:`layout`) and the rows; dynamic checks load the
benchmark's ``tools.py`` in this process and call every tool twice on every row, with arguments
taken from the row itself (an audit may read the whole row; an agent never does).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sopgym.agents.baseline_policy import flatten, key
from sopgym.core.errors import ToolError
from sopgym.core.schema import ArgumentValidator
from sopgym.core.tools import ToolSpec
from sopgym.evaluation.scorers.fields import values_match
from sopgym.importers.bridge import NOT_FOUND, ToolsBridge, ToolsLoadError, json_value
from sopgym.importers.findings import KINDS, Finding, defects
from sopgym.importers.layout import CSV, TOOLS, Benchmark, read_benchmark
from sopgym.importers.tasks import empty_outputs
from sopgym.types import JSON

Row = dict[str, Any]


@dataclass
class AuditReport:
    name: str
    folder: str
    rows: int  # data rows in the CSV, well-formed or not
    tasks: int  # well-formed rows: the tasks an import would serve
    tools: list[str]
    input_columns: list[str] | None
    output_columns: list[str]
    key_column: str | None
    checked_rows: int  # rows whose tools were called
    findings: list[Finding] = field(default_factory=list)

    @property
    def defect_count(self) -> int:
        return len(defects(self.findings))

    def to_json(self) -> JSON:
        return {
            "benchmark": self.name,
            "folder": self.folder,
            "rows": self.rows,
            "tasks": self.tasks,
            "tools": self.tools,
            "input_columns": self.input_columns,
            "output_columns": self.output_columns,
            "key_column": self.key_column,
            "checked_rows": self.checked_rows,
            "defects": self.defect_count,
            "info": len(self.findings) - self.defect_count,
            "findings": [f.to_json() for f in self.findings],
        }


def audit_benchmark(
    folder: Path, given_inputs: list[str] | None = None, max_rows: int | None = None
) -> AuditReport:
    bench = read_benchmark(folder)
    inputs = bench.input_columns or given_inputs
    table = bench.table
    rows = dict(sorted(table.rows.items())) if table else {}
    key_column = _key_column(inputs or (table.columns if table else []))
    report = AuditReport(
        name=bench.name,
        folder=str(bench.folder),
        rows=table.row_count if table else 0,
        tasks=len(rows),
        tools=[s.name for s in bench.specs],
        input_columns=inputs,
        output_columns=bench.output_columns,
        key_column=key_column,
        checked_rows=0,
        findings=list(bench.problems),
    )
    report.findings += _empty_outputs(bench, rows)
    report.findings += _duplicate_key_rows(rows, key_column)
    if bench.tools_source is not None and rows and bench.specs:
        checked = dict(list(rows.items())[:max_rows]) if max_rows else rows
        report.checked_rows = len(checked)
        report.findings += ToolProbe(bench, checked, key_column).findings()
    order = list(KINDS)
    report.findings.sort(key=lambda f: order.index(f.kind))
    return report


# ---- row checks ----


def _key_column(columns: list[str]) -> str | None:
    """The column tools look tasks up by: the first id-like one, else the first input."""
    for column in columns:
        name = key(column)
        if name == "id" or name.endswith("_id"):
            return column
    return columns[0] if columns else None


def _empty_outputs(bench: Benchmark, rows: dict[int, Row]) -> list[Finding]:
    empty: dict[int, list[str]] = {}
    for index, row in rows.items():
        if blank := empty_outputs(bench, row):
            empty[index] = blank
    if not empty:
        return []
    columns = sorted({c for blank in empty.values() for c in blank})
    return [
        Finding(
            "empty_expected_outputs",
            f"{len(empty)} row(s) have an empty expected output: unscorable, left out of the "
            "task set",
            rows=sorted(empty),
            columns=columns,
            file=CSV,
            details=[f"row {r}: {', '.join(cs)}" for r, cs in empty.items()],
        )
    ]


def _duplicate_key_rows(rows: dict[int, Row], key_column: str | None) -> list[Finding]:
    if key_column is None:
        return []
    by_value: dict[str, list[int]] = defaultdict(list)
    for index, row in rows.items():
        if row.get(key_column) is not None:
            by_value[json.dumps(row[key_column], default=str)].append(index)
    repeated = {v: rs for v, rs in by_value.items() if len(rs) > 1}
    if not repeated:
        return []
    return [
        Finding(
            "duplicate_keys",
            f"{len(repeated)} {key_column} value(s) appear on more than one row: a lookup by "
            "key returns one of them for all",
            rows=sorted(r for rs in repeated.values() for r in rs),
            columns=[key_column],
            file=CSV,
            details=[f"{key_column} {v} on rows {_listing(rs)}" for v, rs in repeated.items()],
        )
    ]


# ---- tool checks ----


@dataclass
class _Outcome:
    kind: str  # "ok" | "none" | "error"
    value: Any = None  # JSON result, or the error text

    def same_as(self, other: _Outcome) -> bool:
        return self.kind == other.kind and _canonical(self.value) == _canonical(other.value)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


@dataclass
class _ToolLog:
    ok: set[int] = field(default_factory=set)
    none: set[int] = field(default_factory=set)
    errors: dict[int, str] = field(default_factory=dict)
    changing: dict[int, str] = field(default_factory=dict)
    rejected: dict[int, str] = field(default_factory=dict)  # by the tool's own schema
    relays: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))


class ToolProbe:
    """Calls every tool twice per row and turns what happened into findings."""

    def __init__(self, bench: Benchmark, rows: dict[int, Row], key_column: str | None) -> None:
        self.bench, self.rows, self.key_column = bench, rows, key_column
        self.bridge = ToolsBridge(bench.folder, [s.name for s in bench.specs])
        self.logs: dict[str, _ToolLog] = {s.name: _ToolLog() for s in bench.specs}
        self.filled: dict[str, set[int]] = defaultdict(set)

    def findings(self) -> list[Finding]:
        try:
            self.bridge.load()
        except ToolsLoadError as error:
            return [Finding("bad_file", str(error), file=TOOLS)]
        missing = [s.name for s in self.bench.specs if not self.bridge.implements(s.name)]
        found = []
        if missing:
            found.append(
                Finding(
                    "uncallable_tools",
                    f"{len(missing)} tool(s) in toolspecs.json are not implemented in {TOOLS}",
                    tools=missing,
                )
            )
        callable_specs = [s for s in self.bench.specs if s.name not in missing]
        for index, row in self.rows.items():
            for spec in callable_specs:
                self._probe(spec, index, row)
        return found + self._report()

    def _probe(self, spec: ToolSpec, index: int, row: Row) -> None:
        arguments = _arguments(spec.input_schema, row)
        if arguments is None:
            return
        self.filled[spec.name].add(index)
        log = self.logs[spec.name]
        try:
            ArgumentValidator(spec.input_schema).validate(arguments)
        except ToolError as error:
            log.rejected[index] = error.message
        first, second = self._call(spec.name, arguments), self._call(spec.name, arguments)
        if not first.same_as(second):
            log.changing[index] = f"{_brief(first)} then {_brief(second)}"
        if first.kind == "none":
            log.none.add(index)
        elif first.kind == "error":
            log.errors[index] = str(first.value)
        else:
            log.ok.add(index)
            for column in _relayed(first.value, row, self.bench.output_columns):
                log.relays[column].add(index)

    def _call(self, name: str, arguments: JSON) -> _Outcome:
        try:
            raw = self.bridge.call(name, arguments)
        except ToolError as error:
            return _Outcome("error", error.message)
        except (Exception, SystemExit) as error:
            return _Outcome("error", f"{type(error).__name__}: {error}")
        return _Outcome("none") if raw is None else _Outcome("ok", json_value(raw))

    # ---- findings ----
    def _report(self) -> list[Finding]:
        unknown = self._unknown_ids()
        found: list[Finding] = []
        found += self._per_tool(
            "tools_returning_none",
            "returned None",
            {n: {r: "returned None" for r in log.none} for n, log in self.logs.items()},
        )
        found += self._per_tool(
            "nondeterministic_tools",
            "gave two different results for the same call",
            {n: log.changing for n, log in self.logs.items()},
        )
        found += unknown
        found += self._per_tool(
            "schema_mismatches",
            "rejects row values by its own input schema",
            {n: log.rejected for n, log in self.logs.items()},
        )
        found += self._relays()
        unknown_rows = {r for f in unknown for r in f.rows}
        found += self._per_tool(
            "tool_refusals",
            "raised for the row's own values",
            {
                n: {r: e for r, e in log.errors.items() if r not in unknown_rows}
                for n, log in self.logs.items()
            },
        )
        return found

    def _per_tool(self, kind: str, what: str, by_tool: dict[str, dict[int, str]]) -> list[Finding]:
        hit = {name: rows for name, rows in by_tool.items() if rows}
        if not hit:
            return []
        all_rows = sorted({r for rows in hit.values() for r in rows})
        details = [
            f"{name} row {r}: {text}"
            for name, rows in hit.items()
            for r, text in sorted(rows.items())
        ]
        summary = "; ".join(
            f"{name} on {len(rows)}/{len(self.filled[name])} row(s)" for name, rows in hit.items()
        )
        message = f"{what}: {summary}"
        return [Finding(kind, message, rows=all_rows, tools=sorted(hit), details=details)]

    def _unknown_ids(self) -> list[Finding]:
        """Rows whose key every key-taking tool rejects, while those tools work on other rows."""
        if self.key_column is None:
            return []
        wanted = key(self.key_column)
        takers = [
            s.name
            for s in self.bench.specs
            if any(key(p) == wanted for p in s.input_schema.get("properties", {}))
            and self.logs[s.name].ok
        ]
        rows: list[int] = []
        details: list[str] = []
        for index in self.rows:
            tried = [n for n in takers if index in self.filled[n]]
            failed = [n for n in tried if self._looks_unknown(n, index)]
            if tried and failed == tried:
                rows.append(index)
                value = self.rows[index].get(self.key_column)
                details.append(f"row {index}: {self.key_column} {value!r} ({', '.join(failed)})")
        if not rows:
            return []
        message = (
            f"{len(rows)} row(s) whose {self.key_column} no tool knows, "
            "though the same tools answer for other rows"
        )
        return [
            Finding(
                "unknown_input_ids",
                message,
                rows=rows,
                tools=sorted(takers),
                columns=[self.key_column],
                details=details,
            )
        ]

    def _looks_unknown(self, name: str, index: int) -> bool:
        """The tool found nothing for this row: None, or an error that says so."""
        log = self.logs[name]
        return index in log.none or bool(NOT_FOUND.search(log.errors.get(index, "")))

    def _relays(self) -> list[Finding]:
        found = []
        for name, log in self.logs.items():
            for column, rows in sorted(log.relays.items()):
                found.append(
                    Finding(
                        "relayed_outputs",
                        f"{name} returns output column {column} verbatim "
                        f"on {len(rows)}/{len(self.filled[name])} row(s)",
                        rows=sorted(rows),
                        tools=[name],
                        columns=[column],
                    )
                )
        return found


def _arguments(schema: JSON, row: Row) -> JSON | None:
    """Arguments from the row by column name; ``None`` if a required one is absent."""
    by_key = {key(c): v for c, v in row.items() if v is not None}
    properties = schema.get("properties") or {}
    required = schema.get("required", list(properties))
    if any(key(p) not in by_key for p in required):
        return None
    return {p: by_key[key(p)] for p in properties if key(p) in by_key}


def _relayed(result: Any, row: Row, output_columns: list[str]) -> list[str]:
    """Output columns whose expected value the result carries under the column's own name
    (or is, for a bare string result)."""
    flat = flatten(result) if isinstance(result, dict) else {}
    relayed = []
    for column in output_columns:
        expected = row.get(column)
        if expected in (None, ""):
            continue
        if key(column) in flat:
            if values_match(flat[key(column)], expected):
                relayed.append(column)
        elif isinstance(result, str) and values_match(result, expected):
            relayed.append(column)
    return relayed


def _listing(rows: list[int]) -> str:
    return ", ".join(map(str, rows))


def _brief(outcome: _Outcome) -> str:
    text = "None" if outcome.kind == "none" else _canonical(outcome.value)
    return text if len(text) <= 80 else text[:77] + "..."
