"""Receiving-location directory: which warehouse a dock or staging code belongs to."""

from sopgym.core.tools import JSON, ToolContext, not_found, tool
from sopgym.domains.warehouse_package_inspection.tools._common import LOCATION_CODE, object_schema

LOCATION_FIELDS = ("location_code", "warehouse_code", "site_name", "location_type")


@tool(
    name="lookup_receiving_location",
    description=(
        "Look up a receiving location code (dock door or staging lane) and return the "
        "warehouse it belongs to, the site name and the location type."
    ),
    input_schema=object_schema({"location_code": LOCATION_CODE}),
    output_schema={
        "type": "object",
        "properties": {
            "location_code": {"type": "string"},
            "warehouse_code": {"type": "string"},
            "site_name": {"type": "string"},
            "location_type": {"enum": ["inbound_dock", "staging_lane", "cross_dock"]},
        },
        "required": list(LOCATION_FIELDS),
    },
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    location = ctx.tables.row("locations", "location_code", args["location_code"])
    if location is None:
        raise not_found("receiving location", "location_code", args["location_code"])
    return {k: location[k] for k in LOCATION_FIELDS}
