"""The live reference agent: recognise the intent from the customer's opening, then walk its
procedure: ask for each customer fact when the walk needs it (reading the value from the
answer), take each action when its arguments are known, report the actions taken when it
next speaks, and close when the procedure is done. Answers the governing section."""

from __future__ import annotations

from sopgym.core.domain import PolicyRun
from sopgym.core.tasks import Solution, Task

from .. import language
from ..conversations import Act, Ask, next_step, reveal
from ..facts import FACTS
from ..intents import INTENTS, Intent


def recognise(opening: str, lang: str) -> Intent:
    matches = [i for i in INTENTS if i.says[lang] in opening]
    if len(matches) != 1:
        raise ValueError(f"the opening {opening!r} names {len(matches)} intents")
    return matches[0]


def solve(task: Task, run: PolicyRun) -> Solution:
    lang = task.inputs["language"]
    intent = recognise(task.conversation[0]["content"], lang)
    known: dict[str, object] = {}
    taken: list[str] = []
    actions = 0
    while True:
        step = next_step(intent, known, actions)
        if isinstance(step, Act):
            reveal(known, run.call(step.call.action, **step.call.arguments))
            taken.append(step.call.action)
            actions += 1
            continue
        said = language.DONE[lang].format(actions=", ".join(taken)) if taken else ""
        taken = []
        if isinstance(step, Ask):
            reply = run.ask_user(said + language.ASK[lang][step.fact])
            known[step.fact] = language.read_fact(lang, reply, FACTS[step.fact].kind)
            continue
        run.ask_user(said + language.CLOSING_AGENT[lang])
        return Solution({"section": intent.name}, {"actions": actions})
