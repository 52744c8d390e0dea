"""The final answer, field by field, the way a person would read it: case, spacing and number
formatting do not matter, and numeric fields may carry an ``x-tolerance`` in the output
schema."""

from __future__ import annotations

from typing import Any

from sopgym.core.normalized import normalize
from sopgym.evaluation.scorers.base import Case, Score, Scorer, listed
from sopgym.types import JSON

# The JSON scalar types. Two scalars equal as given are equal normalised too, so most answer
# fields and call arguments are settled without normalising either side.
SCALARS = frozenset({str, int, float, bool, type(None)})


def equal_is_matching(value: Any) -> bool:
    """Whether ``value``, equal to another as given, is equal to it normalised too: a scalar,
    or a list of strings. (Lists normalise to their items sorted by ``repr``; equal strings
    sort alike, but an equal ``True`` and ``1`` would not, so other lists are normalised.)"""
    kind = value.__class__
    return kind in SCALARS or (kind is list and all(item.__class__ is str for item in value))


def values_match(predicted: Any, gold: Any, tolerance: float = 0.0) -> bool:
    if tolerance >= 0 and predicted == gold and equal_is_matching(predicted):
        return True
    p, g = normalize(predicted), normalize(gold)
    if isinstance(p, float) and isinstance(g, float):
        return abs(p - g) <= tolerance + 1e-9
    return p == g


FREE_TEXT = "x-free-text"  # a schema keyword: this key holds free text and is never compared
FREE_TEXT_KEYS = "x-free-text-keys"  # a root keyword: names never compared, at any depth


def free_text_keys(schema: Any) -> frozenset[str]:
    """Names of the properties, at any depth of ``schema``, declared ``"x-free-text": true``,
    and the names its ``x-free-text-keys`` lists (imports whose keys the schema may not
    declare). A domain's schema is one object scored against many times: found once."""
    known = _FREE_TEXT_FOUND.get(id(schema))
    if known is not None and known[0] is schema:
        return known[1]
    found = frozenset(_free_text_keys(schema))
    _FREE_TEXT_FOUND[id(schema)] = (schema, found)  # holds the schema: its id stays its own
    return found


_FREE_TEXT_FOUND: dict[int, tuple[Any, frozenset[str]]] = {}


def _free_text_keys(schema: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(schema, dict):
        found.update(k for k in schema.get(FREE_TEXT_KEYS) or [] if isinstance(k, str))
        for name, sub in (schema.get("properties") or {}).items():
            if isinstance(sub, dict) and sub.get(FREE_TEXT) is True:
                found.add(name)
        for sub in schema.values():
            found |= _free_text_keys(sub)
    elif isinstance(schema, list):
        for sub in schema:
            found |= _free_text_keys(sub)
    return found


def _without(value: Any, keys: frozenset[str]) -> Any:
    if isinstance(value, dict):
        return {k: _without(v, keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list):
        return [_without(v, keys) for v in value]
    return value


def field_matches(answer: JSON, gold_outputs: JSON, output_schema: JSON) -> dict[str, bool]:
    """Per gold output field: whether the answer has it, equal under :func:`values_match`.
    Keys declared free text (:func:`free_text_keys`) are left out, at any depth."""
    properties = output_schema.get("properties", {})
    free = free_text_keys(output_schema)
    if not free:  # (most schemas: nothing to take out of the values first)
        return {
            name: name in answer
            and values_match(
                answer[name], expected, properties.get(name, {}).get("x-tolerance", 0.0)
            )
            for name, expected in gold_outputs.items()
        }
    return {
        name: name in answer
        and values_match(
            _without(answer[name], free),
            _without(expected, free),
            properties.get(name, {}).get("x-tolerance", 0.0),
        )
        for name, expected in gold_outputs.items()
        if name not in free
    }


def _output_fields(case: Case) -> Score:
    fields = field_matches(case.answer, case.gold.outputs, case.output_schema)
    wrong = [name for name, ok in fields.items() if not ok]
    if not case.completed:
        explanation = "no final answer"
    elif wrong:
        explanation = f"{len(wrong)} of {len(fields)} fields wrong or missing: {listed(wrong)}"
    else:
        explanation = f"all {len(fields)} fields match"
    value = sum(fields.values()) / len(fields) if fields else float(case.completed)
    return Score(value, {"fields": fields}, explanation)


def output_fields(gates: bool = True) -> Scorer:
    """The share of gold output fields the answer got right (1.0: all of them)."""
    return Scorer("output_fields", _output_fields, gates)
