"""ABCD (Action-Based Conversations Dataset) import: its published conversations become
next-action tasks, ``abcd/next-action``.

Read from the user's folder in place (registered like SOP-Bench imports, nothing copied):

- the conversations: ``abcd*.json`` or ``abcd*.json.gz``: a list of records, or an object of
  splits (``train`` / ``dev`` / ``test``) each a list. A record has ``convo_id``, ``scenario``
  (``flow``, ``subflow``...), ``original`` (``[speaker, text]`` pairs) and ``delexed`` (turns
  ``{speaker, text, turn_count, targets, candidates}``, ``targets`` being ``[intent, nextstep,
  action, values, utterance_rank]``);
- ``guidelines.json``: flow -> ``subflows`` -> subflow -> ``actions`` (``{type, button, text,
  subtext}``): the guideline text each task is given;
- ``ontology.json``: ``actions`` (the action names: a list, or an object of lists by kind);
- ``kb.json``: must be present (its content is not used by this task).

Every delexed turn whose ``nextstep`` is ``take_action`` is a task: the conversation before
it and the subflow's guideline in, the action and its values as the gold. Any problem (a
missing file, unreadable JSON, a malformed record or turn, an action the ontology does not
name) is one :class:`AbcdError` line, raised before anything is registered.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from sopgym.core.domain import DomainPack, GeneratedData, PolicyRun
from sopgym.core.exceptions import DataError
from sopgym.core.tasks import Solution, Task
from sopgym.evaluation.scorers import Case, Score, Scorer, schema_valid
from sopgym.evaluation.scorers.fields import values_match
from sopgym.importers import ABCD_PREFIX
from sopgym.importers.adapter import ImportedDomain
from sopgym.types import JSON

PREFIX: Final = ABCD_PREFIX
DOMAIN_NAME: Final = "abcd/next-action"
FILES: Final = ("guidelines.json", "ontology.json", "kb.json")
SPLITS: Final = ("train", "dev", "test")
SPEAKERS: Final = ("agent", "customer", "action")
ROLES: Final = {"agent": "agent", "customer": "user", "action": "action"}
VERSION: Final = "1"  # bump when the tasks built change shape
SOP: Final = """# Next action (imported from ABCD)

You are a customer-service agent. The task gives the conversation so far (`conversation`:
turns of the `user` — the customer —, the `agent`, and `action` turns for the actions already
taken) and the guideline of the customer's issue (`guideline`: the steps of its subflow).
Decide the action the agent takes now, as the guideline prescribes, and the values it enters.

