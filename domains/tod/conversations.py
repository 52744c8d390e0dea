"""Customers, their worlds, and the conversations a procedure produces with them.

A conversation is made by walking the intent's tree lazily (:func:`next_step`): the agent asks
for a customer fact when the walk needs one it does not know yet, runs an action when its
arguments are known (its result reveals system facts), and closes when the walk is done.
The same step function drives the generated transcripts, the next-action gold and the live
episodes' reference policy, so they cannot disagree.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field
from typing import Final

from sopgym.core.exceptions import Signal
from sopgym.types import JSON

from . import language
from .actions import NO_ACTION, SPECS
from .facts import CUSTOMER, FACTS
from .formats import FORMATS
from .intents import INTENTS, LANGUAGES, Intent
from .trees import Call, iter_actions, resolve

CONVERSATIONS: Final = 1008  # 42 intents x 24: every intent in every language x format, twice
# The family's packs split the corpus: each takes every fourth conversation (its own quarter,
# still every intent in every language and format), so the packs together use all of it and
# each stays small enough for the per-pack CI tests (the oracle runs every task end to end).
SHARES: Final = ("next_action", "live", "compliance", "response")
NAMES: Final = ("amira", "bruno", "chen", "dana", "elif", "femi", "greta", "hugo", "ines",
                "jonas", "kiri", "luca", "mei", "nour", "olga", "pablo")  # fmt: skip
ITEMS: Final = ("jacket", "boots", "jeans", "shirt", "lamp", "headphones", "sweater")
STREETS: Final = ("Elm Street", "Harbour Road", "Mill Lane", "Station Square", "Oak Avenue")
EFFECTS: Final = {spec.name: spec.effect for spec in SPECS}


@dataclass(frozen=True)
class Ask:
    fact: str


@dataclass(frozen=True)
class Act:
    call: Call


@dataclass(frozen=True)
class Close:
    pass


Step = Ask | Act | Close


class _Unknown(Signal):
    def __init__(self, fact: str) -> None:
        self.fact = fact


def next_step(intent: Intent, known: dict[str, object], actions_done: int) -> Step:
    """What the agent does next, knowing ``known`` after ``actions_done`` actions."""

    def get(fact: str) -> object:
        if fact not in known:
            raise _Unknown(fact)
        return known[fact]

    try:
        for index, do in enumerate(iter_actions(intent.steps, get)):
            if index == actions_done:
                return Act(resolve(do, get))
        return Close()
    except _Unknown as missing:
        if FACTS[missing.fact].source != CUSTOMER:
            raise ValueError(f"{intent.name}: {missing.fact} is read before an action "
                             f"reveals it") from None  # fmt: skip
        return Ask(missing.fact)


def reveal(known: dict[str, object], result: JSON) -> None:
    """An action's result makes its system facts known (the first value seen stays: a later
    write does not re-decide a branch already taken)."""
    for key, value in result.items():
        if key in FACTS and FACTS[key].source != CUSTOMER:
            known.setdefault(key, value)


def apply(state: JSON, call: Call) -> JSON:
    return EFFECTS[call.action](state, dict(call.arguments))


@dataclass
class World:
    """One customer: who they are, what they want, and the state the agent's actions touch."""

    conversation_id: str
    intent: Intent
    language: str
    format: str
    customer: dict[str, object]  # the customer facts (what they answer when asked)
    state: JSON
    phrasing: int  # which of the templates' wordings this customer uses

    @property
    def says(self) -> str:
        return self.intent.says[self.language]


