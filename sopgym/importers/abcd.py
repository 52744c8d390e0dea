"""ABCD (Action-Based Conversations Dataset) import: its published conversations become
TOD-ProcBench's task 1 (instruction retrieval and next action prediction), ``abcd/next-action``.

Read from the user's folder in place (registered like SOP-Bench imports, nothing copied), in
the shape of the ABCD repository's ``data/``:

- ``guidelines.json``: keyed by display names: flow (``"Product Defect"``) ->
  ``description``, ``subflows`` keyed by display names (``"Return Due to Size"``) ->
  ``instructions`` (optional), ``actions`` (``{type, button, text, subtext}``);
- ``ontology.json``: the ids: ``intents.flows`` (alphabetical, while ``guidelines.json``
  holds its flows in another order), ``intents.subflows[flow]`` (in the order of the flow's
  display names) (``product_defect`` -> ``refund_initiate, ..., return_size``), and
  ``actions`` (a list, or an object of lists by kind), ``values``, ``next_steps``;
- ``kb.json``: must be present (its content is not used by this task);
- the conversations: ``abcd*.json`` or ``abcd*.json.gz``: a list of records, or an object of
  splits (``train`` / ``dev`` / ``test``). A record has ``convo_id``, ``scenario`` (``personal``,
  ``order``, ``product``, ``flow``, ``subflow``), ``original`` (``[speaker, text]`` pairs) and
  ``delexed`` (turns ``{speaker, text, turn_count, targets, candidates}``, ``targets`` being
  ``[flow, next_step, action, values, utterance_index]``).

A flow id is mapped to the flow of the same name (:func:`flow_key`: ``single_item_query`` is
"Single-Item Query"); within a flow, subflow ids are mapped to display names by position, and
each pair is checked by name (a word of the id begins a word of the display name, or the
reverse); a scenario's subflow missing from the
ontology is tried without a numeric suffix (``timing_4`` -> ``timing``). What cannot be mapped
is one line each (:attr:`AbcdData.notes`), and its conversations are left out, counted there;
an import that maps no conversation fails with those lines (:attr:`AbcdError.notes`).

A task is made after every customer turn (:func:`_tasks`): the conversation so far as shown
(``original``; every guideline section and the action names are in the domain's SOP, so
retrieval is over all of them), and the label: the
next action the agent takes in the rest of the conversation, or ``empty`` when it takes none;
its values are those the agent can read in what it is shown (docs/tod-import.md). Any problem
with the files (missing, unreadable, a malformed record or turn, an action the ontology does
not name) is one :class:`AbcdError` line, raised before anything is registered.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from sopgym.core.domain import DomainPack, GeneratedData, PolicyRun
from sopgym.core.exceptions import DataError
from sopgym.core.jsonio import InputRefused, parse_input_json, read_input
from sopgym.core.tasks import Solution, Task
from sopgym.domains.tod.scoring import section_top1, section_top2
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
EMPTY: Final = "empty"  # TOD-ProcBench's label when the agent has no next action
POSITIONS: Final = ("beginning", "middle", "end")
FORMAT: Final = "abcd"  # the instruction format: ABCD's own guidelines (not f1-f3)
LANGUAGE: Final = "en"
VERSION: Final = "3"  # bump when the tasks built change shape
_PLACEHOLDER = re.compile(r"^<[^<>]+>$")  # a delexed slot such as <username>
SOP: Final = """# Next action and instruction retrieval (imported from ABCD)

You are a customer-service agent. The task gives the conversation so far (`conversation`:
turns of the `user` -- the customer --, the `agent`, and `action` turns for the actions
already taken), ending with the customer's latest turn. The guidelines below hold every
section of the store's procedures; the actions list names every action.

Answer three things:
- `sections`: the guideline section(s) that govern this conversation, the most relevant
  first (one or two names, exactly as headed below);
- `action`: the action the agent takes next, one of the actions listed below, or `empty`
  when the agent has no action left to take;
