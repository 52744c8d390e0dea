"""Firmware catalog entry of a device model: the version the SOP compares against (step 7)."""

from sopgym.core.tools import JSON, ToolContext, not_found, tool
from sopgym.domains.customer_service.tools._common import DEVICE_MODEL, object_schema

_FIELDS = ("model", "recommended_version", "minimum_supported_version", "release_date")


@tool(
    name="get_firmware_catalog",
    description=(
        "Look up a device model in the firmware catalog: the currently recommended firmware "
        "version, the oldest version still supported, and the recommended build's release date."
    ),
    input_schema=object_schema({"model": DEVICE_MODEL}),
    output_schema={
        "type": "object",
        "properties": {key: {"type": "string"} for key in _FIELDS},
        "required": list(_FIELDS),
    },
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    entry = ctx.tables.row("firmware", "model", args["model"])
    if entry is None:
        raise not_found("firmware catalog entry", "model", args["model"])
    return {key: entry[key] for key in _FIELDS}
