"""Walk-around measurements of the mechanical components, as logged by the technician."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, result_schema, tool
from sopgym.domains.aircraft_inspection.tools._common import TAIL_NUMBER, listing


@tool(
    name="get_mechanical_readings",
    description=(
        "Retrieve today's walk-around measurements for an aircraft: tire pressure per wheel "
        "position (null when not recorded), brake wear-pin length per brake, pressure per "
        "hydraulic system and oil quantity per engine."
    ),
    input_schema=arguments_schema({"tail_number": TAIL_NUMBER}),
    output_schema=result_schema(
        {
            "recorded_at": {"type": "string"},
            "tires": listing(
                {
                    "position": {"type": "string"},
                    "pressure_psi": {"type": ["number", "null"]},
                }
            ),
            "brakes": listing({"position": {"type": "string"}, "wear_pin_mm": {"type": "number"}}),
            "hydraulic_systems": listing(
                {
                    "system": {"type": "string"},
                    "pressure_psi": {"type": "number"},
                }
            ),
            "engine_oil": listing(
                {"engine": {"type": "string"}, "quantity_qt": {"type": "number"}}
            ),
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    readings = require_row(ctx, "mechanical", "tail_number", args["tail_number"], "aircraft")
    return {
        key: readings[key]
        for key in ("recorded_at", "tires", "brakes", "hydraulic_systems", "engine_oil")
    }
