"""Conditions of a procedure: atoms over facts, combined with and / or / not.

One text form is used in every format: ``<fact label> <op> <value>`` atoms, composites joined
by `` and `` or `` or `` with nested composites in parentheses, negation as ``not (...)``.
:func:`parse` reads that text back, so the formats' walkers evaluate what is written, not the
tree it came from.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from .facts import BOOL_WORDS, FACTS

OPS: Final = ("is not", "is more than", "is at most", "is")  # longest first for parsing
Lookup = Callable[[str], Any]  # fact name -> its value (may raise when not known yet)


@dataclass(frozen=True)
class Atom:
    fact: str
    op: str
    value: Any

    def holds(self, get: Lookup) -> bool:
        actual = get(self.fact)
        if self.op == "is":
            return bool(actual == self.value)
        if self.op == "is not":
            return bool(actual != self.value)
        if self.op == "is more than":
            return bool(actual > self.value)
        return bool(actual <= self.value)


@dataclass(frozen=True)
class All:
    items: tuple[Condition, ...]

    def holds(self, get: Lookup) -> bool:
        return all(item.holds(get) for item in self.items)


@dataclass(frozen=True)
class Any_:
    items: tuple[Condition, ...]

    def holds(self, get: Lookup) -> bool:
        return any(item.holds(get) for item in self.items)


@dataclass(frozen=True)
class Not:
    item: Condition

    def holds(self, get: Lookup) -> bool:
        return not self.item.holds(get)


Condition = Atom | All | Any_ | Not
_LABELS: Final = {fact.label: fact for fact in FACTS.values()}


def atoms(condition: Condition) -> list[Atom]:
    if isinstance(condition, Atom):
        return [condition]
    if isinstance(condition, Not):
        return atoms(condition.item)
    return [a for item in condition.items for a in atoms(item)]


def render(condition: Condition) -> str:
    if isinstance(condition, Atom):
        value = condition.value
        shown = BOOL_WORDS[value] if isinstance(value, bool) else str(value)
        return f"{FACTS[condition.fact].label} {condition.op} {shown}"
    if isinstance(condition, Not):
        return f"not ({render(condition.item)})"
    joiner = " and " if isinstance(condition, All) else " or "
    return joiner.join(_wrapped(item) for item in condition.items)


def _wrapped(condition: Condition) -> str:
    text = render(condition)
    return text if isinstance(condition, Atom | Not) else f"({text})"


def parse(text: str) -> Condition:
    """The condition ``text`` (as :func:`render` writes it) says; ValueError otherwise."""
    text = text.strip()
    for joiner, make in ((" and ", All), (" or ", Any_)):
        parts = _split_top(text, joiner)
        if len(parts) > 1:
            return make(tuple(parse(p) for p in parts))
    if text.startswith("not (") and _closes_at_end(text, 4):
        return Not(parse(text[5:-1]))
    if text.startswith("(") and _closes_at_end(text, 0):
        return parse(text[1:-1])
    return _atom(text)


def _split_top(text: str, joiner: str) -> list[str]:
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
        elif depth == 0 and text.startswith(joiner, i):
            parts.append(text[start:i])
            i += len(joiner)
            start = i
            continue
        i += 1
    return [*parts, text[start:]]


def _closes_at_end(text: str, opening: int) -> bool:
    depth = 0
    for i in range(opening, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i == len(text) - 1
    return False


def _atom(text: str) -> Atom:
    for label, fact in _LABELS.items():
        if not text.startswith(label + " "):
            continue
        rest = text[len(label) + 1:]
        for op in OPS:
            if rest.startswith(op + " "):
                return Atom(fact.name, op, _value(fact.kind, rest[len(op) + 1:]))
    raise ValueError(f"not a condition: {text!r}")


def _value(kind: str, text: str) -> Any:
    if kind == "bool":
        return {word: flag for flag, word in BOOL_WORDS.items()}[text]
    return int(text) if kind == "int" else text
