"""Maintenance records: last periodic inspection and the deferred-defect (MEL) items."""

from sopgym.core.tools import JSON, ToolContext, tool
from sopgym.domains.aircraft_inspection.tools._common import (
    TAIL_NUMBER,
    aircraft_row,
    listing,
    object_schema,
)

_FIELDS = ("last_inspection_date", "hours_at_last_inspection", "deferred_items")


@tool(
    name="get_maintenance_log",
    description=(
        "Retrieve an aircraft's maintenance records: date and airframe hours of the last "
        "periodic inspection (null when no inspection is on record) and the deferred defect "
        "items with their MEL category, deferral date, category-A repair interval and status."
    ),
    input_schema=object_schema({"tail_number": TAIL_NUMBER}),
    output_schema={
        "type": "object",
        "properties": {
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
        },
        "required": list(_FIELDS),
    },
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    log = aircraft_row(ctx, "maintenance", args["tail_number"])
    return {key: log[key] for key in _FIELDS}
