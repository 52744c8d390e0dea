"""TOD response generation: write the agent's next response — the actions it takes (declared
with their arguments) and its message to the customer. Scored by rules: the declared actions
must be the procedure's, and the message must ask for the one fact the procedure needs next
(or close the conversation) and claim no action it did not declare. Answer-only: no tools,
served by the gateway itself. (No LLM judge: that would need a real model configured.)

``folder`` is the family folder, so the data fingerprint covers the shared modules.
"""

from pathlib import Path

from sopgym.core.domain import DomainPack
from sopgym.evaluation.scorers import schema_valid

from ..schemas import dialogue_input
from ..scoring import declared_actions, message_rules
from .generator import generate
from .policy import solve

DOMAIN = DomainPack(
    name="tod/response",
    title="Customer-service dialogues: the agent's next response, scored by rules",
    folder=Path(__file__).parent.parent,
    sop_files={"clean": "response/sop.md", "noisy": "response/sop_noisy.md"},
    tools=[],
    generate=generate,
    solve=solve,
    kind="json_answer",
    input_schema=dialogue_input(
        conversation={"type": "array", "minItems": 1},
        instruction={"type": "string", "minLength": 1},
    ),
    output_schema={
        "type": "object",
        "properties": {
            "actions": {"type": "array", "minItems": 1, "items": {
                "type": "object", "required": ["name", "arguments"],
                "properties": {"name": {"type": "string"}, "arguments": {"type": "object"}}}},
            "message": {"type": "string", "minLength": 1},
        },
        "required": ["actions", "message"],
        "additionalProperties": False,
    },
    scorers=[declared_actions(), message_rules(), schema_valid(gates=True)],
)
