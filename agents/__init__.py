"""Agents: each one drives an episode through the gateway, in its own worker process."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sopgym.agents.base import Agent

AgentFactory = Callable[..., Agent]


def _oracle(**_: Any) -> Agent:
    from sopgym.agents.oracle import OracleAgent

    return OracleAgent()


AGENTS: dict[str, AgentFactory] = {"oracle": _oracle}


def make_agent(name: str, **options: Any) -> Agent:
    if name not in AGENTS:
        raise KeyError(f"unknown agent {name!r} (known: {', '.join(sorted(AGENTS))})")
    return AGENTS[name](**options)
