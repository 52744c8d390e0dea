"""TOD live episodes: serve a simulated customer end to end through the conversation
channel, following the governing instruction; scored on the actions with their arguments,
the final state and the section named.

``folder`` is the family folder, so the data fingerprint covers the shared modules.
"""

from pathlib import Path

from sopgym.core.dialogue import DIALOGUE
from sopgym.core.domain import DomainPack
from sopgym.evaluation.scorers import errors, final_state, output_fields, schema_valid, tool_calls

from ..actions import ACTING, IDLE
from ..intents import INTENTS
from ..schemas import dialogue_input
from ..scoring import actions
from .generator import generate, initial_state
from .policy import solve
from .user import reply

DOMAIN = DomainPack(
    name="tod/live",
    title="Customer-service dialogues: live episodes with a simulated customer",
    folder=Path(__file__).parent.parent,
    sop_files={"clean": "live/sop.md", "noisy": "live/sop_noisy.md"},
    tools=ACTING,
    distractors=IDLE,
    generate=generate,
    solve=solve,
    kind=DIALOGUE,
    user=reply,
    initial_state=initial_state,
    index_keys={"worlds": "conversation_id"},
    input_schema=dialogue_input(
        instructions={"type": "object", "minProperties": 2,
                      "additionalProperties": {"type": "string"}},
    ),
    output_schema={
        "type": "object",
        "properties": {"section": {"enum": [intent.name for intent in INTENTS]}},
        "required": ["section"],
        "additionalProperties": False,
    },
    scorers=[actions(), output_fields(), final_state(), schema_valid(), tool_calls(),
             errors()],
)
