"""Aircraft master record: the model to look specifications up by, and the certificate."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, result_schema, tool
from sopgym.domains.aircraft_inspection.tools._common import TAIL_NUMBER

_FIELDS = (
    "tail_number",
    "aircraft_model",
    "manufacturer_serial",
    "operator",
    "airworthiness_cert_expiry",
    "total_flight_hours",
    "total_cycles",
)


@tool(
    name="get_aircraft_record",
    description=(
        "Retrieve the aircraft master record by tail number: model, manufacturer serial, "
        "operator, certificate of airworthiness expiry date, total flight hours and cycles."
    ),
    input_schema=arguments_schema({"tail_number": TAIL_NUMBER}),
    output_schema=result_schema(
        {
            "tail_number": {"type": "string"},
            "aircraft_model": {"type": "string"},
            "manufacturer_serial": {"type": "string"},
            "operator": {"type": "string"},
            "airworthiness_cert_expiry": {"type": "string"},
            "total_flight_hours": {"type": "number"},
            "total_cycles": {"type": "integer"},
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    record = require_row(ctx, "aircraft", "tail_number", args["tail_number"], "aircraft")
    return {key: record[key] for key in _FIELDS}
