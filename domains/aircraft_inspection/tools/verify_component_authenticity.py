"""Parts-registry lookup of one installed unit: is it the genuine, released part?"""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, result_schema, tool
from sopgym.domains.aircraft_inspection.tools._common import PART_NUMBER, SERIAL_NUMBER

_FIELDS = ("part_number_on_record", "release_certificate_on_file", "registry_status")


@tool(
    name="verify_component_authenticity",
    description=(
        "Look a unit's serial number up in the approved-parts registry: whether the serial is "
        "registered, the part number recorded for it, whether an authorized release certificate "
        "is on file, and the registry status (serviceable, unserviceable, scrapped)."
    ),
    input_schema=arguments_schema({"part_number": PART_NUMBER, "serial_number": SERIAL_NUMBER}),
    output_schema=result_schema(
        {
            "serial_registered": {"type": "boolean"},
            "part_number_on_record": {"type": ["string", "null"]},
            "release_certificate_on_file": {"type": ["boolean", "null"]},
            "registry_status": {"enum": ["serviceable", "unserviceable", "scrapped", None]},
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    record = ctx.tables.row("parts_registry", "serial_number", args["serial_number"])
    if record is None:
        return {"serial_registered": False, **dict.fromkeys(_FIELDS)}
    return {"serial_registered": True, **{key: record[key] for key in _FIELDS}}
