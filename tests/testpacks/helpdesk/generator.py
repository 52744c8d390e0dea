"""Orders and customers: each task is one customer who wants a refund (12 tasks, the three
outcomes in rotation)."""

from __future__ import annotations

import random
from pathlib import Path

import pandas as pd

from sopgym.core.dialogue import DIALOGUE, user_turn
from sopgym.core.domain import GeneratedData
from sopgym.core.tasks import Task

from . import user

NAMES = ("ana", "ben", "chloe", "dev", "emre", "fatima", "gus", "hana", "ivo", "jun", "kai", "lea")
ITEMS = ("kettle", "desk lamp", "backpack", "headphones", "blender", "rain jacket")
SCENARIOS = ("refund", "late", "wrong_email")
TASKS = 12


def generate(seed: int, files_dir: Path) -> GeneratedData:
    rng = random.Random(seed)
    orders, tasks, users = [], [], {}
    for index in range(TASKS):
        scenario = SCENARIOS[index % len(SCENARIOS)]
        name = NAMES[index]
        order_id = f"O-{rng.randint(10000, 99999)}"
        email = f"{name}.{rng.randint(10, 99)}@example.com"
        item = rng.choice(ITEMS)
        days = rng.randint(31, 90) if scenario == "late" else rng.randint(1, 30)
        orders.append(
            {
                "order_id": order_id,
                "email": email,
                "item": item,
                "amount": round(rng.uniform(10, 200), 2),
                "delivered_days_ago": days,
            }
        )
        task_id = f"helpdesk-{index + 1:03d}"
        given = f"{name}@oldmail.example" if scenario == "wrong_email" else email
        profile = {
            "goal": f"a refund for the {item}",
            "name": name,
            "order_id": order_id,
            "email": given,
            "item": item,
        }
        users[task_id] = profile
        opening = user_turn(user.reply, profile, seed, task_id, [])
        tasks.append(
            Task(
                id=task_id,
                domain="helpdesk",
                inputs={"ticket_id": f"T-{1000 + index}", "channel": rng.choice(["chat", "app"])},
                kind=DIALOGUE,
                conversation=[{"role": "user", "content": opening.content}],
            )
        )
    return GeneratedData(tables={"orders": pd.DataFrame(orders)}, tasks=tasks, users=users)
