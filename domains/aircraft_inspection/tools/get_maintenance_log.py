"""Maintenance records: last periodic inspection and the deferred-defect (MEL) items."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, result_schema, tool
from sopgym.domains.aircraft_inspection.tools._common import TAIL_NUMBER, listing

_FIELDS = ("last_inspection_date", "hours_at_last_inspection", "deferred_items")


@tool(
    name="get_maintenance_log",
    description=(
        "Retrieve an aircraft's maintenance records: date and airframe hours of the last "
        "periodic inspection (null when no inspection is on record) and the deferred defect "
        "items with their MEL category, deferral date, category-A repair interval and status."
    ),
    input_schema=arguments_schema({"tail_number": TAIL_NUMBER}),
    output_schema=result_schema(
        {
            "last_inspection_date": {"type": ["string", "null"]},
            "hours_at_last_inspection": {"type": ["number", "null"]},
            "deferred_items": listing(
                {
                    "item_id": {"type": "string"},
                    "description": {"type": "string"},
                    "mel_category": {"enum": ["A", "B", "C", "D"]},
                    "deferred_on": {"type": "string"},
                    "repair_interval_days": {"type": ["integer", "null"]},
                    "status": {"enum": ["open", "closed"]},
                }
            ),
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    log = require_row(ctx, "maintenance", "tail_number", args["tail_number"], "aircraft")
    return {key: log[key] for key in _FIELDS}
