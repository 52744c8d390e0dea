"""Scorers of the final answer as a whole and of the final state: validity against the task's
output JSON Schema, SOP-Maze's graded answer score, and a strict diff of the state a stateful
episode left behind against the gold state."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import jsonschema_rs
from jsonschema import Draft202012Validator
from jsonschema.validators import validator_for

from sopgym.evaluation.scorers.base import UNJUDGED, Case, Score, Scorer, listed
from sopgym.evaluation.scorers.fields import SCALARS, field_matches
from sopgym.types import JSON

# SOP-Maze's grades: an exact answer, a well-formed but wrong one, a malformed one
EXACT, VALID_BUT_WRONG, INVALID = 1.0, 0.2, 0.0


# Compiled validators by schema object: every task of a domain shares its output schema
_COMPILED: dict[int, tuple[JSON, jsonschema_rs.Validator]] = {}


def _compiled(schema: JSON) -> jsonschema_rs.Validator:
    entry = _COMPILED.get(id(schema))
    if entry is None or entry[0] is not schema:
        entry = _COMPILED[id(schema)] = (schema, _validator(schema))
    return entry[1]


def _validator(schema: JSON) -> jsonschema_rs.Validator:
    """2020-12 unless the schema names a known draft in ``$schema`` (imported data: draft-07)."""
    if "$schema" in schema:
        try:
            return jsonschema_rs.validator_for(schema)
        except jsonschema_rs.ValidationError:  # an unknown meta-schema: the default draft
            pass
    return jsonschema_rs.Draft202012Validator(schema)


def schema_errors(answer: Any, schema: JSON) -> list[str]:
    """Where and why ``answer`` is invalid against ``schema`` (empty: valid), JSON Schema
    2020-12 or the draft its ``$schema`` names (the keywords sopgym adds, such as
    ``x-tolerance``, are ignored).

    Every answer is checked by the compiled validator the tool services use (about 1 µs); only
    an invalid one is explained, by ``jsonschema``, whose messages read better.
    """
    try:
        if _compiled(schema).is_valid(answer):
            return []
    except ValueError:  # not JSON data (a non-string key): the explaining validator says why
        pass
    explaining = validator_for(schema, default=Draft202012Validator)(schema)
    found = sorted(explaining.iter_errors(answer), key=lambda e: e.json_path)
    return [f"{e.json_path}: {e.message}" for e in found] or ["not checkable as JSON"]


def _unscorable(case: Case) -> Score | None:
    """An item an import audit found unscorable (its target breaks its own schema, say) is
    n/a here, with the reason, rather than a failure (docs/sop-maze-import.md)."""
    why = case.gold.decisions.get("unscorable")
    return Score(None, {}, f"unscorable: {why}") if why else None


def _schema_valid(case: Case) -> Score:
    if flagged := _unscorable(case):
        return flagged
    if not case.completed:
        return Score(0.0, {"errors": []}, "no final answer")
    problems = schema_errors(case.answer, case.output_schema)
    explanation = f"invalid: {listed(problems, 3)}" if problems else "valid against the schema"
    return Score(float(not problems), {"errors": problems}, explanation)


def schema_valid(gates: bool = False) -> Scorer:
    """The final answer validates against the task's output JSON Schema."""
    return Scorer("schema_valid", _schema_valid, gates)


def _answer_schema(case: Case) -> Score:
    if flagged := _unscorable(case):
        return flagged
    if not case.completed:
        return Score(INVALID, {}, "no final answer")
    if schema_errors(case.answer, case.output_schema):
        return Score(INVALID, {}, "answer invalid against the output schema")
    fields = field_matches(case.answer, case.gold.outputs, case.output_schema)
    if all(fields.values()):
        return Score(EXACT, {}, "exact answer")
    wrong = [name for name, ok in fields.items() if not ok]
    return Score(VALID_BUT_WRONG, {}, f"valid but wrong: {listed(wrong)}")


def answer_schema(gates: bool = False) -> Scorer:
    """SOP-Maze's answer grade: 1.0 exact, 0.2 valid against the schema but wrong, 0 invalid
    (exact as :func:`.fields.output_fields` compares: keys declared free text are not
    compared)."""
    return Scorer("answer_schema", _answer_schema, gates)


