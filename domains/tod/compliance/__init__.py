"""TOD compliance: given a partial conversation, its governing instruction and the agent's
next actions, say whether the response complies. Violations come from the paper's three
manipulations of the tree (:mod:`.manipulations`); the classes are balanced. Answer-only: no
tools, served by the gateway itself.

``folder`` is the family folder, so the data fingerprint covers the shared modules.
"""

from pathlib import Path

from sopgym.core.domain import DomainPack

from ..schemas import dialogue_input
from .generator import generate
from .policy import solve

DOMAIN = DomainPack(
    name="tod/compliance",
    title="Customer-service dialogues: does the agent's response comply with the instruction",
    folder=Path(__file__).parent.parent,
    sop_files={"clean": "compliance/sop.md", "noisy": "compliance/sop_noisy.md"},
    tools=[],
    generate=generate,
    solve=solve,
    kind="json_answer",
    input_schema=dialogue_input(
        conversation={"type": "array", "minItems": 1},
        instruction={"type": "string", "minLength": 1},
        response={"type": "array", "minItems": 1, "items": {
            "type": "object", "required": ["name", "arguments", "result"]}},
    ),
    output_schema={
        "type": "object",
        "properties": {"label": {"enum": ["compliant", "violating"]}},
        "required": ["label"],
        "additionalProperties": False,
    },
)
