"""The LangGraph agents in-process, against a fake model and a fake episode: how tool errors,
unreadable replies, failed plan steps, retries and limits are handled."""

from __future__ import annotations

import copy
import subprocess
import sys
from typing import Any

import httpx
import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from sopgym.agents import make_agent
from sopgym.agents.base import AgentContext
from sopgym.agents.graph import GraphAgent, StepLimitExceeded, openai_tool
from sopgym.agents.llm import LLM, ModelCallError, invoke_model
from sopgym.agents.models import PlainChatCompletions, parse_model_spec
from sopgym.client import ToolResult
from sopgym.core.exceptions import UsageError
from sopgym.core.tasks import Task

ANSWER = '<final_answer>{"status": "ok"}</final_answer>'
ERROR = {"error": {"code": "missing_argument", "message": "missing 'id'", "field": "id"}}


class FakeChat:
    """Replies from a list (an exception in the list is raised instead); records each call."""

    def __init__(self, replies: list[Any]) -> None:
        self.replies = list(replies)
        self.seen: list[list[BaseMessage]] = []
        self.tools: list[dict] | None = None
        self.tool_choice: str | None = None  # what this binding asks the server for
        self.tool_choices: list[str | None] = []  # each call's, in order

    def bind_tools(self, tools: list[dict], tool_choice: str | None = None) -> FakeChat:
        self.tools = tools  # the catalog last bound, for the tests to read
        bound = copy.copy(self)  # the replies and the logs shared, the choice its own
        bound.tool_choice = tool_choice
        return bound

    def invoke(self, messages: list[BaseMessage], **kwargs: Any) -> AIMessage:
        self.seen.append(list(messages))
        self.tool_choices.append(self.tool_choice)
        reply = (
            self.replies.pop(0) if self.replies else AIMessage("Action: lookup\nAction Input: {}")
        )
        if isinstance(reply, BaseException):
            raise reply
        return reply


class FakeEpisode:
    id, token, sop = "ep", "tok", "1. Look the record up. 2. Report its status."

    def __init__(self, results: list[ToolResult]) -> None:
        self.input_schema: dict = {}
        self.output_schema = {"properties": {"status": {"enum": ["ok", "bad"]}}}
        self.results = list(results)
        self.calls: list[tuple[str, Any]] = []
        self.tools = [
            {
                "name": "lookup",
                "description": "Look a record up.",
                "input_schema": {"type": "object", "properties": {"id": {"type": "string"}}},
            }
        ]

    def call(self, name: str, arguments: Any, call_id: str | None = None) -> ToolResult:
        self.calls.append((name, arguments))
        return self.results.pop(0) if self.results else ToolResult(200, {"result": {"found": 1}})


def _agent(name: str, replies: list[Any], **options: Any) -> tuple[Any, FakeChat]:
    # most replies here answer at once; the corrective turn has tests of its own
    options.setdefault("corrective_turns", 0)
    agent = make_agent(name, model="scripted", base_url="http://127.0.0.1:9/v1", **options)
    assert isinstance(agent, GraphAgent)  # the model-driven agents
    chat = FakeChat(replies)
    agent.llm = LLM(parse_model_spec("scripted"), chat, retries=2, backoff=0.0)
    return agent, chat


def _solve(agent: Any, episode: FakeEpisode) -> tuple[dict, AgentContext]:
    context = AgentContext()
    task = Task("t-1", "fake", {"id": "R1"})
    return agent.solve(task, episode, context), context


def _call(name: str, args: dict, call_id: str = "c1") -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id}])


def test_fc_shows_a_tool_error_to_the_model_and_recovers() -> None:
    agent, chat = _agent(
        "fc", [_call("lookup", {}), _call("lookup", {"id": "R1"}, "c2"), AIMessage(ANSWER)]
    )
    episode = FakeEpisode([ToolResult(422, ERROR)])
    final, context = _solve(agent, episode)
    assert final == {"status": "ok"}
    assert episode.calls == [("lookup", {}), ("lookup", {"id": "R1"})]
    shown = [m for m in chat.seen[1] if isinstance(m, ToolMessage)]
    assert shown and "missing_argument" in shown[0].content and shown[0].tool_call_id == "c1"
    assert chat.tools is not None
    assert chat.tools[0]["function"]["name"] == "lookup"  # the catalog was bound natively
    assert [u["purpose"] for u in context.usage] == ["act"] * 3