- `values`: the values that action is given that you can read in the conversation (strings;
  an FAQ answer by its section's name), or [] when there are none.
"""


class AbcdError(DataError, ValueError):
    """The folder cannot be imported; the message says where and why, in one line, and
    ``notes`` what did not map when that is the cause."""

    def __init__(self, message: str, notes: list[str] | None = None) -> None:
        super().__init__(message)
        self.notes = list(notes or [])


@dataclass(frozen=True)
class AbcdTask:
    task: Task
    action: str
    values: list[str]
    section: str
    decisions: JSON = field(default_factory=dict)


@dataclass
class AbcdData:
    tasks: list[AbcdTask]
    actions: list[str]
    sections: dict[str, str]  # section name ("Flow / Subflow") -> its text
    notes: list[str] = field(default_factory=list)  # what could not be mapped, one line each


def read_abcd(folder: Path) -> AbcdData:
    """The tasks of an ABCD folder, the ontology's action names and the guideline sections."""
    if not folder.is_dir():
        raise AbcdError(f"{folder} is not a folder")
    guidelines, ontology, _ = (_json(folder / name) for name in FILES)
    actions = _actions(ontology, folder / "ontology.json")
    sections, ids, notes = _sections(guidelines, ontology, folder)
    path = _conversations_file(folder)
    data = AbcdData([], actions, sections, notes)
    unmapped: dict[str, int] = {}
    convos: set[str] = set()
    for record in _records(_json(path), path):
        convo, flow, subflow = _scenario(record, path)
        if convo in convos:  # its tasks would take the ids of the first one's
            raise AbcdError(f"{path}: convo_id {convo} appears more than once")
        convos.add(convo)
        section = _resolve(ids, flow, subflow)
        if section is None:
            unmapped[f"{flow}/{subflow}"] = unmapped.get(f"{flow}/{subflow}", 0) + 1
            continue
        data.tasks += _tasks(record, convo, section, ids, set(actions), path)
    for pair, count in sorted(unmapped.items()):
        notes.append(f"subflow {pair}: no guideline section maps to it; {count} "
                     f"conversation(s) left out")  # fmt: skip
    if not data.tasks:
        raise AbcdError(f"{path}: no conversation maps to a guideline: nothing to import",
                        notes)  # fmt: skip
    return data


def _json(path: Path) -> Any:
    if not path.exists():
        raise AbcdError(f"{path.parent}: missing {path.name}")
    try:  # bounded: a regular file, its size after decompression, its nesting
        return parse_input_json(read_input(path), path)
    except InputRefused as error:
        raise AbcdError(str(error)) from None
    except (OSError, ValueError) as error:
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


def _words(name: str) -> list[str]:
    return [w for w in re.split(r"[^a-z0-9]+", name.lower()) if w and not w.isdigit()]


def names_agree(identifier: str, display: str) -> bool:
    """Whether an ontology id and a display name name the same thing: some word of one begins
    a word of the other (``return_size`` / "Return Due to Size", ``reset_2fa`` / "Reset
    Two-Factor Auth"): a list shifted by one position agrees nowhere."""
    shown = _words(display)
    return any(s.startswith(w[:4]) or w.startswith(s[:4]) for w in _words(identifier)
               for s in shown)  # fmt: skip


def flow_key(name: str) -> str:
    """A flow's name as the two files are matched on: lower case, every run of other
    characters one ``_`` ("Single-Item Query" and ``single_item_query`` read alike)."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def _sections(
    guidelines: Any, ontology: Any, folder: Path
) -> tuple[dict[str, str], dict[tuple[str, str], str], list[str]]:
    """Section name -> text, (flow id, subflow id) -> section name, and one line per id that
    does not map."""
    where = folder / "ontology.json"
    intents = ontology.get("intents") if isinstance(ontology, dict) else None
    flows = intents.get("flows") if isinstance(intents, dict) else None
    subflows = intents.get("subflows") if isinstance(intents, dict) else None
    if not isinstance(flows, list) or not isinstance(subflows, dict):
        raise AbcdError(f"{where}: needs intents.flows (a list) and intents.subflows (an object)")
    if not isinstance(guidelines, dict) or not all(
            isinstance(g, dict) and isinstance(g.get("subflows"), dict)
            for g in guidelines.values()):  # fmt: skip
        raise AbcdError(f"{folder / 'guidelines.json'}: expected flows, each with 'subflows'")
    sections: dict[str, str] = {}
    ids: dict[tuple[str, str], str] = {}
    notes: list[str] = []
    shown_flows = {flow_key(name): name for name in guidelines}
    for flow_id in flows:
        flow_name = shown_flows.get(flow_key(str(flow_id)))
        if flow_name is None:
            notes.append(f"flow {flow_id}: guidelines.json has no flow of that name "
                         f"(flows: {', '.join(guidelines) or 'none'})")  # fmt: skip
            continue
        # within a flow the two files keep one order, and the names may share no word but
        # one (shopping_cart / "Cart Not Updating"): position is the key, the name a check
        shown_subflows = list(guidelines[flow_name]["subflows"])
        for index, subflow_id in enumerate(subflows.get(flow_id) or []):
            name = shown_subflows[index] if index < len(shown_subflows) else None
            if name is None or not names_agree(subflow_id, name):
                notes.append(
                    f"subflow {flow_id}/{subflow_id}: no subflow of {flow_name!r} at its "
                    f"position {index} agrees by name ({name or 'none'})"
                )
                continue
            section = f"{flow_name} / {name}"
            steps = guidelines[flow_name]["subflows"][name]
            sections[section] = _render(guidelines[flow_name], steps, section, folder)
            ids[flow_id, subflow_id] = section
    return sections, ids, notes


def _render(flow: JSON, steps: Any, section: str, folder: Path) -> str:
    """A section as text, never a Python repr: the flow's description, the subflow's first
    instruction, one line per action (``- [Button] text``, its subtext below it), then the
    other instructions. The published subflows hold two instructions, an opening ("Start by
    asking for the refund reason. Then ... perform the following actions") and a wrap-up ("As
    always, wrap up by ..."), so the wrap-up follows the actions."""
    try:
        lines = [str(flow.get("description") or "").strip()]
        instructions = [str(line).strip() for line in steps.get("instructions") or []]
        lines += instructions[:1]
        for action in steps["actions"]:
            lines += _action_lines(action)
        lines += instructions[1:]
    except (KeyError, TypeError, AttributeError):
        raise AbcdError(f"{folder / 'guidelines.json'}: {section}: actions must be objects with "
                        f"button and text") from None  # fmt: skip
    return "\n".join(line for line in lines if line)


def _action_lines(action: JSON) -> list[str]:
    """An action's lines: ``- [Button] text``, then its subtext. The published files hold the
    subtext as a list of steps, one indented line each (``  - Email Address``); a single string
    stays on the action's line in brackets."""
    head = f"- [{action['button']}] {action['text']}".rstrip()
    subtext = action.get("subtext")
    if isinstance(subtext, list):
        return [head, *(f"  - {step}" for step in map(str, subtext) if step.strip())]
    text = str(subtext or "").strip()
    return [head + (f" ({text})" if text else "")]


def _resolve(ids: dict[tuple[str, str], str], flow: str, subflow: str) -> str | None:
    """The section of a scenario's subflow; an id the ontology lacks is tried without its
    numeric suffix (an FAQ variant such as ``timing_4``)."""
    return ids.get((flow, subflow)) or ids.get((flow, re.sub(r"_\d+$", "", subflow)))


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


def _scenario(record: Any, path: Path) -> tuple[str, str, str]:
    if not isinstance(record, dict) or not {"convo_id", "scenario", "original",
                                            "delexed"} <= set(record):  # fmt: skip
        raise AbcdError(f"{path}: a conversation lacks convo_id, scenario, original or delexed")
    scenario = record["scenario"]
    if not isinstance(scenario, dict) or not all(isinstance(scenario.get(k), str)
                                                 for k in ("flow", "subflow")):  # fmt: skip
        raise AbcdError(f"{path}: conversation {record['convo_id']}: scenario needs a flow and "
                        f"a subflow")  # fmt: skip
    return str(record["convo_id"]), scenario["flow"], scenario["subflow"]


def _tasks(
    record: JSON,
    convo: str,
    section: str,
    ids: dict[tuple[str, str], str],
    actions: set[str],
    path: Path,
) -> list[AbcdTask]:
    """One task after every customer turn (TOD-ProcBench task 1)."""
    where = f"{path}: conversation {convo}"
    delexed = _list(record["delexed"], where)
    original = _list(record["original"], where)
    if len(original) != len(delexed):
        raise AbcdError(f"{where}: original has {len(original)} turns, delexed {len(delexed)}")
    turns = [_turn(turn, f"{where}, turn {i}", actions) for i, turn in enumerate(delexed)]
    shown = [_shown(pair, turn[0], f"{where}, turn {i}") for i, (pair, turn) in
             enumerate(zip(original, turns, strict=True))]  # fmt: skip
    agent_turns = [i for i, (speaker, _, _) in enumerate(turns) if speaker == "agent"]
    faq = {sub: name for (_, sub), name in ids.items()}
    out: list[AbcdTask] = []
    for index, (speaker, _, _) in enumerate(turns):
        if speaker != "customer":
            continue
        action, values = next(((a, v) for _, a, v in turns[index + 1:] if a), (EMPTY, []))
        conversation = shown[: index + 1]
        visible, hidden = _visible(values, conversation, faq)
        before = sum(1 for i in agent_turns if i <= index)  # the next agent turn's index
        third = min(2, 3 * before // len(agent_turns)) if agent_turns else 2
        inputs = {"convo_id": convo, "conversation": conversation}
        task = Task(f"abcd-{convo}-{index:03d}", DOMAIN_NAME, inputs, kind="json_answer")
        decisions: JSON = {"procbench": {"position": POSITIONS[third], "format": FORMAT,
                                         "language": LANGUAGE}}  # fmt: skip
        if hidden:
            decisions["hidden_values"] = hidden  # annotated, not readable at this point
        out.append(AbcdTask(task, action, visible, section, decisions))
    return out


def _turn(turn: Any, where: str, actions: set[str]) -> tuple[str, str, list[str]]:
    """(speaker, the action taken at this turn or "", its values)."""
    if not isinstance(turn, dict) or turn.get("speaker") not in SPEAKERS:
        raise AbcdError(f"{where}: a turn needs a speaker ({', '.join(SPEAKERS)})")
    targets = turn.get("targets")
    if not isinstance(turn.get("text"), str) or not isinstance(targets, list) or len(
            targets) != 5 or not isinstance(targets[3], list):  # fmt: skip
        raise AbcdError(f"{where}: a turn needs text and targets [flow, next_step, action, "
                        f"values, utterance_index]")  # fmt: skip
    action = targets[2] if targets[1] == "take_action" and targets[2] else ""
    if action and action not in actions:
        raise AbcdError(f"{where}: unknown action {action!r} (not in ontology.json)")
    return turn["speaker"], action, [str(v) for v in targets[3]]


def _shown(pair: Any, speaker: str, where: str) -> JSON:
    if not isinstance(pair, list) or len(pair) != 2 or not isinstance(pair[1], str):
        raise AbcdError(f"{where}: an original turn is [speaker, text]")
    return {"role": ROLES[speaker], "content": pair[1]}


def _visible(values: list[str], conversation: list[JSON], faq: dict[str, str]
             ) -> tuple[list[str], list[str]]:  # fmt: skip
    """The values the agent can read in what it is shown (an FAQ id by its section's name),
    and the others: a delexed placeholder, or a value not yet said."""
    text = "\n".join(turn["content"] for turn in conversation).casefold()
    visible, hidden = [], []
    for value in values:
        base = re.sub(r"_\d+$", "", value)
        if value in faq or base in faq:
            visible.append(faq.get(value) or faq[base])
        elif not _PLACEHOLDER.match(value) and value.strip() and value.casefold() in text:
            visible.append(value)
        else:
            hidden.append(value)
    return visible, hidden


def field_accuracy(field: str, name: str | None = None) -> Scorer:
    """One answer field against the label, compared as :func:`values_match` compares output
    fields (``action``: the paper's next-action accuracy; ``values``: value accuracy)."""

    def measure(case: Case) -> Score:
        right = values_match(case.answer.get(field), case.gold.outputs[field])
        return Score(float(right), {}, f"{field} {'right' if right else 'wrong'}")

    return Scorer(name or field, measure, gates=field == "action")


@dataclass
class AbcdDomain(ImportedDomain):
    """The imported tasks; its SOP is the task's description, every guideline section and the
    action names (one text for all tasks, so the data cache holds no copy per task), not a
    file of the user's folder."""

    guidelines_text: str = ""

    def sop(self, variant: str = "clean") -> str:
        if variant != "clean":
            raise KeyError(f"domain {self.name} has no SOP variant {variant!r}")
        return f"{SOP}\n{self.guidelines_text}"


def guidelines_text(sections: dict[str, str], actions: list[str]) -> str:
    """Every section under its name, then the actions, as plain text."""
    parts = ["# Guidelines", *(f"## {name}\n{text}" for name, text in sections.items())]
    parts.append("# Actions\n" + "\n".join(f"- {action}" for action in actions))
    return "\n\n".join(parts) + "\n"


def build_abcd(folder: Path, data: AbcdData | None = None) -> DomainPack:
    """The domain of an ABCD folder (``data``: the folder already read)."""
    data = data or read_abcd(folder)
    labels = {t.task.id: t for t in data.tasks}
    actions = [*data.actions, EMPTY]
    names = list(data.sections)

    def generate(seed: int, files_dir: Path) -> GeneratedData:
        return GeneratedData(tables={}, tasks=[t.task for t in data.tasks])

    def solve(task: Task, run: PolicyRun) -> Solution:
        label = labels[task.id]  # the published annotation is the gold
        outputs = {"action": label.action, "values": label.values, "sections": [label.section]}
        return Solution(outputs, dict(label.decisions))

    digest = hashlib.sha256(f"abcd:{VERSION}:{folder.resolve()}".encode())
    for path in sorted(folder.iterdir()):
        if path.is_file() and path.name.endswith((".json", ".json.gz")):
            digest.update(path.name.encode() + path.read_bytes())
    return AbcdDomain(
        name=DOMAIN_NAME,
        title=f"ABCD next action and instruction retrieval (imported from {folder})",
        folder=folder,
        tools=[],
        generate=generate,
        solve=solve,
        kind="json_answer",
        input_schema={"type": "object", "properties": {
            "convo_id": {"type": "string"}, "conversation": {"type": "array"}},
            "required": ["convo_id", "conversation"]},
        output_schema={"type": "object", "properties": {
            "action": {"enum": actions},
            "values": {"type": "array", "items": {"type": "string"}},
            "sections": {"type": "array", "items": {"enum": names}, "minItems": 1,
                         "maxItems": 2, "uniqueItems": True}},
            "required": ["action", "values", "sections"], "additionalProperties": False},
        scorers=[field_accuracy("action", "first_action"), field_accuracy("values"),
                 section_top1(), section_top2(), schema_valid(gates=True)],
        sop_files={"clean": "<ABCD task description>"},
        reference_policy=False,  # no executable policy: the scripted model plays the generic one
        source_digest=digest.hexdigest()[:12],
        guidelines_text=guidelines_text(data.sections, actions),
    )  # fmt: skip
