"""The ``baseline`` agent: the generic policy executed through the gateway.

It drives an episode with :func:`sopgym.agents.baseline_policy.next_action` and nothing else, so
it needs no model and no gold. It exists to prove the imported-benchmark path end to end and to
give a reference point that reads no SOP; its TSR is a baseline, never an oracle's.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from sopgym.agents.baseline_policy import Answer, Step, next_action
from sopgym.core.exceptions import AgentError
from sopgym.types import JSON

if TYPE_CHECKING:
    from sopgym.agents.base import AgentContext
    from sopgym.client import Episode
    from sopgym.core.tasks import Task



class BaselineTimeout(AgentError, RuntimeError):
    """The task's deadline passed before the policy answered."""


class BaselineAgent:
    name = "baseline"

    def solve(self, task: Task, episode: Episode, context: AgentContext) -> JSON:
        fields = list(episode.output_schema.get("properties", {}))
        history: list[Step] = []
        for _ in range(len(episode.tools) + 1):  # each tool at most once, then the answer
            action = next_action(task.inputs, episode.tools, fields, history)
            if isinstance(action, Answer):
                return action.outputs
            if context.deadline is not None and time.monotonic() > context.deadline:
                raise BaselineTimeout(f"deadline passed after {len(history)} calls")
            result = episode.call(action.name, action.arguments)
            history.append(Step(action.name, action.arguments, result.ok, result.content))
        raise AssertionError("the generic policy called a tool twice")


def make_baseline(**_: Any) -> BaselineAgent:
    """The agent factory registered as ``baseline`` in ``sopgym.agents.AGENTS``."""
    return BaselineAgent()
