"""The gates that run generated code. Each function here runs in a child process
(:func:`sopgym.core.isolated.run_isolated`, killed past its time limit), never in the
``sopgym generate`` process, and returns the problems it found as plain tuples
``(gate, artifact, message, stage to retry)`` so that nothing but strings crosses back.
"""

from __future__ import annotations

import ast
import importlib
import json
import sys
import tempfile
import traceback
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

import jsonschema
import orjson
import pandas as pd

from sopgym.core.dataset import derive_gold
from sopgym.core.domain import DomainPack, leaked_fields
from sopgym.core.tables import Tables
from sopgym.core.tasks import Gold, Task
from sopgym.core.tools import Tool, ToolContext
from sopgym.generation.pack import (
    DISTRACTORS_FILE,
    SCHEMA_FILE,
    SPECS_FILE,
    load_pack,
    open_package,
    read_json,
)

Problem = tuple[str, str, str, str | None]
MIN_TASKS = 12
MIN_TASKS_PER_BRANCH = 3  # as docs/domain-pack.md asks of every pack
DATA_DIR = "data"


def _error(error: BaseException, folder: Path) -> str:
    """The exception, with the last frames that lie in the pack's generated files (where the
    model must look)."""
    pack = folder.resolve()
    frames = [
        f
        for f in traceback.extract_tb(error.__traceback__)
        if Path(f.filename).resolve().is_relative_to(pack)
    ]
    where = "; ".join(f"{Path(f.filename).name} line {f.lineno}" for f in frames[-2:])
    return f"{type(error).__name__}: {error}" + (f" (at {where})" if where else "")


def _import(folder: Path, module: str) -> Any:
    return importlib.import_module(f"{open_package(folder)}.{module}")


def _schema(folder: Path) -> dict[str, Any]:
    schema: dict[str, Any] = read_json(folder / SCHEMA_FILE)
    return schema


def _output_fields(folder: Path) -> set[str]:
    return set(_schema(folder)["output_schema"].get("properties", {}))


def _tables(folder: Path, frames: dict[str, pd.DataFrame]) -> Tables:
    tables = Tables(frames)
    tables.index_all({t: spec["key"] for t, spec in _schema(folder)["tables"].items()})
    return tables


def _check_result(tool: Tool, result: Any, outputs: set[str]) -> str | None:
    if not isinstance(result, dict):
        return f"returned {type(result).__name__}, not a JSON object"
    try:
        jsonschema.validate(orjson.loads(orjson.dumps(result)), tool.spec.output_schema)
    except jsonschema.ValidationError as error:
        return f"result breaks its output schema: {error.message}"
    except TypeError as error:
        return f"result is not JSON: {error}"
    leaked = outputs & set(result)
    if leaked:
        return f"result carries output field(s) {sorted(leaked)}"
    return None


def check_tools(folder: Path) -> list[Problem]:
    """Import the tools and run the generated contract tests on their fixture data."""
    artifact = "tools/implementations.py"
    try:
        tools = {t.name: t for t in _import(folder, "tools").TOOLS}
    except Exception as error:
        return [("tools_import", artifact, _error(error, folder), "tools")]
    suite = read_json(folder / "tools" / "contract_tests.json")
    try:
        tables = _tables(folder, {t: pd.DataFrame(rows) for t, rows in suite["tables"].items()})
    except Exception as error:
        return [("tools_contract", "tools/contract_tests.json", _error(error, folder), "tools")]
    outputs = _output_fields(folder)
    problems: list[Problem] = []
    tested: Counter[str] = Counter()
    for index, case in enumerate(suite["cases"]):
        name, where = case.get("tool"), f"case {index} ({case.get('tool')})"
        if name not in tools:
            problems.append(("tools_contract", artifact, f"{where}: no such tool", "tools"))
            continue
        tested[name] += 1
        ctx = ToolContext(tables=tables)
        try:
            result = tools[name](case.get("arguments", {}), ctx)
            again = tools[name](case.get("arguments", {}), ctx)
        except Exception as error:
            problems.append(
                ("tools_contract", artifact, f"{where}: {_error(error, folder)}", "tools")
            )
            continue
        wrong = _check_result(tools[name], result, outputs)
        if wrong is None and result != again:
            wrong = "not deterministic: a second identical call returned something else"
        if wrong is None:
            differ = {k: v for k, v in case.get("expect", {}).items() if result.get(k) != v}
            if differ:
                got = {k: result.get(k) for k in differ}
                wrong = f"expected {json.dumps(differ)}, got {json.dumps(got)}"
        if wrong:
            problems.append(("tools_contract", artifact, f"{where}: {wrong}", "tools"))
    untested = [name for name in tools if not tested[name]]
    if untested:
        problems.append(("tools_contract", artifact, f"no contract case for {untested}", "tools"))
    return problems


