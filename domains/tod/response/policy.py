"""The response reference: the actions the procedure takes at this point and the agent's
next words in the conversation's language (ask for the fact the walk needs, or close); the
rules the message must keep go to the gold's decisions for the ``message_rules`` scorer."""

from __future__ import annotations

from sopgym.core.domain import PolicyRun
from sopgym.core.tasks import Solution, Task

from .. import language
from ..conversations import Ask, transcribe, world

SEED = 7  # the pack's seed (DomainPack.seed): the worlds are drawn from it


def solve(task: Task, run: PolicyRun) -> Solution:
    index = int(task.inputs["conversation_id"].removeprefix("tod-"))
    turn = len(task.inputs["conversation"]) - 1
    point = next(p for p in transcribe(world(index, SEED)).points if p.turn == turn)
    lang = task.inputs["language"]
    asks = point.then.fact if isinstance(point.then, Ask) else None
    message = language.ASK[lang][asks] if asks else language.CLOSING_AGENT[lang]
    return Solution({"actions": [c.to_json() for c in point.chain], "message": message},
                    {"asks": asks, "closes": asks is None})  # fmt: skip
