"""What the scripted model does on a task: the domain's reference policy played over the
conversation (:mod:`.observed`), with the error profile's mistakes woven in, and the answer
the policy computes from the results the conversation shows.

Each mistake is a pure function of (profile, task, step, the due call and the calls before
it), so every request about the same conversation sees the same moves and a run is
reproducible whatever the concurrency. Its evaluator category is predicted when it is made, by
running the mistaken call through the domain's real tool contract and implementation (after
the due calls before it, so stateful domains see the state the episode would have) and
applying the scorer's rules. Only that prediction, written to the injection log, reads the
gold (the scorer compares calls with the gold calls); the model's moves and answers never do.
"""

from __future__ import annotations

import contextlib
import copy
import random
import re
from dataclasses import dataclass, field
from datetime import date, timedelta
from functools import partial
from typing import Any

import orjson

from sopgym.core.dataset import DomainData
from sopgym.core.errors import TYPE_CODES, VALIDATION_CODES, ToolError
from sopgym.core.normalized import normalize
from sopgym.core.tasks import Task, ToolCall
from sopgym.evaluation.scorers.fields import free_text_keys, values_match
from sopgym.services.model.conversation import MadeCall
from sopgym.services.model.observed import (
    GaveUp,
    Mistake,
    MistakeAt,
    ObservedRun,
    Pending,
    canonical,
)
from sopgym.services.model.profiles import STEP_KINDS, ErrorProfile
from sopgym.types import JSON

# What a policy raises on results it cannot work with (a field missing, a value of the wrong
# type, text where a number belongs): a careful model then stops rather than guess
UNREADABLE_RESULTS = (KeyError, TypeError, ValueError, AttributeError, IndexError, ArithmeticError)
MAX_CACHED = 100_000  # mistakes kept per domain before the cache starts over


@dataclass
class Move:
    """The model's next move on a task, worked out from the conversation: a call to make, the
    final answer, or giving up (``gave_up`` says why)."""

    call: ToolCall | None = None
    final: JSON | None = None
    gave_up: str | None = None
    mistakes: list[Mistake] = field(default_factory=list)  # played so far, in order
    final_mistake: JSON | None = None  # the answer's mistake, as logged
    actions: int = 0  # the conversation's calls the model's replay went through


@dataclass(frozen=True)
class FinalDraws:
    """The task-level mistakes one (profile, task) draws, whatever the conversation."""

    blank: bool
    wrong_final: bool
    invalid_final: bool
    rng_seed: int


