"""Violating responses built from the tree, by the paper's three manipulations:

- ``parameter``: the right actions, one argument changed (another id, reason, team...);
- ``single_condition``: the actions the procedure takes when one fact its conditions read is
  different (the response follows the wrong branch of one condition);
- ``multi_condition``: the actions it takes when two such facts are different, and which no
  single change gives.

Each result differs from the one sequence the procedure allows at that point, so the label
"violating" is certain.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Final

from ..actions import READS
from ..conditions import Condition, atoms
from ..conversations import chain_at
from ..facts import FACTS
from ..intents import INTENTS, Intent
from ..trees import Arg, Call, Do, If, Step, walk

MANIPULATIONS: Final = ("parameter", "single_condition", "multi_condition")
SWAPS: Final[dict[str, tuple[str, ...]]] = {
    "team": ("billing", "shipping", "technical", "returns"),
    "why": ("awaiting_customer", "goal_met"),
    "email": ("someone.else@mail.example",),
    "new_address": ("99 Unknown Road",),
    "zip_code": ("00000",),
}


def _literals(steps: tuple[Step, ...]) -> Iterator[tuple[str, str]]:
    for step in steps:
        if isinstance(step, Do):
            yield from ((k, a.literal) for k, a in step.args if isinstance(a, Arg) and a.literal)
        else:
            for _, body in step.branches:
                yield from _literals(body)
            yield from _literals(step.otherwise)


LITERALS: Final = sorted({pair for i in INTENTS for pair in _literals(i.steps)})


def _conditions(steps: tuple[Step, ...]) -> Iterator[Condition]:
    for step in steps:
        if isinstance(step, If):
            for condition, body in step.branches:
                yield condition
                yield from _conditions(body)
            yield from _conditions(step.otherwise)


def condition_facts(intent: Intent) -> dict[str, list[object]]:
    """Fact -> the values worth trying: every other enum value, the other truth value, and for
    numbers each threshold and the value just past it."""
    values: dict[str, set[object]] = {}
    for atom in (a for c in _conditions(intent.steps) for a in atoms(c)):
        fact = FACTS[atom.fact]
        tried = values.setdefault(atom.fact, set())
        if fact.kind == "int":
            tried.update({atom.value, atom.value + 1})
        else:
            tried.update(fact.values if fact.kind == "enum" else (True, False))
    return {name: sorted(v, key=str) for name, v in sorted(values.items())}


def parameter(chain: list[Call]) -> list[Call] | None:
    for index, call in enumerate(chain):
        for name, value in call.arguments.items():
            other = _other(call.action, name, value)
            if other is not None:
                changed = Call(call.action, {**call.arguments, name: other})
                return [*chain[:index], changed, *chain[index + 1:]]
    return None


def _other(action: str, name: str, value: object) -> object | None:
    if name in ("account_id", "order_id"):
        # a read with another id would fail outright; a write to another record is subtle
        return None if action in READS else f"{str(value)[:3]}{int(str(value)[3:]) + 1}"
    pool = SWAPS.get(name) or tuple(v for k, v in LITERALS if k == name)
    return next((v for v in pool if v != value), None)


def flipped(intent: Intent, facts: dict[str, object], known: set[str], before: list[Call],
            gold: list[Call], changes: int) -> list[Call] | None:  # fmt: skip
    """The first chain, different from ``gold``, that ``changes`` changed facts give (for two
    changes: one no single change gives). A change that would have altered the actions
    already taken is no counterfactual of this point and is not tried."""
    options = condition_facts(intent)

    def chain(changed: dict[str, object]) -> list[Call] | None:
        world = {**facts, **changed}
        if walk(intent.steps, world.__getitem__)[:len(before)] != before:
            return None
        return chain_at(intent, world, known, len(before))

    singles = [chain({f: v}) for f, vs in options.items() for v in vs if v != facts[f]]
    for names in itertools.combinations(options, changes):
        for values in itertools.product(*(options[n] for n in names)):
            if any(facts[n] == v for n, v in zip(names, values, strict=True)):
                continue
            found = chain(dict(zip(names, values, strict=True)))
            if found is not None and found != gold and (changes == 1 or found not in singles):
                return found
    return None
