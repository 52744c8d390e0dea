"""Prescription-benefit lookup: copay percentages of the member's pharmacy plan."""

from sopgym.core.tools import JSON, ToolContext, tool


@tool(
    name="check_prescription_benefits",
    description=(
        "Retrieve the prescription plan of a pharmacy-benefit member id: plan tier and the "
        "copay percentages for generic and brand-name drugs."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "patient_id": {"type": "string", "pattern": "^P[0-9]{9}$"},
            "rx_member_id": {"type": "string", "pattern": "^RX[0-9]{7}$"},
        },
        "required": ["patient_id", "rx_member_id"],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {
            "plan_found": {"type": "boolean"},
            "plan_tier": {"type": ["string", "null"]},
            "generic_copay_percent": {"type": ["integer", "null"]},
            "brand_copay_percent": {"type": ["integer", "null"]},
        },
        "required": ["plan_found", "plan_tier", "generic_copay_percent", "brand_copay_percent"],
    },
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
