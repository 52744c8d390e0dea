"""The generic baseline policy for benchmarks that come without a reference policy.

A pure function of what any agent sees: the task inputs, the tool specs and the results so far.
It calls each tool whose required arguments can all be filled from the inputs and earlier
results (matching names case-, separator- and camelCase-insensitively), so a tool always comes
after the calls that produced its arguments (dependency order; ties keep catalog order). When no
further tool can be called it answers each output field from the latest result field of the
same name. It reads no SOP: its success rate is a baseline, not an oracle.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sopgym.types import JSON

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[^0-9a-z]+")


@dataclass(frozen=True)
class Step:
    """One tool call made so far, and what came back (``ok`` false: a refusal)."""

    name: str
    arguments: JSON
    ok: bool
    result: Any = None

    @classmethod
    def from_message(cls, name: str, arguments: JSON, content: str) -> Step:
        """A step from a chat transcript, where a tool result is its JSON text."""
        try:
            body = json.loads(content)
        except ValueError:
            return cls(name, arguments, ok=False, result=content)
        failed = isinstance(body, dict) and set(body) == {"error"}
        return cls(name, arguments, ok=not failed, result=body)


@dataclass(frozen=True)
class Call:
    name: str
    arguments: JSON


@dataclass(frozen=True)
class Answer:
    outputs: JSON


def next_action(
    inputs: JSON, tools: Sequence[JSON], output_fields: Sequence[str], history: Sequence[Step]
) -> Call | Answer:
    """The next call, or the final answer once no uncalled tool can be filled."""
    found = result_facts(history)
    known = {**found, **{key(k): v for k, v in inputs.items()}}  # the inputs are authoritative
    tried = {step.name for step in history}
    for spec in tools:
        name, schema = spec_parts(spec)
        if name in tried:
            continue
        arguments = fill(schema, known)
        if arguments is not None:
            return Call(name, arguments)
    return Answer({f: found[key(f)] for f in output_fields if key(f) in found})


def key(name: str) -> str:
    """``patientID``, ``patient id`` and ``Patient_Id`` are one name: ``patient_id``."""
    return _SEPARATORS.sub("_", _CAMEL.sub("_", str(name)).casefold()).strip("_")


def spec_parts(spec: JSON) -> tuple[str, JSON]:
    """Name and input schema of a spec in neutral, OpenAI, Anthropic or Bedrock form."""
    if "toolSpec" in spec:
        body = spec["toolSpec"]
        return body["name"], (body.get("inputSchema") or {}).get("json") or {}
    if "function" in spec:
        body = spec["function"]
        return body["name"], body.get("parameters") or {}
    return spec["name"], spec.get("input_schema") or spec.get("parameters") or {}


def result_facts(history: Sequence[Step]) -> JSON:
    """Every field of every successful result, by normalised name; later results win."""
    facts: JSON = {}
    for step in history:
        if step.ok and isinstance(step.result, dict):
            facts.update(flatten(step.result))
    return facts


def flatten(result: JSON) -> JSON:
    """Top-level fields, then nested objects' fields where the name is still free."""
    flat = {key(k): v for k, v in result.items()}
    for value in result.values():
        if isinstance(value, dict):
            for name, inner in flatten(value).items():
                flat.setdefault(name, inner)
    return flat


def fill(schema: JSON, known: JSON) -> JSON | None:
    """Arguments for ``schema`` from ``known``, or ``None`` if a required one is unknown.

    A schema without ``required`` is taken to need all its properties: SOP-Bench tools are
    methods whose parameters are all positional.
    """
    properties: JSON = schema.get("properties") or {}
    required = schema.get("required", list(properties))
    if any(key(name) not in known for name in required):
        return None
    return {
        name: coerce(known[key(name)], prop if isinstance(prop, dict) else {})
        for name, prop in properties.items()
        if key(name) in known
    }


def coerce(value: Any, schema: JSON) -> Any:
    """``value`` in the JSON type ``schema`` asks for, when it converts losslessly."""
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if value is None or kind is None:
        return value
    try:
        return _COERCE[kind](value)
    except (KeyError, ValueError, TypeError, SyntaxError):
        return value


def _to_string(value: Any) -> str:
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return value if isinstance(value, str) else str(value)


def _to_integer(value: Any) -> Any:
    if isinstance(value, bool):
        raise TypeError
    number = float(value)
    if not number.is_integer():
        raise ValueError
    return int(number)


def _to_number(value: Any) -> Any:
    if isinstance(value, bool):
        raise TypeError
    return value if isinstance(value, (int, float)) else float(value)


_TRUE, _FALSE = {"true", "yes", "1"}, {"false", "no", "0"}


def _to_boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().casefold()
    if text in _TRUE | _FALSE:
        return text in _TRUE
    raise ValueError


def _to_array(value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    if isinstance(value, str) and value.strip().startswith(("[", "(")):
        parsed = ast.literal_eval(value.strip())
        if isinstance(parsed, (list, tuple)):
            return list(parsed)
    return [value]


_COERCE = {
    "string": _to_string,
    "integer": _to_integer,
    "number": _to_number,
    "boolean": _to_boolean,
    "array": _to_array,
    "object": lambda v: v if isinstance(v, dict) else json.loads(v),
}