class Playbook:
    """The scripted model's play on one domain's tasks."""

    def __init__(self, data: DomainData, known_tools: set[str]) -> None:
        self.data = data
        self.domain = data.domain
        self.tools = data.domain.tool_map()
        self.known_tools = known_tools  # every tool name a catalog could hold
        self._mistakes: dict[tuple[Any, ...], Mistake | None] = {}

    # ---- playing ----
    def play(
        self, profile: ErrorProfile, task: Task, made: list[MadeCall], forced: bool = False
    ) -> Move:
        """The next move on ``task`` given the calls ``made`` in the conversation. ``forced``:
        the request holds the reply to a tool call (``tool_choice``), so the model cannot
        answer at once: the profile's blank answer is not drawn on this episode (it is an
        answer before any call, and a call is made now)."""
        draws = self._final_draws(profile, task)
        if draws.blank and not forced and not made and self._needs_calls(task):
            return self._blank(task, random.Random(draws.rng_seed))
        run = self._observed(task, made, partial(self._mistake_at, profile, task))
        try:
            solution = self.domain.solve(task, run)
        except Pending as pending:
            return Move(call=pending.call, mistakes=run.mistakes, actions=run.actions)
        except GaveUp as gave_up:
            return Move(gave_up=str(gave_up), mistakes=run.mistakes, actions=run.actions)
        except ToolError as refused:
            reason = f"a tool refused a step of the procedure ({refused.code}: {refused.message})"
            return Move(gave_up=reason, mistakes=run.mistakes, actions=run.actions)
        except UNREADABLE_RESULTS as error:
            reason = f"a tool result could not be read ({type(error).__name__}: {error})"
            return Move(gave_up=reason, mistakes=run.mistakes, actions=run.actions)
        move = Move(final=dict(solution.outputs), mistakes=run.mistakes, actions=run.actions)
        self._spoil_final(move, draws)
        return move

    def plan(self, profile: ErrorProfile, task: Task, made: list[MadeCall]) -> list[ToolCall]:
        """The calls the model still means to make, with the results it expects for them."""
        mistake_at = partial(self._mistake_at, profile, task)
        run = ObservedRun(
            made, self.data.tables, mistake_at, partial(self._imagine, task), planning=True
        )
        try:
            self.domain.solve(task, run)
        except (Pending, GaveUp, ToolError, *UNREADABLE_RESULTS):
            pass  # the plan reaches as far as the model can see
        return run.planned

    def _needs_calls(self, task: Task) -> bool:
        """Whether the policy makes any call or message (a blank answer skips them all)."""
        run = self._observed(task, [], lambda *_: None)
        try:
            self.domain.solve(task, run)
        except Pending:
            return True
        return False

    def _observed(
        self, task: Task, made: list[MadeCall], mistake_at: MistakeAt, planning: bool = False
    ) -> ObservedRun:
        imagine = partial(self._imagine, task)
        return ObservedRun(made, self.data.tables, mistake_at, imagine, planning)

    def _imagine(self, task: Task, before: list[ToolCall], call: ToolCall) -> JSON:
        """The result the model expects for ``call``: the tool run in-process after the due
        calls before it (a skipped step, or a plan's next steps, never come back)."""
        ctx = self._context_after(task, before)
        return self.tools[call.name](copy.deepcopy(call.arguments), ctx)

    # ---- the final answer ----
    def _final_draws(self, profile: ErrorProfile, task: Task) -> FinalDraws:
        rng = random.Random(f"{profile.seed}|{self.domain.name}|{task.id}")
        blank, wrong, invalid = rng.random(), rng.random(), rng.random()
        return FinalDraws(
            blank < profile.rate("blank"),
            wrong < profile.rate("wrong_final"),
            invalid < profile.rate("invalid_final"),
            rng.getrandbits(64),
        )

    def guess(self, rng: random.Random) -> JSON:
        """What a model answers without looking anything up: a value drawn for each enumerated
        field, an empty one elsewhere."""
        properties = self.domain.output_schema.get("properties", {})
        return {
            name: rng.choice(schema["enum"]) if schema.get("enum") else _empty(schema)
            for name, schema in properties.items()
        }

    def _blank(self, task: Task, rng: random.Random) -> Move:
        """A blank model's answer: a guess, see :meth:`guess`."""
        guess = self.guess(rng)
        gold = self.data.gold[task.id].outputs  # the log's prediction only
        wrong = any(not values_match(guess.get(k), v) for k, v in gold.items())
        record = {"kind": "blank", "expected": ["blank", *(["wrong_final"] if wrong else [])]}
        return Move(final=guess, final_mistake=record)

    def _spoil_final(self, move: Move, draws: FinalDraws) -> None:
        """The profile's mistakes in the answer: one field wrong, or a required one left out."""
        assert move.final is not None
        rng = random.Random(draws.rng_seed)
        if draws.wrong_final:
            changed = self._corrupt(move.final, rng)
            if changed is not None:
                name, value = changed
                move.final[name] = value
                move.final_mistake = {"kind": "wrong_final", "expected": ["wrong_final"],
                                      "field": name, "value": value}  # fmt: skip
                return
        required = sorted(set(self.domain.output_schema.get("required", [])) & set(move.final))
        if draws.invalid_final and required:
            dropped = rng.choice(required)
            del move.final[dropped]
            move.final_mistake = {"kind": "invalid_final", "expected": ["wrong_final"],
                                  "field": dropped, "value": None}  # fmt: skip

    def _corrupt(self, outputs: JSON, rng: random.Random) -> tuple[str, Any] | None:
        properties = self.domain.output_schema.get("properties", {})
        free = free_text_keys(self.domain.output_schema)
        names = sorted(set(outputs) - free)
        rng.shuffle(names)
        for name in names:
            for value in _alternatives(outputs[name], properties.get(name, {})):
                if not values_match(value, outputs[name]):
                    return name, value
        return None

    # ---- mistakes ----
    def _mistake_at(
        self, profile: ErrorProfile, task: Task, index: int, call: ToolCall, before: list[ToolCall]
    ) -> Mistake | None:
        """The profile's mistake at policy step ``index`` whose due call is ``call``."""
        if profile.perfect:
            return None
        rng = random.Random(f"{profile.seed}|{self.domain.name}|{task.id}|{index}")
        kind = _pick(rng.random(), profile)
        if kind is None:
            return None
        history = canonical([c.to_json() for c in before]) if self.domain.stateful else b""
        key = (profile.name, profile.seed, task.id, index, canonical(call.to_json()), history)
        if key not in self._mistakes:
            if len(self._mistakes) > MAX_CACHED:  # a long-lived server: start over
                self._mistakes.clear()
            self._mistakes[key] = self._mistake(kind, index, call, task, before, rng)
        return self._mistakes[key]

    def _mistake(
        self,
        kind: str,
        index: int,
        call: ToolCall,
        task: Task,
        before: list[ToolCall],
        rng: random.Random,
    ) -> Mistake | None:
        if kind == "skip_step":
            return Mistake(index, None, kind, []) if index > 0 else None
        if kind == "hallucinated_tool":
            for name in (f"{call.name}_v2", f"get_{call.name}", f"{call.name}_lookup"):
                if name not in self.known_tools:
                    return Mistake(index, ToolCall(name, call.arguments), kind, ["hallucinated"])
            return None
        target = {"missing_arg": "validation", "bad_type": "type", "wrong_value": "wrong_value"}
        if kind == "wrong_tool":
            names = [t.name for t in self.domain.tools if t.name != call.name]
            candidates = [ToolCall(n, dict(call.arguments)) for n in names]
        else:
            candidates = list(_variants(kind, call, self.tools[call.name].spec.input_schema))
        rng.shuffle(candidates)
        for candidate in candidates:
            category = self._category(task, before, candidate)
            if category is not None and category == target.get(kind, category):
                return Mistake(index, candidate, kind, [category])
        return None

    def _category(self, task: Task, before: list[ToolCall], call: ToolCall) -> str | None:
        """The category the scorer will give ``call`` made after the due calls ``before``."""
        tool = self.tools.get(call.name)
        if tool is None:
            return "hallucinated"
        ctx = self._context_after(task, before)
        try:
            tool(copy.deepcopy(call.arguments), ctx)
        except ToolError as error:
            if error.code in TYPE_CODES:
                return "type"
            return "validation" if error.code in VALIDATION_CODES else None
        except Exception:
            return None
        # the scorer's rule: a valid call is a wrong value when no gold call of it matches
        gold = self.data.gold[task.id].calls
        wanted = [normalize(c.arguments) for c in gold if c.name == call.name]
        return "wrong_value" if wanted and normalize(call.arguments) not in wanted else None

    def _context_after(self, task: Task, calls: list[ToolCall]) -> Any:
        """A context as ``task`` starts, with ``calls`` replayed on stateful domains."""
        ctx = self.domain.context(self.data.tables, self.data.files_dir, task)
        if self.domain.stateful:
            for call in calls:
                with contextlib.suppress(ToolError):  # a refused call changes nothing
                    self.tools[call.name](copy.deepcopy(call.arguments), ctx)
        return ctx


def _empty(schema: JSON) -> Any:
    """The empty value of a schema's type: what a model that knows nothing writes there."""
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) and kind else kind
    empties: dict[Any, Any] = {"integer": 0, "number": 0, "boolean": False, "string": "",
                               "array": [], "object": {}}  # fmt: skip
    return empties.get(kind)


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
