"""TOD instructions: one tree per intent, three written formats that walk to the same actions
for every state, and the corpus' counts and compositions."""

from __future__ import annotations

import itertools
import json

import pytest

from sopgym.domains.tod.actions import SPECS, TOOLS
from sopgym.domains.tod.conditions import All, Any_, Atom, Not, atoms, parse, render
from sopgym.domains.tod.facts import FACTS
from sopgym.domains.tod.formats import FORMATS, render_format, walk_text
from sopgym.domains.tod.intents import INTENTS
from sopgym.domains.tod.trees import If, Step, depth, walk

TEXT_FACTS = {"account_id": "AC-10001", "order_id": "OR-20002", "zip_code": "12345",
              "email": "kim@example.com", "new_address": "1 Elm Street"}  # fmt: skip


def conditions(steps: tuple[Step, ...]) -> list:
    found = []
    for step in steps:
        if isinstance(step, If):
            for condition, body in step.branches:
                found += [condition, *conditions(body)]
            found += conditions(step.otherwise)
    return found


def states(steps: tuple[Step, ...]) -> list[dict]:
    """Every assignment of the facts the conditions read (integers around each threshold)."""
    domains: dict[str, set] = {}
    for atom in (a for c in conditions(steps) for a in atoms(c)):
        fact = FACTS[atom.fact]
        if fact.kind == "int":
            domains.setdefault(atom.fact, set()).update({atom.value - 1, atom.value,
                                                         atom.value + 1})  # fmt: skip
        else:
            domains[atom.fact] = set(fact.values) if fact.kind == "enum" else {True, False}
    names = sorted(domains)
    return [{**TEXT_FACTS, **dict(zip(names, combo, strict=True))}
            for combo in itertools.product(*(sorted(domains[n], key=str) for n in names))]


@pytest.mark.parametrize("intent", INTENTS, ids=lambda i: i.name)
def test_three_formats_walk_to_the_same_actions_in_every_state(intent) -> None:
    texts = {fmt: render_format(intent.steps, fmt) for fmt in FORMATS}
    cases = states(intent.steps)
    assert len(cases) >= 2
    outcomes = set()
    for facts in cases:
        expected = walk(intent.steps, facts.__getitem__)
        for fmt, text in texts.items():
            assert walk_text(text, fmt, facts.__getitem__) == expected, (fmt, facts)
        outcomes.add(tuple(c.action for c in expected))
    assert len(outcomes) >= 2, "every instruction branches"


def test_the_formats_differ_in_form() -> None:
    intent = INTENTS[0]
    nested, flat, as_json = (render_format(intent.steps, f) for f in FORMATS)
    assert "    - if" in nested and "else if" in nested and "otherwise:" in nested
    assert "else if" not in flat and all(line.startswith("- ") for line in flat.splitlines())
    assert "not (" in flat
    assert json.loads(as_json)["steps"][0]["conditions"] == []


def test_a_wrong_text_is_refused() -> None:
    facts: dict[str, object] = {}
    with pytest.raises(ValueError):
        walk_text("- if the moon is full:\n    - do no_action()", "nested", facts.__getitem__)
    with pytest.raises(ValueError):
        walk_text("- sometimes: offer_refund()", "flat", facts.__getitem__)


def test_conditions_read_back_as_written() -> None:
    condition = All((Any_((Atom("membership", "is", "gold"), Atom("days_since_purchase",
                                                                 "is at most", 30))),
                     Not(Atom("has_receipt", "is", True))))  # fmt: skip
    assert parse(render(condition)) == condition


def test_counts_and_compositions() -> None:
    assert len(INTENTS) >= 40 and len({i.name for i in INTENTS}) == len(INTENTS)
    assert len(TOOLS) >= 33 and "no_action" in {t.name for t in TOOLS}
    assert max(depth(i.steps) for i in INTENTS) == 4
    kinds = {type(c) for i in INTENTS for c in conditions(i.steps)}
    assert {Atom, All, Any_} <= kinds
    assert any(len(s.branches) >= 2 for i in INTENTS for s in i.steps if isinstance(s, If))
    used = {c.action for i in INTENTS for facts in states(i.steps)
            for c in walk(i.steps, facts.__getitem__)}  # fmt: skip
    assert used | {"no_action"} == {spec.name for spec in SPECS}
    assert all(set(i.says) == {"en", "es", "fr"} for i in INTENTS)
