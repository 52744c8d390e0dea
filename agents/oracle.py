"""The oracle: replays the reference policy's gold calls through the gateway.

It proves the whole path (agent process → gateway → service) and must score 100%: any
disagreement between the live tools and the labels shows up as a failed oracle task.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from sopgym.agents.base import JSON, AgentContext
from sopgym.agents.client import Episode
from sopgym.core.dataset import load_tasks
from sopgym.core.tasks import Gold, Task


class OracleError(RuntimeError):
    pass


@cache
def _gold(data_dir: Path) -> dict[str, Gold]:
    return load_tasks(data_dir)[1]


class OracleAgent:
    name = "oracle"

    def solve(self, task: Task, episode: Episode, context: AgentContext) -> JSON:
        if context.data_dir is None:
            raise OracleError("the oracle needs the task set's data_dir to read gold")
        gold = _gold(context.data_dir)[task.id]
        for call in gold.calls:
            result = episode.call(call.name, call.arguments)
            if not result.ok:
                raise OracleError(f"gold call {call.name} refused: {result.body}")
        return gold.outputs