def check_policy(folder: Path) -> list[Problem]:
    """Import the policy; every ``run.call`` names a tool of the specs, literally."""
    artifact = "policy.py"
    try:
        module = _import(folder, "policy")
    except Exception as error:
        return [("policy_import", artifact, _error(error, folder), "policy")]
    if not callable(getattr(module, "solve", None)):
        return [("policy_import", artifact, "defines no solve(task, run)", "policy")]
    tools = set(read_json(folder / SPECS_FILE))
    problems: list[Problem] = []
    for node in ast.walk(ast.parse((folder / artifact).read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr != "call":
                continue
            first = node.args[0] if node.args else None
            if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
                message = f"line {node.lineno}: run.call needs a literal tool name"
                problems.append(("policy_import", artifact, message, "policy"))
            elif first.value not in tools:
                message = f"line {node.lineno}: calls {first.value!r}, not a tool of specs.json"
                problems.append(("policy_import", artifact, message, "policy"))
    return problems


def check_generator(folder: Path) -> list[Problem]:
    """Run the generator twice: deterministic, tables as the schema says, inputs valid."""
    artifact, gate = "generator.py", "generator_runs"
    try:
        module = _import(folder, "generator")
        with tempfile.TemporaryDirectory() as first, tempfile.TemporaryDirectory() as second:
            data = module.generate(7, Path(first))
            again = module.generate(7, Path(second))
    except Exception as error:
        return [(gate, artifact, _error(error, folder), "generator")]
    schema = _schema(folder)
    problems: list[Problem] = []

    def fail(message: str) -> None:
        problems.append((gate, artifact, message, "generator"))

    frames = {t: f.to_dict("records") for t, f in data.tables.items()}
    if frames != {t: f.to_dict("records") for t, f in again.tables.items()} or [
        t.inputs for t in data.tasks
    ] != [t.inputs for t in again.tasks]:
        fail("not deterministic: two runs with seed 7 differ")
    for table, spec in schema["tables"].items():
        if table not in data.tables:
            fail(f"table {table!r} of the schema is not generated")
            continue
        missing = set(spec["columns"]) - set(data.tables[table].columns)
        if missing:
            fail(f"table {table!r} lacks columns {sorted(missing)}")
    try:
        _tables(folder, dict(data.tables))
    except Exception as error:
        fail(_error(error, folder))
    if len(data.tasks) < MIN_TASKS:
        fail(f"{len(data.tasks)} tasks; at least {MIN_TASKS} are needed")
    validator = jsonschema.Draft202012Validator(schema["input_schema"])
    for task in data.tasks:
        errors = [e.message for e in validator.iter_errors(task.inputs)]
        if errors:
            fail(f"task {task.id}: inputs break the input schema: {errors[0]}")
            break
    return problems


class _LineTrace:
    """The lines of one file executed while it is active (the policy's branch coverage)."""

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.lines: set[int] = set()

    def __call__(self, frame: FrameType, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename != self.filename:
            return None
        if event == "line":
            self.lines.add(frame.f_lineno)
        return self


def branch_lines(source: str) -> dict[int, str]:
    """The first line of every branch body of the policy (if / else / match case), with what
    it is, for the coverage gate."""
    found: dict[int, str] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.If):
            found[node.body[0].lineno] = f"the branch of `if` at line {node.lineno}"
            if node.orelse:
                found[node.orelse[0].lineno] = f"the `else` of `if` at line {node.lineno}"
        elif isinstance(node, ast.Match):
            for case in node.cases:
                found[case.body[0].lineno] = f"a `case` of `match` at line {node.lineno}"
    return found


def check_tasks(folder: Path) -> list[Problem]:
    """Materialise the tasks and derive every label with the reference policy; write ``data/``
    beside the pack; then the label gates: the policy runs on every task with valid outputs, no
    output field leaks into inputs or tool results, every branch and output value is covered."""
    try:
        domain = load_pack(folder)
        files = Path(tempfile.mkdtemp(prefix="sopgym-gen-files-"))
        generated = domain.generate(domain.seed, files)
        tables = _tables(folder, dict(generated.tables))
    except Exception as error:
        return [("generator_runs", "generator.py", _error(error, folder), "generator")]
    policy_file = str((folder / "policy.py").resolve())
    branches = branch_lines((folder / "policy.py").read_text())
    reached: Counter[int] = Counter()
    golds: list[Gold] = []
    problems: list[Problem] = []
    for task in generated.tasks:
        trace = _LineTrace(policy_file)
        sys.settrace(trace)
        try:
            gold = derive_gold(domain, tables, files, task)
        except Exception as error:
            sys.settrace(None)
            message = f"task {task.id}: {_error(error, folder)}"
            problems.append(("policy_runs", "policy.py", message, "policy"))
            continue
        sys.settrace(None)
        reached.update(trace.lines & set(branches))
        golds.append(gold)
    if problems:
        return problems[:5]
    data = folder.parent / DATA_DIR  # beside the pack: reviewable, not part of its source
    data.mkdir(exist_ok=True)
    (data / "tasks.jsonl").write_bytes(
        b"".join(orjson.dumps(t.to_json()) + b"\n" for t in generated.tasks)
    )
    (data / "gold.jsonl").write_bytes(b"".join(orjson.dumps(g.to_json()) + b"\n" for g in golds))
    problems += _label_problems(domain, tables, files, generated.tasks, golds)
    for line, what in sorted(branches.items()):
        if reached[line] < MIN_TASKS_PER_BRANCH:
            message = (
                f"policy.py line {line} ({what}) runs for {reached[line]} task(s); "
                f"every branch needs at least {MIN_TASKS_PER_BRANCH}"
            )
            problems.append(("branch_coverage", "generator.py", message, "generator"))
    coverage = {str(line): reached[line] for line in sorted(branches)}
    (data / "coverage.json").write_text(json.dumps({"branch_line_tasks": coverage}, indent=2))
    return problems


def _label_problems(
    domain: DomainPack, tables: Tables, files: Path, tasks: list[Task], golds: list[Gold]
) -> list[Problem]:
    problems: list[Problem] = []
    validator = jsonschema.Draft202012Validator(domain.output_schema)
    tools = domain.tool_map()
    for task, gold in zip(tasks, golds, strict=True):
        errors = [e.message for e in validator.iter_errors(gold.outputs)]
        if errors:
            message = f"task {task.id}: outputs break the output schema: {errors[0]}"
            problems.append(("policy_runs", "policy.py", message, "policy"))
        if leaked_fields(domain, [task.inputs]):
            message = f"task {task.id}: inputs carry output field(s)"
            problems.append(("no_leak", "generator.py", message, "generator"))
        ctx = domain.context(tables, files, task)
        for call in gold.calls:
            leaked = leaked_fields(domain, [tools[call.name](call.arguments, ctx)])
            if leaked:
                message = f"{call.name} returns output field(s) {sorted(leaked)}"
                problems.append(("no_leak", "tools/implementations.py", message, "tools"))
    counts = {f: Counter(str(g.outputs.get(f)) for g in golds) for f in domain.output_fields}
    for field, spec in domain.output_schema.get("properties", {}).items():
        for value in spec.get("enum", []):
            if counts[field][str(value)] < MIN_TASKS_PER_BRANCH:
                message = (
                    f"output {field}={value!r} comes out for {counts[field][str(value)]} task(s);"
                    f" each value needs at least {MIN_TASKS_PER_BRANCH}"
                )
                problems.append(("branch_coverage", "generator.py", message, "generator"))
    return list(dict.fromkeys(problems))[:10]


def check_distractors(folder: Path) -> list[Problem]:
    """Every distractor runs on its examples against the generated tables."""
    artifact = "tools/distractors.py"
    try:
        domain = load_pack(folder)
        with tempfile.TemporaryDirectory() as files:
            tables = _tables(folder, dict(domain.generate(domain.seed, Path(files)).tables))
    except Exception as error:
        return [("distractors_run", artifact, _error(error, folder), "complexity")]
    specs = read_json(folder / DISTRACTORS_FILE)
    outputs = set(domain.output_fields)
    problems: list[Problem] = []
    for distractor in domain.distractors:
        for example in specs[distractor.name]["input_schema"].get("examples", []):
            try:
                result = distractor(example, ToolContext(tables=tables))
            except Exception as error:
                message = f"{distractor.name}({json.dumps(example)}): {_error(error, folder)}"
                problems.append(("distractors_run", artifact, message, "complexity"))
                continue
            wrong = _check_result(distractor, result, outputs)
            if wrong:
                message = f"{distractor.name}({json.dumps(example)}): {wrong}"
                problems.append(("distractors_run", artifact, message, "complexity"))
    return problems
