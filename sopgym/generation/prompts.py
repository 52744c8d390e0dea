"""What the pipeline asks the model, stage by stage (our own wording).

Every answer is a set of files, each between ``=== FILE: <path> ===`` and ``=== END FILE ===``
lines, so that a file may itself contain Markdown fences. The prompt shows the artifacts the
stage builds on; on a retry it adds the previous answer and the gate's error.
"""

from __future__ import annotations

import re

SYSTEM = """\
You build benchmark domains for sopgym, a platform where AI agents follow a Standard Operating
Procedure (SOP) by calling HTTP tools, and are scored against labels that a reference policy
computes by running the same tools. You write one part of a domain at a time. Be concrete,
deterministic and self-consistent with the artifacts you are shown. Answer only with the
requested files, each written as:

=== FILE: <path> ===
<the whole file>
=== END FILE ===
"""

FILE_BLOCK = re.compile(
    r"^=== FILE: (?P<path>[^\n=]+?) ===\n(?P<body>.*?)^=== END FILE ===$", re.S | re.M
)

TOOL_RULES = """\
Tool implementations are plain functions `def <tool_name>(args: dict, ctx) -> dict`. `args`
has already been validated against the tool's input schema. Read data only through
`ctx.tables.row(table, key_column, value)` (a dict or None) and `ctx.tables.rows(table)`.
Return a JSON object matching the output schema; never raise for a missing record that the SOP
treats as a branch: report it as a fact (e.g. `"order_found": false` with the other keys
null). Never return a key named like an output field of the task. No I/O, no randomness, no
clock: the same call always returns the same result. Import only the standard library and
`from sopgym.core.errors import ToolError`."""

STAGES: dict[str, str] = {
    "context": """\
Write `context.md`: the business context for the task below. Cover the organisation and its
goal, the actors, the records it keeps (as tables with their key columns), the decisions the
process produces (each with its closed set of values), and the rules and thresholds that lead
to each decision. Keep it to one page.""",
    "schema": """\
Write `schema.json`, the dataset schema, as one JSON object:
{"tables": {"<table>": {"key": "<key column>", "columns": {"<column>": <JSON Schema>}}},
 "input_schema": <JSON Schema of a task's inputs: type object, properties, required>,
 "output_schema": <JSON Schema of the final answer: type object, properties, required,
                   additionalProperties false; every property an `enum` of strings>}
Input and output property names must differ; the key column must be one of its columns.""",
    "sop": """\
Write `sop.md`: the SOP an agent follows, in numbered steps. Name each tool the agent calls
(snake_case names), when to call it, with which inputs, and exactly how its results decide each
output field. Name every output field and every value it can take, in backticks.""",
    "graph": """\
Write `graph.json`, the API dependency graph of the SOP's tools:
{"tools": [{"name": "<tool>", "purpose": "<one line>"}], "dependencies": {"<tool>": ["<tool it
must come after>", ...]}}. Use exactly the tool names of the SOP, in SOP order. A dependency
means: when both are called, the dependency is called first. No cycles.""",
    "specs": """\
Write `specs.json`: the contract of every tool of the graph, in the graph's order, as
{"<tool>": {"description": "...", "input_schema": {...}, "output_schema": {...}}}.
Input schemas: type object, properties, required, additionalProperties false. Output schemas:
type object with properties and required; a field that can be absent is typed with null too.
No output schema property may be named like an output field of the task.""",
    "tools": f"""\
Write two files. `tools/implementations.py`: one function per tool of specs.json.
{TOOL_RULES}
`tools/contract_tests.json`: {{"tables": {{"<table>": [<row>, ...]}}, "cases": [{{"tool": "...",
"arguments": {{...}}, "expect": {{<keys the result must have, with their values>}}}}]}}: a small
fixture dataset in the schema's tables and at least two cases per tool (one a missing record
where the tool looks one up).""",
    "policy": """\
Write `policy.py`: the SOP as code, the reference policy that computes every label.
Define `solve(task, run) -> Solution` (`from sopgym.core.tasks import Solution, Task`,
`from sopgym.core.domain import PolicyRun`). Read inputs from `task.inputs`; call tools only as
`run.call("<tool>", **arguments)` with literal tool names; apply the SOP's rules to what they
return; return `Solution(outputs={<every output field>: <value>}, decisions={...})`. Record the
branch taken and any scores in `decisions`. Every `if`/`else` branch must be reachable by some
task: write no defensive code for cases the data never produces.""",
    "generator": """\
Write `generator.py`: `generate(seed: int, files_dir: Path) -> GeneratedData` (`from
sopgym.core.domain import GeneratedData`, `from sopgym.core.tasks import Task`, pandas as pd).
Draw everything from `random.Random(seed)`. Build the schema's tables (one DataFrame per table,
unique keys) and 30 to 60 tasks `Task(id=f"task-{i:03d}", domain="generated", inputs={...})`
whose inputs hold only input fields and validate against the input schema. Never decide a label
here: rotate scenarios (found / missing records, each threshold side, each category) so that
every branch of the policy runs for at least 3 tasks and every value of every output field
comes out for at least 3 tasks.""",
    "complexity": f"""\
Write four files that make the benchmark harder without changing any outcome.
`sop_noisy.md`: the same SOP with documentation noise (history, cross-references, notes that
change no rule). `sop_abstract.md`: the same SOP written at a higher level (goals and rules,
fewer step-by-step hints), still naming every output field and its values. `distractors.json`:
2 or 3 tools the SOP never needs, named unlike any SOP tool but close to them or plausibly
useful,
formatted like specs.json, each input schema with `"examples": [<valid arguments>]` using
keys that exist in the data. `distractors.py`: their implementations.
{TOOL_RULES}""",
}


def stage_prompt(
    stage: str,
    business_task: str,
    shown: dict[str, str],
    retry: tuple[str, str] | None = None,
) -> str:
    """The user message of one attempt: the task, the artifacts it builds on, the request,
    and on a retry the previous answer and what the gate found wrong with it."""
    parts = [f"# Business task\n{business_task}"]
    for path, text in shown.items():
        parts.append(f"# Artifact `{path}`\n{text}")
    parts.append(f"# Your part\n{STAGES[stage]}")
    if retry is not None:
        previous, error = retry
        parts.append(
            f"# Your previous answer failed a check\n{error}\n\nPrevious answer:\n{previous}\n\n"
            "Answer again with every requested file, corrected."
        )
    return "\n\n".join(parts)


def parse_files(text: str) -> dict[str, str]:
    """The files of an answer, by path."""
    return {m["path"].strip(): m["body"] for m in FILE_BLOCK.finditer(text)}
