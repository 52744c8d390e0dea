"""The oracle: replays the reference policy's gold calls (and, in a dialogue, its messages to
the user, interleaved as the policy made them) through the gateway.

It proves the whole path (agent process → gateway → service) and must score 100%: any
disagreement between the live tools and the labels shows up as a failed oracle task.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from sopgym.agents.base import JSON, AgentContext
from sopgym.client import Episode
from sopgym.core.dataset import load_tasks
from sopgym.core.dialogue import AGENT
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
        said = [m for m in gold.messages if m["role"] == AGENT]
        for index, call in enumerate(gold.calls):
            said = _say(episode, said, index)
            result = episode.call(call.name, call.arguments)
            if not result.ok:
                raise OracleError(f"gold call {call.name} refused: {result.body}")
        _say(episode, said, len(gold.calls))
        return gold.outputs


def _say(episode: Episode, said: list[JSON], calls_made: int) -> list[JSON]:
    """Send the gold agent turns due before call ``calls_made``; the turns still to come."""
    while said and said[0]["at_call"] <= calls_made:
        result = episode.message(said[0]["content"])
        if not result.ok:
            raise OracleError(f"gold message refused: {result.body}")
        said = said[1:]
    return said
