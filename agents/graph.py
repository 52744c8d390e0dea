"""What the three LangGraph agents share: state, limits, tool-call plumbing, answer handling.

An agent subclass only wires its graph and decides how a model turn becomes tool requests and
how tool outcomes are shown back to the model (native tool messages or ReAct observations).
Calling the model, calling tools through the gateway, enforcing the step and wall-clock
limits, and reading the final answer happen here, once.
"""

from __future__ import annotations

import operator
import time
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

import orjson
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, StateGraph

from sopgym.agents import llm as model_calls
from sopgym.agents.base import JSON, AgentContext
from sopgym.agents.llm import LLM, REQUIRED, DeadlineExceeded
from sopgym.agents.options import TOOL_CHOICES, default
from sopgym.agents.prompts import (
    DIALOGUE_GUIDE,
    NEITHER_NOTE,
    case_message,
    cut_request,
    example_copied_request,
    final_request,
    not_a_tool_note,
    observation,
    repeat_warning,
    repeats_example,
    still_no_tool_request,
    system_prompt,
    tool_free_prompt,
    unusable_reply_note,
    use_tools_request,
)
from sopgym.agents.textcalls import read_text_calls
from sopgym.client import Episode
from sopgym.core.answers import (
    MESSAGE_ACTION,
    declared_final_answer,
    extract_final_answer,
    message_action_spec,
    untagged_final_answer,
)
from sopgym.core.dialogue import DIALOGUE
from sopgym.core.exceptions import AgentError, UsageError
from sopgym.core.tasks import Task
from sopgym.evaluation.maze_protocol import paper_prompt, parse_reply
from sopgym.observability.steps import log_step


class StepLimitExceeded(AgentError, RuntimeError):
    """The agent used all its model turns without finishing."""


class NoFinalAnswer(AgentError, RuntimeError):
    """The model stopped without an answer we could read, even after being asked again."""


def was_cut(message: BaseMessage) -> bool:
    """Whether the reply ended at the length limit (``max_tokens``), not where the model
    stopped: OpenAI-compatible servers say ``finish_reason: length``, Anthropic and Bedrock
    ``max_tokens``."""
    metadata = getattr(message, "response_metadata", None) or {}
    reason = (
        metadata.get("finish_reason") or metadata.get("stop_reason") or metadata.get("stopReason")
    )
    return reason in ("length", "max_tokens")


def _unanswered(reminders: int, cut: bool) -> str:
    """Why a task ends without an answer, saying so when the last reply was cut."""
    why = f"no readable final answer after {reminders} reminder{'s' * (reminders != 1)}"
    return f"{why}; the last reply was cut at the length limit (max tokens)" if cut else why


class RepeatedAction(AgentError, RuntimeError):
    """The model kept making the same failing call, or writing the same reply, after being
    told: the agent stops rather than burn the rest of the step budget."""


@dataclass(frozen=True)
class Limits:
    max_steps: int = default("max_steps")  # model turns per task
    max_nudges: int = default("max_nudges")  # "give the final answer" reminders
    max_replans: int = default("max_replans")  # plan agent only
    corrective_turns: int = default("corrective_turns")  # "use the tools" after a tool-less answer
    max_repeats: int = default("max_repeats")  # identical failing calls/replies before stopping


@dataclass
class ToolRequest:
    id: str
    name: str
    arguments: Any  # a JSON object, or the raw text of arguments that were not valid JSON


@dataclass
class ToolOutcome:
    request: ToolRequest
    ok: bool
    status: int
    content: Any  # the tool's result, or its structured error

    @property
    def text(self) -> str:
        return orjson.dumps(self.content).decode()


class State(TypedDict, total=False):
    """What every agent's graph carries; an agent that needs more extends it
    (:attr:`GraphAgent.state_schema`): each channel costs LangGraph work on every step."""

    messages: Annotated[list[BaseMessage], operator.add]
    pending: list[ToolRequest]
    final: JSON | None
    nudges: int


