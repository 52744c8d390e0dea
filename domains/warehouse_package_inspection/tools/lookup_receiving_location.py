"""Receiving-location directory: which warehouse a dock or staging code belongs to."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, result_schema, tool
from sopgym.domains.warehouse_package_inspection.tools._common import LOCATION_CODE

LOCATION_FIELDS = ("location_code", "warehouse_code", "site_name", "location_type")


@tool(
    name="lookup_receiving_location",
    description=(
        "Look up a receiving location code (dock door or staging lane) and return the "
        "warehouse it belongs to, the site name and the location type."
    ),
    input_schema=arguments_schema({"location_code": LOCATION_CODE}),
    output_schema=result_schema(
        {
            "location_code": {"type": "string"},
            "warehouse_code": {"type": "string"},
            "site_name": {"type": "string"},
            "location_type": {"enum": ["inbound_dock", "staging_lane", "cross_dock"]},
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    location = require_row(
        ctx, "locations", "location_code", args["location_code"], "receiving location"
    )
    return {k: location[k] for k in LOCATION_FIELDS}
