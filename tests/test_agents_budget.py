"""Agents that do not waste a run on a weak model, in-process against a fake model and a fake
episode: answers only in their declared form, one corrective turn after an answer given
before any tool call, repeated failing calls and replies warned about then stopped, plans in
the shapes models write them, request timeouts within the task's deadline, and the options
that set all this from the command line."""

from __future__ import annotations

import time
from typing import Any

import click
import httpx
import pytest
from langchain_core.messages import AIMessage, HumanMessage

from sopgym.agents.base import AgentContext
from sopgym.agents.graph import RepeatedAction
from sopgym.agents.llm import LLM, DeadlineExceeded, ModelUnreachable, request_timeout
from sopgym.agents.models import parse_model_spec
from sopgym.agents.options import parse_agent_option
from sopgym.agents.plan import read_plan
from sopgym.cli.agent_options import collect_agent_options
from sopgym.client import ToolResult
from sopgym.core.answers import declared_final_answer, extract_final_answer
from sopgym.core.tasks import Task
from tests.test_agents_graph import ANSWER, ERROR, FakeEpisode, _agent, _call, _solve

GUESS = AIMessage('The result is:\n```json\n{"status": "bad"}\n```')


def test_only_the_declared_form_is_an_answer() -> None:
    fenced = 'I think:\n```json\n{"status": "ok"}\n```'
    assert declared_final_answer(fenced, ["status"]) is None
    assert extract_final_answer(fenced, ["status"]) == {"status": "ok"}  # the lenient reader
    assert declared_final_answer(ANSWER, ["status"]) == {"status": "ok"}
    assert declared_final_answer('Final Answer: {"status": "ok"}', ["status"]) == {"status": "ok"}


def test_a_guess_before_any_tool_call_gets_a_corrective_turn_and_is_flagged() -> None:
    replies = [GUESS, _call("lookup", {"id": "R1"}), AIMessage(ANSWER)]
    agent, chat = _agent("fc", replies, corrective_turns=1)
    episode = FakeEpisode([])
    final, context = _solve(agent, episode)
    assert final == {"status": "ok"} and episode.calls == [("lookup", {"id": "R1"})]
    assert context.answered_without_tools
    told = chat.seen[1][-1]
    assert isinstance(told, HumanMessage) and "without calling any tool" in str(told.content)


def test_without_corrective_turns_a_tagged_answer_is_taken_but_still_flagged() -> None:
    agent, chat = _agent("fc", [AIMessage(ANSWER)], corrective_turns=0)
    final, context = _solve(agent, FakeEpisode([]))
    assert final == {"status": "ok"} and context.answered_without_tools and len(chat.seen) == 1


def test_a_fenced_guess_after_the_tools_is_no_answer_until_it_is_tagged() -> None:
    replies = [_call("lookup", {"id": "R1"}), GUESS, AIMessage(ANSWER)]
    agent, chat = _agent("fc", replies, corrective_turns=1)
    final, context = _solve(agent, FakeEpisode([]))
    assert final == {"status": "ok"} and not context.answered_without_tools
    assert "Only an answer inside the tags counts" in str(chat.seen[2][-1].content)


@pytest.mark.parametrize("agent_name", ["fc", "plan"])
def test_the_same_failing_call_is_warned_about_then_stopped(agent_name: str) -> None:
    plan = (
        [AIMessage('<plan>[{"step": 1, "tool": "lookup"}]</plan>')] if agent_name == "plan" else []
    )
    stuck = [_call("lookup", {}, f"c{i}") for i in range(10)]
    agent, chat = _agent(agent_name, [*plan, *stuck], max_repeats=3, max_replans=0)
    episode = FakeEpisode([ToolResult(422, ERROR)] * 10)
    with pytest.raises(RepeatedAction, match="same failing call to lookup 3 times"):
        _solve(agent, episode)
    assert len(episode.calls) == 3  # not the step limit's 40
    warned = [m for seen in chat.seen for m in seen if "Warning: you have made" in str(m.content)]
    assert warned


