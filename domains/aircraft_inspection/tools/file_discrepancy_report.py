"""File the discrepancy report with maintenance control (only when discrepancies exist)."""

import hashlib

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, result_schema, tool
from sopgym.domains.aircraft_inspection.tools._common import FLIGHT_NUMBER, TAIL_NUMBER

SEVERITIES = ["minor", "major", "critical"]
DECISIONS = ["release_after_servicing", "hold_for_maintenance", "grounded"]


@tool(
    name="file_discrepancy_report",
    description=(
        "File a pre-flight discrepancy report with maintenance control: the discrepancy codes "
        "found, the highest severity and the airworthiness decision. Returns the report number."
    ),
    input_schema=arguments_schema(
        {
            "tail_number": TAIL_NUMBER,
            "flight_number": FLIGHT_NUMBER,
            "discrepancy_codes": {
                "type": "array",
                "minItems": 1,
                "items": {"type": "string", "pattern": "^[A-Z]+(-[A-Z0-9]+)*$"},
            },
            "highest_severity": {"type": "string", "enum": SEVERITIES},
            "airworthiness_decision": {"type": "string", "enum": DECISIONS},
        }
    ),
    output_schema=result_schema(
        {
            "report_number": {"type": "string"},
            "items_recorded": {"type": "integer"},
            "maintenance_control_notified": {"type": "boolean"},
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    require_row(ctx, "aircraft", "tail_number", args["tail_number"], "aircraft")
    codes = args["discrepancy_codes"]
    digest = hashlib.sha256("|".join([args["tail_number"], args["flight_number"], *codes]).encode())
    return {
        "report_number": f"DR-{digest.hexdigest()[:8].upper()}",
        "items_recorded": len(codes),
        "maintenance_control_notified": args["airworthiness_decision"] != "release_after_servicing",
    }
