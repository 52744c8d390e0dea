"""Agents: each one drives an episode through the gateway, in its own worker process.

``oracle`` replays gold calls (no model); ``fc``, ``react`` and ``plan`` are LangGraph agents
that talk to a model chosen by a model spec (see :mod:`sopgym.agents.models`); ``mcp`` is
``fc`` working its episodes through the gateway's MCP door.

Agents are one kind of the one plug-in registry (:mod:`sopgym.core.plugins`): ours register
here (:func:`register_agent`); a package adds its own under the entry-point group
``sopgym.agents`` (``name = "module:Class"``); and ``--agent module:Class`` loads any class with
the small interface of :class:`sopgym.agents.base.Agent` (docs/own-agent.md).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sopgym.agents.base import Agent
from sopgym.core.exceptions import UsageError
from sopgym.core.plugins import NotAPlugin, Plugins

AgentFactory = Callable[..., Agent]
DEFAULT_AGENT = "react"
ENTRY_POINT_GROUP = "sopgym.agents"


class UnknownAgent(UsageError, ValueError):
    """An ``--agent`` that names no registered agent and no loadable ``module:Class``."""


@dataclass(frozen=True)
class AgentEntry:
    """How to make an agent: ``factory(**options)`` gets the run's agent options (``model``,
    ``base_url`` when it uses a model, the ``--agent-option`` values)."""

    name: str
    factory: AgentFactory
    uses_model: bool = True


def _entry(spec: str, loaded: Any) -> AgentEntry:
    """An entry for a loaded class (or factory function), checked to be an agent."""
    if isinstance(loaded, AgentEntry):
        return loaded
    if inspect.isclass(loaded) and not callable(getattr(loaded, "solve", None)):
        raise NotAPlugin(f"{loaded.__name__} has no solve(task, episode, context)")
    if not callable(loaded):
        raise NotAPlugin("not a class or factory of agents")
    factory = class_factory(loaded) if inspect.isclass(loaded) else loaded
    return AgentEntry(spec, factory, bool(getattr(loaded, "uses_model", False)))


AGENT_PLUGINS: Plugins[AgentEntry] = Plugins("agent", ENTRY_POINT_GROUP, _entry, UnknownAgent)
AGENTS = AGENT_PLUGINS.registered  # the registered agents by name (ours, then code's)


def register_agent(name: str, factory: AgentFactory, *, uses_model: bool = True) -> None:
    AGENT_PLUGINS.register(name, AgentEntry(name, factory, uses_model))


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
    from sopgym.agents.baseline import make_baseline  # the generic policy, no model

    return make_baseline(**options)


register_agent("oracle", _oracle, uses_model=False)
register_agent("fc", _fc)
register_agent("react", _react)
register_agent("plan", _plan)
register_agent("mcp", _mcp)
register_agent("oneshot", _oneshot)
register_agent("baseline", _baseline, uses_model=False)


def class_factory(cls: Any) -> AgentFactory:
    """A factory for an agent class: it is given the options its ``__init__`` names (all of
    them when it takes ``**kwargs``), so a class that needs none takes none."""
    parameters = inspect.signature(cls).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return cls
    named = {p.name for p in parameters}

    def make(**options: Any) -> Agent:
        return cls(**{k: v for k, v in options.items() if k in named})

    return make


def agent_names() -> list[str]:
    """Every agent ``--agent`` takes by name: ours and the installed plug-ins'."""
    return AGENT_PLUGINS.names()


def resolve_agent(spec: str) -> AgentEntry:
    """The agent ``spec`` names: a registered name, a plug-in's entry-point name, or
    ``module:Class`` (imported as ``python -m`` would: from the current folder or an installed
    package). :class:`UnknownAgent` saying why when it is none of these."""
    return AGENT_PLUGINS.resolve(spec)


def is_ours(spec: str) -> bool:
    """Whether ``spec`` is an agent sopgym ships (a plug-in's or ``module:Class`` is not)."""
    return spec in AGENTS


def uses_model(name: str) -> bool:
    """Whether the agent calls a model (so a run starts and checks one); an agent that cannot
    be loaded here (a run recorded elsewhere) is taken to."""
    try:
        return resolve_agent(name).uses_model
    except UnknownAgent:
        return True


def make_agent(name: str, **options: Any) -> Agent:
    """The agent ``name`` names (:func:`resolve_agent`), made with ``options``."""
    return resolve_agent(name).factory(**options)
