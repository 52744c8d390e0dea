"""The next-action reference: replay the procedure on the conversation's world up to the
given customer turn, take the actions it takes next, and name its instruction first and its
closest sibling among the candidates second. Its decisions tag the task for TOD-ProcBench's
breakdowns (:mod:`sopgym.evaluation.paper_figures`): the conversation third counted as the paper
counts it (by the position of the agent's next response among the conversation's agent turns,
where the task's ``position`` input counts customer turns), the format and the language."""

from __future__ import annotations

from sopgym.core.domain import PolicyRun
from sopgym.core.tasks import Solution, Task

from ..conversations import transcribe, world
from ..intents import BY_NAME
from .generator import POSITIONS, siblings

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
    agents = [i for i, t in enumerate(transcript.turns) if t["role"] == "agent"]
    before = sum(1 for i in agents if i <= turn)  # the next agent turn's index among them
    paper = {"position": POSITIONS[min(2, 3 * before // len(agents)) if agents else 2],
             "format": task.inputs["format"], "language": task.inputs["language"]}  # fmt: skip
    return Solution({"sections": [intent.name, runner_up.name]},
                    {"intent": intent.name, "actions": [c.action for c in point.chain],
                     "procbench": paper})  # fmt: skip
