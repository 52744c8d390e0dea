"""A scenario made a domain pack: tools, database, generator and policy from its data.

``python -m sopgym.domains.banking._engine.pack`` rewrites every pack's SOP texts."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Final

from sopgym.core.domain import DomainPack
from sopgym.core.tools import Tool
from sopgym.domains.banking._engine.back_office import BACK_OFFICE_TOOLS
from sopgym.domains.banking._engine.database import store_factory
from sopgym.domains.banking._engine.distractors import FINANCIAL_DISTRACTORS
from sopgym.domains.banking._engine.generator import (
    USER_DATA,
    USER_DATA_VARIANT,
    make_generator,
)
from sopgym.domains.banking._engine.policy import make_policy
from sopgym.domains.banking._engine.sop import VARIANTS, write_all
from sopgym.domains.banking._engine.spec import DECISIONS, KEY, Scenario
from sopgym.domains.banking._engine.tools import build_tools, key_schema
from sopgym.types import JSON

SCENARIO_NAMES: Final = ("loans", "account_management", "credit_cards", "savings", "investments")
ENGINE = Path(__file__).parent


def scenario_of(name: str) -> Scenario:
    scenario: Scenario = importlib.import_module(f"sopgym.domains.banking.{name}.scenario").SCENARIO
    return scenario


def output_schema(scenario: Scenario) -> JSON:
    properties: JSON = {
        "decision": {"type": "string", "enum": list(DECISIONS)},
        scenario.amount_output: {"type": "integer", "minimum": 0},
        "approval_level": {"type": "string", "enum": ["none", *scenario.levels]},
    }
    if scenario.pricing:
        reasons = sorted({c.reason for c in scenario.checks} | {"within_limit", "above_limit"})
        properties |= {
            "reason_code": {"type": "string", "enum": reasons},
            scenario.pricing.rate_output: {"type": "number", "minimum": 0, "x-tolerance": 1e-4},
            scenario.pricing.monthly_output: {"type": "number", "minimum": 0, "x-tolerance": 0.01},
        }
    return {"type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False}  # fmt: skip


def distractors(scenario: Scenario) -> list[Tool]:
    """The 45 financial distractors, then as many back-office tools as bring the catalog to
    the paper's size for the scenario."""
    back_office = scenario.paper_catalog - len(scenario.apis) - len(FINANCIAL_DISTRACTORS)
    if not 0 <= back_office <= len(BACK_OFFICE_TOOLS):
        raise ValueError(f"{scenario.name}: no catalog of {scenario.paper_catalog} tools")
    return [*FINANCIAL_DISTRACTORS, *BACK_OFFICE_TOOLS[:back_office]]


def build_pack(scenario: Scenario, folder: Path) -> DomainPack:
    return DomainPack(
        name=f"banking/{scenario.name}",
        title=scenario.title,
        folder=folder,
        tools=build_tools(scenario),
        distractors=distractors(scenario),
        generate=make_generator(scenario),
        solve=make_policy(scenario),
        episode_store=store_factory(scenario),
        source_folders=[ENGINE],
        input_schema={
            "type": "object",
            "properties": {
                KEY: key_schema(scenario),
                "instruction": {"type": "string"},
                USER_DATA: {
                    "type": "object",
                    "description": f"the customer's record (SOP variant {USER_DATA_VARIANT})",
                },
            },
            "required": [KEY, "instruction"],
            "additionalProperties": False,
        },
        output_schema=output_schema(scenario),
        dependencies=scenario.dependencies(),
        # the user-data setting reads the abstract SOP; its tasks add the customer's record
        sop_files={**VARIANTS, USER_DATA_VARIANT: VARIANTS["abstract"]},
        harmless_state=scenario.harmless_state,
        paper_profiles=("teller",),  # stage 2: TELLER's own figures beside ours
    )


if __name__ == "__main__":
    for scenario_name in SCENARIO_NAMES:
        write_all(Path(__file__).parents[1] / scenario_name, scenario_of(scenario_name))