def test_react_stops_an_unusable_reply_repeated() -> None:
    agent, chat = _agent("react", [AIMessage("I am not sure.")] * 10, max_repeats=3)
    with pytest.raises(RepeatedAction, match="same unusable reply 3 times"):
        _solve(agent, FakeEpisode([]))
    assert len(chat.seen) == 3


@pytest.mark.parametrize(
    "text",
    [
        '<plan>[{"step": 1, "tool": "lookup", "goal": "find it"}]</plan>',
        '{"steps": [{"tool": "lookup", "goal": "find it"}]}',
        '<plan><step n="1"><tool>lookup</tool><goal>find it</goal></step></plan>',
        '<step tool="lookup">find it</step>',
        "Plan:\n1. Call lookup to find it",
        "Step 1) use `lookup`: find it",
    ],
)
def test_plans_in_the_shapes_models_write(text: str) -> None:
    plan = read_plan(text, ["lookup", "report"])
    assert plan is not None and [s["tool"] for s in plan] == ["lookup"]
    assert "find it" in plan[0]["goal"]


def test_an_unreadable_plan_is_said_so() -> None:
    replies = [AIMessage("I will be careful."), _call("lookup", {"id": "R1"}), AIMessage(ANSWER)]
    agent, chat = _agent("plan", replies)
    final, _ = _solve(agent, FakeEpisode([]))
    assert final == {"status": "ok"}
    assert any("plan could not be read" in str(m.content) for m in chat.seen[1])


class SlowChat:
    """Times out every request, recording the timeout each one was given."""

    def __init__(self) -> None:
        self.timeouts: list[float] = []

    def bind_tools(self, tools: list[dict], tool_choice: str | None = None) -> SlowChat:
        return self

    def invoke(self, messages: Any, **kwargs: Any) -> AIMessage:
        self.timeouts.append(kwargs["timeout"])
        raise httpx.ReadTimeout("timed out")


def test_a_timed_out_request_is_retried_once_within_the_deadline() -> None:
    chat = SlowChat()
    llm = LLM(parse_model_spec("scripted"), chat, retries=4, backoff=0.0, request_timeout=120)
    agent, _ = _agent("fc", [])
    agent.llm = llm
    context = AgentContext(deadline=time.monotonic() + 30)
    assert 29 < request_timeout(llm, context) <= 30  # cut to the task's deadline
    with pytest.raises(DeadlineExceeded):  # the task's time ran out, not the endpoint
        agent.solve(Task("t-1", "fake", {"id": "R1"}), FakeEpisode([]), context)
    assert chat.timeouts == [pytest.approx(30, abs=1)] and context.usage[-1]["attempts"] == 1
    llm.request_timeout = 5  # well within the deadline: the endpoint is slow, retried once
    chat.timeouts.clear()
    with pytest.raises(ModelUnreachable):
        agent.solve(Task("t-1", "fake", {"id": "R1"}), FakeEpisode([]), context)
    assert chat.timeouts == [5, 5] and context.usage[-1]["attempts"] == 2


def test_agent_options_parse_and_refuse_clearly() -> None:
    assert parse_agent_option("max-steps=7") == ("max_steps", 7)
    assert parse_agent_option("temperature=0.3") == ("temperature", 0.3)
    with pytest.raises(ValueError, match="key among"):
        parse_agent_option("steps=3")
    with pytest.raises(ValueError, match="must be int"):
        parse_agent_option("max_steps=many")
    assert parse_agent_option("tool_choice=auto") == ("tool_choice", "auto")
    with pytest.raises(ValueError, match="one of auto, required-first"):
        parse_agent_option("tool_choice=always")
    flags = {"agent_option": ("max_repeats=2", "max_steps=9"), "max_steps": 5, "retries": None}
    assert collect_agent_options(flags) == {"max_repeats": 2, "max_steps": 5}
    with pytest.raises(click.BadParameter):
        collect_agent_options({"agent_option": ("max_tokens=0",)})
