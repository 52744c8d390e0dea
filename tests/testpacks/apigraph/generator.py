"""Seeded service descriptions: a random directed acyclic dependency structure per task,
written as API signatures and listed in shuffled order (the order gives nothing away)."""

from __future__ import annotations

import random
from pathlib import Path

from sopgym.core.domain import GeneratedData
from sopgym.core.tasks import Task

TASK_COUNT = 9
ENTITIES = ["customer", "cart", "order", "invoice", "shipment", "parcel", "refund", "ticket",
            "coupon", "payment", "address", "warehouse"]  # fmt: skip
VERBS = ["create", "register", "open", "issue", "plan", "book", "approve"]
FREE_INPUTS = ["api_key", "locale", "request_date", "channel"]
SERVICES = ["an online shop", "a parcel carrier", "a help desk", "a billing platform"]


def generate(seed: int, files_dir: Path) -> GeneratedData:
    rng = random.Random(seed)
    tasks = []
    for i in range(TASK_COUNT):
        size = 3 + i % 5  # 3..7 APIs
        entities = rng.sample(ENTITIES, size)
        apis = []
        for position, entity in enumerate(entities):
            producers = rng.sample(range(position), k=min(position, rng.randint(0, 2)))
            inputs = [f"{entities[p]}_id" for p in sorted(producers)]
            inputs += rng.sample(FREE_INPUTS, k=rng.randint(0 if inputs else 1, 1))
            outputs = [f"{entity}_id", f"{entity}_status"]
            apis.append(
                {
                    "name": f"{rng.choice(VERBS)}_{entity}",
                    "description": f"Makes a {entity} record and returns its id and status.",
                    "inputs": inputs,
                    "outputs": outputs,
                }
            )
        rng.shuffle(apis)
        context = (
            f"The APIs below belong to {rng.choice(SERVICES)}. A call can only be made once "
            "every field it takes is known, either from the caller or from an earlier call."
        )
        tasks.append(
            Task(f"apigraph-{i:03d}", "apigraph", {"context": context, "apis": apis}, kind="graph")
        )
    return GeneratedData(tables={}, tasks=tasks)
