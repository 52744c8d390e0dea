"""Ledger: review a payment request against a per-task book of accounts, and act on it.

A stateful test domain: each task starts from its own accounts and holds (the same account
ids in every task, different balances), and the reference policy writes to that state.
"""

from pathlib import Path

from sopgym.core.domain import DomainPack
from tests.testpacks.ledger.generator import generate, initial_state
from tests.testpacks.ledger.policy import solve
from tests.testpacks.ledger.tools import ACCOUNT_ID, DISTRACTORS, TOOLS

DOMAIN = DomainPack(
    name="ledger",
    title="Payment request review on a ledger (stateful test domain)",
    folder=Path(__file__).parent,
    tools=TOOLS,
    distractors=DISTRACTORS,
    generate=generate,
    solve=solve,
    initial_state=initial_state,
    index_keys={"rates": "currency"},
    input_schema={
        "type": "object",
        "properties": {
            "request_id": {"type": "string", "minLength": 1},
            "from_account": ACCOUNT_ID,
            "to_account": ACCOUNT_ID,
            "amount": {"type": "integer", "minimum": 1},
        },
        "required": ["request_id", "from_account", "to_account", "amount"],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {"outcome": {"enum": ["transferred", "held_for_review", "rejected"]}},
        "required": ["outcome"],
        "additionalProperties": False,
    },
    dependencies={"transfer_funds": ["get_account"], "place_hold": ["get_account"]},
)