def test_react_answers_an_unreadable_reply_with_an_observation() -> None:
    replies = [
        AIMessage("Thought: look it up\nAction: lookup"),
        AIMessage("Thought: again\nAction: lookup\nAction Input: ```json\n{'id': 'R1'}\n```"),
        AIMessage(f"Thought: done\nFinal Answer: {ANSWER}"),
    ]
    agent, chat = _agent("react", replies)
    episode = FakeEpisode([])
    final, _ = _solve(agent, episode)
    assert final == {"status": "ok"} and episode.calls == [("lookup", {"id": "R1"})]
    assert "Missing 'Action Input:'" in chat.seen[1][-1].content
    observation = chat.seen[2][-1].content
    assert isinstance(observation, str) and observation.startswith("Observation: {")
    assert chat.tools is None  # ReAct never binds tools: the catalog is in the prompt
    assert "lookup" in chat.seen[0][0].content


def test_plan_replans_after_a_failed_step() -> None:
    plan = AIMessage('<plan>[{"step": 1, "tool": "lookup", "goal": "find it"}]</plan>')
    replies = [
        plan,
        _call("lookup", {}),
        plan,
        _call("lookup", {"id": "R1"}, "c2"),
        AIMessage(ANSWER),
    ]
    agent, chat = _agent("plan", replies)
    episode = FakeEpisode([ToolResult(422, ERROR)])
    final, context = _solve(agent, episode)
    assert final == {"status": "ok"}
    assert [u["purpose"] for u in context.usage] == ["plan", "act", "replan", "act", "act"]
    assert "missing_argument" in chat.seen[2][-1].content  # the replan request names the failure
    assert "[done] lookup" in chat.seen[4][-1].content


def test_a_reply_without_an_answer_gets_reminders_then_fails() -> None:
    agent, _ = _agent("fc", [AIMessage("thinking"), AIMessage("still"), AIMessage(ANSWER)])
    final, _ = _solve(agent, FakeEpisode([]))
    assert final == {"status": "ok"}
    agent, _ = _agent("fc", [AIMessage("a"), AIMessage("b"), AIMessage("c")])
    with pytest.raises(RuntimeError, match="final answer"):
        _solve(agent, FakeEpisode([]))


def test_step_limit() -> None:
    # the same successful call over and over: the repeat guard stands back (max_repeats)
    agent, _ = _agent("react", [], max_steps=3, max_repeats=10)
    with pytest.raises(StepLimitExceeded):
        _solve(agent, FakeEpisode([]))


def test_model_calls_retry_transient_failures_only() -> None:
    agent, _ = _agent("fc", [httpx.ConnectError("refused"), AIMessage(ANSWER)])
    final, context = _solve(agent, FakeEpisode([]))
    assert final == {"status": "ok"} and context.usage[0]["attempts"] == 2
    failure = ValueError("bad request")
    agent, _ = _agent("fc", [failure])
    with pytest.raises(ModelCallError, match="bad request"):
        _solve(agent, FakeEpisode([]))


