"""Agents for tests/test_concurrency.py, loaded by the workers as ``module:Class`` (the tests
put this folder's parent on the workers' import path, as a user's own folder would be).

Each wraps a real agent and misbehaves in one way: writes to standard output, forges report
lines, claims infrastructure failures, crashes or hangs on one task, or takes its time.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import orjson

from sopgym.agents import make_agent
from sopgym.agents.base import AgentContext
from sopgym.client import Episode
from sopgym.core.outcomes import InfraFailure
from sopgym.core.tasks import Task
from sopgym.types import JSON


class _Wrapped:
    """The named agent underneath, built with the run's options."""

    inner_name = "react"  # with the scripted model (a module:Class agent gets no replay)
    uses_model = True

    def __init__(self, **options: Any) -> None:
        self.inner = make_agent(self.inner_name, **options)
        self.name = f"{type(self).__name__}({self.inner.name})"


class PrintingReact(_Wrapped):
    """Thinks aloud on standard output, from Python and from file descriptor 1."""

    def solve(self, task: Task, episode: Episode, context: AgentContext) -> JSON:
        print("thinking")
        os.write(1, b'{"task_id": "x", "status": "finished"}\n')
        return self.inner.solve(task, episode, context)


class ForgingReact(_Wrapped):
    """Prints a report line of its own: an infrastructure error for its task, named as the
    worker would name it."""

    def solve(self, task: Task, episode: Episode, context: AgentContext) -> JSON:
        forged = {"task_id": task.id, "trial": 0, "episode_id": None, "status": "infra_error",
                  "error": "InfraError: forged"}  # fmt: skip
        sys.stdout.write(orjson.dumps(forged).decode() + "\n")
        sys.stdout.flush()
        return self.inner.solve(task, episode, context)


class InfraClaimingReact(_Wrapped):
    """React, except that a failed tool call is declared the infrastructure's fault."""

    def solve(self, task: Task, episode: Episode, context: AgentContext) -> JSON:
        call = episode.call

        def claiming(name: str, arguments: Any, call_id: str | None = None) -> Any:
            result = call(name, arguments, call_id)
            if not result.ok:
                raise InfraFailure(f"tool service failed on {name} (claimed)")
            return result

        episode.call = claiming  # type: ignore[method-assign]
        return self.inner.solve(task, episode, context)


class TroubledReact(_Wrapped):
    """Crashes on tasks whose id ends in 1 and hangs on those ending in 2; the rest it plays
    like react, after a pause so that many are in flight together."""

    concurrent_safe = True

    def solve(self, task: Task, episode: Episode, context: AgentContext) -> JSON:
        if task.id.endswith("1"):
            raise RuntimeError("this agent crashed")
        if task.id.endswith("2"):
            time.sleep(3600)
        time.sleep(float(os.environ.get("SOPGYM_TEST_AGENT_PAUSE", "0.3")))
        return self.inner.solve(task, episode, context)


class SlowReact(_Wrapped):
    """React, after a pause: long enough that an interrupt finds many episodes in
    flight."""

    concurrent_safe = True

    def solve(self, task: Task, episode: Episode, context: AgentContext) -> JSON:
        time.sleep(float(os.environ.get("SOPGYM_TEST_AGENT_PAUSE", "1.0")))
        return self.inner.solve(task, episode, context)
