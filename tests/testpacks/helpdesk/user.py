"""The helpdesk customer: rule-based, deterministic for a seed.

The customer opens the conversation, answers a question about the order number or the email
address with the fact from the private profile, ends the conversation when told the outcome,
and otherwise restates the goal. The RNG only picks the wording, never a fact.
"""

from __future__ import annotations

import random
import re

from sopgym.core.dialogue import UserTurn
from sopgym.types import JSON

OPENINGS = (
    "Hi, I would like a refund for one of my orders.",
    "Hello. I want to return something I bought and get my money back.",
    "Hi there, I need a refund on an order please.",
)
ASKS_ORDER = re.compile(r"\border (number|id|no)\b")
ASKS_EMAIL = re.compile(r"\be-?mail\b")
# words of an agent turn that tells the outcome (and asks nothing)
OUTCOME_WORDS = ("issued", "refunded", "not eligible", "cannot", "could not", "unable")


def reply(profile: JSON, conversation: list[JSON], rng: random.Random) -> UserTurn:
    if not conversation:
        return UserTurn(rng.choice(OPENINGS))
    said = conversation[-1]["content"].lower()
    asks = "?" in said
    facts = []
    if asks and ASKS_ORDER.search(said):
        facts.append(rng.choice(("My order number is {}.", "Sure, it is {}.")).format(
            profile["order_id"]))
    if asks and ASKS_EMAIL.search(said):
        facts.append(rng.choice(("My email is {}.", "I used {}.")).format(profile["email"]))
    if facts:
        return UserTurn(" ".join(facts))
    if not asks and any(word in said for word in OUTCOME_WORDS):
        return UserTurn(rng.choice(("Thanks, goodbye.", "Okay, thank you.", "I see. Bye.")), True)
    return UserTurn(f"Sorry, I don't follow. I just want a refund for my {profile['item']}.")
