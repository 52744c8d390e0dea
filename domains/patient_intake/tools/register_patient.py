"""Submit the registration; the registry refuses a patient who already holds an open one."""

import hashlib

from sopgym.core.tools import JSON, ToolContext, not_found, tool


@tool(
    name="register_patient",
    description=(
        "Create the patient's registration in the practice-management system with the "
        "validated policy and the risk levels. Returns whether the registry accepted it."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "patient_id": {"type": "string", "pattern": "^P[0-9]{9}$"},
            "policy_number": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{6}$"},
            "lifestyle_risk_level": {"type": "string", "enum": ["low", "moderate", "high"]},
            "overall_risk_level": {"type": "string", "enum": ["low", "medium", "high"]},
            "care_coordination": {"type": "boolean"},
        },
        "required": [
            "patient_id",
            "policy_number",
            "lifestyle_risk_level",
            "overall_risk_level",
            "care_coordination",
        ],
        "additionalProperties": False,
    },
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
    patient = ctx.tables.row("patients", "patient_id", args["patient_id"])
    if patient is None:
        raise not_found("patient", "patient_id", args["patient_id"])
    if patient["open_registration"]:
        return {
            "accepted": False,
            "confirmation_number": None,
            "reason": "patient already has an open registration",
        }
    digest = hashlib.sha256(f"{args['patient_id']}|{args['policy_number']}".encode()).hexdigest()
    return {"accepted": True, "confirmation_number": f"REG-{digest[:8].upper()}", "reason": None}