@dataclass
class Run:
    """One episode's runtime, handed to every node through the graph's config."""

    task: Task
    episode: Episode
    context: AgentContext
    llm: LLM
    limits: Limits
    tools: list[JSON] = field(default_factory=list)  # OpenAI-style function specs
    steps: int = 0
    tool_calls: int = 0  # calls made (refused ones included)
    tool_successes: int = 0  # calls that succeeded
    tool_choice: str = "auto"  # when a turn asks the server to force a call (TOOL_CHOICES)
    tool_turns: int = 0  # model turns that offered the tools (plan's planning turns do not)
    corrections: int = 0  # "use the tools" turns given
    example_questioned: bool = False  # an answer equal to the prompt's example was sent back
    notes: list[str] = field(default_factory=list)  # warnings for the model's next turn
    offered: list[str] = field(default_factory=list)  # names the model was offered
    _last_failure: tuple[str, int] = ("", 0)  # (signature, times in a row)
    _last_success: tuple[str, int] = ("", 0)
    _last_reply: tuple[str, int] = ("", 0)

    @property
    def dialogue(self) -> bool:
        return self.task.kind == DIALOGUE

    @property
    def specs(self) -> list[JSON]:
        """The actions offered to the model: the episode's tools, plus the message action in
        a dialogue."""
        return [*self.episode.tools, message_action_spec()] if self.dialogue else self.episode.tools

    @property
    def fields(self) -> list[str]:
        return list(self.episode.output_schema.get("properties", {}))

    def ask(
        self,
        messages: list[BaseMessage],
        *,
        tools: bool = False,
        stop: list[str] | None = None,
        purpose: str = "act",
    ) -> AIMessage:
        """One model turn, counted against the step limit; a turn with ``tools`` asks the
        server to force a call when :meth:`forces_call` says so."""
        if self.steps >= self.limits.max_steps:
            raise StepLimitExceeded(f"step limit of {self.limits.max_steps} model turns reached")
        forced = tools and self.forces_call()
        self.steps += 1
        self.tool_turns += tools
        # through the module, so a wrapper installed on llm.invoke_model (tracing) applies
        recorded = len(self.context.usage)
        try:
            return model_calls.invoke_model(
                self.llm,
                messages,
                self.context,
                tools=self.tools if tools else None,
                stop=stop,
                purpose=purpose,
                tool_choice=REQUIRED if forced else None,
            )
        finally:
            if len(self.context.usage) > recorded:  # the turn's record, failed calls included
                log_step(self.task.id, self.steps, self.context.usage[-1])

    def forces_call(self) -> bool:
        """Whether this turn asks the server for a tool call (``tool_choice: "required"``):
        ``required-first`` on the episode's first turn that offers the tools (plan's first
        step, after its plan), ``required-until-success`` until one of its calls has
        succeeded, ``auto`` never. A small model that answers with a guess before any call
        (issue 48) then makes one; the turns after are the model's own."""
        if self.tool_choice == "required-first":
            return self.tool_turns == 0
        if self.tool_choice == "required-until-success":
            return self.tool_successes == 0
        return False

    def watch_reply(self, text: str, why: str = "") -> None:
        """A reply that neither called a tool nor answered readably: the same one again is
        warned about (saying ``why`` it did not count), and stopped at the limit."""
        self._last_reply = self._watch(
            self._last_reply, text.strip(), "wrote the same unusable reply", "reply", why=why
        )

    def _watch(
        self,
        last: tuple[str, int],
        signature: str,
        what: str,
        kind: str,
        tool: str = "",
        why: str = "",
    ) -> tuple[str, int]:
        """Count ``signature`` repeating in a row: from the second time the model is warned
        (:attr:`notes`, worded for ``kind``), at :attr:`Limits.max_repeats` the agent stops."""
        times = last[1] + 1 if signature == last[0] else 1
        if times >= self.limits.max_repeats:
            raise RepeatedAction(f"the model {what} {times} times in a row; stopped")
        if times >= 2:
            self.notes.append(repeat_warning(kind, times, tool, why))
        return signature, times

    def take_notes(self) -> list[BaseMessage]:
        notes, self.notes = self.notes, []
        return [HumanMessage(note) for note in notes]

    def call_tools(self, requests: list[ToolRequest]) -> list[ToolOutcome]:
        """Each request goes to the gateway as is, unknown names included, so the trajectory
        records what the model really asked for; refusals come back as outcomes. In a
        dialogue the message action goes to the user instead (never a tool call)."""
        outcomes = []
        for request in requests:
            if self.context.deadline is not None and time.monotonic() >= self.context.deadline:
                raise DeadlineExceeded("task wall-clock limit reached")
            if self.dialogue and request.name == MESSAGE_ACTION:
                arguments = request.arguments
                content = arguments.get("content") if isinstance(arguments, dict) else arguments
                result = self.episode.message(content)
            else:
                result = self.episode.call(request.name, request.arguments, request.id)
            self.tool_calls += 1
            self.tool_successes += result.ok
            outcomes.append(ToolOutcome(request, result.ok, result.status, result.content))
            signature = orjson.dumps(
                [request.name, request.arguments, result.content],
                option=orjson.OPT_SORT_KEYS,
                default=str,
            ).decode()
            # identical calls in a row are watched whether they fail or succeed: a model may
            # loop on a call that works (the same arguments, the same result) just as well
            if result.ok:
                self._last_failure = ("", 0)
                what = f"made the same successful call to {request.name}"
                self._last_success = self._watch(
                    self._last_success, signature, what, "success", request.name
                )
            else:
                self._last_success = ("", 0)
                what = f"made the same failing call to {request.name}"
                self._last_failure = self._watch(
                    self._last_failure, signature, what, "failing", request.name
                )
        return outcomes


