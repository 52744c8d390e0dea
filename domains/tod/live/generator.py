"""Live episodes: one per conversation of the pack's share. The task gives the customer's
opening and the candidate instruction sections; the customer's profile (its goal, facts and
the write actions its goal calls for) stays in the gold, for the simulator."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Final

from sopgym.core.dialogue import DIALOGUE, user_turn
from sopgym.core.domain import GeneratedData
from sopgym.core.tables import Tables
from sopgym.core.tasks import Task
from sopgym.types import JSON

from ..actions import READS
from ..conversations import Act, share, transcribe, world
from ..formats import render_format
from ..next_action.generator import candidates
from . import user

DOMAIN_NAME: Final = "tod/live"


def generate(seed: int, files_dir: Path) -> GeneratedData:
    import pandas as pd

    rng = random.Random(seed)
    worlds: list[JSON] = []
    tasks: list[Task] = []
    users: dict[str, JSON] = {}
    for index in share("live"):
        w = world(index, seed)
        worlds.append({"conversation_id": w.conversation_id, "state": json.dumps(w.state)})
        task_id = f"tod_live-{len(tasks):04d}"
        steps = transcribe(w).steps
        users[task_id] = {
            "language": w.language, "phrasing": w.phrasing, "says": w.says,
            "facts": w.customer,
            "expects": sorted({s.call.action for s in steps if isinstance(s, Act)} - READS),
        }  # fmt: skip
        opening = user_turn(user.reply, users[task_id], seed, task_id, [])
        shown = {i.name: render_format(i.steps, w.format) for i in candidates(w.intent, rng)}
        inputs = {"conversation_id": w.conversation_id, "language": w.language,
                  "format": w.format, "instructions": shown}  # fmt: skip
        tasks.append(Task(task_id, DOMAIN_NAME, inputs, kind=DIALOGUE,
                          conversation=[{"role": "user", "content": opening.content}]))  # fmt: skip
    return GeneratedData(tables={"worlds": pd.DataFrame(worlds)}, tasks=tasks, users=users)


def initial_state(tables: Tables, task: Task) -> JSON:
    row = tables.row("worlds", "conversation_id", task.inputs["conversation_id"])
    assert row is not None, task.id
    state: JSON = json.loads(row["state"])
    return state
