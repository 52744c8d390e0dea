"""The scripted model itself, independent of HTTP: a Chat Completions request in, a response
body out.

It plays a model that knows the SOP: it finds the case in the conversation (the task inputs
JSON of the user turn), replays the domain's reference policy over the tool results the
conversation holds (:mod:`.script`, :mod:`.observed`; never the stored gold), and writes the
next step - a native tool call when the request offers tools, ReAct text when the prompt asks
for ReAct, a plan when asked for one - or the final answer the observed results imply, or,
when a call keeps failing, a reply that gives up without one. Every injected mistake is logged
(JSONL) when it is played.
A request's ``seed`` (OpenAI's sampling seed; each trial of a run sends its own) is mixed into
the error profile's, so trials draw different mistakes, reproducibly. Dependency-graph
questions (one-shot tasks) are answered by reasoning over the signatures in the prompt
(:mod:`.graphs`).

Imported benchmarks (``sopbench/<name>``) have no reference policy, hence no script: there
it plays the generic baseline policy of :mod:`sopgym.agents.baseline_policy` instead.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import IO, Any

import orjson

from sopgym.agents.baseline_policy import Answer, Step, next_action, spec_parts
from sopgym.core.dataset import DomainData
from sopgym.core.exceptions import MalformedRequest
from sopgym.core.tasks import ONE_SHOT_KINDS, Task, ToolCall
from sopgym.evaluation.maze_protocol import paper_prompt
from sopgym.services.model import replies
from sopgym.services.model.conversation import Conversation, read_conversation
from sopgym.services.model.graphs import dependency_graph, graph_question, perturbed_graph
from sopgym.services.model.observed import canonical
from sopgym.services.model.profiles import ErrorProfile, profile_for_model, with_request_seed
from sopgym.services.model.script import Move, Playbook
from sopgym.types import JSON

_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
_UNKNOWN_CASE = (
    "I cannot find a case input that I recognise in this conversation, so I cannot follow "
    "the procedure."
)


class BadRequest(MalformedRequest, ValueError):
    """A request the OpenAI API would refuse with 400; ``param``: the parameter at fault, for
    the error body's ``param`` field (as OpenAI names it there)."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


