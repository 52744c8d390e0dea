"""Submit the registration; the registry refuses a patient who already holds an open one."""

import hashlib

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, tool
from sopgym.domains.patient_intake.tools._common import PATIENT_ID, POLICY_NUMBER


@tool(
    name="register_patient",
    description=(
        "Create the patient's registration in the practice-management system with the "
        "validated policy and the risk levels. Returns whether the registry accepted it."
    ),
    input_schema=arguments_schema(
        {
            "patient_id": PATIENT_ID,
            "policy_number": POLICY_NUMBER,
            "lifestyle_risk_level": {"type": "string", "enum": ["low", "moderate", "high"]},
            "overall_risk_level": {"type": "string", "enum": ["low", "medium", "high"]},
            "care_coordination": {"type": "boolean"},
        }
    ),
    output_schema={
        "type": "object",
        "properties": {
            "accepted": {"type": "boolean"},
            "confirmation_number": {"type": ["string", "null"]},
            "reason": {"type": ["string", "null"]},
        },
    },
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    patient = require_row(ctx, "patients", "patient_id", args["patient_id"])
    if patient["open_registration"]:
        return {
            "accepted": False,
            "confirmation_number": None,
            "reason": "patient already has an open registration",
        }
    digest = hashlib.sha256(f"{args['patient_id']}|{args['policy_number']}".encode()).hexdigest()
    return {"accepted": True, "confirmation_number": f"REG-{digest[:8].upper()}", "reason": None}
