"""Firmware catalog entry of a device model: the version the SOP compares against (step 7)."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, result_schema, tool
from sopgym.domains.customer_service.tools._common import DEVICE_MODEL

_FIELDS = ("model", "recommended_version", "minimum_supported_version", "release_date")


@tool(
    name="get_firmware_catalog",
    description=(
        "Look up a device model in the firmware catalog: the currently recommended firmware "
        "version, the oldest version still supported, and the recommended build's release date."
    ),
    input_schema=arguments_schema({"model": DEVICE_MODEL}),
    output_schema=result_schema({key: {"type": "string"} for key in _FIELDS}),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    entry = require_row(ctx, "firmware", "model", args["model"], "firmware catalog entry")
    return {key: entry[key] for key in _FIELDS}
