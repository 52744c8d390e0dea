"""What the scripted model means to do on a task: the gold calls, with the profile's mistakes
woven in (and a dialogue's gold messages to the user, as calls of the message action), and
the final answer.

The script is a pure function of (profile, task), so every request about the same task sees
the same script and a run is reproducible whatever the concurrency. Each mistake's evaluator
category is predicted when the script is built, by running the mistaken call through the
domain's real tool contract and implementation (after replaying the gold calls before it,
so stateful domains see the state the episode would have) and applying the scorer's rules.
"""

from __future__ import annotations

import copy
import random
import re
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

import orjson

from sopgym.core.answers import MESSAGE_ACTION
from sopgym.core.dataset import DomainData
from sopgym.core.dialogue import AGENT
from sopgym.core.errors import TYPE_CODES, VALIDATION_CODES, ToolError
from sopgym.core.tasks import Gold, Task, ToolCall
from sopgym.evaluation.scorers.fields import free_text_keys, normalize, values_match
from sopgym.services.model.profiles import STEP_KINDS, ErrorProfile
from sopgym.types import JSON

MAX_RETRIES = 2  # repeats of a correct call that failed unexpectedly, before moving on


@dataclass
class Event:
    """One SOP step as the model will play it."""

    gold_index: int
    call: ToolCall | None  # what the model emits; None for a skipped step
    kind: str | None = None  # the injected mistake, None for the correct call
    expected: list[str] = field(default_factory=list)  # evaluator categories it should cause
    expect_ok: bool = True  # whether the live tool should accept it

    def log_record(self) -> JSON:
        return {
            "kind": self.kind,
            "step": self.gold_index,
            "call": self.call.to_json() if self.call else None,
            "expected": self.expected,
        }


@dataclass
class Script:
    domain: str
    task_id: str
    events: list[Event]  # in order, skipped steps included
    final: JSON
    final_kind: str | None = None  # "blank" or "wrong_final"
    final_expected: list[str] = field(default_factory=list)
    final_note: JSON = field(default_factory=dict)

    @property
    def emitted(self) -> list[Event]:
        return [e for e in self.events if e.call is not None]

    def position(self, calls: list[Any]) -> int:
        """How many emitted events the conversation's calls have completed.

        A call advances the script when it is the next event's call and either went through,
        was a deliberate mistake, or was meant to fail (an SOP branch on a refusal). A correct
        call that failed unexpectedly (a transient 502, say) is repeated a few times first.
        """
        emitted, i, failures = self.emitted, 0, 0
        for made in calls:
            if i >= len(emitted):
                break
            event = emitted[i]
            if not same_call(made.name, made.arguments, event.call):
                continue
            if event.kind or made.ok is not False or not event.expect_ok or failures >= MAX_RETRIES:
                i, failures = i + 1, 0
            else:
                failures += 1
        return i


def canonical(value: Any) -> bytes:
    """``value`` as sorted-key JSON: the key by which task inputs and calls are compared.

    A value orjson cannot write (nested deeper than its limit of 254 levels, which a request
    can hold since orjson reads up to 1024) gets ``b""``, which no JSON value writes as: it
    then matches no task's inputs and no SOP step, instead of failing the request with a 500.
    """
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        return b""


def same_call(name: str, arguments: Any, call: ToolCall | None) -> bool:
    return (
        call is not None and name == call.name and canonical(arguments) == canonical(call.arguments)
    )


