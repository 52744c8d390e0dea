"""SOP-Maze's published raw data as ``sopmaze/<name>`` domains (answer-only, no tools).

The published shape: one JSON file per scenario, a JSON array of records, each with ``input``
(the whole prompt as one string), ``json_schema`` (draft-07, the answer's schema), ``target``
(the reference answer object) and ``no_required_eval_acc_keys`` (key names never compared, at
any depth, or null). A file name carries ``BFS`` (wide: our LRS) or ``DFS`` (deep: HRS) when the
scenario has one, and ends with its record count.

Bad input (a file that is not JSON, a record without ``target``, a schema that does not
compile) is a :class:`MazeInputError` naming file and record: the import then registers
nothing. What merely makes an item unscorable (a target invalid against its own schema, an
empty target, a repeated record) is a finding: the item is kept, flagged in its gold
(``decisions.unscorable``), and left out of the SOP-Maze breakdown instead of counting as a
failure (docs/sop-maze-import.md).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jsonschema import Draft7Validator
from jsonschema.exceptions import SchemaError

from sopgym.core.domain import GeneratedData, PolicyRun
from sopgym.core.exceptions import DataError
from sopgym.core.tasks import Solution, Task
from sopgym.evaluation.scorers import default_scorers
from sopgym.evaluation.scorers.answers import schema_errors
from sopgym.evaluation.scorers.base import TASK_SCHEMA
from sopgym.evaluation.scorers.fields import FREE_TEXT_KEYS, free_text_keys
from sopgym.evaluation.scorers.maze_official import answer_official, official_inputs
from sopgym.importers import MAZE_PREFIX
from sopgym.importers.adapter import ImportedDomain
from sopgym.importers.findings import Finding
from sopgym.importers.maze_names import domain_name, scenario_of, shape_of
from sopgym.importers.maze_scorable import scorable_answer
from sopgym.types import JSON

PREFIX = MAZE_PREFIX
DRAFT_07 = "http://json-schema.org/draft-07/schema#"
ADAPTER_VERSION = "3"  # 2: mended targets, shapes from the paper's table; 3: official grade
# Draft-07's vocabulary; any other key in a schema (bar our "x-" annotations) is unknown
KEYWORDS = frozenset({
    "$schema", "$id", "$ref", "$comment", "title", "description", "default", "examples",
    "readOnly", "writeOnly", "type", "enum", "const", "multipleOf", "maximum",
    "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern",
    "items", "additionalItems", "maxItems", "minItems", "uniqueItems", "contains",
    "maxProperties", "minProperties", "required", "properties", "patternProperties",
    "additionalProperties", "dependencies", "propertyNames", "if", "then", "else", "allOf",
    "anyOf", "oneOf", "not", "format", "contentMediaType", "contentEncoding", "definitions",
})  # fmt: skip
# keywords whose value is a map of names to schemas (the names are not keywords)
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "definitions", "dependencies"})
_COUNT = re.compile(r"_?(\d+)$")


class MazeInputError(DataError, ValueError):
    """A file or record that cannot be imported; the message names file and record."""


@dataclass
class Record:
    index: int
    prompt: str
    schema: JSON
    target: JSON
    free_keys: list[str]
    unscorable: str | None = None
    answer: JSON | None = None  # the scorable answer: the target, mended where never compared
    mended: list[str] = field(default_factory=list)  # where the target was mended
    # required keys the target lacks, declared never compared (in free_keys too)
    uncompared: list[str] = field(default_factory=list)


@dataclass
class MazeFile:
    path: Path
    name: str  # sopmaze/<slug>
    shape: str  # "LRS", "HRS" or "unknown" (maze_names.shape_of)
    records: list[Record]
    findings: list[Finding] = field(default_factory=list)

    @property
    def scorable(self) -> list[Record]:
        return [r for r in self.records if r.unscorable is None]


def read_file(path: Path, shape: str | None = None) -> MazeFile:
    """Parse one published file; :class:`MazeInputError` for bad input, findings for the rest.
    ``shape`` overrides the shape the name gives (``--shape``)."""
    where = path.name
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError) as error:
        raise MazeInputError(f"{where}: not a JSON file ({error})") from None
    if not isinstance(data, list):
        raise MazeInputError(f"{where}: expected a JSON array of records")
    records = [_record(where, index, item) for index, item in enumerate(data)]
    found = MazeFile(path, domain_name(path), shape_of(path, shape), records)
    found.findings = _audit(found)
    return found


def _record(where: str, index: int, item: Any) -> Record:
    here = f"{where}: record {index}"
    if not isinstance(item, dict):
        raise MazeInputError(f"{here}: not a JSON object")
    for key in ("input", "json_schema", "target"):
        if key not in item:
            raise MazeInputError(f"{here}: no {key!r}")
    prompt, schema, target = item["input"], item["json_schema"], item["target"]
    if not isinstance(prompt, str) or not prompt.strip():
        raise MazeInputError(f"{here}: 'input' is not a non-empty string")
    if not isinstance(schema, dict):
        raise MazeInputError(f"{here}: 'json_schema' is not an object")
    try:
        Draft7Validator.check_schema(schema)
    except SchemaError as error:
        raise MazeInputError(f"{here}: 'json_schema' does not compile ({error.message})") from None
    if target is not None and not isinstance(target, dict):
        raise MazeInputError(f"{here}: 'target' is not an object")
    free = item.get("no_required_eval_acc_keys") or []
    if not isinstance(free, list) or not all(isinstance(k, str) for k in free):
        raise MazeInputError(f"{here}: 'no_required_eval_acc_keys' is not a list of names")
    return Record(index, prompt, schema, target or {}, free)


def _audit(found: MazeFile) -> list[Finding]:
    """What makes items unscorable (each such record is flagged), and unknown keywords."""
    where = found.path.name
    findings = []
    invalid, empty, repeated, mended, unknown = [], [], [], [], set()
    seen: dict[str, int] = {}
    for record in found.records:
        key = json.dumps([record.prompt, record.target], sort_keys=True, ensure_ascii=False)
        if key in seen:
            repeated.append(record.index)
            record.unscorable = f"duplicate of record {seen[key]}"
        seen.setdefault(key, record.index)
        if not record.target:
            empty.append(record.index)
            record.unscorable = "empty target"
        elif schema_errors(record.target, _draft(record.schema)):
            schema = _draft(record.schema)
            free = free_text_keys({**schema, FREE_TEXT_KEYS: record.free_keys})
            found_answer = scorable_answer(record.target, schema, free)
            if isinstance(found_answer, str):
                invalid.append(record.index)
                record.unscorable = f"target invalid in a compared key: {found_answer}"
            else:
                record.answer, record.mended = found_answer.answer, found_answer.where
                record.free_keys = [*record.free_keys, *found_answer.uncompared]
                record.uncompared = found_answer.uncompared
                mended.append(record.index)
        unknown |= unknown_keywords(record.schema)
    if invalid:
        findings.append(
            Finding(
                "target_invalid",
                f"{len(invalid)} record(s): a verbatim-gold answer would score 0",
                rows=invalid,
                file=where,
            )
        )
    if mended:
        findings.append(
            Finding(
                "target_mended",
                f"{len(mended)} record(s) invalid only where never compared (a never-compared "
                "key, spaces around an enum value): scored, the oracle answers them mended",
                rows=mended,
                file=where,
            )
        )
    if empty:
        findings.append(
            Finding(
                "empty_expected_outputs",
                f"{len(empty)} record(s) with an empty target",
                rows=empty,
                file=where,
            )
        )
    if repeated:
        findings.append(
            Finding(
                "duplicate_keys",
                f"{len(repeated)} record(s) repeat an earlier one (same input and target)",
                rows=repeated,
                file=where,
            )
        )
    named = _COUNT.search(found.path.stem)
    if named and int(named.group(1)) != len(found.records):
        findings.append(
            Finding(
                "record_count_mismatch",
                f"the name says {named.group(1)} records, the file holds {len(found.records)}",
                file=where,
            )
        )
    if unknown:
        findings.append(
            Finding(
                "unknown_schema_keywords",
                "keywords draft-07 does not define (validators ignore them)",
                file=where,
                details=sorted(unknown),
            )
        )
    return findings


def unknown_keywords(schema: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key not in KEYWORDS and not key.startswith("x-"):
                found.add(key)
            if key in _SCHEMA_MAPS and isinstance(value, dict):
                for sub in value.values():
                    found |= unknown_keywords(sub)
            elif key not in ("enum", "const", "default", "examples", "required"):
                found |= unknown_keywords(value)
    elif isinstance(schema, list):
        for sub in schema:
            found |= unknown_keywords(sub)
    return found


def _draft(schema: JSON) -> JSON:
    """The record's schema, validated as draft-07 unless it names its own draft."""
    return schema if "$schema" in schema else {"$schema": DRAFT_07, **schema}