def share(pack: str) -> list[int]:
    """The conversation indexes ``pack`` is built from: every intent, six times each."""
    shares = len(SHARES)
    return [i for i in range(CONVERSATIONS) if i // len(INTENTS) % shares == SHARES.index(pack)]


def world(index: int, seed: int) -> World:
    """Conversation ``index``: the intent rotates fastest; within each pack's share an intent
    meets every language twice and every format twice; the facts are drawn."""
    rng = random.Random(f"{seed}|tod|{index}")
    intent = INTENTS[index % len(INTENTS)]
    turn = index // len(INTENTS)
    pack, nth = turn % len(SHARES), turn // len(SHARES)
    name = NAMES[index % len(NAMES)]
    zip_code = f"{rng.randrange(10000, 100000)}"
    account_id, order_id = f"AC-{10000 + index}", f"OR-{20000 + index}"
    state = {
        "account": {"account_id": account_id, "name": name, "zip_code": zip_code,
                    "email": f"{name}{index}@old.example", "membership": rng.choice(
                        FACTS["membership"].values), "account_status": rng.choice(
                        ("active", "active", "locked")), "subscription": rng.choice(
                        FACTS["subscription"].values), "password_reset": False,
                    "sessions": rng.randint(1, 4)},
        "orders": [{"order_id": order_id, "item": rng.choice(ITEMS),
                    "amount": rng.randrange(1500, 25000) / 100,
                    "order_status": rng.choice(FACTS["order_status"].values),
                    "days_since_purchase": rng.randint(1, 130),
                    "payment_method": rng.choice(FACTS["payment_method"].values),
                    "in_stock": rng.random() < 0.6, "address": f"{rng.randint(1, 99)} "
                    f"{rng.choice(STREETS)}", "shipping": "standard"}],
        "records": [],
    }  # fmt: skip
    customer = {
        "account_id": account_id, "order_id": order_id,
        "zip_code": zip_code if rng.random() < 0.7 else f"{rng.randrange(10000, 100000)}",
        "email": f"{name}.{index}@mail.example",
        "new_address": f"{rng.randint(1, 99)} {rng.choice(STREETS)}",
        "has_receipt": rng.random() < 0.6, "item_damaged": rng.random() < 0.7,
    }  # fmt: skip
    return World(f"tod-{index:04d}", intent, LANGUAGES[nth % len(LANGUAGES)],
                 FORMATS[(nth // len(LANGUAGES) + nth + pack) % len(FORMATS)], customer, state,
                 rng.randrange(2))  # fmt: skip


@dataclass
class Point:
    """A partial conversation ending with a customer turn, and what the agent does next: the
    actions it takes before it speaks again (``chain``; ``no_action`` with its reason when
    none)."""

    turn: int  # index of the customer turn
    before: list[Call]  # the actions taken earlier in the conversation
    known: dict[str, object]  # the facts the agent knows at this point
    chain: list[Call] = field(default_factory=list)
    then: Ask | Close | None = None  # what the agent says after the chain (None: nothing)


@dataclass
class Transcript:
    """A generated conversation: its turns (``user``, ``agent`` and ``action`` roles) and its
    next-action points, one per customer turn."""

    world: World
    turns: list[JSON] = field(default_factory=list)
    points: list[Point] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)  # the agent's steps, in order


def opening(world: World) -> str:
    return language.OPENING[world.language][world.phrasing].format(says=world.says)


def answer(world: World, fact: str) -> str:
    return language.say_fact(world.language, world.phrasing, world.customer[fact])


def transcribe(world: World) -> Transcript:
    out = Transcript(world)
    state = copy.deepcopy(world.state)
    known: dict[str, object] = {}
    done: list[Call] = []
    out.turns.append({"role": "user", "content": opening(world)})
    point = Point(0, [], {})
    while True:
        step = next_step(world.intent, known, len(done))
        out.steps.append(step)
        if not isinstance(step, Act) and not point.chain:
            point.chain.append(no_action(step))
        if isinstance(step, Act):
            point.chain.append(step.call)
            result = apply(state, step.call)
            reveal(known, result)
            done.append(step.call)
            out.turns.append({"role": "action", "content": f"{step.call.action}"
                              f"({_args(step.call)}) -> {_short(result)}"})  # fmt: skip
        elif isinstance(step, Ask):
            known[step.fact] = world.customer[step.fact]
            out.turns += [{"role": "agent", "content": language.ASK[world.language][step.fact]},
                          {"role": "user", "content": answer(world, step.fact)}]  # fmt: skip
            point.then = step
            out.points.append(point)
            point = Point(len(out.turns) - 1, list(done), dict(known))
        else:
            point.then = step
            out.turns += [
                {"role": "agent", "content": language.CLOSING_AGENT[world.language]},
                {"role": "user", "content": language.CLOSING_USER[world.language][
                    world.phrasing]}]  # fmt: skip
            out.points += [point, Point(len(out.turns) - 1, list(done), dict(known),
                                        [no_action(step)])]
            return out


def truth(world: World) -> dict[str, object]:
    """Every fact of ``world``: what the customer would say and what the tools would show."""
    account, order = world.state["account"], world.state["orders"][0]
    system = {name: (account if name in account else order).get(name) for name, fact in
              FACTS.items() if fact.source != CUSTOMER and name != "identity_verified"}
    return {**world.customer, **system,
            "identity_verified": account["zip_code"] == world.customer["zip_code"]}


REVEALS: Final = {spec.name: [k for k in spec.result if k in FACTS and
                              FACTS[k].source != CUSTOMER] for spec in SPECS}  # fmt: skip


def chain_at(intent: Intent, facts: dict[str, object], known: set[str], done: int) -> list[Call]:
    """What the agent does next when it knows the facts named ``known`` (values from
    ``facts``) after ``done`` actions: the actions up to its next words, or ``no_action``."""
    known = set(known)
    calls: list[Call] = []
    while True:
        step = next_step(intent, {k: facts[k] for k in known}, done + len(calls))
        if not isinstance(step, Act):
            return calls or [no_action(step)]
        calls.append(step.call)
        known.update(REVEALS[step.call.action])


def no_action(step: Step) -> Call:
    why = "awaiting_customer" if isinstance(step, Ask) else "goal_met"
    return Call(NO_ACTION, {"why": why})


def _args(call: Call) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in call.arguments.items())


def _short(result: JSON) -> str:
    return ", ".join(f"{k}={v}" for k, v in result.items())