class Playbook:
    """Scripts for one domain's tasks, built on demand and cached."""

    def __init__(self, data: DomainData, known_tools: set[str]) -> None:
        self.data = data
        self.domain = data.domain
        self.tools = data.domain.tool_map()
        self.known_tools = known_tools  # every tool name a catalog could hold
        self._tasks = {t.id: t for t in data.tasks}
        self._cache: dict[tuple[str, int, str], Script] = {}

    def script(self, profile: ErrorProfile, task: Task) -> Script:
        key = (profile.name, profile.seed, task.id)
        script = self._cache.get(key)
        if script is None:
            script = self._cache[key] = self._build(profile, task)
        return script

    # ---- building ----
    def _build(self, profile: ErrorProfile, task: Task) -> Script:
        gold = self.data.gold[task.id]
        rng = random.Random(f"{profile.seed}|{self.domain.name}|{task.id}")
        outcomes = self._replay(gold)
        script = Script(self.domain.name, task.id, [], dict(gold.outputs))
        if gold.calls and rng.random() < profile.rate("blank"):
            script.final_kind = "blank"
            script.final = self._guess(gold, rng)
            wrong = self._differs(script.final, gold)
            script.final_expected = ["blank", *(["wrong_final"] if wrong else [])]
            return script
        said = _messages(gold)
        for index, call in enumerate(gold.calls):
            script.events += [e for e in said if e.gold_index == index]
            kind = _pick(rng.random(), profile)
            step_rng = random.Random(rng.getrandbits(64))
            mistake = self._mistake(kind, index, gold, step_rng) if kind else None
            if mistake is not None:
                script.events.append(mistake)
            if mistake is None or mistake.kind != "skip_step":
                script.events.append(Event(index, call, expect_ok=outcomes[index]))
        script.events += [e for e in said if e.gold_index >= len(gold.calls)]
        if rng.random() < profile.rate("wrong_final"):
            changed = self._corrupt(gold, rng)
            if changed is not None:
                field_name, value = changed
                script.final[field_name] = value
                script.final_kind, script.final_expected = "wrong_final", ["wrong_final"]
                script.final_note = {"field": field_name, "value": value}
        rate = profile.rate("invalid_final")  # drawn only when asked for: other scripts keep theirs
        if rate and not script.final_kind and rng.random() < rate:
            required = sorted(self.domain.output_schema.get("required", []))
            if required:
                dropped = rng.choice(required)
                del script.final[dropped]
                script.final_kind, script.final_expected = "invalid_final", ["wrong_final"]
                script.final_note = {"field": dropped, "value": None}
        return script

    def _mistake(self, kind: str, index: int, gold: Gold, rng: random.Random) -> Event | None:
        call = gold.calls[index]
        if kind == "skip_step":
            return Event(index, None, kind) if index > 0 else None
        if kind == "hallucinated_tool":
            for name in (f"{call.name}_v2", f"get_{call.name}", f"{call.name}_lookup"):
                if name not in self.known_tools:
                    return Event(
                        index, ToolCall(name, call.arguments), kind, ["hallucinated"], False
                    )
            return None
        target = {"missing_arg": "validation", "bad_type": "type", "wrong_value": "wrong_value"}
        if kind == "wrong_tool":
            names = [t.name for t in self.domain.tools if t.name != call.name]
            candidates = [ToolCall(n, dict(call.arguments)) for n in names]
        else:
            candidates = list(_variants(kind, call, self.tools[call.name].spec.input_schema))
        rng.shuffle(candidates)
        for candidate in candidates:
            category = self._category(gold, index, candidate)
            if category is not None and category == target.get(kind, category):
                return Event(index, candidate, kind, [category], category == "wrong_value")
        return None

    def _category(self, gold: Gold, index: int, call: ToolCall) -> str | None:
        """The category the scorer will give ``call`` made at gold step ``index``."""
        tool = self.tools.get(call.name)
        if tool is None:
            return "hallucinated"
        ctx = self._context_after(gold, index)
        try:
            tool(copy.deepcopy(call.arguments), ctx)
        except ToolError as error:
            if error.code in TYPE_CODES:
                return "type"
            return "validation" if error.code in VALIDATION_CODES else None
        except Exception:
            return None
        wanted = [normalize(c.arguments) for c in gold.calls if c.name == call.name]
        return "wrong_value" if wanted and normalize(call.arguments) not in wanted else None

    def _context_after(self, gold: Gold, index: int) -> Any:
        ctx = self._fresh_context(gold)
        if ctx.state is not None:
            for call in gold.calls[:index]:
                self._run(call, ctx)
        return ctx

    def _replay(self, gold: Gold) -> list[bool]:
        """Whether each gold call is accepted, replayed in order on a fresh episode."""
        ctx = self._fresh_context(gold)
        return [self._run(call, ctx) for call in gold.calls]

    def _fresh_context(self, gold: Gold) -> Any:
        """A context as the gold's task starts (its own initial state, on stateful domains)."""
        task = self._tasks[gold.task_id]
        return self.domain.context(self.data.tables, self.data.files_dir, task)

    def _run(self, call: ToolCall, ctx: Any) -> bool:
        try:
            self.tools[call.name](copy.deepcopy(call.arguments), ctx)
        except ToolError:
            return False
        return True

    # ---- answers ----
    def _guess(self, gold: Gold, rng: random.Random) -> JSON:
        """A blank model's answer: a guess per enumerated field, the truth elsewhere."""
        properties = self.domain.output_schema.get("properties", {})
        return {
            name: rng.choice(properties.get(name, {}).get("enum") or [value])
            for name, value in gold.outputs.items()
        }

    def _corrupt(self, gold: Gold, rng: random.Random) -> tuple[str, Any] | None:
        properties = self.domain.output_schema.get("properties", {})
        free = free_text_keys(self.domain.output_schema)
        names = sorted(set(gold.outputs) - free)
        rng.shuffle(names)
        for name in names:
            for value in _alternatives(gold.outputs[name], properties.get(name, {})):
                if not values_match(value, gold.outputs[name]):
                    return name, value
        return None

    @staticmethod
    def _differs(answer: JSON, gold: Gold) -> bool:
        return any(not values_match(answer.get(k), v) for k, v in gold.outputs.items())


