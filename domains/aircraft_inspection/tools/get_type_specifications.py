"""Type-certificate limits of a model: what every reading is cross-checked against."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, result_schema, tool
from sopgym.domains.aircraft_inspection.tools._common import AIRCRAFT_MODEL

LIMIT_FIELDS = (
    "nose_tire_nominal_psi",
    "main_tire_nominal_psi",
    "brake_wear_pin_min_mm",
    "hydraulic_min_psi",
    "hydraulic_max_psi",
    "engine_oil_min_qt",
    "battery_min_volts",
    "generator_min_volts",
    "generator_max_volts",
    "generator_min_hz",
    "generator_max_hz",
    "inspection_interval_hours",
    "inspection_interval_days",
)


@tool(
    name="get_type_specifications",
    description=(
        "Retrieve the maintenance-manual limits for an aircraft model: nominal tire pressures "
        "(nose and main gear), minimum brake wear-pin length, hydraulic pressure range, minimum "
        "engine oil, minimum battery voltage, generator voltage and frequency ranges, and the "
        "periodic inspection interval in flight hours and in days."
    ),
    input_schema=arguments_schema({"aircraft_model": AIRCRAFT_MODEL}),
    output_schema=result_schema(
        {
            "aircraft_model": {"type": "string"},
            **{key: {"type": "number"} for key in LIMIT_FIELDS},
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    model = args["aircraft_model"]
    spec = require_row(ctx, "type_specs", "aircraft_model", model, "type specification")
    return {"aircraft_model": spec["aircraft_model"], **{key: spec[key] for key in LIMIT_FIELDS}}
