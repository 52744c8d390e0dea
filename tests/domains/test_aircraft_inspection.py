"""Hand-checked cases of the pre-flight inspection SOP, one small aircraft per branch."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from sopgym.core.domain import PolicyRun
from sopgym.core.registry import load_domain
from sopgym.core.tables import Tables
from sopgym.core.tasks import Task, ToolCall
from tests.domains.refusals import assert_refused

DOMAIN = load_domain("aircraft_inspection")
TAIL, DEPARTURE, LAST_CHECK = "N100AA", "2026-05-10", "2026-04-10"
SPEC = {
    "aircraft_model": "A320-214",
    "nose_tire_nominal_psi": 180,
    "main_tire_nominal_psi": 200,
    "brake_wear_pin_min_mm": 1.0,
    "hydraulic_min_psi": 2850,
    "hydraulic_max_psi": 3150,
    "engine_oil_min_qt": 12.0,
    "battery_min_volts": 25.0,
    "generator_min_volts": 112,
    "generator_max_volts": 118,
    "generator_min_hz": 390,
    "generator_max_hz": 410,
    "inspection_interval_hours": 750,
    "inspection_interval_days": 120,
}
OLD_UNIT = {
    "position": "FMC-1",
    "part_number": "822-1338-002",
    "serial_number": "SN40000000",
    "installed_on": "2025-01-15",
}
NEW_UNIT = {
    "position": "GCU-1",
    "part_number": "731-5520-004",
    "serial_number": "SN40000007",
    "installed_on": LAST_CHECK,  # the same day as the inspection counts as "since"
}
GENUINE = {"release_certificate_on_file": True, "registry_status": "serviceable"}


def world(
    aircraft: dict | None = None,
    tires: dict[str, float | None] | None = None,
    mechanical: dict | None = None,
    electrical: dict | None = None,
    log: dict | None = None,
    units: list[dict] | None = None,
    registry: list[dict] | None = None,
) -> Tables:
    """A healthy A320 that is in date, unless a part of it is overridden."""
    pressures: dict[str, float | None] = {
        "NLG-L": 180, "NLG-R": 183, "MLG-L1": 200, "MLG-L2": 204, "MLG-R1": 196
    }
    pressures.update(tires or {})
    installed = [OLD_UNIT] if units is None else units
    records = registry
    if records is None:
        records = [
            {"serial_number": u["serial_number"], "part_number_on_record": u["part_number"]}
            | GENUINE
            for u in installed
        ]
    return Tables(
        {
            "aircraft": pd.DataFrame(
                [
                    {
                        "tail_number": TAIL,
                        "aircraft_model": "A320-214",
                        "manufacturer_serial": "MSN01234",
                        "operator": "Northwind Air",
                        "airworthiness_cert_expiry": "2027-01-01",
                        "total_flight_hours": 20400.0,
                        "total_cycles": 11000,
                        **(aircraft or {}),
                    }
                ]
            ),
            "type_specs": pd.DataFrame([SPEC]),
            "mechanical": pd.DataFrame(
                [
                    {
                        "tail_number": TAIL,
                        "recorded_at": f"{DEPARTURE}T05:00:00Z",
                        "tires": [{"position": p, "pressure_psi": v} for p, v in pressures.items()],
                        "brakes": [{"position": "L1", "wear_pin_mm": 5.0}],
                        "hydraulic_systems": [
                            {"system": "GREEN", "pressure_psi": 3000},
                            {"system": "BLUE", "pressure_psi": 3010},
                        ],
                        "engine_oil": [{"engine": "ENG1", "quantity_qt": 15.0}],
                        **(mechanical or {}),
                    }
                ]
            ),
            "electrical": pd.DataFrame(
                [
                    {
                        "tail_number": TAIL,
                        "battery_volts": 27.0,
                        "generators": [
                            {"generator": "GEN1", "volts": 115.0, "frequency_hz": 400.0}
                        ],
                        "bite_messages": [
                            {"code": "31-32-05", "fault_class": "advisory", "text": "DMU memory"}
                        ],
                        "installed_units": installed,
                        **(electrical or {}),
                    }
                ]
            ),
            "maintenance": pd.DataFrame(
                [
                    {
                        "tail_number": TAIL,
                        "last_inspection_date": LAST_CHECK,
                        "hours_at_last_inspection": 20000.0,
                        "deferred_items": [],
                        **(log or {}),
                    }
                ]
            ),
            "parts_registry": pd.DataFrame(
                records,
                columns=[
                    "serial_number",
                    "part_number_on_record",
                    "release_certificate_on_file",
                    "registry_status",
                ],
            ),
        }
    )


def solve(tables: Tables) -> tuple[dict[str, Any], list[ToolCall]]:
    task = Task(
        id="aircraft_inspection-t",
        domain="aircraft_inspection",
        inputs={
            "tail_number": TAIL,
            "flight_number": "NW123",
            "departure_date": DEPARTURE,
            "departure_station": "BOS",
        },
    )
    run = PolicyRun(DOMAIN.tool_map(), DOMAIN.context(tables, None))
    return DOMAIN.solve(task, run).outputs, run.calls


def reported_codes(calls: list[ToolCall]) -> list[str]:
    reports = [c for c in calls if c.name == "file_discrepancy_report"]
    return reports[0].arguments["discrepancy_codes"] if reports else []


def item(
    category: str, deferred_on: str, status: str = "open", interval: int | None = None
) -> dict:
    return {
        "item_id": f"DD-{category}{deferred_on[-2:]}",
        "description": "cabin temp sensor zone 2",
        "mel_category": category,
        "deferred_on": deferred_on,
        "repair_interval_days": interval,
        "status": status,
    }


def test_healthy_aircraft_is_released_without_a_report() -> None:
    outputs, calls = solve(world())
    assert [c.name for c in calls] == [
        "get_aircraft_record",
        "get_type_specifications",
        "get_mechanical_readings",
        "run_electrical_checks",
        "get_maintenance_log",
    ]
    assert outputs == {
        "mechanical_status": "pass",
        "electrical_status": "pass",
        "parts_authentication": "not_required",  # the only unit predates the last check
        "records_status": "compliant",
        "highest_severity": "none",
        "airworthiness_decision": "release",
        "discrepancy_count": 0,
        "max_tire_deviation_pct": 2.0,  # MLG-R1: 4 psi of 200
    }


@pytest.mark.parametrize(
    ("tires", "codes", "severity", "max_deviation"),
    [
        ({"MLG-R1": 210}, [], "none", 5.0),  # exactly 5%: still within
        ({"MLG-R1": 189}, ["TIRE-MLG-R1"], "minor", 5.5),
        ({"NLG-R": 162}, ["TIRE-NLG-R"], "minor", 10.0),  # nose nominal 180: exactly 10%
        ({"NLG-R": 161}, ["TIRE-NLG-R"], "major", 10.6),
        ({"MLG-L2": None}, ["TIRE-MLG-L2"], "major", 2.0),  # missing: excluded from the max
    ],
)
def test_tire_pressure_bands(
    tires: dict, codes: list[str], severity: str, max_deviation: float
) -> None:
    outputs, calls = solve(world(tires=tires))
    assert reported_codes(calls) == codes
    assert outputs["highest_severity"] == severity
    assert outputs["max_tire_deviation_pct"] == pytest.approx(max_deviation, abs=0.05)


@pytest.mark.parametrize(
    ("mechanical", "code", "severity", "decision"),
    [
        ({"brakes": [{"position": "L1", "wear_pin_mm": 0.9}]}, "BRAKE-L1", "major", "hold"),
        (
            {"hydraulic_systems": [{"system": "GREEN", "pressure_psi": 2849}]},
            "HYD-GREEN",
            "critical",
            "grounded",
        ),
        (
            {"engine_oil": [{"engine": "ENG1", "quantity_qt": 11.9}]},
            "OIL-ENG1",
            "minor",
            "release_after_servicing",
        ),
    ],
)
def test_mechanical_limits(mechanical: dict, code: str, severity: str, decision: str) -> None:
    outputs, calls = solve(world(mechanical=mechanical))
    assert reported_codes(calls) == [code]
    assert outputs["mechanical_status"] == "fail"
    assert outputs["highest_severity"] == severity
    expected = "hold_for_maintenance" if decision == "hold" else decision
    assert outputs["airworthiness_decision"] == expected


def test_hydraulic_range_includes_its_end_points() -> None:
    systems = [
        {"system": "GREEN", "pressure_psi": 2850},
        {"system": "BLUE", "pressure_psi": 3150},
    ]
    outputs, _ = solve(world(mechanical={"hydraulic_systems": systems}))
    assert outputs["mechanical_status"] == "pass"


@pytest.mark.parametrize(
    ("electrical", "codes", "severity"),
    [
        ({"battery_volts": 24.9}, ["BATT"], "major"),
        (
            {"generators": [{"generator": "GEN1", "volts": 130.0, "frequency_hz": 430.0}]},
            ["GEN-GEN1"],  # one discrepancy per generator
            "major",
        ),
        (
            {"generators": [{"generator": "APU", "volts": None, "frequency_hz": 400.0}]},
            ["GEN-APU"],
            "major",
        ),
        (
            {
                "bite_messages": [
                    {"code": "24-31-07", "fault_class": "caution", "text": "charger fan"},
                    {"code": "23-73-02", "fault_class": "advisory", "text": "PA volume"},
                ]
            },
            ["BITE-24-31-07"],
            "minor",
        ),
        (
            {"bite_messages": [{"code": "24-22-01", "fault_class": "warning", "text": "IDG"}]},
            ["BITE-24-22-01"],
            "critical",
        ),
    ],
)
def test_electrical_checks(electrical: dict, codes: list[str], severity: str) -> None:
    outputs, calls = solve(world(electrical=electrical))
    assert reported_codes(calls) == codes
    assert outputs["electrical_status"] == "fail"
    assert outputs["highest_severity"] == severity


@pytest.mark.parametrize(
    ("aircraft", "log", "codes"),
    [
        ({"airworthiness_cert_expiry": DEPARTURE}, {}, []),  # valid through its expiry date
        ({"airworthiness_cert_expiry": "2026-05-09"}, {}, ["CERT"]),
        ({}, {"last_inspection_date": "2026-01-10"}, []),  # day 120 of 120
        ({}, {"last_inspection_date": "2026-01-09"}, ["INSP"]),
        ({"total_flight_hours": 20750.1}, {}, ["INSP"]),
        ({}, {"last_inspection_date": None, "hours_at_last_inspection": None}, ["INSP"]),
    ],
)
def test_certificate_and_periodic_inspection(aircraft: dict, log: dict, codes: list[str]) -> None:
    outputs, calls = solve(world(aircraft=aircraft, log=log))
    assert reported_codes(calls) == codes
    assert outputs["records_status"] == ("noncompliant" if codes else "compliant")


def test_missing_inspection_date_means_every_unit_is_verified() -> None:
    outputs, calls = solve(
        world(log={"last_inspection_date": None, "hours_at_last_inspection": None})
    )
    verified = [c.arguments for c in calls if c.name == "verify_component_authenticity"]
    assert verified == [{"part_number": "822-1338-002", "serial_number": "SN40000000"}]
    assert outputs["parts_authentication"] == "verified"
    assert outputs["airworthiness_decision"] == "hold_for_maintenance"


@pytest.mark.parametrize(
    ("items", "decision", "codes"),
    [
        ([item("B", "2026-05-07")], "release_with_deferrals", []),  # age 3 of 3
        ([item("B", "2026-05-06")], "hold_for_maintenance", ["MEL-DD-B06"]),
        ([item("A", "2026-05-08", interval=2)], "release_with_deferrals", []),
        ([item("A", "2026-05-07", interval=2)], "hold_for_maintenance", ["MEL-DD-A07"]),
        ([item("C", "2026-04-01", status="closed")], "release", []),
        ([item("D", "2026-02-01")], "release_with_deferrals", []),
    ],
)
def test_deferred_items(items: list[dict], decision: str, codes: list[str]) -> None:
    outputs, calls = solve(world(log={"deferred_items": items}))
    assert outputs["airworthiness_decision"] == decision
    assert reported_codes(calls) == codes


@pytest.mark.parametrize(
    "record",
    [
        None,  # serial not in the registry
        {"part_number_on_record": "731-5520-005"} | GENUINE,
        {"part_number_on_record": "731-5520-004", **GENUINE, "release_certificate_on_file": False},
        {"part_number_on_record": "731-5520-004", **GENUINE, "registry_status": "scrapped"},
    ],
)
def test_suspect_new_unit_grounds_the_aircraft(record: dict | None) -> None:
    registry: list[dict[str, Any]] = [
        {"serial_number": OLD_UNIT["serial_number"], "part_number_on_record": "x"}
    ]
    registry[0] |= GENUINE  # the old unit's record is wrong too, but it is not verified
    if record is not None:
        registry.append({"serial_number": NEW_UNIT["serial_number"], **record})
    outputs, calls = solve(world(units=[OLD_UNIT, NEW_UNIT], registry=registry))
    verified = [
        c.arguments["serial_number"] for c in calls if c.name == "verify_component_authenticity"
    ]
    assert verified == ["SN40000007"]
    assert reported_codes(calls) == ["PART-SN40000007"]
    assert outputs["parts_authentication"] == "failed"
    assert outputs["airworthiness_decision"] == "grounded"


def test_genuine_new_unit_is_verified() -> None:
    outputs, _ = solve(world(units=[OLD_UNIT, NEW_UNIT]))
    assert outputs["parts_authentication"] == "verified"
    assert outputs["airworthiness_decision"] == "release"


def test_report_lists_every_discrepancy_in_sop_order() -> None:
    tables = world(
        aircraft={"airworthiness_cert_expiry": "2026-01-01"},
        tires={"NLG-L": 150},
        mechanical={"engine_oil": [{"engine": "ENG1", "quantity_qt": 10.0}]},
        electrical={"battery_volts": 23.0},
        log={"deferred_items": [item("C", "2026-04-01")]},
        units=[NEW_UNIT],
        registry=[],
    )
    outputs, calls = solve(tables)
    assert reported_codes(calls) == [
        "TIRE-NLG-L",
        "OIL-ENG1",
        "BATT",
        "PART-SN40000007",
        "CERT",
        "MEL-DD-C01",
    ]
    report = calls[-1].arguments
    assert (report["highest_severity"], report["airworthiness_decision"]) == (
        "critical",
        "grounded",
    )
    assert outputs["discrepancy_count"] == 6
    assert outputs["max_tire_deviation_pct"] == pytest.approx(16.7, abs=0.05)


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("get_aircraft_record", {"tail_number": "N999ZZ"}),
        ("get_mechanical_readings", {"tail_number": "N999ZZ"}),
        ("run_electrical_checks", {"tail_number": "N999ZZ"}),
        ("get_maintenance_log", {"tail_number": "N999ZZ"}),
        ("get_type_specifications", {"aircraft_model": "B747-400"}),
    ],
)
def test_unknown_records_are_not_found(tool: str, arguments: dict) -> None:
    assert_refused(DOMAIN, DOMAIN.context(world(), None), tool, arguments, "not_found")


def test_unregistered_serial_is_a_fact_not_an_error() -> None:
    result = DOMAIN.tool_map()["verify_component_authenticity"](
        {"part_number": "731-5520-004", "serial_number": "SN99999999"},
        DOMAIN.context(world(), None),
    )
    assert result == {
        "serial_registered": False,
        "part_number_on_record": None,
        "release_certificate_on_file": None,
        "registry_status": None,
    }
