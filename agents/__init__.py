"""Agents: each one drives an episode through the gateway, in its own worker process.

``oracle`` replays gold calls (no model); ``fc``, ``react`` and ``plan`` are LangGraph agents
that talk to a model chosen by a model spec (see :mod:`sopgym.agents.models`); ``mcp`` is
``fc`` working its episodes through the gateway's MCP door.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sopgym.agents.base import Agent

AgentFactory = Callable[..., Agent]
DEFAULT_AGENT = "react"


def _oracle(**_: Any) -> Agent:
    from sopgym.agents.oracle import OracleAgent

    return OracleAgent()


def _fc(**options: Any) -> Agent:
    from sopgym.agents.fc import FunctionCallingAgent

    return FunctionCallingAgent(**options)


def _react(**options: Any) -> Agent:
    from sopgym.agents.react import ReActAgent

    return ReActAgent(**options)


def _plan(**options: Any) -> Agent:
    from sopgym.agents.plan import PlanExecuteAgent

    return PlanExecuteAgent(**options)


def _mcp(**options: Any) -> Agent:
    from sopgym.agents.mcp_agent import McpAgent

    return McpAgent(**options)


def _oneshot(**options: Any) -> Agent:
    """One model call per task on the fc agent's model layer (``agents/oneshot.py``): how
    answer-only tasks (``maze/*``) run as one-shot chat tasks, scored like any episode."""
    from sopgym.agents.fc import FunctionCallingAgent
    from sopgym.agents.oneshot import one_shot_solver

    return one_shot_solver(FunctionCallingAgent(**options))


def _baseline(**options: Any) -> Agent:
    from sopgym.importers.baseline_agent import make_baseline  # the generic policy, no model

    return make_baseline(**options)


AGENTS: dict[str, AgentFactory] = {
    "oracle": _oracle,
    "fc": _fc,
    "react": _react,
    "plan": _plan,
    "mcp": _mcp,
    "oneshot": _oneshot,
    "baseline": _baseline,
}
MODEL_FREE = frozenset({"oracle", "baseline"})  # agents that never call a model


def uses_model(name: str) -> bool:
    return name not in MODEL_FREE


def make_agent(name: str, **options: Any) -> Agent:
    if name not in AGENTS:
        raise KeyError(f"unknown agent {name!r} (known: {', '.join(sorted(AGENTS))})")
    return AGENTS[name](**options)
