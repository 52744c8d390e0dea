"""The oracle: replays the reference policy's gold calls (and, in a dialogue, its messages to
the user, interleaved as the policy made them) through the gateway.

It proves the whole path (agent process → gateway → service) and must score 100%: any
disagreement between the live tools and the labels shows up as a failed oracle task.

Agent workers never learn where gold lives: the runner, which scores and so holds the gold,
puts what the oracle replays into the oracle's jobs (:func:`replay_of`), and nothing of it
into any other agent's.
"""

from __future__ import annotations

from pathlib import Path

from sopgym.agents.base import JSON, AgentContext
from sopgym.client import Episode
from sopgym.core import dataset
from sopgym.core.dialogue import AGENT
from sopgym.core.exceptions import AgentError
from sopgym.core.registry import load_domain
from sopgym.core.tasks import Gold, Task

NAME = "oracle"


class OracleError(AgentError, RuntimeError):
    pass


def replay_of(gold: Gold) -> JSON:
    """What the oracle replays of a task's gold: its calls, its agent turns, its outputs
    (never the simulated user's private profile)."""
    return {
        "calls": [c.to_json() for c in gold.calls],
        "messages": [m for m in gold.messages if m["role"] == AGENT],
        "outputs": gold.outputs,
    }


def load_replays(domains: list[str], data_root: Path | None) -> dict[tuple[str, str], JSON]:
    """Every task's replay, by (domain, task id), for drivers that read the task sets
    locally (shards, the load test)."""
    replays = {}
    for name in domains:
        data = dataset.load(load_domain(name), data_root)
        replays.update({(name, task_id): replay_of(g) for task_id, g in data.gold.items()})
    return replays


class OracleAgent:
    name = NAME
    concurrent_safe = True  # it keeps nothing between calls of solve

    def solve(self, task: Task, episode: Episode, context: AgentContext) -> JSON:
        replay = context.replay
        if replay is None:
            raise OracleError("the oracle's job carries no replay of the task's gold")
        said = list(replay["messages"])
        for index, call in enumerate(replay["calls"]):
            said = _say(episode, said, index)
            result = episode.call(call["name"], call["arguments"])
            if not result.ok:
                raise OracleError(f"gold call {call['name']} refused: {result.body}")
        _say(episode, said, len(replay["calls"]))
        outputs: JSON = replay["outputs"]
        return outputs


def _say(episode: Episode, said: list[JSON], calls_made: int) -> list[JSON]:
    """Send the gold agent turns due before call ``calls_made``; the turns still to come."""
    while said and said[0]["at_call"] <= calls_made:
        result = episode.message(said[0]["content"])
        if not result.ok:
            raise OracleError(f"gold message refused: {result.body}")
        said = said[1:]
    return said
