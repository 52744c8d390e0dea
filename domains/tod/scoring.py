"""TOD scorers: the next actions with their arguments, and instruction retrieval.

``actions`` gates: the calls the agent made, names and arguments, in order, must be exactly
the gold's (a call the service refused still counts as made). ``first_action`` is the paper's
next-action accuracy (the first call alone). ``section_top1`` / ``section_top2``: the gold
instruction is the answer's first section / among its first two.
"""

from __future__ import annotations

from sopgym.evaluation.scorers import Case, Score, Scorer
from sopgym.types import JSON


def _calls(case: Case) -> tuple[list[JSON], list[JSON]]:
    made = [{"name": c.name, "arguments": c.arguments} for c in case.trajectory.calls]
    return made, [c.to_json() for c in case.gold.calls]


def _actions(case: Case) -> Score:
    made, gold = _calls(case)
    if made == gold:
        return Score(1.0, {"calls": len(made)}, "the actions and arguments match the gold")
    return Score(0.0, {"calls": len(made)}, f"made {made}, the procedure takes {gold}")


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
    return Scorer("actions", _actions, gates)


def first_action(gates: bool = False) -> Scorer:
    return Scorer("first_action", _first_action, gates)


def section_top1(gates: bool = True) -> Scorer:
    return Scorer("section_top1", _sections(1).measure, gates)


def section_top2(gates: bool = False) -> Scorer:
    return Scorer("section_top2", _sections(2).measure, gates)
