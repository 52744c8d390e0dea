"""Look up an insurance policy and report the facts the SOP's validity rule needs."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, result_schema, tool
from sopgym.domains.patient_intake.tools._common import PATIENT_ID, POLICY_NUMBER

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
    input_schema=arguments_schema(
        {
            "patient_id": PATIENT_ID,
            "insurance_provider": {"type": "string", "minLength": 1},
            "policy_number": POLICY_NUMBER,
        }
    ),
    output_schema=result_schema(
        {
            "policy_found": {"type": "boolean"},
            "policy_status": {"type": ["string", "null"], "enum": ["active", "lapsed", None]},
            "provider_on_file": {"type": ["string", "null"]},
            "holder_patient_id": {"type": ["string", "null"]},
            "coverage_start": {"type": ["string", "null"], "format": "date"},
            "coverage_end": {"type": ["string", "null"], "format": "date"},
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    policy = ctx.tables.row("policies", "policy_number", args["policy_number"])
    if policy is None:
        return {"policy_found": False, **dict.fromkeys(POLICY_FIELDS)}
    return {"policy_found": True, **{k: policy[k] for k in POLICY_FIELDS}}
