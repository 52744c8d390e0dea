"""Electrical power-up checks: battery, generators, built-in-test messages, installed units."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, result_schema, tool
from sopgym.domains.aircraft_inspection.tools._common import TAIL_NUMBER, listing

_FIELDS = ("battery_volts", "generators", "bite_messages", "installed_units")


@tool(
    name="run_electrical_checks",
    description=(
        "Retrieve the electrical power-up check of an aircraft: main battery voltage, voltage and "
        "frequency per generator (null when the channel did not report), built-in-test (BITE) "
        "messages with their class, and the avionics line-replaceable units installed with part "
        "number, serial number and installation date."
    ),
    input_schema=arguments_schema({"tail_number": TAIL_NUMBER}),
    output_schema=result_schema(
        {
            "battery_volts": {"type": "number"},
            "generators": listing(
                {
                    "generator": {"type": "string"},
                    "volts": {"type": ["number", "null"]},
                    "frequency_hz": {"type": ["number", "null"]},
                }
            ),
            "bite_messages": listing(
                {
                    "code": {"type": "string"},
                    "fault_class": {"enum": ["advisory", "caution", "warning"]},
                    "text": {"type": "string"},
                }
            ),
            "installed_units": listing(
                {
                    "position": {"type": "string"},
                    "part_number": {"type": "string"},
                    "serial_number": {"type": "string"},
                    "installed_on": {"type": "string"},
                }
            ),
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    check = require_row(ctx, "electrical", "tail_number", args["tail_number"], "aircraft")
    return {key: check[key] for key in _FIELDS}
