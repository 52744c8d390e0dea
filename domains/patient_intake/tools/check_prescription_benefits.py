"""Prescription-benefit lookup: copay percentages of the member's pharmacy plan."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, result_schema, tool
from sopgym.domains.patient_intake.tools._common import PATIENT_ID


@tool(
    name="check_prescription_benefits",
    description=(
        "Retrieve the prescription plan of a pharmacy-benefit member id: plan tier and the "
        "copay percentages for generic and brand-name drugs."
    ),
    input_schema=arguments_schema(
        {
            "patient_id": PATIENT_ID,
            "rx_member_id": {"type": "string", "pattern": "^RX[0-9]{7}$"},
        }
    ),
    output_schema=result_schema(
        {
            "plan_found": {"type": "boolean"},
            "plan_tier": {"type": ["string", "null"]},
            "generic_copay_percent": {"type": ["integer", "null"]},
            "brand_copay_percent": {"type": ["integer", "null"]},
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    plan = ctx.tables.row("rx_plans", "rx_member_id", args["rx_member_id"])
    if plan is None:
        return {
            "plan_found": False,
            "plan_tier": None,
            "generic_copay_percent": None,
            "brand_copay_percent": None,
        }
    return {
        "plan_found": True,
        "plan_tier": plan["plan_tier"],
        "generic_copay_percent": plan["generic_copay_percent"],
        "brand_copay_percent": plan["brand_copay_percent"],
    }