def run_of(config: RunnableConfig) -> Run:
    return config["configurable"]["run"]


def openai_tool(spec: JSON) -> JSON:
    """The episode spec's OpenAI rendering (LangChain converts it for the other providers)."""
    return spec.get("openai") or {
        "type": "function",
        "function": {
            "name": spec["name"],
            "description": spec.get("description", ""),
            "parameters": spec.get("input_schema") or {"type": "object"},
        },
    }


def text_of(message: BaseMessage) -> str:
    """A message's text, whether its content is a string or a list of content blocks."""
    content = message.content
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(block.get("text", ""))
    return "".join(parts)


def reply_requests(
    reply: AIMessage, run: Run, text_calls: bool
) -> tuple[AIMessage, list[ToolRequest]]:
    """The tool requests of a native-tools turn, and the turn as the transcript keeps it.

    With ``text_calls``, a reply with no native call whose text writes calls to offered tools
    (:mod:`sopgym.agents.textcalls`: fenced JSON, Hermes tags, ...) is read as those calls,
    and kept in the transcript as the native calls it meant, so each tool message answers a
    call of the turn before it (what every Chat Completions server requires)."""
    requests = native_requests(reply)
    if requests or not text_calls:
        return reply, requests
    written = read_text_calls(text_of(reply), run.offered)
    if not written:
        return reply, []
    requests = [
        ToolRequest(f"text_{run.steps}_{i}", call.name, call.arguments)
        for i, call in enumerate(written)
    ]
    turn = AIMessage(
        "",
        tool_calls=[
            {"name": r.name, "args": r.arguments if isinstance(r.arguments, dict) else {},
             "id": r.id}
            for r in requests
        ],
        response_metadata=reply.response_metadata,
        usage_metadata=reply.usage_metadata,
    )
    return turn, requests


def native_requests(message: AIMessage) -> list[ToolRequest]:
    """Tool calls of a native function-calling turn; calls whose arguments were not valid
    JSON are kept (raw) so the gateway records and refuses them like any bad call."""
    requests = [
        ToolRequest(call.get("id") or f"call_{i}", call["name"], call.get("args", {}))
        for i, call in enumerate(message.tool_calls)
    ]
    for i, call in enumerate(message.invalid_tool_calls):
        requests.append(
            ToolRequest(call.get("id") or f"bad_{i}", call.get("name") or "", call.get("args"))
        )
    return requests