Answer `action` (the action's name) and `values` (the values entered, as strings, in order).
"""


class AbcdError(DataError, ValueError):
    """The folder cannot be imported; the message says where and why, in one line."""


@dataclass(frozen=True)
class AbcdTask:
    task: Task
    action: str
    values: list[str]


def read_abcd(folder: Path) -> tuple[list[AbcdTask], list[str]]:
    """The tasks of an ABCD folder and the ontology's action names."""
    if not folder.is_dir():
        raise AbcdError(f"{folder} is not a folder")
    guidelines, ontology, _ = (_json(folder / name) for name in FILES)
    actions = _actions(ontology, folder / "ontology.json")
    tasks: list[AbcdTask] = []
    path = _conversations_file(folder)
    for record in _records(_json(path), path):
        tasks += _tasks(record, guidelines, set(actions), path)
    if not tasks:
        raise AbcdError(f"{path}: no turn takes an action: nothing to import")
    return tasks, actions


def _json(path: Path) -> Any:
    if not path.is_file():
        raise AbcdError(f"{path.parent}: missing {path.name}")
    try:
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        return json.loads(raw)
    except (OSError, EOFError, ValueError) as error:
        raise AbcdError(f"{path}: not readable JSON ({error})") from None


def _conversations_file(folder: Path) -> Path:
    found = sorted([*folder.glob("abcd*.json"), *folder.glob("abcd*.json.gz")])
    if not found:
        raise AbcdError(f"{folder}: missing the conversations file (abcd*.json or "
                        f"abcd*.json.gz)")  # fmt: skip
    if len(found) > 1:
        names = ", ".join(p.name for p in found)
        raise AbcdError(f"{folder}: several conversations files ({names})")
    return found[0]


def _actions(ontology: Any, path: Path) -> list[str]:
    listed = ontology.get("actions") if isinstance(ontology, dict) else None
    if isinstance(listed, dict):
        listed = [name for names in listed.values() for name in (names or [])]
    if not isinstance(listed, list) or not listed or not all(isinstance(a, str) for a in listed):
        raise AbcdError(f"{path}: 'actions' must be a list of names or an object of lists")
    return sorted(set(listed))


def _records(data: Any, path: Path) -> list[Any]:
    if isinstance(data, dict):
        unknown = sorted(set(data) - set(SPLITS))
        if unknown:
            raise AbcdError(f"{path}: unknown split {unknown[0]!r} (splits: {', '.join(SPLITS)})")
        data = [r for split in SPLITS for r in _list(data.get(split, []), f"{path}: {split}")]
    return _list(data, str(path))


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise AbcdError(f"{where}: expected a list of conversations")
    return value


def _tasks(record: Any, guidelines: Any, actions: set[str], path: Path) -> list[AbcdTask]:
    if not isinstance(record, dict) or not {"convo_id", "scenario", "original",
                                            "delexed"} <= set(record):  # fmt: skip
        raise AbcdError(f"{path}: a conversation lacks convo_id, scenario, original or delexed")
    convo = record["convo_id"]
    where = f"{path}: conversation {convo}"
    scenario = record["scenario"]
    if not isinstance(scenario, dict) or not all(isinstance(scenario.get(k), str)
                                                 for k in ("flow", "subflow")):  # fmt: skip
        raise AbcdError(f"{where}: scenario needs a flow and a subflow")
    guideline = _guideline(guidelines, scenario["flow"], scenario["subflow"], where)
    turns: list[JSON] = []
    out: list[AbcdTask] = []
    for index, turn in enumerate(_list(record["delexed"], where)):
        speaker, text, targets = _turn(turn, f"{where}, turn {index}")
        if speaker == "action" and targets[1] == "take_action":
            action, values = targets[2], targets[3]
            if action not in actions:
                raise AbcdError(f"{where}, turn {index}: unknown action {action!r} (not in "
                                f"ontology.json)")  # fmt: skip
            task = Task(f"abcd-{convo}-{index:03d}", DOMAIN_NAME, {
                "convo_id": str(convo), "flow": scenario["flow"],
                "subflow": scenario["subflow"], "conversation": list(turns),
                "guideline": guideline}, kind="json_answer")  # fmt: skip
            out.append(AbcdTask(task, action, [str(v) for v in values]))
        turns.append({"role": ROLES[speaker], "content": text})
    return out


def _turn(turn: Any, where: str) -> tuple[str, str, list[Any]]:
    if not isinstance(turn, dict) or turn.get("speaker") not in SPEAKERS:
        raise AbcdError(f"{where}: a turn needs a speaker ({', '.join(SPEAKERS)})")
    targets = turn.get("targets")
    if not isinstance(turn.get("text"), str) or not isinstance(targets, list) or len(
            targets) != 5 or not isinstance(targets[3], list):  # fmt: skip
        raise AbcdError(f"{where}: a turn needs text and targets [intent, nextstep, action, "
                        f"values, utterance_rank]")  # fmt: skip
    return turn["speaker"], turn["text"], targets


def _guideline(guidelines: Any, flow: str, subflow: str, where: str) -> str:
    try:
        steps = guidelines[flow]["subflows"][subflow]["actions"]
        return "\n".join(f"- [{s['button']}] {s['text']} {s.get('subtext', '')}".rstrip()
                         for s in steps)  # fmt: skip
    except (KeyError, TypeError):
        raise AbcdError(f"{where}: guidelines.json has no actions for {flow}/{subflow}") from None


def field_accuracy(field: str) -> Scorer:
    """One answer field against the annotation (``action``: top-1 action accuracy;
    ``values``: value accuracy), compared as :func:`values_match` compares output fields."""

    def measure(case: Case) -> Score:
        right = values_match(case.answer.get(field), case.gold.outputs[field])
        return Score(float(right), {}, f"{field} {'right' if right else 'wrong'}")

    return Scorer(field, measure, gates=True)


@dataclass
class AbcdDomain(ImportedDomain):
    """The imported tasks; its SOP is the task's description (the guideline comes with each
    task), not a file of the user's folder."""

    def sop(self, variant: str = "clean") -> str:
        if variant != "clean":
            raise KeyError(f"domain {self.name} has no SOP variant {variant!r}")
        return SOP


def build_abcd(folder: Path) -> DomainPack:
    tasks, actions = read_abcd(folder)
    expected = {t.task.id: {"action": t.action, "values": t.values} for t in tasks}

    def generate(seed: int, files_dir: Path) -> GeneratedData:
        return GeneratedData(tables={}, tasks=[t.task for t in tasks])

    def solve(task: Task, run: PolicyRun) -> Solution:
        return Solution(dict(expected[task.id]))  # the published annotation is the gold

    digest = hashlib.sha256(f"abcd:{VERSION}:{folder.resolve()}".encode())
    for path in sorted(folder.iterdir()):
        if path.is_file() and path.name.endswith((".json", ".json.gz")):
            digest.update(path.name.encode() + path.read_bytes())
    return AbcdDomain(
        name=DOMAIN_NAME,
        title=f"ABCD next action (imported from {folder})",
        folder=folder,
        tools=[],
        generate=generate,
        solve=solve,
        kind="json_answer",
        input_schema={"type": "object", "properties": {
            "convo_id": {"type": "string"}, "flow": {"type": "string"},
            "subflow": {"type": "string"}, "conversation": {"type": "array"},
            "guideline": {"type": "string"}},
            "required": ["convo_id", "flow", "subflow", "conversation", "guideline"]},
        output_schema={"type": "object", "properties": {
            "action": {"enum": actions},
            "values": {"type": "array", "items": {"type": "string"}}},
            "required": ["action", "values"], "additionalProperties": False},
        scorers=[field_accuracy("action"), field_accuracy("values"), schema_valid(gates=True)],
        sop_files={"clean": "<ABCD task description>"},
        source_digest=digest.hexdigest()[:12],
    )  # fmt: skip
