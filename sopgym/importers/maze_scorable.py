"""Whether a SOP-Maze item can be scored, decided by what the scorer compares.

A target that is invalid against its own schema makes its item unscorable only when the defect
is in something the scorer compares. The grade (``answer_schema``) asks for a schema-valid
answer and compares the target's keys, except those never compared (the record's
``no_required_eval_acc_keys``, or keys the schema marks free text), strings case- and
space-insensitively. So a target is still scorable when every defect is

- inside a key never compared (a free-text reply too long, of the wrong type, missing): a
  correct answer may hold any valid value there; or
- a required key the target lacks and names nowhere (``享`` in three L1 items): only the
  target's keys are compared, so the key is never compared either; the mended answer holds
  any valid value there and the item declares the key never compared (else our comparison,
  which compares a nested object whole, would ask an answer for the filler); or
- surrounding whitespace in an enum value (``"refund "`` for the enum's ``"refund"``): the
  compared value is the same.

:func:`scorable_answer` builds that correct answer (the target with only those defects
mended) and checks it is valid; it is what the oracle answers and what the gold holds. Any
other defect is a reason, in words, why the item cannot be scored.
"""

from __future__ import annotations

import copy
from typing import Any, NamedTuple

from jsonschema import Draft7Validator
from jsonschema.exceptions import ValidationError
from jsonschema.validators import validator_for

from sopgym.types import JSON


class Mended(NamedTuple):
    answer: JSON  # valid, and equal to the target on every compared key
    where: list[str]  # the JSON paths mended (empty: the target as published)
    uncompared: list[str]  # required keys the target lacks, now declared never compared


def scorable_answer(target: JSON, schema: JSON, free: frozenset[str]) -> Mended | str:
    """A valid answer equal to ``target`` on every compared key, or why none exists."""
    validator = validator_for(schema, default=Draft7Validator)(schema)
    answer = copy.deepcopy(target)
    mended: list[str] = []
    uncompared: list[str] = []
    named = _names(target)
    for _ in range(8):  # each pass mends what the last left; a schema rarely needs two
        errors = sorted(validator.iter_errors(answer), key=lambda e: e.json_path)
        if not errors:
            return Mended(answer, mended, uncompared)
        for error in errors:
            never = free | frozenset(uncompared)
            why = _mend(answer, schema, error, never, named, uncompared)
            if why is not None:
                return f"{error.json_path}: {error.message} ({why})"
            mended.append(error.json_path)
    return "the target's defects could not be mended"


def _names(value: Any) -> frozenset[str]:
    """Every key named anywhere in ``value``."""
    if isinstance(value, dict):
        return frozenset(value).union(*(_names(v) for v in value.values()))
    if isinstance(value, list):
        return frozenset().union(*(_names(v) for v in value))
    return frozenset()


def _mend(
    answer: JSON,
    schema: JSON,
    error: ValidationError,
    free: frozenset[str],
    named: frozenset[str],
    uncompared: list[str],
) -> str | None:
    """Mend ``error`` in place if it is in what is never compared (a required key the target
    names nowhere is added to ``uncompared``); else say why not."""
    path = list(error.absolute_path)
    at_free = next((i for i, key in enumerate(path) if isinstance(key, str) and key in free), None)
    if at_free is not None:  # anything under a never-compared key: give it any valid value
        return _replace(answer, schema, path[: at_free + 1])
    wanted: Any = error.validator_value  # (typed loosely by jsonschema)
    instance: Any = error.instance
    if error.validator == "required":
        missing = [k for k in wanted if k not in (instance or {})]
        if missing and all(k in free or k not in named for k in missing):
            for key in missing:
                if (why := _replace(answer, schema, [*path, key])) is not None:
                    return why
                if key not in free:
                    uncompared.append(key)
            return None
        return "a compared key is missing"
    if error.validator == "enum" and isinstance(instance, str) and instance.strip() in wanted:
        _set(answer, path, instance.strip())  # the same value once spaces are ignored
        return None
    return "a compared value"


def _replace(answer: JSON, schema: JSON, path: list[Any]) -> str | None:
    sub = _subschema(schema, path)
    if sub is None:
        return "no plain schema for the never-compared key"
    _set(answer, path, minimal_instance(sub))
    return None


def _subschema(schema: JSON, path: list[Any]) -> JSON | None:
    """The schema of the value at ``path``, through ``properties`` and ``items`` only."""
    here: Any = schema
    for key in path:
        if not isinstance(here, dict):
            return None
        if isinstance(key, int):
            here = here.get("items")
        else:
            here = (here.get("properties") or {}).get(key)
    return here if isinstance(here, dict) else None


def _set(value: Any, path: list[Any], new: Any) -> None:
    for key in path[:-1]:
        value = value[key]
    value[path[-1]] = new


def minimal_instance(schema: JSON) -> Any:
    """A small value valid against a plain schema (its const, first enum value, an empty or
    minimal string, number, list or object with its required keys)."""
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type", "string")
    kind = kind[0] if isinstance(kind, list) and kind else kind
    if kind == "string":
        return "x" * int(schema.get("minLength", 0))
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    if kind == "array":
        return [minimal_instance(schema.get("items") or {})] * int(schema.get("minItems", 0))
    properties = schema.get("properties") or {}
    return {k: minimal_instance(properties.get(k) or {}) for k in schema.get("required") or []}