class GraphAgent:
    """Base of the LangGraph agents: builds the model once per worker, the graph once per
    agent, and runs one graph invocation per episode."""

    name = "graph"
    # an episode's state lives in its Run (passed through the graph's config), never on self
    concurrent_safe = True
    native_tools = True  # False: tools are described in the prompt (ReAct)
    state_schema: type[State] = State

    def __init__(
        self,
        model: str = "scripted",
        base_url: str | None = None,
        max_steps: int = default("max_steps"),
        max_replans: int = default("max_replans"),
        temperature: float | None = default("temperature"),
        request_timeout: float = default("request_timeout"),
        retries: int = default("retries"),
        max_tokens: int | None = default("max_tokens"),
        max_nudges: int = default("max_nudges"),
        corrective_turns: int = default("corrective_turns"),
        max_repeats: int = default("max_repeats"),
        paper_protocol: int = default("paper_protocol"),
        text_tool_calls: int = default("text_tool_calls"),
        record_tokens: int = default("record_tokens"),
        tool_choice: str = default("tool_choice"),
        **_: Any,
    ) -> None:
        if tool_choice not in TOOL_CHOICES:  # the CLI and the API refuse it first
            raise UsageError(f"tool_choice must be one of {', '.join(TOOL_CHOICES)}, "
                             f"got {tool_choice!r}")  # fmt: skip
        self.tool_choice = tool_choice
        self.paper_protocol = bool(paper_protocol)  # SOP-Maze's protocol on prompt-only tasks
        self.text_tool_calls = bool(text_tool_calls)
        self.llm = LLM.from_spec(model, base_url, temperature, request_timeout, retries, max_tokens,
                                 bool(record_tokens))  # fmt: skip
        self.llm.call_format = self.text_tool_calls  # a call as text is read only then
        self.limits = Limits(
            max_steps=max_steps,
            max_nudges=max_nudges,
            max_replans=max_replans,
            corrective_turns=corrective_turns,
            max_repeats=max_repeats,
        )
        self.graph = self.build(StateGraph(self.state_schema)).compile()

    # ---- what subclasses provide ----
    def build(self, graph: StateGraph) -> StateGraph:
        raise NotImplementedError

    def system_text(self, run: Run) -> str:
        raise NotImplementedError

    def offered(self, run: Run) -> list[JSON]:
        """The specs a native-tools agent offers the model: all of the episode's."""
        return run.specs

    def native_system_text(self, run: Run, opens_with_call: bool = True) -> str:
        """A native-tools agent's system message: its example call uses the first offered
        tool, written in the text form the agent reads; with ``text_tool_calls`` off no such
        form is shown (it would not be read)."""
        offered = set(run.offered)
        shown = [s for s in run.specs if s["name"] in offered] if self.text_tool_calls else []
        return system_prompt(
            run.episode.output_schema, tools=shown, opens_with_call=opens_with_call
        )

    # ---- shared ----
    def solve(self, task: Task, episode: Episode, context: AgentContext) -> JSON:
        if not episode.tools:  # nothing to call or plan: the model just answers
            if self.paper_protocol and paper_prompt(task.inputs) is not None:
                return answer_as_published(self.llm, task, context)
            return answer_without_tools(self.llm, task, episode, context, self.limits.max_nudges)
        run = Run(task, episode, context, self.llm, self.limits, tool_choice=self.tool_choice)
        if self.native_tools:
            offered = self.offered(run)
            run.tools = [openai_tool(spec) for spec in offered]
            run.offered = [spec["name"] for spec in offered]
        else:
            run.offered = [spec["name"] for spec in run.specs]
        system = self.system_text(run)
        opening = [
            SystemMessage(f"{system}\n\n{DIALOGUE_GUIDE}" if run.dialogue else system),
            HumanMessage(case_message(episode.sop, task.inputs, task.conversation)),
        ]
        state = self.graph.invoke(
            {"messages": opening},
            config={
                "configurable": {"run": run},
                "recursion_limit": 4 * self.limits.max_steps + 20,
            },
            output_keys=["final"],
        )
        final = state.get("final")
        if not isinstance(final, dict):
            raise NoFinalAnswer("the agent ended without a final answer")
        return final

    def render_outcomes(
        self, outcomes: list[ToolOutcome], offered: list[str] | None = None
    ) -> list[BaseMessage]:
        """Tool outcomes as the model sees them: tool messages, or one ReAct observation. A
        call to a name not ``offered`` says which names are."""

        def text(o: ToolOutcome, shown: str) -> str:
            if offered and not o.ok and o.request.name not in offered:
                return f"{shown} {not_a_tool_note(o.request.name, offered)}"
            return shown

        if self.native_tools:
            return [
                ToolMessage(
                    text(o, o.text),
                    tool_call_id=o.request.id,
                    name=o.request.name,
                    status="success" if o.ok else "error",
                )
                for o in outcomes
            ]
        return [HumanMessage("\n".join(text(o, observation(o.content)) for o in outcomes))]

    def tools_node(self, state: State, config: RunnableConfig) -> dict[str, Any]:
        return self.tool_turn(state, run_of(config))[1]

    def tool_turn(self, state: State, run: Run) -> tuple[list[ToolOutcome], dict[str, Any]]:
        """Make the pending calls: their outcomes, and the state update that shows them."""
        outcomes = run.call_tools(state.get("pending") or [])
        messages = [*self.render_outcomes(outcomes, run.offered), *run.take_notes()]
        return outcomes, {"messages": messages, "pending": []}

    def conclude(
        self, state: State, text: str, run: Run, reply: BaseMessage | None = None
    ) -> dict[str, Any]:
        """Read the final answer from ``text``, in its declared form only; without one, remind
        the model (a few times). An answer before any tool call in an episode with tools is
        flagged (``answered_without_tools``) and, for :attr:`Limits.corrective_turns` turns,
        answered with a request to work through the tools instead. Each reminder fits the
        reply it answers: a reply ``cut`` at the length limit is told so, and a tool-less reply
        after the "use the tools" turn is told to call a tool, not to answer. An answer that
        is the prompt's example answer value for value is sent back once (and flagged
        ``copied_example``): the example only shows the form. A reply that is only the answer's
        object without its tags (:func:`untagged_final_answer`) is the answer, flagged
        ``untagged_answer``; any other reply is told what it lacks (:func:`unusable_reply_note`:
        the tags, a field, the form of a call)."""
        cut = reply is not None and was_cut(reply)
        final = declared_final_answer(text, run.fields)
        untagged = final is None and not cut
        if untagged:
            final = untagged_final_answer(text, run.fields)
        if run.tool_calls == 0 and (final is not None or extract_final_answer(text, run.fields)):
            run.context.answered_without_tools = True
            if run.corrections < run.limits.corrective_turns:
                run.corrections += 1
                return {"messages": [HumanMessage(use_tools_request(run.episode.output_schema))]}
        if final is not None and repeats_example(final, run.episode.output_schema):
            run.context.copied_example = True  # (reported even when it stands)
            if not run.example_questioned:
                run.example_questioned = True
                return {"messages": [HumanMessage(example_copied_request())]}
        if final is not None:
            if untagged:  # the answer's object with its tags left off: its form, not its values
                run.context.untagged_answer = True
            return {"final": final}
        why = "" if cut else unusable_reply_note(text, run.fields, run.offered)
        if not cut:  # a cut reply is the limit's doing: asked again, never a repeat
            run.watch_reply(text, why)
        notes = run.take_notes()
        if notes:  # the same reply again: its warning replaces the reminder
            return {"messages": notes}
        nudges = state.get("nudges", 0)
        if nudges >= run.limits.max_nudges:
            raise NoFinalAnswer(_unanswered(nudges, cut))
        if cut:
            reminder = cut_request(run.episode.output_schema)
        elif run.corrections and run.tool_calls == 0:
            reminder = still_no_tool_request()
            if why == NEITHER_NOTE:  # its "or give the final answer" would contradict it
                why = ""
        else:
            reminder = final_request(run.episode.output_schema)
        said = f"{why} {reminder}" if why else reminder
        return {"messages": [HumanMessage(said)], "nudges": nudges + 1}


