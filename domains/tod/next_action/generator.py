"""Next-action tasks: every customer turn of every conversation of the pack's share.

The conversation so far is given with the candidate instruction sections (the governing
intent's and three others, two of them of the same shape when it has siblings) written in
the conversation's format. The state an episode starts from is the customer's world after
the actions already taken (``starts``).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Final

from sopgym.core.domain import GeneratedData
from sopgym.core.tables import Tables
from sopgym.core.tasks import Task
from sopgym.types import JSON

from ..conversations import Call, apply, share, transcribe, world
from ..formats import render_format
from ..intents import INTENTS, Intent

DOMAIN_NAME: Final = "tod/next_action"
POSITIONS: Final = ("beginning", "middle", "end")
CANDIDATES: Final = 4


def siblings(intent: Intent) -> list[Intent]:
    """Intents with the same outline (top-level actions): the hardest to tell apart."""
    return [other for other in INTENTS if other is not intent and _outline(other) ==
            _outline(intent)]  # fmt: skip


def _outline(intent: Intent) -> tuple[str, ...]:
    return tuple(getattr(step, "action", "if") for step in intent.steps)


def candidates(intent: Intent, rng: random.Random) -> list[Intent]:
    near = siblings(intent)[:2]
    far = [i for i in INTENTS if i is not intent and i not in near]
    chosen = [intent, *near, *rng.sample(far, CANDIDATES - 1 - len(near))]
    rng.shuffle(chosen)
    return chosen


def generate(seed: int, files_dir: Path) -> GeneratedData:
    import pandas as pd

    rng = random.Random(seed)
    worlds: list[JSON] = []
    starts: list[JSON] = []
    tasks: list[Task] = []
    for index in share("next_action"):
        transcript = transcribe(world(index, seed))
        w = transcript.world
        worlds.append({"conversation_id": w.conversation_id, "state": json.dumps(w.state)})
        shown = {i.name: render_format(i.steps, w.format) for i in candidates(w.intent, rng)}
        for k, point in enumerate(transcript.points):
            task_id = f"tod_next_action-{len(tasks):05d}"
            starts.append({"task_id": task_id, "calls": json.dumps(
                [c.to_json() for c in point.before])})  # fmt: skip
            inputs = {
                "conversation_id": w.conversation_id, "language": w.language,
                "format": w.format,
                "position": POSITIONS[3 * k // len(transcript.points)],
                "conversation": transcript.turns[:point.turn + 1], "instructions": shown,
            }  # fmt: skip
            tasks.append(Task(task_id, DOMAIN_NAME, inputs))
    tables = {"worlds": pd.DataFrame(worlds), "starts": pd.DataFrame(starts)}
    return GeneratedData(tables=tables, tasks=tasks)


def initial_state(tables: Tables, task: Task) -> JSON:
    world_row = tables.row("worlds", "conversation_id", task.inputs["conversation_id"])
    start = tables.row("starts", "task_id", task.id)
    assert world_row is not None and start is not None, task.id
    state: JSON = json.loads(world_row["state"])
    for call in json.loads(start["calls"]):
        apply(state, Call(call["name"], call["arguments"]))
    return state
