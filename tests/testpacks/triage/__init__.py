"""Support-ticket triage: an answer-only (``json_answer``) test domain with no tools.

The case is in the task inputs; the agent decides a queue and the hours left on its service
level, and answers once. It proves the tool-free path: no tool service, an empty catalog.
"""

from pathlib import Path

from sopgym.core.domain import DomainPack
from tests.testpacks.triage.generator import generate
from tests.testpacks.triage.policy import QUEUES, solve

DOMAIN = DomainPack(
    name="triage",
    title="Support-ticket triage (answer-only test domain)",
    folder=Path(__file__).parent,
    tools=[],
    generate=generate,
    solve=solve,
    kind="json_answer",
    input_schema={
        "type": "object",
        "properties": {
            "ticket_id": {"type": "string", "pattern": "^TK-[0-9]{4}$"},
            "customer_tier": {"enum": ["standard", "gold"]},
            "hours_open": {"type": "integer", "minimum": 0},
            "service_down": {"type": "boolean"},
            "summary": {"type": "string", "minLength": 1},
        },
        "required": ["ticket_id", "customer_tier", "hours_open", "service_down", "summary"],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {
            "queue": {"enum": list(QUEUES)},
            "sla_hours_left": {"type": "integer", "minimum": 0},
        },
        "required": ["queue", "sla_hours_left"],
        "additionalProperties": False,
    },
)