def answer_without_tools(
    llm: LLM, task: Task, episode: Episode, context: AgentContext, reminders: int
) -> JSON:
    """A task whose episode offers no tools: one model call answers it, and an answer that
    cannot be read is asked for again up to ``reminders`` times. No graph runs, since there
    is no tool to call and no step to plan. A reply cut at the length limit is asked for again
    (shorter) at least once, even with no reminders: the cut was the limit's, not the
    model's answer."""
    fields = list(episode.output_schema.get("properties", {}))
    messages: list[BaseMessage] = [
        SystemMessage(tool_free_prompt(episode.output_schema)),
        HumanMessage(case_message(episode.sop, task.inputs)),
    ]
    asked = 0
    while True:
        reply = model_calls.invoke_model(llm, messages, context, purpose="answer")
        final = extract_final_answer(text_of(reply), fields)
        if final is not None:
            return final
        cut = was_cut(reply)
        if asked >= max(reminders, 1 if cut else 0):
            raise NoFinalAnswer(_unanswered(asked, cut))
        asked += 1
        request = cut_request if cut else final_request
        messages += [reply, HumanMessage(request(episode.output_schema))]


def answer_as_published(llm: LLM, task: Task, context: AgentContext) -> JSON:
    """SOP-Maze's protocol (:mod:`sopgym.evaluation.maze_protocol`): the task's prompt as the
    one user message, no system prompt, one call, the reply read as the official scorer reads
    it; no reminder (the published evaluation asks once)."""
    messages: list[BaseMessage] = [HumanMessage(paper_prompt(task.inputs) or "")]
    reply = model_calls.invoke_model(llm, messages, context, purpose="answer")
    final = parse_reply(text_of(reply))
    if final is None:
        raise NoFinalAnswer("the reply holds no JSON object, even repaired")
    return final


def after_answer(retry_node: str):
    """Edge after an answer attempt: done, or back to ``retry_node`` after a reminder."""

    def route(state: State) -> str:
        return END if state.get("final") is not None else retry_node

    return route
