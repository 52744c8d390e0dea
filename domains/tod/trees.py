"""Condition-action trees: each intent's instruction, stored once.

A procedure is a sequence of steps; a step is an action (:class:`Do`) or a selection
(:class:`If`: ordered branches, the first whose condition holds runs, else ``otherwise``).
Nesting a selection in a branch, joining conditions with and / or, and chaining actions in a
branch give the paper's compositions. :func:`walk` is the meaning every written format must
reproduce (:mod:`.formats`); :func:`flatten` is the flattened form (conjunction of conditions
-> actions, read top-down) the two flat formats are written from.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from .conditions import Condition, Lookup, Not


@dataclass(frozen=True)
class Arg:
    """An action argument: a fact's value (``fact``) or a fixed text (``literal``)."""

    fact: str | None = None
    literal: str | None = None

    def value(self, get: Lookup) -> object:
        return get(self.fact) if self.fact is not None else self.literal


@dataclass(frozen=True)
class Do:
    action: str
    args: tuple[tuple[str, Arg], ...] = ()


@dataclass(frozen=True)
class If:
    branches: tuple[tuple[Condition, tuple[Step, ...]], ...]
    otherwise: tuple[Step, ...] = ()


Step = Do | If


@dataclass(frozen=True)
class Call:
    """An action with its arguments resolved: what the agent executes."""

    action: str
    arguments: dict[str, object] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {"name": self.action, "arguments": dict(self.arguments)}


def resolve(step: Do, get: Lookup) -> Call:
    return Call(step.action, {name: arg.value(get) for name, arg in step.args})


def iter_actions(steps: tuple[Step, ...], get: Lookup) -> Iterator[Do]:
    """The actions the procedure runs, lazily: a condition reads its facts only when the walk
    reaches it (so a caller can stop at the first fact it does not know yet)."""
    for step in steps:
        if isinstance(step, Do):
            yield step
            continue
        for condition, body in step.branches:
            if condition.holds(get):
                yield from iter_actions(body, get)
                break
        else:
            yield from iter_actions(step.otherwise, get)


def walk(steps: tuple[Step, ...], get: Lookup) -> list[Call]:
    return [resolve(step, get) for step in iter_actions(steps, get)]


Flat = list[tuple[list[Condition], list[Do]]]


def flatten(steps: tuple[Step, ...]) -> Flat:
    """(conjunction of conditions, actions) pairs, top-down; an elif's earlier conditions come
    in negated; neighbours with the same conditions are merged."""
    pairs: Flat = []
    _flatten(steps, [], pairs)
    merged: Flat = []
    for conditions, actions in pairs:
        if merged and merged[-1][0] == conditions:
            merged[-1][1].extend(actions)
        else:
            merged.append((conditions, list(actions)))
    return merged


def _flatten(steps: tuple[Step, ...], path: list[Condition], out: Flat) -> None:
    for step in steps:
        if isinstance(step, Do):
            out.append((path, [step]))
            continue
        earlier: list[Condition] = []
        for condition, body in step.branches:
            _flatten(body, [*path, *earlier, condition], out)
            earlier.append(Not(condition))
        _flatten(step.otherwise, [*path, *earlier], out)


def depth(steps: tuple[Step, ...]) -> int:
    """How many selection levels nest (0: a plain chain of actions)."""
    levels = [0]
    for step in steps:
        if isinstance(step, If):
            bodies = [body for _, body in step.branches] + [step.otherwise]
            levels.append(1 + max(depth(body) for body in bodies))
    return max(levels)
