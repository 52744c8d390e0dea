"""Pharmacy directory lookup by the exact name, address and phone on the intake form."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, tool
from sopgym.domains.patient_intake.tools._common import PATIENT_ID


@tool(
    name="verify_pharmacy",
    description=(
        "Find the patient's preferred pharmacy in the network directory and report its network "
        "participation and whether it currently accepts new prescriptions."
    ),
    input_schema=arguments_schema(
        {
            "patient_id": PATIENT_ID,
            "pharmacy_name": {"type": "string", "minLength": 1, "maxLength": 100},
            "pharmacy_address": {"type": "string", "minLength": 5, "maxLength": 200},
            "pharmacy_phone": {"type": "string", "pattern": "^[0-9]{3}-[0-9]{3}-[0-9]{4}$"},
        }
    ),
    output_schema={
        "type": "object",
        "properties": {
            "pharmacy_found": {"type": "boolean"},
            "pharmacy_id": {"type": ["string", "null"]},
            "network_participation": {
                "type": ["string", "null"],
                "enum": ["preferred", "standard", "none", None],
            },
            "accepting_prescriptions": {"type": ["boolean", "null"]},
        },
    },
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    pharmacy = ctx.tables.row("pharmacies", "phone", args["pharmacy_phone"])
    if (
        pharmacy is None
        or pharmacy["name"].casefold() != args["pharmacy_name"].strip().casefold()
        or pharmacy["address"].casefold() != args["pharmacy_address"].strip().casefold()
    ):
        return {
            "pharmacy_found": False,
            "pharmacy_id": None,
            "network_participation": None,
            "accepting_prescriptions": None,
        }
    return {
        "pharmacy_found": True,
        "pharmacy_id": pharmacy["pharmacy_id"],
        "network_participation": pharmacy["network_participation"],
        "accepting_prescriptions": pharmacy["accepting_prescriptions"],
    }
