"""The stages, in order, with the artifacts each writes and the gates that check them.

A stage either asks the model (it has a prompt in :mod:`.prompts`) or computes (``tasks``,
``oracle``). Gates here read JSON and text only; those that must run generated code call
:mod:`.checks` in a child process with a time limit. A gate's failure names the gate, the
artifact, what is wrong, and the stage whose output must change (a computed stage's defect
lies in a model stage before it: a branch no task reaches is the generator's to fix).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from graphlib import CycleError, TopologicalSorter
from pathlib import Path
from typing import Any

import jsonschema

from sopgym.core.isolated import IsolatedTimeout, run_isolated
from sopgym.generation import checks
from sopgym.generation.pack import (
    DISTRACTORS_FILE,
    GRAPH_FILE,
    SCHEMA_FILE,
    SNAKE_NAME,
    SPECS_FILE,
    read_json,
    register_pack,
)

SPEC_KEYS = {"description", "input_schema", "output_schema"}


@dataclass(frozen=True)
class GateFailure:
    gate: str
    artifact: str
    message: str
    retry: str | None  # the stage to ask again, with this failure as feedback; None: stop

    def feedback(self) -> str:
        return f"Gate `{self.gate}` failed on `{self.artifact}`:\n{self.message}"


@dataclass(frozen=True)
class Settings:
    """What gates need besides the artifacts."""

    timeout_s: float  # each child process running generated code
    oracle_timeout_s: float  # the oracle's run through real processes


Gate = Callable[[Path, Settings], GateFailure | None]


@dataclass(frozen=True)
class Stage:
    name: str
    title: str
    artifacts: tuple[str, ...]  # the files the model writes, relative to the pack folder
    shown: tuple[str, ...]  # earlier artifacts its prompt includes
    gates: tuple[Gate, ...]

    @property
    def asks_model(self) -> bool:
        return self.name not in COMPUTED


def _fail(gate: str, artifact: str, message: str, retry: str | None) -> GateFailure:
    return GateFailure(gate, artifact, message, retry)


def _json(folder: Path, artifact: str, stage: str) -> tuple[Any, GateFailure | None]:
    try:
        return read_json(folder / artifact), None
    except (OSError, ValueError) as error:
        return None, _fail("json_parses", artifact, f"not valid JSON: {error}", stage)


def _schema_problem(schema: Any, where: str) -> str | None:
    if not isinstance(schema, dict):
        return f"{where} is not a JSON object"
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as error:
        return f"{where} is not a valid JSON Schema: {error.message}"
    return None


def _children(
    folder: Path,
    settings: Settings,
    check: Callable[[Path], list[checks.Problem]],
    artifact: str,
    stage: str,
) -> GateFailure | None:
    """Run ``check`` on the folder in a child process; its first problem, if any. Code that
    hangs (the child is killed) or kills its process is the defect of ``stage``'s
    ``artifact``."""
    try:
        problems = run_isolated(check, (folder,), settings.timeout_s)
    except IsolatedTimeout as error:
        return _fail(f"{stage}_timeout", artifact, f"generated code hung: {error}", stage)
    except Exception as error:  # the child died (exit, segfault) or its answer was lost
        return _fail(f"{stage}_crash", artifact, f"{type(error).__name__}: {error}", stage)
    if not problems:
        return None
    first = problems[0]
    more = [f"- {p[2]}" for p in problems[1:5]]
    message = first[2] + ("\nAlso:\n" + "\n".join(more) if more else "")
    return _fail(first[0], first[1], message, first[3])


def gate_context(folder: Path, settings: Settings) -> GateFailure | None:
    text = (folder / "context.md").read_text()
    if len(text.split()) < 40:
        return _fail("context_written", "context.md", "fewer than 40 words", "context")
    return None


def gate_schema(folder: Path, settings: Settings) -> GateFailure | None:
    schema, failure = _json(folder, SCHEMA_FILE, "schema")
    if failure:
        return failure

    def bad(message: str) -> GateFailure:
        return _fail("schema_valid", SCHEMA_FILE, message, "schema")

    if not isinstance(schema, dict) or not {"tables", "input_schema", "output_schema"} <= set(
        schema
    ):
        return bad("needs the keys tables, input_schema and output_schema")
    for key in ("input_schema", "output_schema"):
        problem = _schema_problem(schema[key], key)
        if problem:
            return bad(problem)
    inputs = set(schema["input_schema"].get("properties", {}))
    outputs = schema["output_schema"].get("properties", {})
    if not inputs or not outputs:
        return bad("input_schema and output_schema need properties")
    if inputs & set(outputs):
        return bad(f"fields both input and output: {sorted(inputs & set(outputs))}")
    for name, spec in outputs.items():
        if not isinstance(spec, dict) or not spec.get("enum"):
            return bad(f"output field {name!r} has no enum of values")
    if not isinstance(schema["tables"], dict) or not schema["tables"]:
        return bad("tables must name at least one table")
    for table, spec in schema["tables"].items():
        columns = spec.get("columns") if isinstance(spec, dict) else None
        if not isinstance(columns, dict) or spec.get("key") not in columns:
            return bad(f"table {table!r}: its key must be one of its columns")
        for column, column_schema in columns.items():
            problem = _schema_problem(column_schema, f"{table}.{column}")
            if problem:
                return bad(problem)
    return None


def _output_schema(folder: Path) -> dict[str, Any]:
    schema: dict[str, Any] = read_json(folder / SCHEMA_FILE)["output_schema"]
    return schema


def _sop_names_outputs(folder: Path, artifact: str, stage: str) -> GateFailure | None:
    text = (folder / artifact).read_text()
    missing = [
        f"{field}" if field not in text else f"{field}={value}"
        for field, spec in _output_schema(folder)["properties"].items()
        for value in [None, *spec["enum"]]
        if (field not in text if value is None else str(value) not in text)
    ]
    if missing:
        message = f"does not name these output fields / values: {', '.join(missing)}"
        return _fail("sop_names_outputs", artifact, message, stage)
    return None


def gate_sop(folder: Path, settings: Settings) -> GateFailure | None:
    return _sop_names_outputs(folder, "sop.md", "sop")


def gate_graph(folder: Path, settings: Settings) -> GateFailure | None:
    graph, failure = _json(folder, GRAPH_FILE, "graph")
    if failure:
        return failure

    def bad(message: str) -> GateFailure:
        return _fail("graph_valid", GRAPH_FILE, message, "graph")

    try:
        names = [t["name"] for t in graph["tools"]]
        dependencies = graph.get("dependencies", {})
    except (KeyError, TypeError):
        return bad('needs {"tools": [{"name": ...}], "dependencies": {...}}')
    if len(set(names)) != len(names) or not names:
        return bad("tool names must be unique and at least one")
    for name in names:
        if not SNAKE_NAME.match(str(name)):
            return bad(f"tool name {name!r} is not snake_case")
    unknown = {d for k, v in dependencies.items() for d in [k, *v]} - set(names)
    if unknown:
        return bad(f"dependencies name unknown tools: {sorted(unknown)}")
    try:
        TopologicalSorter(dependencies).prepare()
    except CycleError as error:
        return bad(f"dependency cycle: {' -> '.join(error.args[1])}")
    sop = (folder / "sop.md").read_text()
    unnamed = [n for n in names if n not in sop]
    if unnamed:
        return bad(f"tools the SOP never names: {unnamed}")
    return None


def _specs_problem(specs: Any, outputs: set[str]) -> str | None:
    if not isinstance(specs, dict) or not specs:
        return "must map tool names to specs"
    for name, spec in specs.items():
        if not isinstance(spec, dict) or not set(spec) >= SPEC_KEYS:
            return f"{name}: needs description, input_schema and output_schema"
        for key in ("input_schema", "output_schema"):
            problem = _schema_problem(spec[key], f"{name}.{key}")
            if problem:
                return problem
        inputs = spec["input_schema"]
        if inputs.get("type") != "object" or inputs.get("additionalProperties") is not False:
            return f"{name}.input_schema must be a closed object (additionalProperties false)"
        if not set(inputs.get("required", [])) <= set(inputs.get("properties", {})):
            return f"{name}.input_schema requires properties it does not define"
        leaked = outputs & set(spec["output_schema"].get("properties", {}))
        if leaked:
            return f"{name}.output_schema returns output field(s) {sorted(leaked)}"
    return None


def gate_specs(folder: Path, settings: Settings) -> GateFailure | None:
    specs, failure = _json(folder, SPECS_FILE, "specs")
    if failure:
        return failure
    outputs = set(_output_schema(folder)["properties"])
    problem = _specs_problem(specs, outputs)
    if problem is None:
        graph_tools = [t["name"] for t in read_json(folder / GRAPH_FILE)["tools"]]
        if list(specs) != graph_tools:
            problem = f"tools {list(specs)} differ from the graph's {graph_tools} (same, in order)"
    return _fail("specs_valid", SPECS_FILE, problem, "specs") if problem else None


def gate_contract_json(folder: Path, settings: Settings) -> GateFailure | None:
    suite, failure = _json(folder, "tools/contract_tests.json", "tools")
    if failure:
        return failure
    if (
        not isinstance(suite, dict)
        or not isinstance(suite.get("tables"), dict)
        or not isinstance(suite.get("cases"), list)
    ):
        message = 'needs {"tables": {...}, "cases": [...]}'
        return _fail("json_parses", "tools/contract_tests.json", message, "tools")
    return None


def gate_tools(folder: Path, settings: Settings) -> GateFailure | None:
    return _children(folder, settings, checks.check_tools, "tools/implementations.py", "tools")


def gate_policy(folder: Path, settings: Settings) -> GateFailure | None:
    return _children(folder, settings, checks.check_policy, "policy.py", "policy")


def gate_generator(folder: Path, settings: Settings) -> GateFailure | None:
    return _children(folder, settings, checks.check_generator, "generator.py", "generator")


def gate_tasks(folder: Path, settings: Settings) -> GateFailure | None:
    return _children(folder, settings, checks.check_tasks, "generator.py", "generator")


def gate_variants(folder: Path, settings: Settings) -> GateFailure | None:
    for artifact in ("sop_noisy.md", "sop_abstract.md"):
        failure = _sop_names_outputs(folder, artifact, "complexity")
        if failure:
            return failure
    return None


def gate_distractors(folder: Path, settings: Settings) -> GateFailure | None:
    specs, failure = _json(folder, DISTRACTORS_FILE, "complexity")
    if failure:
        return failure
    problem = _specs_problem(specs, set(_output_schema(folder)["properties"]))
    tools = set(read_json(folder / SPECS_FILE))
    if problem is None:
        clashing = sorted(tools & set(specs))
        unexemplified = [n for n, s in specs.items() if not s["input_schema"].get("examples")]
        if clashing:
            problem = f"distractors named like SOP tools: {clashing}"
        elif unexemplified:
            problem = f"distractors without input_schema.examples: {unexemplified}"
    if problem:
        return _fail("distractors_valid", DISTRACTORS_FILE, problem, "complexity")
    return _children(
        folder, settings, checks.check_distractors, "tools/distractors.py", "complexity"
    )


ORACLE_RUN = "oracle"


def gate_oracle(folder: Path, settings: Settings) -> GateFailure | None:
    """Register the pack and run ``sopgym run <pack> --agent oracle`` in its own process tree
    (runner, tool service, gateway, workers); the oracle must solve every task."""
    name = register_pack(folder)
    runs = folder.parent / ORACLE_RUN
    command = [
        sys.executable,
        "-m",
        "sopgym",
        "run",
        name,
        "--agent",
        "oracle",
        "--workers",
        "2",
        "--runs-dir",
        str(runs),
        "--run-id",
        "oracle",
        "--data-root",
        str(runs / "data"),
        "--no-trace",
    ]
    summary_path = runs / "oracle" / "summary.json"
    summary_path.unlink(missing_ok=True)
    (runs / "oracle" / "results.jsonl").unlink(missing_ok=True)
    try:
        finished = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=settings.oracle_timeout_s,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    except subprocess.TimeoutExpired:
        message = f"`sopgym run {name} --agent oracle` passed {settings.oracle_timeout_s:g} s"
        return _fail("oracle_100", ORACLE_RUN, message, None)
    (runs / "run.log").write_text(finished.stdout + finished.stderr)
    if finished.returncode != 0 or not summary_path.exists():
        tail = (finished.stderr or finished.stdout).strip().splitlines()[-5:]
        message = f"`sopgym run {name} --agent oracle` exited {finished.returncode}: " + " | ".join(
            tail
        )
        return _fail("oracle_100", ORACLE_RUN, message, None)
    summary = json.loads(summary_path.read_text())
    solved, total = oracle_score(summary)
    if total == 0 or solved != total:
        message = (
            f"the oracle solved {solved}/{total} tasks through the real services; "
            f"see {runs / 'oracle' / 'results.jsonl'}"
        )
        return _fail("oracle_100", ORACLE_RUN, message, "tools")
    return None


def oracle_score(summary: dict[str, Any]) -> tuple[int, int]:
    """(tasks solved, tasks run) of a run's summary.json; an infrastructure error is no
    solved task."""
    return int(summary["correct"]), int(summary["tasks"])


COMPUTED = frozenset({"tasks", "oracle"})

STAGES: tuple[Stage, ...] = (
    Stage("context", "business context", ("context.md",), ("context-input",), (gate_context,)),
    Stage("schema", "dataset schema", (SCHEMA_FILE,), ("context.md",), (gate_schema,)),
    Stage("sop", "SOP", ("sop.md",), ("context.md", SCHEMA_FILE), (gate_sop,)),
    Stage("graph", "API dependency graph", (GRAPH_FILE,), ("sop.md",), (gate_graph,)),
    Stage("specs", "API specs", (SPECS_FILE,), (SCHEMA_FILE, "sop.md", GRAPH_FILE), (gate_specs,)),
    Stage(
        "tools",
        "tool code",
        ("tools/implementations.py", "tools/contract_tests.json"),
        (SCHEMA_FILE, "sop.md", SPECS_FILE),
        (gate_contract_json, gate_tools),
    ),
    Stage(
        "policy",
        "reference policy",
        ("policy.py",),
        (SCHEMA_FILE, "sop.md", SPECS_FILE),
        (gate_policy,),
    ),
    Stage(
        "generator",
        "data generator",
        ("generator.py",),
        (SCHEMA_FILE, "sop.md", SPECS_FILE, "tools/implementations.py", "policy.py"),
        (gate_generator,),
    ),
    Stage("tasks", "tasks and labels", (), (), (gate_tasks,)),
    Stage(
        "complexity",
        "complexity injection",
        ("sop_noisy.md", "sop_abstract.md", DISTRACTORS_FILE, "tools/distractors.py"),
        (SCHEMA_FILE, "sop.md", SPECS_FILE),
        (gate_variants, gate_distractors),
    ),
    Stage("oracle", "oracle through real services", (), (), (gate_oracle,)),
)
STAGE_NAMES = tuple(s.name for s in STAGES)


def stage(name: str) -> Stage:
    return STAGES[STAGE_NAMES.index(name)]
