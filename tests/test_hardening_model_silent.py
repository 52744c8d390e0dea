"""Hardening (issue 36, point 6): a task whose time ran out waiting on a model that never
answered any of its calls is an infrastructure failure, not the agent's blank answer; once the
model has answered, running out of time is the agent's own."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
from langchain_core.messages import AIMessage

from sopgym.agents.base import AgentContext
from sopgym.agents.llm import LLM, DeadlineExceeded
from sopgym.agents.models import parse_model_spec
from sopgym.client import ToolResult
from sopgym.core.outcomes import InfraFailure
from sopgym.core.tasks import Task
from tests.test_agents_graph import FakeEpisode, _agent, _call


class SilentAfter:
    """Answers ``replies`` in turn, then times out every request (a model gone silent)."""

    def __init__(self, replies: list[AIMessage]) -> None:
        self.replies = list(replies)

    def bind_tools(self, tools: list[dict], tool_choice: str | None = None) -> SilentAfter:
        return self

    def invoke(self, messages: Any, **kwargs: Any) -> AIMessage:
        if self.replies:
            return self.replies.pop(0)
        raise httpx.ReadTimeout("timed out")


def _run(replies: list[AIMessage]) -> BaseException:
    agent, _ = _agent("fc", [])
    agent.llm = LLM(parse_model_spec("scripted"), SilentAfter(replies), backoff=0.0,
                    request_timeout=120)  # fmt: skip
    context = AgentContext(deadline=time.monotonic() + 1.0)  # shorter than the request timeout
    episode = FakeEpisode([ToolResult(200, {"result": {"status": "ok"}})])
    with pytest.raises(DeadlineExceeded) as raised:
        agent.solve(Task("t-1", "fake", {"id": "R1"}), episode, context)
    return raised.value


def test_a_model_that_never_answered_is_infrastructure() -> None:
    error = _run([])
    assert isinstance(error, InfraFailure) and "never answered" in str(error)


def test_a_model_that_answered_then_ran_the_clock_out_is_the_agents_time() -> None:
    error = _run([_call("lookup", {"id": "R1"})])
    assert not isinstance(error, InfraFailure)