def test_agents_never_import_tools_or_domain_packs() -> None:
    """Everything an agent knows comes from the episode: no pack, tool or dataset code."""
    probe = (
        "import sys, sopgym.agents.fc, sopgym.agents.react, sopgym.agents.plan, "
        "sopgym.agents.worker\n"
        "print([m for m in sys.modules if m.startswith(('sopgym.domains', 'sopgym.services', "
        "'sopgym.gateway')) or m in ('sopgym.core.tools', 'sopgym.core.dataset')])"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# ---- issue 48: forcing a tool call (tool_choice) ----
@pytest.mark.parametrize(
    ("tool_choice", "sent"),
    [
        ("required-first", ["required", None, None]),
        ("required-until-success", ["required", "required", None]),
        ("auto", [None, None, None]),
    ],
)
def test_tool_choice_forces_the_turns_its_policy_names(tool_choice: str, sent: list) -> None:
    """The first call is refused, the second succeeds: ``required-first`` forces the first
    turn only, ``required-until-success`` every turn until a call has succeeded."""
    replies = [_call("lookup", {}), _call("lookup", {"id": "R1"}, "c2"), AIMessage(ANSWER)]
    agent, chat = _agent("fc", replies, tool_choice=tool_choice)
    final, _ = _solve(agent, FakeEpisode([ToolResult(422, ERROR)]))
    assert final == {"status": "ok"} and chat.tool_choices == sent


class BadRequest(Exception):
    status_code = 400  # what the OpenAI client's BadRequestError carries


class RefusingChat(FakeChat):
    """An endpoint that answers any request with ``tool_choice`` by a 400."""

    def __init__(self, replies: list[Any]) -> None:
        super().__init__(replies)
        self.refusals: list[str] = []  # shared with its bindings, as the replies are

    def invoke(self, messages: list[BaseMessage], **kwargs: Any) -> AIMessage:
        if self.tool_choice:
            self.refusals.append(self.tool_choice)
            raise BadRequest("Error code: 400 - tool_choice 'required' is not supported")
        return super().invoke(messages, **kwargs)


def test_an_endpoint_refusing_tool_choice_is_asked_without_it_once_and_noted() -> None:
    """Not the agent's mistake and no infrastructure error: the same request goes again
    without the option, the episode runs on, the row is flagged ``tool_choice_refused``, and
    the endpoint is not asked with it again (the next episode included)."""
    agent, _ = _agent("fc", [])
    chat = RefusingChat([_call("lookup", {"id": "R1"}), AIMessage(ANSWER)] * 2)
    agent.llm = LLM(parse_model_spec("scripted"), chat, retries=2, backoff=0.0)
    final, context = _solve(agent, FakeEpisode([]))
    assert final == {"status": "ok"} and context.tool_choice_refused
    assert chat.refusals == ["required"] and context.usage[0]["error"] is None
    final, context = _solve(agent, FakeEpisode([]))  # the worker's next episode
    assert final == {"status": "ok"} and chat.refusals == ["required"]


def test_a_400_that_is_not_the_option_still_fails_and_is_not_blamed_on_it() -> None:
    """A request refused with or without ``tool_choice`` (a bad key, too long a prompt) is the
    call's failure, as before; the endpoint is not marked as refusing the option."""
    agent, _ = _agent("fc", [BadRequest("context too long")] * 2)
    with pytest.raises(ModelCallError):
        _solve(agent, FakeEpisode([]))
    assert not agent.llm.tool_choice_refused


def test_an_unknown_tool_choice_is_refused_up_front() -> None:
    with pytest.raises(UsageError, match="tool_choice must be one of"):
        _agent("fc", [], tool_choice="always")


def test_a_forced_turn_to_an_openai_compatible_endpoint_sends_the_calls_schema(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """llama-server's grammar for ``tool_choice: "required"`` lets text come before the call,
    so a forced turn to a ``--base-url`` endpoint also asks for one call object by JSON
    schema (in the body as it is); an unforced turn, or an agent that reads no text calls,
    sends neither."""
    sent: list[dict] = []

    def create(self: Any, **payload: Any) -> Any:
        sent.append(payload)
        raise RuntimeError("recorded")

    monkeypatch.setattr(PlainChatCompletions, "create", create)
    monkeypatch.setenv("OPENAI_API_KEY", "local")
    tools = [openai_tool(FakeEpisode([]).tools[0])]
    for forced, call_format in [("required", True), (None, True), ("required", False)]:
        llm = LLM.from_spec("openai:m", "http://127.0.0.1:9/v1", retries=0)
        llm.call_format = call_format
        with pytest.raises(ModelCallError):
            invoke_model(llm, [HumanMessage("hi")], AgentContext(), tools=tools,
                         tool_choice=forced)  # fmt: skip
    schema = sent[0]["extra_body"]["response_format"]["json_schema"]["schema"]
    assert sent[0]["tool_choice"] == "required" and schema["properties"]["name"] == {
        "enum": ["lookup"]
    }
    assert "tool_choice" not in sent[1] and "extra_body" not in sent[1]
    assert sent[2]["tool_choice"] == "required" and "extra_body" not in sent[2]