class ScriptedModel:
    def __init__(
        self,
        data: list[DomainData],
        default_profile: ErrorProfile,
        injection_log: Path | None = None,
    ) -> None:
        known = {t.name for d in data for t in d.domain.all_tools()}
        self.books = {d.domain.name: Playbook(d, known) for d in data}
        self.cases: dict[bytes, tuple[Playbook, Task]] = {}
        # prompt-only tasks sent as published (--protocol paper): found by the prompt's text
        self.prompts: dict[str, tuple[Playbook, Task]] = {}
        twins: dict[bytes, list[tuple[Playbook, Task]]] = {}
        for d in data:
            for task in d.tasks:
                key, case = canonical(task.inputs), (self.books[d.domain.name], task)
                self.cases.setdefault(key, case)
                if (prompt := paper_prompt(task.inputs)) is not None:
                    self.prompts.setdefault(prompt, case)
                twins.setdefault(key, []).append(case)
        # inputs that tasks of several domains share (imported benchmarks built on one data
        # set do): the request's tool catalog tells them apart, see _among_twins
        self.twins = {k: v for k, v in twins.items() if len({b.domain.name for b, _ in v}) > 1}
        self.default_profile = default_profile
        self.descriptions = {t.name: t.spec.description for d in data for t in d.domain.tools}
        self._case_memo: dict[int, tuple[Playbook, Task] | None] = {}
        self._logged: set[tuple[Any, ...]] = set()
        self._log: IO[bytes] | None = None
        if injection_log is not None:
            injection_log.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(injection_log, "ab")  # noqa: SIM115 - lives with the server

    def close(self) -> None:
        if self._log is not None:
            self._log.close()

    # ---- one request ----
    def respond(self, body: JSON, size_hint: int = 0) -> JSON:
        check_request(body)
        try:
            return self._respond(body, size_hint)
        except orjson.JSONEncodeError as error:
            # Gold data always writes; only a value taken from the request can fail to (the
            # generic policy answers with tool results' values, and orjson refuses nesting
            # deeper than 254 levels), so this is the client's 400, not a 500 and a traceback.
            message = f"the conversation holds JSON that cannot be written back: {error}"
            raise BadRequest(message) from None

    def guess(self, body: JSON) -> JSON | None:
        """The answer a model that looks nothing up gives on the body's case (the guessing
        behaviour's), drawn per case, never read from the gold; None for an unknown case."""
        found = self._find_case(read_conversation(body["messages"], body.get("tools")))
        if found is None:
            return None
        book, task = found
        return book.guess(random.Random(f"{task.id}|guess"))

    def _respond(self, body: JSON, size_hint: int) -> JSON:
        messages = body["messages"]
        model = body.get("model") or "scripted"
        try:
            profile = profile_for_model(model, self.default_profile)
        except ValueError as error:
            raise BadRequest(f"model {model!r}: {error}", "model") from None
        trial_seed = body.get("seed") or 0  # the trial's (sopgym's trial_seed), 0 for none
        profile = with_request_seed(profile, trial_seed)
        stop = body.get("stop")
        stop = [stop] if isinstance(stop, str) else stop
        convo = read_conversation(messages, body.get("tools"))
        tokens = max(1, size_hint // 4)
        found = self._find_case(convo)
        one_shot = found is None or found[1].kind in ONE_SHOT_KINDS  # a graph question?
        if one_shot and not (convo.native_tools or convo.react):
            case = found[1] if found else None
            answer = self._graph_answer(convo, profile, model, case, trial_seed)
            if answer is not None:
                return replies.completion(model, answer, None, tokens, stop)
        if found is None:
            return replies.completion(model, _UNKNOWN_CASE, None, tokens, stop)
        book, task = self._among_twins(found, convo, body)
        if not book.domain.reference_policy:
            return self._generic_reply(book, task, convo, body, model, tokens, stop)
        if convo.wants_plan:
            steps = [
                {"step": n + 1, "tool": call.name, "goal": self._purpose(call.name)}
                for n, call in enumerate(book.plan(profile, task, convo.calls))
            ]
            return replies.completion(model, replies.plan_text(steps), None, tokens, stop)
        move = book.play(profile, task, convo.calls, forces_a_call(body))
        if move.call is not None and not self._can_take(convo, body, move.call, move):
            # a step it cannot take here (no tools, or a narrowed catalog without it), nor its
            # mistake: the model says so and never answers, so the task fails as the agent's
            played = [m for m in move.mistakes if m.call is not move.call]
            move = Move(gave_up=f"the procedure needs {move.call.name}, which is not offered",
                        mistakes=played, actions=move.actions)  # fmt: skip
        self._log_moves(model, profile, task, move, trial_seed)
        style_key = f"{profile.seed}|{task.id}|{move.actions}"
        style = replies.style_for(style_key, profile.rate("messy_format"))
        if move.call is not None:
            if convo.react:
                thought = f"The SOP's next step for this case is {move.call.name}."
                text = replies.react_action(move.call, thought, style)
                return replies.completion(model, text, None, tokens, stop)
            return replies.completion(model, None, [move.call], tokens, stop)
        if move.final is None:
            text = replies.gave_up_text(move.gave_up or "", convo.react)
            return replies.completion(model, text, None, tokens, stop)
        text = replies.final_text(move.final, convo.react, style)
        return replies.completion(model, text, None, tokens, stop)

    @staticmethod
    def _can_take(convo: Conversation, body: JSON, call: ToolCall, move: Move) -> bool:
        """Whether the model may emit ``call``, its move, here: the request offers tools (native
        or ReAct text) and, natively, this one among them; a mistaken call is its own choice."""
        if not (convo.native_tools or convo.react):
            return False
        mistaken = any(m.call is call for m in move.mistakes)
        return not convo.native_tools or mistaken or _offered(body, call.name)

    def _generic_reply(
        self,
        book: Playbook,
        task: Task,
        convo: Conversation,
        body: JSON,
        model: str,
        tokens: int,
        stop: list[str] | None,
    ) -> JSON:
        """The next step of the generic baseline policy, for a domain without a reference policy.

        Such a domain's gold holds only the expected outputs, so replying from a script would
        be an oracle in disguise; the policy sees only what any agent sees (inputs, specs and
        results so far), so a scripted run scores what ``--agent baseline`` scores. With no
        gold to perturb, error profiles (and their messy formats) do not apply. Only specs,
        tasks and output columns are used: the benchmark's tools.py is never loaded here.
        """
        tools = body.get("tools") or [t.spec.to_neutral() for t in book.domain.tools]
        names = _tool_names(tools)
        fields = list(book.domain.output_schema.get("properties", {}))
        history = [  # unreadable arguments count as none; a call with no result yet as failed
            Step(c.name, _object(c.arguments), c.ok is True, c.result) for c in convo.calls
        ]
        if convo.wants_plan:  # the tools not called yet, in catalog order
            tried = {c.name for c in convo.calls}
            steps = [
                {"step": n + 1, "tool": name, "goal": self._purpose(name)}
                for n, name in enumerate(x for x in names if x not in tried)
            ]
            return replies.completion(model, replies.plan_text(steps), None, tokens, stop)
        can_call = convo.native_tools or convo.react
        action = next_action(task.inputs, tools if can_call else [], fields, history)
        if isinstance(action, Answer):
            text = replies.final_text(action.outputs, convo.react, 0)
            return replies.completion(model, text, None, tokens, stop)
        call = ToolCall(action.name, action.arguments)
        if convo.react:
            thought = f"{call.name} can be called with what is known so far."
            text = replies.react_action(call, thought, 0)
            return replies.completion(model, text, None, tokens, stop)
        return replies.completion(model, None, [call], tokens, stop)

    def _among_twins(
        self, found: tuple[Playbook, Task], convo: Conversation, body: JSON
    ) -> tuple[Playbook, Task]:
        """Of the domains whose tasks have these inputs, the one whose tools the request
        offers (native specs, else the ReAct prompt's catalog); ties keep the first."""
        twins = self.twins.get(canonical(found[1].inputs))
        if not twins:
            return found
        names = set(_tool_names(body.get("tools") or []))

        def score(case: tuple[Playbook, Task]) -> int:
            offered = [t.name in names or t.name in convo.system for t in case[0].domain.tools]
            return sum(1 if hit else -1 for hit in offered)

        return max(twins, key=score)

    def _find_case(self, convo: Conversation) -> tuple[Playbook, Task] | None:
        reader = convo.reader
        for text in convo.user_texts:
            if text in self.prompts:
                return self.prompts[text]
            key = hash(text)
            if key in self._case_memo:
                found = self._case_memo[key]
            else:
                if len(self._case_memo) > 50_000:  # a long-lived server: start over
                    self._case_memo.clear()
                refused = reader.refused
                found = next(
                    (
                        self.cases[c]
                        for c in (canonical(o) for o in reader.objects(text))
                        if c in self.cases
                    ),
                    None,
                )
                # a text read only in part (out of lenient budget) has no answer to keep
                if found is not None or reader.refused == refused:
                    self._case_memo[key] = found
            if found is not None:
                return found
        return None

    def _purpose(self, tool: str) -> str:
        text = self.descriptions.get(tool, "")
        return text.split(". ")[0].rstrip(".") if text else tool

    def _graph_answer(
        self,
        convo: Conversation,
        profile: ErrorProfile,
        model: str,
        task: Task | None,
        trial_seed: int,
    ) -> str | None:
        """The reply to a dependency-graph question in ``convo``, worked out from the
        signatures it shows, with the profile's graph mistakes (logged); ``None`` when it asks
        none."""
        question = graph_question(convo)
        if question is None:
            return None
        case, signatures = question
        key = f"{profile.seed}|{canonical(case).hex()}"
        key_field = case.get("workflow_key")
        workflow_key = key_field if isinstance(key_field, str) else None
        graph, mistakes = perturbed_graph(dependency_graph(signatures, workflow_key), profile, key)
        if self._log is not None:
            head = _log_head(task, model, profile, trial_seed)
            for index, mistake in enumerate(mistakes):
                record = {"step": None, "call": None, **mistake}
                self._write((profile.name, profile.seed, key, index), head, record)
        style = replies.style_for(key, profile.rate("messy_format"))
        return replies.final_text(graph, False, style)

    # ---- the injection log ----
    def _log_moves(
        self, model: str, profile: ErrorProfile, task: Task, move: Move, trial_seed: int
    ) -> None:
        """Log every mistake the model has played on ``task`` so far (each once), and the
        answer's when it answers."""
        if self._log is None or profile.perfect:
            return
        head = _log_head(task, model, profile, trial_seed)
        for mistake in move.mistakes:
            key = (profile.name, profile.seed, task.id, mistake.step, mistake.kind)
            self._write(key, head, mistake.log_record())
        if move.final_mistake is not None:
            record = {"step": None, "call": None, **move.final_mistake}
            self._write((profile.name, profile.seed, task.id, "final"), head, record)

    def _write(self, key: tuple[Any, ...], head: JSON, record: JSON) -> None:
        if key in self._logged or self._log is None:
            return
        self._logged.add(key)
        self._log.write(orjson.dumps({**head, **record}) + b"\n")
        self._log.flush()


def _log_head(task: Task | None, model: str, profile: ErrorProfile, trial_seed: int) -> JSON:
    """What every injection-log line of one request starts with. ``trial_seed`` is the seed
    the request carried, the trial's own (:func:`sopgym.runs.records.trial_seed`): a
    task's trials share its id, and only this says which trial a mistake was played in (a
    reader matches it against its run's seed and the row's trial). ``seed`` is the
    profile's draw seed, that seed mixed in."""
    return {
        "task_id": task.id if task else None,
        "domain": task.domain if task else None,
        "model": model,
        "profile": profile.name,
        "seed": profile.seed,
        "trial_seed": trial_seed,
    }


def _offered(body: JSON, name: str) -> bool:
    return name in _tool_names(body.get("tools") or [])


def _tool_names(tools: Any) -> list[str]:
    """The names of a request's tool specs (any common rendering), in order."""
    try:
        return [spec_parts(spec)[0] for spec in tools]
    except (KeyError, TypeError, AttributeError):
        raise BadRequest("tools must be a list of function specs, each with a name") from None


def _object(arguments: Any) -> JSON:
    """A call's arguments as the generic policy records them: an object, else none."""
    return arguments if isinstance(arguments, dict) else {}


# ---- what a request must look like ----
def check_request(body: JSON) -> None:
    """Refuse with a 400 naming the parameter, as OpenAI does, a request the scripted model
    cannot read.

    Everything after this reads the request trusting its shape (a message is an object, a
    tool call's id can be a dict key, a stop marker is a string, a tool's schema an object),
    so without these checks such requests failed with a 500 and a traceback in the log. They
    check types, not meaning: a tool result for an unknown ``tool_call_id``, a tool call
    without an id, or arguments that are not JSON text are read as before (the result is
    unmatched, the calls pair by the empty id, the arguments match no SOP step).
    """
    _check_messages(body.get("messages"))
    _check_tools(body.get("tools"))
    if body.get("stream"):
        raise BadRequest("streaming is not supported by the scripted model", "stream")
    n = body.get("n")
    if n is not None and (isinstance(n, bool) or n != 1):
        raise BadRequest("the scripted model returns exactly one choice (n=1)", "n")
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise BadRequest("model must be a string", "model")
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise BadRequest("seed must be an integer", "seed")
    stop = body.get("stop")
    if not (stop is None or isinstance(stop, str) or _strings(stop)):
        raise BadRequest("stop must be a string or an array of strings", "stop")
    # accepted and ignored (the script decides every reply), but refused when out of the
    # range a real endpoint accepts, so an agent's bad setting shows up here too
    for name, low, high in (("temperature", 0, 2), ("top_p", 0, 1)):
        value = body.get(name)
        if value is not None and not (_number(value) and low <= value <= high):
            raise BadRequest(f"{name} must be a number from {low} to {high}", name)
    for name in ("max_tokens", "max_completion_tokens"):
        value = body.get(name)
        if value is not None and not (_number(value) and isinstance(value, int) and value >= 1):
            raise BadRequest(f"{name} must be a positive integer", name)


def _check_messages(messages: Any) -> None:
    if not isinstance(messages, list) or not messages:
        raise BadRequest("messages must be a non-empty array", "messages")
    for i, message in enumerate(messages):
        at = f"messages[{i}]"
        if not isinstance(message, dict):
            raise BadRequest(f"{at} must be an object", "messages")
        role = message.get("role")
        if not isinstance(role, str) or role not in _ROLES:
            roles = ", ".join(sorted(_ROLES))
            raise BadRequest(f"{at}.role must be one of {roles}", "messages")
        content = message.get("content")
        if not (content is None or isinstance(content, str) or _content_parts(content)):
            raise BadRequest(
                f"{at}.content must be a string, an array of content parts or null", "messages"
            )
        calls = message.get("tool_calls")
        if calls is not None and not isinstance(calls, list):
            raise BadRequest(f"{at}.tool_calls must be an array", "messages")
        for j, call in enumerate(calls or ()):
            function = call.get("function") if isinstance(call, dict) else None
            if not (
                isinstance(call, dict)
                and isinstance(call.get("id", ""), str)
                and isinstance(function, dict | None)
                and isinstance((function or {}).get("name", ""), str)
            ):
                raise BadRequest(
                    f"{at}.tool_calls[{j}] must be an object with a string id and a function "
                    "object with a string name",
                    "messages",
                )
        if not isinstance(message.get("tool_call_id", ""), str):
            raise BadRequest(f"{at}.tool_call_id must be a string", "messages")


def _check_tools(tools: Any) -> None:
    if tools is None:
        return
    if not isinstance(tools, list):
        raise BadRequest("tools must be an array of function specs", "tools")
    for i, spec in enumerate(tools):
        try:
            name, schema = spec_parts(spec) if isinstance(spec, dict) else (None, None)
        except (KeyError, TypeError, AttributeError):
            name, schema = None, None
        if not isinstance(name, str) or not name:
            raise BadRequest(f"tools[{i}] must be a function spec with a name", "tools")
        # the generic policy (imported benchmarks) fills arguments from these two fields
        if not (
            isinstance(schema, dict)
            and isinstance(schema.get("properties") or {}, dict)
            and ("required" not in schema or _strings(schema["required"]))
        ):
            raise BadRequest(
                f"tools[{i}]: parameters must be a JSON Schema object (properties an object, "
                "required an array of names)",
                "tools",
            )


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _content_parts(content: Any) -> bool:
    """An array of content parts (objects; bare strings are read as text too) whose
    ``text``, where there is one, is a string."""
    return isinstance(content, list) and all(
        isinstance(part, str) or (isinstance(part, dict) and isinstance(part.get("text", ""), str))
        for part in content
    )


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def forces_a_call(body: JSON) -> bool:
    """Whether the request holds the reply to a tool call: tools offered with ``tool_choice``
    ``"required"`` or a named function (a server's grammar then lets the model write nothing
    else; :func:`sopgym.services.model.behaviours.obeying_tool_choice`)."""
    choice = body.get("tool_choice")
    named = isinstance(choice, dict) and bool(choice.get("function", {}).get("name"))
    return bool(body.get("tools")) and (choice == "required" or named)
