"""The LangGraph agents in-process, against a fake model and a fake episode: how tool errors,
unreadable replies, failed plan steps, retries and limits are handled."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import httpx
import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from sopgym.agents import make_agent
from sopgym.agents.base import AgentContext
from sopgym.agents.graph import GraphAgent, StepLimitExceeded
from sopgym.agents.llm import LLM, ModelCallError
from sopgym.agents.models import parse_model_spec
from sopgym.client import ToolResult
from sopgym.core.tasks import Task

ANSWER = '<final_answer>{"status": "ok"}</final_answer>'
ERROR = {"error": {"code": "missing_argument", "message": "missing 'id'", "field": "id"}}


class FakeChat:
    """Replies from a list (an exception in the list is raised instead); records each call."""

    def __init__(self, replies: list[Any]) -> None:
        self.replies = list(replies)
        self.seen: list[list[BaseMessage]] = []
        self.tools: list[dict] | None = None

    def bind_tools(self, tools: list[dict]) -> FakeChat:
        self.tools = tools
        return self

    def invoke(self, messages: list[BaseMessage], **kwargs: Any) -> AIMessage:
        self.seen.append(list(messages))
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
