"""Schema fragments shared by the aircraft-inspection tools."""

from __future__ import annotations

from sopgym.core.tools import JSON, result_schema

TAIL_NUMBER = {"type": "string", "pattern": "^N[0-9]{3}[A-Z]{2}$"}
AIRCRAFT_MODEL = {"type": "string", "pattern": "^[A-Z][A-Z0-9]{1,5}-[0-9A-Z]{2,4}$"}
PART_NUMBER = {"type": "string", "pattern": "^[0-9]{3}-[0-9]{4}-[0-9]{3}$"}
SERIAL_NUMBER = {"type": "string", "pattern": "^SN[0-9]{8}$"}
FLIGHT_NUMBER = {"type": "string", "pattern": "^[A-Z]{2}[0-9]{1,4}$"}
DATE = {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"}


def listing(item_properties: JSON) -> JSON:
    """Output schema of a list of records, each with all the given properties."""
    return {"type": "array", "items": result_schema(item_properties)}
