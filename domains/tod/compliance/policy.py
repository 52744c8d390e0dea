"""The compliance reference: the procedure's one allowed sequence at this point (replayed on
the conversation's world), against the response's actions and arguments."""

from __future__ import annotations

from sopgym.core.domain import PolicyRun
from sopgym.core.tasks import Solution, Task

from ..conversations import transcribe, world

SEED = 7  # the pack's seed (DomainPack.seed): the worlds are drawn from it


def solve(task: Task, run: PolicyRun) -> Solution:
    index = int(task.inputs["conversation_id"].removeprefix("tod-"))
    turn = len(task.inputs["conversation"]) - 1
    point = next(p for p in transcribe(world(index, SEED)).points if p.turn == turn)
    allowed = [c.to_json() for c in point.chain]
    given = [{"name": r["name"], "arguments": r["arguments"]} for r in task.inputs["response"]]
    label = "compliant" if given == allowed else "violating"
    return Solution({"label": label}, {"allowed": allowed})
