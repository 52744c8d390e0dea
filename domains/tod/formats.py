"""The three written formats of an instruction, and a walker for each that reads the text.

- ``nested``: nested if-then (``- do ...`` lines, ``- if C:`` / ``  else if C:`` /
  ``  otherwise:`` blocks, four spaces per level);
- ``flat``: flattened if-then, one line per (conjunction of conditions, actions) pair, read
  top-down, every line whose conditions hold runs;
- ``json``: the flattened pairs as JSON ``{"steps": [{"conditions": [...], "actions":
  [{"action", "arguments"}]}]}``.

All three are written from the one tree (:mod:`.trees`), so they agree by construction; the
walkers parse the text back, so a test that walks all three proves it.
"""

from __future__ import annotations

import json
import re
from typing import Final

from .conditions import All, Any_, Condition, Lookup, parse, render
from .trees import Arg, Call, Do, If, Step, flatten, iter_actions, resolve

FORMATS: Final = ("nested", "flat", "json")
_INDENT: Final = "    "
_CALL: Final = re.compile(r"^(?P<name>[a-z_]+)\((?P<args>.*)\)$")
_ARG: Final = re.compile(r'(?P<param>[a-z_]+)=(?:<(?P<fact>[a-z_]+)>|"(?P<literal>[^"]*)")')


def render_format(steps: tuple[Step, ...], fmt: str) -> str:
    if fmt == "nested":
        return "\n".join(_nested(steps, 0))
    flat = flatten(steps)
    if fmt == "flat":
        return "\n".join(_flat_line([_conjunct(c) for c in conds], [_action(a) for a in acts])
                         for conds, acts in flat)  # fmt: skip
    if fmt == "json":
        return json.dumps({"steps": [
            {"conditions": [render(c) for c in conds], "actions": [_action_json(a) for a in acts]}
            for conds, acts in flat]})  # fmt: skip
    raise ValueError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")


def walk_text(text: str, fmt: str, get: Lookup) -> list[Call]:
    """The actions the written instruction ``text`` runs for the facts ``get`` gives."""
    if fmt == "nested":
        tree, rest = _parse_nested(text.splitlines(), 0)
        if rest:
            raise ValueError(f"unreadable line {rest[0]!r}")
        return [resolve(s, get) for s in iter_actions(tree, get)]
    if fmt == "flat":
        pairs = [_parse_flat_line(line) for line in text.splitlines()]
    elif fmt == "json":
        steps = json.loads(text)["steps"]
        pairs = [([parse(c) for c in s["conditions"]], [_do_json(a) for a in s["actions"]])
                 for s in steps]  # fmt: skip
    else:
        raise ValueError(f"unknown format {fmt!r}")
    return [resolve(act, get) for conds, acts in pairs
            if all(c.holds(get) for c in conds) for act in acts]  # fmt: skip


# --- writing


def _action(step: Do) -> str:
    args = ", ".join(
        f"{name}=<{arg.fact}>" if arg.fact is not None else f'{name}="{arg.literal}"'
        for name, arg in step.args
    )
    return f"{step.action}({args})"


def _action_json(step: Do) -> dict[str, object]:
    return {"action": step.action, "arguments": {
        name: f"<{arg.fact}>" if arg.fact is not None else arg.literal for name, arg in step.args}}


def _conjunct(condition: Condition) -> str:
    text = render(condition)
    return f"({text})" if isinstance(condition, All | Any_) else text


def _flat_line(conds: list[str], acts: list[str]) -> str:
    return "- " + (f"if {' and '.join(conds)}: " if conds else "always: ") + "; ".join(acts)


def _nested(steps: tuple[Step, ...], level: int) -> list[str]:
    pad = _INDENT * level
    lines: list[str] = []
    for step in steps:
        if isinstance(step, Do):
            lines.append(f"{pad}- do {_action(step)}")
            continue
        for i, (condition, body) in enumerate(step.branches):
            head = "- if" if i == 0 else "  else if"
            lines.append(f"{pad}{head} {render(condition)}:")
            lines += _nested(body, level + 1)
        if step.otherwise:
            lines.append(f"{pad}  otherwise:")
            lines += _nested(step.otherwise, level + 1)
    return lines


# --- reading


def _parse_call(text: str) -> Do:
    found = _CALL.match(text.strip())
    if found is None:
        raise ValueError(f"not an action: {text!r}")
    args = tuple(
        (m["param"], Arg(fact=m["fact"]) if m["fact"] else Arg(literal=m["literal"]))
        for m in _ARG.finditer(found["args"])
    )
    return Do(found["name"], args)


def _do_json(action: dict[str, object]) -> Do:
    arguments = action["arguments"]
    assert isinstance(arguments, dict)
    return Do(str(action["action"]), tuple(
        (name, Arg(fact=value[1:-1]) if value.startswith("<") else Arg(literal=value))
        for name, value in arguments.items()))  # fmt: skip


def _parse_flat_line(line: str) -> tuple[list[Condition], list[Do]]:
    if line.startswith("- always: "):
        return [], [_parse_call(a) for a in line[len("- always: "):].split("; ")]
    if not line.startswith("- if "):
        raise ValueError(f"unreadable line {line!r}")
    conditions, _, actions = line[len("- if "):].partition(": ")
    return [parse(conditions)], [_parse_call(a) for a in actions.split("; ")]


def _parse_nested(lines: list[str], level: int) -> tuple[tuple[Step, ...], list[str]]:
    """Steps at ``level`` from the head of ``lines``; returns them and the lines left."""
    pad = _INDENT * level
    steps: list[Step] = []
    while lines and lines[0].startswith(pad + "- "):
        line = lines.pop(0)[len(pad):]
        if line.startswith("- do "):
            steps.append(_parse_call(line[len("- do "):]))
            continue
        branches = [(parse(line[len("- if "):-1]), _body(lines, level))]
        otherwise: tuple[Step, ...] = ()
        while lines and lines[0].startswith(pad + "  else if "):
            text = lines.pop(0)[len(pad + "  else if "):-1]
            branches.append((parse(text), _body(lines, level)))
        if lines and lines[0] == pad + "  otherwise:":
            lines.pop(0)
            otherwise = _body(lines, level)
        steps.append(If(tuple(branches), otherwise))
    return tuple(steps), lines


def _body(lines: list[str], level: int) -> tuple[Step, ...]:
    body, rest = _parse_nested(lines, level + 1)
    lines[:] = rest
    return body

