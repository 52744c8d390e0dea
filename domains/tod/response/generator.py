"""Response tasks, one per conversation of the pack's share, at a customer turn after which
the agent speaks (the last "goodbye" needs no answer), rotating through the conversation:
the conversation so far and the governing instruction in; the agent's next response (the
actions it declares and its message) out."""

from __future__ import annotations

from pathlib import Path
from typing import Final

from sopgym.core.domain import GeneratedData
from sopgym.core.tasks import Task

from ..conversations import share, transcribe, world
from ..formats import render_format

DOMAIN_NAME: Final = "tod/response"


def generate(seed: int, files_dir: Path) -> GeneratedData:
    tasks: list[Task] = []
    for nth, index in enumerate(share("response")):
        transcript = transcribe(world(index, seed))
        w = transcript.world
        speaking = [p for p in transcript.points if p.then is not None]
        point = speaking[nth % len(speaking)]
        inputs = {
            "conversation_id": w.conversation_id, "language": w.language, "format": w.format,
            "conversation": transcript.turns[:point.turn + 1],
            "instruction": render_format(w.intent.steps, w.format),
        }  # fmt: skip
        tasks.append(Task(f"tod_response-{len(tasks):04d}", DOMAIN_NAME, inputs,
                          kind="json_answer"))  # fmt: skip
    return GeneratedData(tables={}, tasks=tasks)
