"""Schema fragments and helpers shared by the aircraft-inspection tools."""

from __future__ import annotations

from typing import Any

from sopgym.core.tools import JSON, ToolContext, not_found

TAIL_NUMBER = {"type": "string", "pattern": "^N[0-9]{3}[A-Z]{2}$"}
AIRCRAFT_MODEL = {"type": "string", "pattern": "^[A-Z][A-Z0-9]{1,5}-[0-9A-Z]{2,4}$"}
PART_NUMBER = {"type": "string", "pattern": "^[0-9]{3}-[0-9]{4}-[0-9]{3}$"}
SERIAL_NUMBER = {"type": "string", "pattern": "^SN[0-9]{8}$"}
FLIGHT_NUMBER = {"type": "string", "pattern": "^[A-Z]{2}[0-9]{1,4}$"}
DATE = {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"}


def object_schema(properties: JSON) -> JSON:
    """A closed input schema with every listed property required."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def listing(item_properties: JSON) -> JSON:
    """Output schema of a list of records, each with all the given properties."""
    return {
        "type": "array",
        "items": {
            "type": "object",
            "properties": item_properties,
            "required": list(item_properties),
        },
    }


def aircraft_row(ctx: ToolContext, table: str, tail_number: str) -> dict[str, Any]:
    """A per-aircraft record; an unknown tail number is refused with ``not_found``."""
    row = ctx.tables.row(table, "tail_number", tail_number)
    if row is None:
        raise not_found("aircraft", "tail_number", tail_number)
    return row
