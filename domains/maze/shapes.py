"""The two scenario shapes of SOP-Maze, built from a scenario's own wording: ``wide`` (LRS: a
first step with more than ten children, at most three levels) and ``deep`` (HRS: a chain of
prerequisites with loops back and jumps ahead). Each shape also draws its customers, rotating
through every way the SOP can end so that each step is the gold step of several subtasks.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from sopgym.domains.maze.graph import Condition, Edge, Graph, Step
from sopgym.domains.maze.speech import WAITED, Choice, DaysAgo, Fact, Note, Quotes

WAIT_LIMIT = 10  # minutes: a longer first wait earns an apology step


@dataclass
class Customer:
    """The simulated customer's truth: the values of each fact in the order they will be said
    (a repeated ask takes the next one), and which devices colour the conversation."""

    values: dict[str, list[object]]
    waited_s: int
    reversal: tuple[str, str] | None = None  # (fact, the value it turns into)
    sarcastic: bool = False
    claim: bool = False
    filler: float = 0.25
    menu: float = 0.2


@dataclass
class Scenario:
    graph: Graph
    facts: list[Fact]
    instances: int
    customer: Callable[[int, random.Random], Customer]

    def fact(self, name: str) -> Fact:
        return next(f for f in self.facts if f.name == name)


def _when(*conditions: tuple[str, str, object]) -> tuple[Condition, ...]:
    return tuple(Condition(fact, op, value) for fact, op, value in conditions)


def _waited(rng: random.Random, long: bool) -> int:
    return (
        rng.randint(WAIT_LIMIT * 60 + 90, 40 * 60)
        if long
        else rng.randint(20, WAIT_LIMIT * 60 - 90)
    )


# ---- LRS ----
@dataclass(frozen=True)
class Need:
    value: str
    title: str
    script: str
    phrases: tuple[str, ...]
    sarcasm: str | None = None


@dataclass(frozen=True)
class Split:
    """A need whose step asks a calculated fact and branches on a threshold."""

    need: str
    fact: DaysAgo | Quotes
    label: str
    threshold: int
    below: tuple[str, str]  # (title, script) when the value is <= threshold
    above: tuple[str, str]


def wide(
    name: str,
    title: str,
    objective: str,
    greeting: str,
    needs: list[Need],
    splits: list[Split],
    urgent: tuple[str, str, str],  # (need, apology title, apology script)
    instances: int = 90,
) -> Scenario:
    """Step 1 asks the need and has a child per need (plus the urgent need's apology variant);
    the split needs' steps ask a calculated fact and branch once more."""
    need = Choice(
        "need",
        {n.value: n.phrases for n in needs},
        {n.value: n.sarcasm for n in needs if n.sarcasm},
    )
    urgent_need, urgent_title, urgent_script = urgent
    by_split = {s.need: s for s in splits}
    root_edges, children, grandchildren = [], [], []
    labels = {
        "need": "the customer's request",
        WAITED: "minutes the customer waited for our first reply",
    }
    for k, item in enumerate(needs, start=1):
        sid = f"1.{k}"
        if item.value == urgent_need:
            root_edges.append(
                Edge(
                    f"1.{len(needs) + 1}",
                    _when(("need", "==", item.value), (WAITED, ">", WAIT_LIMIT)),
                )
            )
        root_edges.append(Edge(sid, _when(("need", "==", item.value))))
        split = by_split.get(item.value)
        if split is None:
            children.append(Step(sid, item.title, item.script))
            continue
        labels[split.fact.name] = split.label
        children.append(
            Step(
                sid,
                item.title,
                item.script,
                asks=split.fact.name,
                edges=(
                    Edge(f"{sid}.1", _when((split.fact.name, "<=", split.threshold))),
                    Edge(f"{sid}.2"),
                ),
            )
        )
        grandchildren += [Step(f"{sid}.1", *split.below), Step(f"{sid}.2", *split.above)]
    children.append(Step(f"1.{len(needs) + 1}", urgent_title, urgent_script))
    root = Step(
        "1", "Greet the customer and identify the request", greeting, "need", tuple(root_edges)
    )
    graph = Graph(name, title, "LRS", objective, [root, *children, *grandchildren], labels)
    # every way to an outcome: each need, both sides of each split, the urgent need both ways
    targets: list[tuple[str, dict[str, object], bool]] = []
    for item in needs:
        split = by_split.get(item.value)
        if split is not None:
            targets += [
                (item.value, {split.fact.name: "below"}, False),
                (item.value, {split.fact.name: "above"}, False),
            ]
        else:
            targets.append((item.value, {}, False))
    targets.append((urgent_need, {}, True))

    def customer(index: int, rng: random.Random) -> Customer:
        value, sides, long_wait = targets[index % len(targets)]
        values: dict[str, list[object]] = {"need": [value]}
        for fact_name, side in sides.items():
            split = next(s for s in splits if s.fact.name == fact_name)
            offset = (
                rng.randint(3, 40)
                if side == "above"
                else -rng.randint(0, min(40, split.threshold - 1))
            )
            values[fact_name] = [split.threshold + offset]
        reversal = None
        if index % 4 == 3:  # the first request is taken back for the real one
            first = rng.choice(
                [
                    n.value
                    for n in needs
                    if n.value not in (value, urgent_need) and n.value not in by_split
                ]
            )
            values["need"] = [first]
            reversal = ("need", value)
        return Customer(
            values,
            _waited(rng, long_wait or (value != urgent_need and rng.random() < 0.3)),
            reversal=reversal,
            sarcastic=rng.random() < 0.5,
        )

    facts: list[Fact] = [need, *(s.fact for s in splits)]
    return Scenario(graph, facts, instances, customer)


# ---- HRS ----
@dataclass(frozen=True)
class Deep:
    """One deep scenario's wording; the chain is the same shape for all of them."""

    name: str
    title: str
    objective: str
    request: tuple[str, ...]  # the customer's lines for the request this SOP handles
    other: tuple[str, ...]  # lines for a request it does not handle
    id_noun: str  # what identifies the customer ("the phone number on the account")
    event: DaysAgo  # when the thing happened
    window: int  # days: later than this is outside the SOP
    document: str  # the supporting document
    options: list[tuple[str, str, str, tuple[str, ...]]]  # (value, title, script, lines)
    scripts: dict[str, str]  # step id -> script for the fixed steps


def deep(d: Deep, instances: int = 40) -> Scenario:
    s = d.scripts
    request = Choice("request", {"handled": d.request, "other": d.other})
    identity = Note(
        "identity",
        {
            "found": f"[system] Lookup by {d.id_noun}: one matching customer.",
            "missing": f"[system] Lookup by {d.id_noun}: no match.",
        },
        ("Sure, I'll read it out for you now.", "Okay, here it is, as it's on my account."),
    )
    code = Note(
        "code",
        {
            "passed": "[system] One-time code check: passed.",
            "failed": "[system] One-time code check: failed.",
        },
        ("The code I got is the one I'm typing now.", "Here's the code from the text message."),
    )
    ack = Choice(
        "ack",
        {"ok": ("That's alright, let's go on.", "Fine, no problem, continue.")},
        {"ok": "Oh sure, only half an hour on hold, absolutely no problem, carry on."},
    )
    document = Note(
        "document",
        {
            "received": f"[system] Document check: {d.document} received.",
            "missing": f"[system] Document check: no {d.document} on file.",
        },
        (
            f"I'm sending the {d.document} through the portal now.",
            f"Let me attach the {d.document}.",
        ),
    )
    upload = Choice(
        "upload",
        {
            "uploaded": (
                f"Done, I've uploaded the {d.document} again.",
                "I just sent it once more.",
            ),
            "cannot": (
                f"I don't have the {d.document}, I can't get it.",
                "There's no way I can send that.",
            ),
        },
    )
    option = Choice("option", {value: lines for value, _, _, lines in d.options})
    steps = [
        Step(
            "1",
            "Greet the customer and confirm the request",
            s["1"],
            "request",
            (Edge("2", _when(("request", "==", "handled"))), Edge("12")),
        ),
        Step(
            "2",
            "Identify the customer",
            s["2"],
            "identity",
            (
                Edge("3", _when(("identity", "==", "found"))),
                Edge("11", (Condition("identity", ">=", 2, count="missing"),)),
                Edge("2"),
            ),
        ),
        Step(
            "3",
            "Verify the customer with a one-time code",
            s["3"],
            "code",
            (
                Edge("4", _when(("code", "==", "passed"), (WAITED, ">", WAIT_LIMIT))),
                Edge("5", _when(("code", "==", "passed"))),
                Edge("11", (Condition("code", ">=", 3, count="failed"),)),
                Edge("3"),
            ),
        ),
        Step("4", "Apologise for the wait", s["4"], "ack", (Edge("5"),)),
        Step(
            "5",
            "Check when it happened",
            s["5"],
            d.event.name,
            (Edge("10", _when((d.event.name, ">", d.window))), Edge("6")),
        ),
        Step(
            "6",
            f"Check the {d.document}",
            s["6"],
            "document",
            (Edge("8", _when(("document", "==", "received"))), Edge("7")),
        ),
        Step(
            "7",
            f"Ask for the {d.document} again",
            s["7"],
            "upload",
            (Edge("6", _when(("upload", "==", "uploaded"))), Edge("11")),
        ),
        Step(
            "8",
            "Agree the resolution",
            s["8"],
            "option",
            tuple(
                Edge(f"9.{k}", _when(("option", "==", value)))
                for k, (value, *_rest) in enumerate(d.options, start=1)
            ),
        ),
        *(
            Step(f"9.{k}", title, script)
            for k, (_, title, script, _) in enumerate(d.options, start=1)
        ),
        Step("10", "Decline: outside the time window", s["10"]),
        Step("11", "Escalate to a specialist", s["11"]),
        Step("12", "Transfer to the right team", s["12"]),
    ]
    labels = {
        "request": "the customer's request",
        "identity": f"the lookup by {d.id_noun}",
        "code": "the one-time code check",
        "ack": "the customer's acknowledgement",
        d.event.name: "days since it happened",
        "document": f"the {d.document} check",
        "upload": "whether the customer sent it again",
        "option": "the resolution the customer picks",
        WAITED: "minutes the customer waited for our first reply",
    }
    graph = Graph(d.name, d.title, "HRS", d.objective, steps, labels)
    kinds = [
        "other",
        "identity_fails",
        "code_fails",
        "late",
        "no_document",
        *(f"option:{v}" for v, *_ in d.options),
    ]

    def customer(index: int, rng: random.Random) -> Customer:
        kind = kinds[index % len(kinds)]
        long_wait = index % 2 == 1
        values: dict[str, list[object]] = {
            "request": ["other" if kind == "other" else "handled"],
            "identity": ["missing", "missing"]
            if kind == "identity_fails"
            else rng.choice([["found"], ["missing", "found"]]),
            "code": ["failed"] * 3
            if kind == "code_fails"
            else rng.choice([["passed"], ["failed", "passed"], ["failed", "failed", "passed"]]),
            "ack": ["ok"],
            d.event.name: [
                d.window + rng.randint(1, 60) if kind == "late" else rng.randint(0, d.window - 1)
            ],
            "document": ["missing"]
            if kind == "no_document"
            else rng.choice([["received"], ["missing", "received"]]),
            "upload": ["cannot"] if kind == "no_document" else ["uploaded"],
            "option": [kind.partition(":")[2] or d.options[0][0]],
        }
        missing_first = values["document"][0] == "missing"
        return Customer(
            values,
            _waited(rng, long_wait),
            sarcastic=rng.random() < 0.5,
            claim=missing_first and rng.random() < 0.6,
        )

    facts: list[Fact] = [request, identity, code, ack, d.event, document, upload, option]
    return Scenario(graph, facts, instances, customer)
