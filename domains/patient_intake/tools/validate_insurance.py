"""Look up an insurance policy and report the facts the SOP's validity rule needs."""

from sopgym.core.tools import JSON, ToolContext, tool

POLICY_FIELDS = (
    "policy_status",
    "provider_on_file",
    "holder_patient_id",
    "coverage_start",
    "coverage_end",
)


@tool(
    name="validate_insurance",
    description=(
        "Retrieve the insurer's record for a policy number: whether it exists, its status, the "
        "provider and holder on file and the coverage window. Step 1 of the intake SOP."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "patient_id": {"type": "string", "pattern": "^P[0-9]{9}$"},
            "insurance_provider": {"type": "string", "minLength": 1},
            "policy_number": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{6}$"},
        },
        "required": ["patient_id", "insurance_provider", "policy_number"],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {
            "policy_found": {"type": "boolean"},
            "policy_status": {"type": ["string", "null"], "enum": ["active", "lapsed", None]},
            "provider_on_file": {"type": ["string", "null"]},
            "holder_patient_id": {"type": ["string", "null"]},
            "coverage_start": {"type": ["string", "null"], "format": "date"},
            "coverage_end": {"type": ["string", "null"], "format": "date"},
        },
        "required": ["policy_found", *POLICY_FIELDS],
    },
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    policy = ctx.tables.row("policies", "policy_number", args["policy_number"])
    if policy is None:
        return {"policy_found": False, **dict.fromkeys(POLICY_FIELDS)}
    return {"policy_found": True, **{k: policy[k] for k in POLICY_FIELDS}}
