"""Seeded applications and the facts the APIs reveal, one application per task.

Tasks rotate through the SOP's paths (every exception path, and approve / counter-offer at
every approval level) so each is taken by at least three tasks; the generator only arranges
the facts, and the reference policy decides what they lead to.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from pathlib import Path

from sopgym.core.domain import GeneratedData
from sopgym.core.tasks import Task
from sopgym.domains.banking._engine import fields
from sopgym.domains.banking._engine.policy import branches
from sopgym.domains.banking._engine.spec import KEY, Check, Scenario
from sopgym.types import JSON

SCORE_MAX = 999  # scores lie in 0..1000 (the field's schema)
# TELLER's stage-2 setting (paper §4.1): the abstract SOP, and the task input carries the user
# data, the customer's application record (the data template's fields), beside the id. The
# facts the bank's APIs look up (bureau scores, limits) stay behind the tools.
USER_DATA_VARIANT = "abstract_user_data"
USER_DATA = "user_data"


def instruction(scenario: Scenario, key: str) -> str:
    """The vague instruction of the paper's tasks: the agent must plan everything else."""
    return f"Handle the {scenario.entity} {key}."


def _value(check: Check, fail: bool, rng: random.Random) -> object:
    """A value of ``check.field`` that fails the check (``fail``) or passes it."""
    if check.rejects in ("true", "false"):
        return (check.rejects == "true") == fail
    assert check.threshold is not None
    step = abs(check.threshold) * rng.uniform(0.02, 0.4) + 1e-3
    lower = (check.rejects == "below") == fail  # the value lies below the threshold
    if fields.kind(check.field) == "ratio":
        return round(check.threshold - step if lower else check.threshold + step, 4)
    whole = max(1, int(step))
    if check.rejects == "below":
        value = math.ceil(check.threshold) + (-whole if lower else whole - 1)
    else:
        value = math.floor(check.threshold) + (1 - whole if lower else whole)
    return min(value, SCORE_MAX) if fields.kind(check.field) == "score" else value


def _amounts(scenario: Scenario, branch: str, rng: random.Random) -> tuple[int, int]:
    """(requested, limit) that lead to ``branch``'s approval level."""
    decision, _, level = branch.partition(":")
    if decision == "reject":
        limit = rng.randrange(1_000, scenario.tiers[-1][1])
        return rng.randrange(1_000, scenario.tiers[-1][1]), limit
    rank = scenario.levels.index(level)
    floor = scenario.tiers[rank - 1][1] + 1 if rank else 500
    granted = rng.randrange(floor, scenario.tiers[rank][1] + 1)
    if decision == "approve":
        return granted, granted + rng.randrange(0, granted // 2 + 1)
    return granted + rng.randrange(1, granted // 2 + 2), granted


def make_generator(scenario: Scenario) -> Callable[[int, Path], GeneratedData]:
    def generate(seed: int, files_dir: Path) -> GeneratedData:
        import pandas as pd

        rng = random.Random(seed)
        paths = branches(scenario)
        applications: list[JSON] = []
        facts: list[JSON] = []
        tasks: list[Task] = []
        for index in range(scenario.task_count):
            branch = paths[index % len(paths)]
            key = f"{scenario.id_prefix}-{index + 1:05d}"
            given: JSON = {f: fields.draw(f, rng, index) for f in scenario.given}
            obtained: JSON = {f: fields.draw(f, rng, index) for f in scenario.obtained}
            given[scenario.request_field], obtained[scenario.limit_field] = _amounts(
                scenario, branch, rng
            )
            failing = branch.removeprefix("reject:") if branch.startswith("reject:") else None
            for check in scenario.checks:  # pass until the failing one, then anything
                target = obtained if check.field in obtained else given
                if check.reason == failing:
                    target[check.field] = _value(check, True, rng)
                    failing = ""
                else:
                    later = failing == ""  # past the failing check: either way
                    target[check.field] = _value(check, later and rng.random() < 0.3, rng)
            applications.append({KEY: key, **given, "limit_amount": obtained[scenario.limit_field]})
            facts.append({KEY: key, **obtained})
            inputs = {KEY: key, "instruction": instruction(scenario, key)}
            with_data = {USER_DATA_VARIANT: {**inputs, USER_DATA: {KEY: key, **given}}}
            tasks.append(Task(f"{scenario.name}-{index:03d}", f"banking/{scenario.name}", inputs,
                              input_variants=with_data))  # fmt: skip
        return GeneratedData(
            tables={"applications": pd.DataFrame(applications), "facts": pd.DataFrame(facts)},
            tasks=tasks,
        )

    return generate
