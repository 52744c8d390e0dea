"""Seeded books of accounts, one per task, and the payment requests to review.

Every task's book has the same account ids with different balances, so an episode that
wrote into another's state would show in the final states. Scenarios rotate so that each
outcome appears at least three times; the outcome itself is left to the reference policy.
"""

from __future__ import annotations

import random
from pathlib import Path

import pandas as pd

from sopgym.core.domain import GeneratedData
from sopgym.core.tables import Tables
from sopgym.core.tasks import Task
from sopgym.types import JSON

TASK_COUNT = 16
ACCOUNTS = ["ACC-0001", "ACC-0002", "ACC-0003"]
OWNERS = ["Amara Obi", "Bruno Keller", "Chen Wei", "Dana Ruiz", "Emil Sorensen", "Fatima Zaidi"]
SCENARIOS = ["small_transfer", "large_transfer", "short_of_funds", "frozen_payee"]


def generate(seed: int, files_dir: Path) -> GeneratedData:
    rng = random.Random(seed)
    accounts: list[JSON] = []
    holds: list[JSON] = []
    tasks: list[Task] = []
    for index in range(TASK_COUNT):
        task_id = f"ledger-{index:03d}"
        scenario = SCENARIOS[index % len(SCENARIOS)]
        payer, payee = rng.sample(ACCOUNTS, 2)
        for account in ACCOUNTS:
            frozen = scenario == "frozen_payee" and account == payee
            accounts.append({
                "task_id": task_id,
                "account_id": account,
                "owner": rng.choice(OWNERS),
                "balance": rng.randrange(1500, 4000),
                "status": "frozen" if frozen else "active",
            })
        payer_row = accounts[-len(ACCOUNTS) + ACCOUNTS.index(payer)]
        if scenario == "small_transfer":
            amount = rng.randrange(50, 1000)
        elif scenario == "large_transfer":
            amount = rng.randrange(1001, 1400)
        elif scenario == "short_of_funds":  # the balance covers it, the holds leave too little
            held = payer_row["balance"] - rng.randrange(100, 400)
            holds.append({"task_id": task_id, "hold_id": "H-001", "account_id": payer,
                          "amount": held})  # fmt: skip
            amount = rng.randrange(500, 900)
        else:
            amount = rng.randrange(50, 900)
        inputs = {"request_id": f"REQ-{5000 + index}", "from_account": payer,
                  "to_account": payee, "amount": amount}  # fmt: skip
        tasks.append(Task(id=task_id, domain="ledger", inputs=inputs))
    rates = pd.DataFrame([{"currency": c, "per_unit": r}
                          for c, r in (("EUR", 1.0), ("GBP", 0.86), ("JPY", 162.4))])  # fmt: skip
    holds_frame = pd.DataFrame(holds, columns=["task_id", "hold_id", "account_id", "amount"])
    return GeneratedData(
        tables={"accounts": pd.DataFrame(accounts), "holds": holds_frame, "rates": rates},
        tasks=tasks,
    )


def initial_state(tables: Tables, task: Task) -> JSON:
    """The task's own book: its accounts and holds, and no transfers yet."""

    def rows(table: str) -> list[JSON]:
        return [
            {k: v for k, v in row.items() if k != "task_id"}
            for row in tables.rows(table, "task_id", task.id)
        ]

    return {"accounts": rows("accounts"), "holds": rows("holds"), "transfers": []}
