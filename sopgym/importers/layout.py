"""The published SOP-Bench layout: finding benchmark folders and parsing one without running it.

Parsing never raises for a bad benchmark: every problem becomes a :class:`Finding`, so one
broken folder in a checkout cannot stop the others from importing. Nothing here executes the
benchmark's ``tools.py`` (that happens only in the tool service and in the audit).
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from sopgym.core.tools import ToolSpec
from sopgym.importers import PREFIX
from sopgym.importers.csvfile import CsvError, CsvTable, read_csv
from sopgym.importers.findings import Finding, defects

METADATA, SOP, TOOLSPECS, CSV, TOOLS = (
    "metadata.json",
    "sop.txt",
    "toolspecs.json",
    "test_set_with_outputs.csv",
    "tools.py",
)
# the published inputs-only test set: its columns are the task inputs (when metadata.json
# names none, they are read from it: :func:`_read_inputs_only_columns`)
WITHOUT_OUTPUTS = "test_set_without_outputs.csv"
LAYOUT_FILES = (METADATA, SOP, TOOLSPECS, CSV, TOOLS, WITHOUT_OUTPUTS)
CHECKOUT_DATA = Path("src/amazon_sop_bench/benchmarks/data")
PERMISSIVE_SCHEMA: dict[str, Any] = {"type": "object"}


@dataclass
class Benchmark:
    """One parsed benchmark folder. ``problems`` are the findings of parsing alone."""

    name: str
    folder: Path
    input_columns: list[str] | None = None
    # when metadata.json names no input_columns: the columns of test_set_without_outputs.csv
    # that are not output columns, else those the tool specs take as arguments (None: nothing
    # to infer them from); ``inferred_from`` says which, ``inferred_by`` each column's tools
    inferred_input_columns: list[str] | None = None
    inferred_from: str | None = None
    inferred_by: dict[str, list[str]] = field(default_factory=dict)
    output_columns: list[str] = field(default_factory=list)
    sop: str | None = None
    specs: list[ToolSpec] = field(default_factory=list)
    table: CsvTable | None = None
    tools_source: str | None = None
    problems: list[Finding] = field(default_factory=list)

    @property
    def domain_name(self) -> str:
        return PREFIX + self.name

    def blocking(self) -> list[Finding]:
        """Defects that make the benchmark impossible to serve (as opposed to unsound rows)."""
        fatal = {"bad_file", "missing_columns"}
        return [f for f in defects(self.problems) if f.kind in fatal]


def find_benchmarks(path: Path) -> list[Path]:
    """Benchmark folders at ``path``: a benchmark itself, a checkout, or a folder of them."""
    if _is_benchmark(path):
        return [path]
    root = path / CHECKOUT_DATA if (path / CHECKOUT_DATA).is_dir() else path
    return sorted(p for p in root.iterdir() if p.is_dir() and _is_benchmark(p))


def _is_benchmark(folder: Path) -> bool:
    return any((folder / name).is_file() for name in LAYOUT_FILES)


def read_benchmark(folder: Path) -> Benchmark:
    bench = Benchmark(name=folder.name, folder=folder.resolve())
    _read_metadata(bench)
    _read_sop(bench)
    _read_specs(bench)
    _read_table(bench)
    _read_inputs_only_columns(bench)
    _infer_from_tool_specs(bench)
    _read_tools_source(bench)
    return bench


# ---- files ----


def _missing(bench: Benchmark, name: str) -> bool:
    if (bench.folder / name).is_file():
        return False
    bench.problems.append(Finding("bad_file", f"{name} is missing", file=name))
    return True


def _load_json(bench: Benchmark, name: str) -> Any:
    """Parsed JSON, or ``None`` after recording why not. Repeated object keys are reported."""
    if _missing(bench, name):
        return None
    repeated: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                repeated.append(key)
            out[key] = value
        return out

    try:
        value = json.loads((bench.folder / name).read_bytes(), object_pairs_hook=pairs)
    except UnicodeDecodeError as error:
        bench.problems.append(Finding("bad_file", f"{name}: not UTF-8 ({error.reason})", file=name))
        return None
    except json.JSONDecodeError as error:
        message = f"{name}: invalid JSON at line {error.lineno} column {error.colno}: {error.msg}"
        bench.problems.append(Finding("bad_file", message, file=name))
        return None
    if repeated:
        message = f"{name}: the same key twice in one object: {', '.join(sorted(set(repeated)))}"
        bench.problems.append(Finding("duplicate_keys", message, file=name))
    return value


def _read_metadata(bench: Benchmark) -> None:
    data = _load_json(bench, METADATA)
    if data is None:
        return
    if not isinstance(data, dict):
        bench.problems.append(Finding("bad_file", f"{METADATA}: not a JSON object", file=METADATA))
        return
    outputs = data.get("output_columns")
    if not _names(outputs):
        message = f"{METADATA}: output_columns must be a non-empty list of column names"
        bench.problems.append(Finding("bad_file", message, file=METADATA))
    else:
        bench.output_columns = list(outputs)
    inputs = data.get("input_columns")
    if inputs is None:
        message = f"{METADATA} names no input_columns"
        bench.problems.append(Finding("missing_input_columns", message, file=METADATA))
    elif not _names(inputs):
        message = f"{METADATA}: input_columns must be a non-empty list of column names"
        bench.problems.append(Finding("bad_file", message, file=METADATA))
    else:
        bench.input_columns = [c.strip() for c in inputs]


def _names(value: Any) -> TypeGuard[list[str]]:
    return isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value)


def _read_sop(bench: Benchmark) -> None:
    if _missing(bench, SOP):
        return
    raw = (bench.folder / SOP).read_bytes()
    try:
        bench.sop = raw.decode("utf-8")
    except UnicodeDecodeError:
        bench.sop = raw.decode("latin-1")  # as SOP-Bench's own loader falls back
    if not bench.sop.strip():
        bench.problems.append(Finding("bad_file", f"{SOP} is empty", file=SOP))


def _read_specs(bench: Benchmark) -> None:
    data = _load_json(bench, TOOLSPECS)
    if data is None:
        return
    if not isinstance(data, list):
        bench.problems.append(Finding("bad_file", f"{TOOLSPECS}: not a JSON array", file=TOOLSPECS))
        return
    seen: dict[str, int] = {}
    for index, entry in enumerate(data):
        spec = _spec(bench, index, entry)
        if spec is None:
            continue
        if spec.name in seen:
            message = f"{TOOLSPECS}: tool {spec.name!r} at entries {seen[spec.name]} and {index}"
            bench.problems.append(
                Finding("duplicate_keys", message, tools=[spec.name], file=TOOLSPECS)
            )
            continue
        seen[spec.name] = index
        bench.specs.append(spec)


def _spec(bench: Benchmark, index: int, entry: Any) -> ToolSpec | None:
    """One Bedrock-format entry (``{"toolSpec": {...}}``; a bare spec is accepted too)."""
    body = entry.get("toolSpec", entry) if isinstance(entry, dict) else None
    body = body if isinstance(body, dict) else {}
    name = body.get("name")
    if not isinstance(name, str) or not name.strip():
        message = f"{TOOLSPECS}: entry {index} has no toolSpec.name"
        bench.problems.append(Finding("invalid_tool_spec", message, file=TOOLSPECS))
        return None
    wrapped = body.get("inputSchema")
    # Bedrock nests the schema under inputSchema.json; the neutral form says input_schema
    schema: Any = wrapped.get("json") if isinstance(wrapped, dict) else body.get("input_schema")
    problem = _schema_problem(schema)
    if problem:
        message = f"{TOOLSPECS}: tool {name!r}: {problem}; served with no argument checks"
        bench.problems.append(Finding("invalid_tool_spec", message, tools=[name], file=TOOLSPECS))
        schema = dict(PERMISSIVE_SCHEMA)
    description = body.get("description")
    return ToolSpec(name, description if isinstance(description, str) else "", schema)


def _schema_problem(schema: Any) -> str | None:
    if not isinstance(schema, dict):
        return "inputSchema.json is not a JSON object"
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        return f"inputSchema.json is not a valid JSON Schema ({error.message})"
    return None


def _read_table(bench: Benchmark) -> None:
    if _missing(bench, CSV):
        return
    try:
        table = read_csv(bench.folder / CSV)
    except CsvError as error:
        bench.problems.append(Finding("bad_file", f"{CSV}: {error}", file=CSV))
        return
    bench.table = table
    if table.malformed:
        rows = sorted(table.malformed)
        details = [f"row {r} (line {table.lines[r]}): {table.malformed[r]}" for r in rows]
        message = f"{len(rows)} malformed row(s) in {CSV}; they are left out of the tasks"
        bench.problems.append(
            Finding("malformed_rows", message, rows=rows, file=CSV, details=details)
        )
    repeated = sorted({c for c in table.columns if table.columns.count(c) > 1})
    if repeated:
        message = f"{CSV}: the same column header twice: {', '.join(repeated)}"
        bench.problems.append(Finding("duplicate_keys", message, columns=repeated, file=CSV))
    named = [*(bench.input_columns or []), *bench.output_columns]
    absent = [c for c in dict.fromkeys(named) if c not in table.columns]
    if absent:
        message = f"{CSV} lacks column(s) named in {METADATA}: {', '.join(absent)}"
        bench.problems.append(Finding("missing_columns", message, columns=absent, file=CSV))


def _read_inputs_only_columns(bench: Benchmark) -> None:
    """Where metadata.json names no input_columns, take them from the header of
    ``test_set_without_outputs.csv`` (its columns less the output columns, those the main CSV
    has), and say so on the ``missing_input_columns`` finding."""
    path = bench.folder / WITHOUT_OUTPUTS
    if bench.input_columns is not None or not path.is_file() or bench.table is None:
        return
    try:
        header = read_csv(path).columns
    except CsvError as error:
        message = f"{WITHOUT_OUTPUTS}: {error}"
        bench.problems.append(Finding("bad_file", message, file=WITHOUT_OUTPUTS))
        return
    columns = [c for c in header if c not in bench.output_columns and c in bench.table.columns]
    if not columns:
        return
    _inferred(bench, columns, WITHOUT_OUTPUTS)


def _inferred(bench: Benchmark, columns: list[str], source: str) -> None:
    bench.inferred_input_columns = columns
    bench.inferred_from = source
    for finding in bench.problems:
        if finding.kind == "missing_input_columns":
            finding.message += f"; inferred from {source}: {', '.join(columns)}"
            finding.columns = columns


TOOL_SPECS_SOURCE = f"the tool arguments of {TOOLSPECS}"


def _infer_from_tool_specs(bench: Benchmark) -> None:
    """Where neither metadata.json nor ``test_set_without_outputs.csv`` names the inputs (the
    published ``order_fulfillment``), take the CSV's columns that a tool takes as an argument,
    as the other folders' named inputs are (``dangerous_goods``: its five inputs are exactly
    its tool arguments among its columns). Left out: the output columns, and a column another
    tool reports, by its spec (a tool that does not take it names it in its description, as
    ``getOrderDetails`` "the days since purchase", or the argument's description says it comes
    "from" another tool): that value is looked up, not given."""
    if bench.input_columns is not None or bench.inferred_input_columns or bench.table is None:
        return
    takers: dict[str, list[str]] = {}
    for spec in bench.specs:
        for name in (spec.input_schema.get("properties") or {}):
            takers.setdefault(name, []).append(spec.name)
    columns = [
        column
        for column in bench.table.columns
        if column in takers and column not in bench.output_columns
        and not _reported_by_a_tool(bench.specs, column, takers[column])
    ]  # fmt: skip
    if columns:
        bench.inferred_by = {column: takers[column] for column in columns}
        _inferred(bench, columns, TOOL_SPECS_SOURCE)


def _reported_by_a_tool(specs: list[ToolSpec], column: str, takers: list[str]) -> bool:
    phrase = re.compile(rf"\b{re.escape(column.replace('_', ' ').lower())}\b")
    names = [spec.name for spec in specs]
    for spec in specs:
        if spec.name not in takers and phrase.search(spec.description.lower()):
            return True
        argument = (spec.input_schema.get("properties") or {}).get(column)
        said = str(argument.get("description") or "") if isinstance(argument, dict) else ""
        if any(f"from {name}" in said for name in names if name != spec.name):
            return True
    return False


def _read_tools_source(bench: Benchmark) -> None:
    if _missing(bench, TOOLS):
        return
    source = (bench.folder / TOOLS).read_bytes().decode("utf-8", errors="replace")
    try:
        ast.parse(source)
    except SyntaxError as error:
        message = f"{TOOLS}: syntax error at line {error.lineno}: {error.msg}"
        bench.problems.append(Finding("bad_file", message, file=TOOLS))
        return
    bench.tools_source = source
