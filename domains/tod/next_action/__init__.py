"""TOD next action + instruction retrieval: for every partial conversation that ends with a
customer turn, name the instruction section(s) that govern it and take the next action(s)
through the tools (or ``no_action``), on the customer's state at that point.

``folder`` is the family folder, so the data fingerprint covers the shared modules.
"""

from pathlib import Path

from sopgym.core.domain import DomainPack
from sopgym.evaluation.scorers import errors, final_state, schema_valid, tool_calls

from ..actions import TOOLS
from ..intents import INTENTS
from ..schemas import dialogue_input
from ..scoring import actions, first_action, section_top1, section_top2
from .generator import POSITIONS, generate, initial_state
from .policy import solve

SECTION = {"enum": [intent.name for intent in INTENTS]}

DOMAIN = DomainPack(
    name="tod/next_action",
    title="Customer-service dialogues: next action and instruction retrieval",
    folder=Path(__file__).parent.parent,
    sop_files={"clean": "next_action/sop.md", "noisy": "next_action/sop_noisy.md"},
    tools=TOOLS,
    generate=generate,
    solve=solve,
    initial_state=initial_state,
    index_keys={"worlds": "conversation_id", "starts": "task_id"},
    input_schema=dialogue_input(
        position={"enum": list(POSITIONS)},
        conversation={"type": "array", "minItems": 1, "items": {
            "type": "object", "required": ["role", "content"],
            "properties": {"role": {"enum": ["user", "agent", "action"]},
                           "content": {"type": "string"}}}},
        instructions={"type": "object", "minProperties": 2,
                      "additionalProperties": {"type": "string"}},
    ),
    output_schema={
        "type": "object",
        "properties": {"sections": {"type": "array", "items": SECTION, "minItems": 2,
                                    "maxItems": 2, "uniqueItems": True}},
        "required": ["sections"],
        "additionalProperties": False,
    },
    scorers=[actions(), first_action(), section_top1(), section_top2(), final_state(),
             schema_valid(gates=True), tool_calls(), errors()],
)
