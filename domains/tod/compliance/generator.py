"""Compliance tasks: a partial conversation, its governing instruction and the agent's next
actions (with what the read actions returned); compliant or violating, balanced. Points
alternate between the labels; a violating one takes the manipulation made least so far that
the point allows, and a point that allows none leaves the violation to the next point."""

from __future__ import annotations

import copy
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
    out: list[Case] = []
    violating = False
    made = dict.fromkeys(MANIPULATIONS, 0)
    for index in share("compliance"):
        transcript = transcribe(world(index, seed))
        for point in transcript.points:
            if not violating:
                out.append(Case(transcript, point, point.chain, None))
                violating = True
                continue
            for name in sorted(MANIPULATIONS, key=made.__getitem__):  # the rarest first
                chain = violation(name, transcript.world, point)
                if chain is not None:
                    out.append(Case(transcript, point, chain, name))
                    violating, made[name] = False, made[name] + 1
                    break
    return out


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
