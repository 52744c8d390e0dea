"""Aircraft inspection: pre-flight airworthiness check with discrepancy reporting."""

from pathlib import Path

from sopgym.core.domain import DomainPack
from sopgym.domains.aircraft_inspection.generator import generate
from sopgym.domains.aircraft_inspection.policy import solve
from sopgym.domains.aircraft_inspection.tools import DISTRACTORS, TOOLS
from sopgym.domains.aircraft_inspection.tools._common import DATE, FLIGHT_NUMBER, TAIL_NUMBER

INSPECTION_TOOLS = [
    "get_aircraft_record",
    "get_type_specifications",
    "get_mechanical_readings",
    "run_electrical_checks",
    "get_maintenance_log",
]

DOMAIN = DomainPack(
    name="aircraft_inspection",
    title="Pre-flight airworthiness inspection (aviation maintenance)",
    folder=Path(__file__).parent,
    paper_profiles=("sopbench",),  # SOP-Bench-style: its paper re-reads every episode
    tools=TOOLS,
    distractors=DISTRACTORS,
    generate=generate,
    solve=solve,
    index_keys={
        "aircraft": "tail_number",
        "type_specs": "aircraft_model",
        "mechanical": "tail_number",
        "electrical": "tail_number",
        "maintenance": "tail_number",
        "parts_registry": "serial_number",
    },
    input_schema={
        "type": "object",
        "properties": {
            "tail_number": TAIL_NUMBER,
            "flight_number": FLIGHT_NUMBER,
            "departure_date": DATE,
            "departure_station": {"type": "string", "pattern": "^[A-Z]{3}$"},
        },
        "required": ["tail_number", "flight_number", "departure_date", "departure_station"],
    },
    output_schema={
        "type": "object",
        "properties": {
            "mechanical_status": {"enum": ["pass", "fail"]},
            "electrical_status": {"enum": ["pass", "fail"]},
            "parts_authentication": {"enum": ["verified", "failed", "not_required"]},
            "records_status": {"enum": ["compliant", "noncompliant"]},
            "highest_severity": {"enum": ["none", "minor", "major", "critical"]},
            "airworthiness_decision": {
                "enum": [
                    "release",
                    "release_with_deferrals",
                    "release_after_servicing",
                    "hold_for_maintenance",
                    "grounded",
                ]
            },
            "discrepancy_count": {"type": "integer", "minimum": 0},
            "max_tire_deviation_pct": {"type": "number", "minimum": 0, "x-tolerance": 0.05},
        },
        "required": [
            "mechanical_status",
            "electrical_status",
            "parts_authentication",
            "records_status",
            "highest_severity",
            "airworthiness_decision",
            "discrepancy_count",
            "max_tire_deviation_pct",
        ],
        "additionalProperties": False,
    },
    dependencies={
        "get_type_specifications": ["get_aircraft_record"],
        "verify_component_authenticity": ["run_electrical_checks", "get_maintenance_log"],
        "file_discrepancy_report": INSPECTION_TOOLS,
    },
)
