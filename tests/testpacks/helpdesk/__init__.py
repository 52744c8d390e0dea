"""Helpdesk (test pack, kind "dialogue"): a customer wants a refund; the agent must ask the
customer for the order number and email (facts only the customer knows), check the order with
the tools and decide. Proves conversations with the simulated user end to end."""

from pathlib import Path

from sopgym.core.dialogue import DIALOGUE
from sopgym.core.domain import DomainPack

from .generator import generate
from .policy import solve
from .tools import TOOLS
from .user import reply

DOMAIN = DomainPack(
    name="helpdesk",
    title="Refund requests in conversation with the customer (test pack)",
    folder=Path(__file__).parent,
    tools=TOOLS,
    generate=generate,
    solve=solve,
    kind=DIALOGUE,
    user=reply,
    index_keys={"orders": "order_id"},
    dependencies={"issue_refund": ["get_order"]},
    input_schema={
        "type": "object",
        "properties": {
            "ticket_id": {"type": "string"},
            "channel": {"enum": ["chat", "app"]},
        },
        "required": ["ticket_id", "channel"],
    },
    output_schema={
        "type": "object",
        "properties": {"decision": {"enum": ["refunded", "denied", "identity_failed"]}},
        "required": ["decision"],
    },
)
