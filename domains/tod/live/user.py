"""The simulated customer of live episodes: rule-based, deterministic for a seed.

It opens with its goal, answers exactly the facts an agent turn asks for (in any of the three
languages: :data:`..language.ASKS`), objects when the agent reports a write action its goal
does not call for, ends the conversation when the agent closes, and otherwise restates its
goal. It never volunteers a fact and never states another goal. The RNG picks nothing here:
the profile fixes the wording (``phrasing``), so the reference and every run hear the same
customer.
"""

from __future__ import annotations

import random

from sopgym.core.dialogue import UserTurn
from sopgym.types import JSON

from .. import language
from ..actions import WRITES, reported
from ..language import asked

__all__ = ["WRITES", "reply"]


def reply(profile: JSON, conversation: list[JSON], rng: random.Random) -> UserTurn:
    lang, phrasing = profile["language"], profile["phrasing"]
    if not conversation:
        return UserTurn(language.OPENING[lang][phrasing].format(says=profile["says"]))
    said = str(conversation[-1]["content"])
    if any(action not in profile["expects"] for action in reported(said)):
        return UserTurn(language.OBJECTION[lang].format(says=profile["says"]))
    facts = [language.say_fact(lang, phrasing, profile["facts"][f]) for f in asked(said)]
    if facts:
        return UserTurn(" ".join(facts))
    if any(word in said.lower() for word in language.CLOSES):
        return UserTurn(language.CLOSING_USER[lang][phrasing], done=True)
    return UserTurn(language.RESTATE[lang].format(says=profile["says"]))

