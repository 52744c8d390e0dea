"""Callable tools that sound relevant to a pre-flight check but that the SOP never asks for.

Two overlap with SOP tools (a superseded parts catalog, a tire service bulletin with rounded
figures) and two are about other parts of flight preparation.
"""

import hashlib

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, tool
from sopgym.domains.aircraft_inspection.tools._common import (
    AIRCRAFT_MODEL,
    PART_NUMBER,
    TAIL_NUMBER,
)

STATION = {"type": "string", "pattern": "^[A-Z]{3}$"}


@tool(
    name="lookup_part_catalog_legacy",
    description="Superseded illustrated-parts-catalog lookup by part number (pre-2023 data).",
    input_schema=arguments_schema(
        {"part_number": PART_NUMBER}, examples=[{"part_number": "822-1338-002"}]
    ),
)
def lookup_part_catalog_legacy(args: JSON, ctx: ToolContext) -> JSON:
    return {
        "listed": True,
        "catalog_edition": "2022-11",
        "note": "legacy catalog: lists part numbers only, does not check serials or releases",
    }


@tool(
    name="get_tire_service_bulletin",
    description="Tire service bulletin for a model: rounded inflation guidance for line crews.",
    input_schema=arguments_schema(
        {"aircraft_model": AIRCRAFT_MODEL}, examples=[{"aircraft_model": "A320-214"}]
    ),
)
def get_tire_service_bulletin(args: JSON, ctx: ToolContext) -> JSON:
    spec = ctx.tables.row("type_specs", "aircraft_model", args["aircraft_model"])
    main = spec["main_tire_nominal_psi"] if spec else 200
    return {"bulletin": "TSB-32-041", "inflate_to_psi": round(main, -1), "tolerance_pct": 15}


@tool(
    name="get_fleet_schedule",
    description="Next scheduled flights of an aircraft from the operations planning system.",
    input_schema=arguments_schema(
        {"tail_number": TAIL_NUMBER}, examples=[{"tail_number": "N100AA"}]
    ),
)
def get_fleet_schedule(args: JSON, ctx: ToolContext) -> JSON:
    record = require_row(ctx, "aircraft", "tail_number", args["tail_number"], "aircraft")
    return {"tail_number": record["tail_number"], "next_flights": [], "planning_horizon_days": 3}


@tool(
    name="check_weather_minimums",
    description="Current ceiling and visibility at a station against the operator's minimums.",
    input_schema=arguments_schema({"station": STATION}, examples=[{"station": "BOS"}]),
)
def check_weather_minimums(args: JSON, ctx: ToolContext) -> JSON:
    digest = int(hashlib.sha256(args["station"].encode()).hexdigest()[:4], 16)
    return {
        "ceiling_ft": 800 + digest % 4000,
        "visibility_sm": 3 + digest % 8,
        "above_minimums": True,
    }


DISTRACTORS = [
    lookup_part_catalog_legacy,
    get_tire_service_bulletin,
    get_fleet_schedule,
    check_weather_minimums,
]
