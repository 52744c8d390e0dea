"""Seeded relationship records; scenarios rotate so every tier appears at least 3 times."""

from __future__ import annotations

import random
from pathlib import Path

import pandas as pd

from sopgym.core.domain import GeneratedData
from sopgym.core.tasks import Task

TASK_COUNT = 12
SCENARIOS = ["wealth", "long_tenure", "many_products", "plain"]


def generate(seed: int, files_dir: Path) -> GeneratedData:
    rng = random.Random(seed)
    accounts, tasks = [], []
    for index in range(TASK_COUNT):
        scenario = SCENARIOS[index % len(SCENARIOS)]
        account_id = f"ACC-{index + 1:04d}"
        long, many = scenario == "long_tenure", scenario == "many_products"
        accounts.append({
            "account_id": account_id,
            "segment": "wealth" if scenario == "wealth" else rng.choice(["retail", "business"]),
            "tenure_years": rng.randrange(5, 20) if long else rng.randrange(0, 5),
            "products": rng.randrange(3, 6) if many else rng.randrange(1, 3),
        })
        tasks.append(Task(id=f"crm-{index:03d}", domain="crm", inputs={"account_id": account_id}))
    branches = pd.DataFrame([
        {"branch_id": "BR-01", "opens": "09:00", "closes": "17:00"},
        {"branch_id": "BR-02", "opens": "08:30", "closes": "18:00"},
    ])
    return GeneratedData(tables={"accounts": pd.DataFrame(accounts), "branches": branches},
                         tasks=tasks)  # fmt: skip