def _messages(gold: Gold) -> list[Event]:
    """A dialogue's gold agent turns as calls of the message action, each placed before the
    gold call it preceded (``gold_index``); never a mistake."""
    return [
        Event(m["at_call"], ToolCall(MESSAGE_ACTION, {"content": m["content"]}))
        for m in gold.messages
        if m["role"] == AGENT
    ]


def _pick(roll: float, profile: ErrorProfile) -> str | None:
    """One step's mistake: the kinds share [0, 1) by their rates, the rest is no mistake."""
    edge = 0.0
    for kind in STEP_KINDS:
        edge += profile.rate(kind)
        if roll < edge:
            return kind
    return None


def _variants(kind: str, call: ToolCall, schema: JSON):
    """Mutations of ``call`` meant to produce ``kind`` (the category is checked after)."""
    properties = schema.get("properties", {})
    arguments = call.arguments
    if kind == "missing_arg":
        for name in schema.get("required", []):
            if name in arguments:
                yield ToolCall(call.name, {k: v for k, v in arguments.items() if k != name})
        return
    for name, value in arguments.items():
        if kind == "bad_type":
            options = [_retyped(value)]
        else:
            options = _alternatives(value, properties.get(name, {}))
        for option in options:
            if option is not None and canonical(option) != canonical(value):
                yield ToolCall(call.name, {**arguments, name: option})


def _retyped(value: Any) -> Any:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return len(value) or 1
    if isinstance(value, list):
        return ", ".join(map(str, value))
    if isinstance(value, dict):
        return orjson.dumps(value).decode()
    return None


def _alternatives(value: Any, schema: JSON) -> list[Any]:
    """Plausible but different values of the same type, most plausible first."""
    enum = schema.get("enum")
    if enum:
        return [v for v in enum if v != value]
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        low, high = schema.get("minimum"), schema.get("maximum")
        return [
            v
            for v in (value + 1, value - 1)
            if (low is None or v >= low) and (high is None or v <= high)
        ]
    if isinstance(value, float):
        return [value * 2 + 10]
    if isinstance(value, str):
        try:
            return [(date.fromisoformat(value) + timedelta(days=1)).isoformat()]
        except ValueError:
            pass
        digits = list(re.finditer(r"\d", value))
        if digits:
            at = digits[-1].start()
            return [value[:at] + str((int(value[at]) + 1) % 10) + value[at + 1 :]]
        return [value + " II", "unknown"]
    if isinstance(value, list) and value:
        return [value[:-1]]
    return []