@dataclass
class MazeImport(ImportedDomain):
    """An imported SOP-Maze file: the SOP is part of every item's prompt, so the SOP an
    episode is given only says so."""

    def sop(self, variant: str = "clean") -> str:
        if variant != "clean":
            raise KeyError(f"domain {self.name} has no SOP variant {variant!r}")
        return "The procedure is part of the task's prompt: follow the SOP written there."


def build_domain(found: MazeFile) -> MazeImport:
    """The file's records as answer-only tasks; each gold carries its record's schema (the
    answer is validated against it), the keys not compared, the shape and any flag."""
    slug = found.name.removeprefix(PREFIX)
    tasks, gold = [], {}
    for record in found.records:
        task_id = f"{slug}-{record.index:04d}"
        tasks.append(Task(task_id, found.name, {"prompt": record.prompt}, kind="json_answer"))
        decisions: JSON = {TASK_SCHEMA: {**_draft(record.schema), FREE_TEXT_KEYS: record.free_keys}}
        decisions.update(shape=found.shape, sources=[])
        if record.unscorable:
            decisions["unscorable"] = record.unscorable
        if record.mended:
            decisions["mended"] = record.mended  # where the answer differs from the target
            # the official grade compares with the target and skip list as published
            published_skip = [k for k in record.free_keys if k not in record.uncompared]
            decisions.update(official_inputs(record.target, published_skip))
        answer = record.answer if record.answer is not None else record.target
        gold[task_id] = Solution(dict(answer), decisions)
    schemas = {json.dumps(r.schema, sort_keys=True) for r in found.records}
    shared = found.records[0].schema if len(schemas) == 1 and found.records else {"type": "object"}

    def generate(seed: int, files_dir: Path) -> GeneratedData:
        return GeneratedData(tables={}, tasks=list(tasks))

    def solve(task: Task, run: PolicyRun) -> Solution:
        return gold[task.id]

    return MazeImport(
        name=found.name,
        title=_title(found),
        folder=found.path.parent,
        tools=[],
        generate=generate,
        solve=solve,
        kind="json_answer",
        input_schema={
            "type": "object",
            "properties": {"prompt": {"type": "string", "minLength": 1}},
            "required": ["prompt"],
            "additionalProperties": False,
        },
        output_schema=_draft(shared),
        sop_files={"clean": "(in each prompt)"},
        reference_policy=False,
        source_digest=_digest(found.path, found.shape),
        # our strict grade and, beside it, the official one (never gating success)
        scorers=[*default_scorers("json_answer"), answer_official()],
    )


def _title(found: MazeFile) -> str:
    """What ``sopgym list`` shows: the paper's index, the shape, the file."""
    scenario = scenario_of(found.path)
    known = f"{scenario.index} {scenario.title.replace('_', ' ')}, " if scenario else ""
    return f"SOP-Maze {known}shape {found.shape} (imported from {found.path})"


def _digest(path: Path, shape: str) -> str:
    digest = hashlib.sha256(f"sopmaze:{ADAPTER_VERSION}:{shape}".encode())
    digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def maze_files(path: Path) -> list[Path]:
    """The published files at ``path``: the file itself, or the folder's ``*.json`` files."""
    return [path] if path.is_file() else sorted(path.glob("*.json"))