def state_diff(actual: Any, expected: Any, path: str = "$") -> list[str]:
    """The paths at which ``actual`` differs from ``expected``, strictly: same keys, same JSON
    types (``1`` is not ``1.0``, ``True`` is not ``1``), same list lengths, equal scalars."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        found = []
        for key in sorted(set(expected) | set(actual), key=str):
            where = f"{path}.{key}"
            if key not in actual:
                found.append(f"{where} (missing)")
            elif key not in expected:
                found.append(f"{where} (unexpected)")
            elif not _same_scalar(actual[key], expected[key]):
                found += state_diff(actual[key], expected[key], where)
        return found
    if isinstance(expected, list) and isinstance(actual, list):
        found = []
        for index, (a, e) in enumerate(zip(actual, expected, strict=False)):
            if not _same_scalar(a, e):
                found += state_diff(a, e, f"{path}[{index}]")
        if len(actual) != len(expected):
            found.append(f"{path} (length {len(actual)}, expected {len(expected)})")
        return found
    if type(actual) is not type(expected) or actual != expected:
        return [path]
    return []


def _same_scalar(actual: Any, expected: Any) -> bool:
    """An equal scalar of the same type (most of a state): no difference, known without
    building its path."""
    kind = actual.__class__
    return kind is expected.__class__ and kind in SCALARS and actual == expected


@lru_cache(maxsize=256)  # a domain's patterns, matched against every episode's state
def harmless_matcher(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    """A regular expression matching the :func:`state_diff` paths that ``patterns`` (paths
    with ``[*]`` for any list index) declare harmless, with or without their ``(missing)``
    style note; ``None`` when there are none."""
    if not patterns:
        return None
    exact = (re.escape(p).replace(re.escape("[*]"), r"\[[0-9]+\]") for p in patterns)
    return re.compile(rf"(?:{'|'.join(exact)})(?: \(.*\))?")


def _final_state(case: Case) -> Score:
    expected = case.gold.final_state
    if expected is None:
        return Score(None, {}, "no gold state: the domain is stateless")
    actual = case.trajectory.final_state
    if actual is None and not case.trajectory.state_observed:
        why = "no final state: the episode was played elsewhere and scored from its outputs"
        return Score(None, {UNJUDGED: why}, f"not applicable: {why}")
    if actual is None:
        return Score(0.0, {"differences": ["$ (no final state recorded)"], "harmless": []},
                     "no final state")  # fmt: skip
    matcher = harmless_matcher(case.domain.harmless_state)
    harmless: list[str] = []
    wrong: list[str] = []
    for path in state_diff(actual, expected):
        (harmless if matcher and matcher.fullmatch(path) else wrong).append(path)
    if wrong:
        explanation = f"differs at {listed(wrong)}"
        # the gold's value at each failing path, so a reader sees expected beside actual
        # without the dataset (sopgym.evaluation.explain); the first paths only
        expected_at = {path: value_at(expected, path) for path in wrong[:STATE_PATHS_KEPT]}
        return Score(0.0, {"differences": wrong, "harmless": harmless, "expected": expected_at},
                     explanation)  # fmt: skip
    elif harmless:
        explanation = f"state matches but for harmless differences at {listed(harmless)}"
    else:
        explanation = "state matches"
    return Score(float(not wrong), {"differences": wrong, "harmless": harmless}, explanation)


STATE_PATHS_KEPT = 20  # expected values recorded with a failed final state


def value_at(state: Any, path: str) -> Any:
    """The value at a :func:`state_diff` path (``$.a.b[2]``, with or without its
    ``(missing)``-style note) of ``state``, or None where it is absent."""
    value = state
    for part in path.split(" ")[0].lstrip("$").replace("[", ".[").split("."):
        if not part:
            continue
        try:
            value = value[int(part[1:-1])] if part.startswith("[") else value[part]
        except (KeyError, IndexError, TypeError, ValueError):
            return None
    return value


def final_state(gates: bool = True) -> Scorer:
    """The episode's final state equals the gold state, strictly (1.0) or not (0.0), apart
    from the paths the domain declares harmless (``DomainPack.harmless_state``), which are
    reported under ``harmless`` and never fail. The failing paths are ``differences``."""
    return Scorer("final_state", _final_state, gates)
