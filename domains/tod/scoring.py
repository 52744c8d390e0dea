"""TOD scorers: the next actions with their arguments, instruction retrieval, and the rules a
written response keeps.

``actions`` gates: the calls the agent made, names and arguments, in order, must be exactly
the gold's (a call the service refused still counts as made). ``first_action`` is the paper's
next-action accuracy (the first call alone). ``section_top1`` / ``section_top2``: the gold
instruction is the answer's first section / among its first two.
"""

from __future__ import annotations

from sopgym.evaluation.explain import action_mismatch
from sopgym.evaluation.scorers import Case, Score, Scorer
from sopgym.types import JSON

from . import language
from .actions import reported


def _calls(case: Case) -> tuple[list[JSON], list[JSON]]:
    made = [{"name": c.name, "arguments": c.arguments} for c in case.trajectory.calls]
    return made, [c.to_json() for c in case.gold.calls]


def _actions(case: Case) -> Score:
    made, gold = _calls(case)
    if made == gold:
        return Score(1.0, {"calls": len(made)}, "the actions and arguments match the gold")
    # both sequences kept: the viewer and the report show them aligned (sopgym.evaluation.explain)
    return Score(0.0, {"calls": len(made), "made": made, "gold": gold},
                 f"{len(made)} actions made, the procedure takes {len(gold)}: "
                 f"{action_mismatch(made, gold)}")  # fmt: skip


def _first_action(case: Case) -> Score:
    made, gold = _calls(case)
    right = bool(made) and made[0] == gold[0]
    return Score(float(right), {}, "first action right" if right else
                 f"first action {made[:1]}, expected {gold[0]}")  # fmt: skip


def _sections(top: int) -> Scorer:
    def measure(case: Case) -> Score:
        wanted = case.gold.outputs["sections"][0]
        given = case.answer.get("sections")
        named = [s for s in given[:top] if isinstance(s, str)] if isinstance(given, list) else []
        hit = wanted in named
        return Score(float(hit), {}, f"{wanted} {'in' if hit else 'not in'} top {top} {named}")

    return Scorer(f"section_top{top}", measure)


def actions(gates: bool = True) -> Scorer:
    return Scorer("actions", _actions, gates, judges_calls=True)


def first_action(gates: bool = False) -> Scorer:
    return Scorer("first_action", _first_action, gates, judges_calls=True)


def section_top1(gates: bool = True) -> Scorer:
    return Scorer("section_top1", _sections(1).measure, gates)


def section_top2(gates: bool = False) -> Scorer:
    return Scorer("section_top2", _sections(2).measure, gates)


def _declared(case: Case) -> Score:
    given = case.answer.get("actions")
    gold = case.gold.outputs["actions"]
    if given == gold:
        return Score(1.0, {}, "the declared actions and arguments are the procedure's")
    return Score(0.0, {}, f"declared {given}, the procedure takes {gold}")


def declared_actions(gates: bool = True) -> Scorer:
    return Scorer("declared_actions", _declared, gates)


def _message(case: Case) -> Score:
    """The message's rules, each checked: it asks exactly for the fact the procedure needs
    next (as a question), or closes; it claims no write action it did not declare."""
    message = case.answer.get("message")
    if not isinstance(message, str) or not message.strip():
        return Score(0.0, {}, "no message")
    asks, lowered = case.gold.decisions["asks"], message.lower()
    declared = {a.get("name") for a in case.answer.get("actions") or [] if isinstance(a, dict)}
    rules = {
        "asks_the_needed_fact": language.asked(message) == ([asks] if asks else []),
        "is_a_question": "?" in message,
        "closes_when_done": asks is not None or any(w in lowered for w in language.CLOSES),
        "claims_only_declared": set(reported(message)) <= declared,
    }
    broken = [name for name, kept in rules.items() if not kept]
    return Score(1 - len(broken) / len(rules), {"broken": broken},
                 f"broken: {', '.join(broken)}" if broken else "every rule kept")  # fmt: skip


def message_rules(gates: bool = True) -> Scorer:
    return Scorer("message_rules", _message, gates)
