"""SOP-Maze's official grade (its published ``src/evaluate.py``, read 2026-11), item by item,
beside our strict ``answer_schema``: the scorer ``answer_official``.

The rule, as the official scorer applies it to every item, scorable or not:

- an answer invalid against the record's ``json_schema`` (or no answer) earns 0;
- a valid one earns 1.0 when it matches the **published target** under the official
  comparison, else 0.2. So an answer equal to a target that breaks its own schema earns 0, as
  it does officially, where our strict grade calls the item unscorable.

The official comparison (:func:`official_match`): only the target's keys are compared, at every
depth, a key named in ``no_required_eval_acc_keys`` skipped wherever it occurs; two strings
compare lower-cased with runs of whitespace as one space; two lists must have the same length
and the same *set* of items, each item's top-level skipped keys dropped, compared as JSON text
with nested objects' keys sorted and nested lists sorted; anything else compares with ``==``
(``1 == 1.0 == True``; a string and a number never match).

What is graded is the reply read as the official scorer reads it
(:func:`~sopgym.evaluation.maze_protocol.official_reading`: ``json-repair``'s value, whole)
where the reply's text is known (``sopgym score``'s text answers, kept as the trajectory's
``reply``), so a reply holding several objects is graded as the list ``json-repair`` makes of
them (0 against an object schema), where our strict grade reads the first object. Where the
answer came as an object (our agents, JSONL answers given as objects), that object is graded.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from sopgym.evaluation.maze_protocol import NO_READING, official_reading
from sopgym.evaluation.scorers.answers import EXACT, INVALID, VALID_BUT_WRONG, schema_errors
from sopgym.evaluation.scorers.base import Case, Score, Scorer
from sopgym.evaluation.scorers.fields import FREE_TEXT_KEYS
from sopgym.types import JSON

NAME: Final = "answer_official"
# gold decisions of an item whose gold answer was mended (sopgym/importers/maze_scorable.py):
# the target as published and the keys it names never compared, which the official grade uses
PUBLISHED_TARGET: Final = "published_target"
PUBLISHED_SKIP: Final = "published_skip"
_SPACES = re.compile(r"\s+")


def _text(value: str) -> str:
    return _SPACES.sub(" ", value.lower().strip())


def _sorted_deep(value: Any) -> Any:
    """Objects' values and lists' items in a canonical order, lists sorted by their JSON text."""
    if isinstance(value, dict):
        return {key: _sorted_deep(item) for key, item in value.items()}
    if isinstance(value, list):
        items = [_sorted_deep(item) for item in value]
        return sorted(items, key=_json_text)
    return value


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _item_set(items: list[Any], skipped: frozenset[str]) -> set[str]:
    """A list's items as the official scorer sets them: top-level skipped keys dropped."""
    kept = (
        {k: v for k, v in item.items() if k not in skipped} if isinstance(item, dict) else item
        for item in items
    )
    return {_json_text(_sorted_deep(item)) for item in kept}


def official_match(reply: Any, target: Any, skipped: frozenset[str], key: str = "") -> bool:
    """Whether ``reply`` matches ``target`` under the official comparison (see the module
    docstring); ``key``: the name the two values stand under (a skipped name matches)."""
    if key.rsplit(".", 1)[-1] in skipped:  # the official scorer reads a key from a dotted path
        return True
    if isinstance(target, dict) and isinstance(reply, dict):
        return all(
            name in skipped or (name in reply and official_match(reply[name], value, skipped, name))
            for name, value in target.items()
        )
    if isinstance(target, list) and isinstance(reply, list):
        return len(reply) == len(target) and _item_set(reply, skipped) == _item_set(
            target, skipped
        )
    if isinstance(target, str) and isinstance(reply, str):
        return _text(reply) == _text(target)
    return bool(reply == target)


def _graded(case: Case) -> Any:
    """What the official grade validates: the reply's text read the official way when the text
    is known, else the answer object; :data:`NO_READING` when there is neither."""
    reply = case.trajectory.reply
    if reply is not None:
        return official_reading(reply)
    return case.answer if case.completed else NO_READING


def _answer_official(case: Case) -> Score:
    decisions = case.gold.decisions
    target = decisions.get(PUBLISHED_TARGET, case.gold.outputs)
    skip = decisions.get(PUBLISHED_SKIP)
    if skip is None:
        skip = case.output_schema.get(FREE_TEXT_KEYS) or []
    graded = _graded(case)
    if graded is NO_READING:
        unread = case.trajectory.reply is not None
        why = "json-repair could not read the reply" if unread else "no final answer"
        return Score(INVALID, {}, why)
    if schema_errors(graded, case.output_schema):
        return Score(INVALID, {}, "answer invalid against the item's schema")
    if official_match(graded, target, frozenset(skip)):
        return Score(EXACT, {}, "matches the published target (official comparison)")
    return Score(VALID_BUT_WRONG, {}, "valid, but differs from the published target")


def answer_official(gates: bool = False) -> Scorer:
    """SOP-Maze's official grade, given to every item (unscorable ones included); it never
    gates a task's success, which stays our strict verdict."""
    return Scorer(NAME, _answer_official, gates)


def official_inputs(target: JSON, skip: list[str]) -> JSON:
    """The gold decisions that keep the published target and skip list for the official grade,
    for an item whose gold answer or never-compared keys were mended."""
    return {PUBLISHED_TARGET: target, PUBLISHED_SKIP: list(skip)}
