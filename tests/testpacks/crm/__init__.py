"""CRM: assign a customer's service tier from their relationship record.

A stateless test domain whose `get_account` shares its name with ledger's, so tests can
prove that each domain's tool reaches its own service.
"""

from pathlib import Path

from sopgym.core.domain import DomainPack
from tests.testpacks.crm.generator import generate
from tests.testpacks.crm.policy import solve
from tests.testpacks.crm.tools import ACCOUNT_ID, DISTRACTORS, TOOLS

DOMAIN = DomainPack(
    name="crm",
    title="Service tier assignment (stateless test domain)",
    folder=Path(__file__).parent,
    tools=TOOLS,
    distractors=DISTRACTORS,
    generate=generate,
    solve=solve,
    index_keys={"accounts": "account_id", "branches": "branch_id"},
    input_schema={
        "type": "object",
        "properties": {"account_id": ACCOUNT_ID},
        "required": ["account_id"],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {"service_tier": {"enum": ["standard", "priority", "private"]}},
        "required": ["service_tier"],
        "additionalProperties": False,
    },
    dependencies={"count_products": ["get_account"]},
)
