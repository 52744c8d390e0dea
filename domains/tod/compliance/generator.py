"""Compliance tasks, one per conversation of the pack's share: a partial conversation, its
governing instruction and the agent's next actions (with what the read actions returned);
compliant or violating, balanced. Conversations alternate between the labels; a violating one
takes, at the first point that allows one, the manipulation made least so far (a
conversation that allows none stays compliant and leaves the violation to the next)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from sopgym.core.domain import GeneratedData
from sopgym.core.errors import ToolError
from sopgym.core.tasks import Task
from sopgym.types import JSON

from ..actions import READS
from ..conversations import Call, Point, Transcript, World, apply, share, transcribe, truth, world
from ..formats import render_format
from .manipulations import MANIPULATIONS, flipped, parameter

DOMAIN_NAME: Final = "tod/compliance"


def violation(kind: str, w: World, point: Point) -> list[Call] | None:
    if kind == "parameter":
        return parameter(point.chain)
    changes = 1 if kind == "single_condition" else 2
    return flipped(w.intent, truth(w), set(point.known), point.before, point.chain, changes)


def shown(state: JSON, before: list[Call], chain: list[Call]) -> list[JSON]:
    """The response as the desk records it: each action with its arguments, and for read
    actions what they returned on the customer's real state."""
    state = copy.deepcopy(state)
    for call in before:
        apply(state, call)
    out = []
    for call in chain:
        result = None
        if call.action in READS:
            try:
                result = apply(state, call)
            except ToolError as refused:
                result = {"error": refused.code}
        out.append({"name": call.action, "arguments": dict(call.arguments), "result": result})
    return out


@dataclass
class Case:
    transcript: Transcript
    point: Point
    response: list[Call]
    manipulation: str | None  # None: the compliant response


def cases(seed: int) -> list[Case]:
    """One case per conversation of the share, at a point that rotates through it."""
    out: list[Case] = []
    violating = False
    made = dict.fromkeys(MANIPULATIONS, 0)
    for nth, index in enumerate(share("compliance")):
        transcript = transcribe(world(index, seed))
        points = transcript.points
        rotated = points[nth % len(points):] + points[:nth % len(points)]
        case = Case(transcript, rotated[0], rotated[0].chain, None)
        if violating:
            case = next((c for p in rotated for c in _violations(transcript, p, made)), case)
        if case.manipulation is not None:
            made[case.manipulation] += 1
        out.append(case)
        violating = case.manipulation is None
    return out


def _violations(transcript: Transcript, point: Point, made: dict[str, int]) -> Iterator[Case]:
    """The violating cases ``point`` allows, the manipulation made least so far first."""
    for name in sorted(MANIPULATIONS, key=made.__getitem__):
        chain = violation(name, transcript.world, point)
        if chain is not None:
            yield Case(transcript, point, chain, name)


def generate(seed: int, files_dir: Path) -> GeneratedData:
    tasks: list[Task] = []
    for case in cases(seed):
        w, point = case.transcript.world, case.point
        inputs = {
            "conversation_id": w.conversation_id, "language": w.language, "format": w.format,
            "conversation": case.transcript.turns[:point.turn + 1],
            "instruction": render_format(w.intent.steps, w.format),
            "response": shown(w.state, point.before, case.response),
        }  # fmt: skip
        tasks.append(Task(f"tod_compliance-{len(tasks):04d}", DOMAIN_NAME, inputs,
                          kind="json_answer"))  # fmt: skip
    return GeneratedData(tables={}, tasks=tasks)
