"""Seeded triage tickets; scenarios rotate so every queue appears in several tasks."""

from __future__ import annotations

import random
from pathlib import Path

from sopgym.core.domain import GeneratedData
from sopgym.core.tasks import Task

TASK_COUNT = 12
ROUTINE = ["I forgot my password and cannot log in", "Please send an invoice copy for March"]
ISSUES = ["The export button does nothing", "Reports show yesterday's numbers", "Slow search"]
OUTAGES = ["Nothing loads at all since this morning", "Checkout is down for every customer"]
# (tier, service down, routine request, hours open range)
SCENARIOS = [
    ("standard", True, False, (0, 3)),
    ("gold", False, False, (25, 40)),
    ("standard", False, True, (0, 80)),
    ("gold", False, False, (0, 20)),
    ("standard", False, False, (0, 30)),
    ("gold", False, True, (0, 10)),
]


def generate(seed: int, files_dir: Path) -> GeneratedData:
    rng = random.Random(seed)
    tasks = []
    for i in range(TASK_COUNT):
        tier, down, routine, (low, high) = SCENARIOS[i % len(SCENARIOS)]
        summary = rng.choice(OUTAGES if down else ROUTINE if routine else ISSUES)
        inputs = {
            "ticket_id": f"TK-{rng.randrange(10_000):04d}",
            "customer_tier": tier,
            "hours_open": rng.randint(low, high),
            "service_down": down,
            "summary": summary,
        }
        tasks.append(Task(f"triage-{i:03d}", "triage", inputs, kind="json_answer"))
    return GeneratedData(tables={}, tasks=tasks)
