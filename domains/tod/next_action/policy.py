"""The next-action reference: replay the procedure on the conversation's world up to the
given customer turn, take the actions it takes next, and name its instruction first and its
closest sibling among the candidates second."""

from __future__ import annotations

from sopgym.core.domain import PolicyRun
from sopgym.core.tasks import Solution, Task

from ..conversations import transcribe, world
from ..intents import BY_NAME
from .generator import siblings

SEED = 7  # the pack's seed (DomainPack.seed): the worlds are drawn from it


def solve(task: Task, run: PolicyRun) -> Solution:
    index = int(task.inputs["conversation_id"].removeprefix("tod-"))
    transcript = transcribe(world(index, SEED))
    turn = len(task.inputs["conversation"]) - 1
    point = next(p for p in transcript.points if p.turn == turn)
    for call in point.chain:
        run.call(call.action, **call.arguments)
    intent = transcript.world.intent
    shown = [BY_NAME[name] for name in task.inputs["instructions"]]
    runner_up = next((s for s in siblings(intent) if s in shown),
                     next(i for i in shown if i is not intent))  # fmt: skip
    return Solution({"sections": [intent.name, runner_up.name]},
                    {"intent": intent.name, "actions": [c.action for c in point.chain]})
