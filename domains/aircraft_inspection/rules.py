"""The pre-flight inspection SOP's rules as pure functions: readings in, findings out.

A finding is one discrepancy: its report code, the area it belongs to and its severity.
Keeping the rules apart from the call sequence (policy.py) lets the domain tests check each
limit by hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from sopgym.core.tools import JSON

SEVERITY_RANK = {"none": 0, "minor": 1, "major": 2, "critical": 3}
TIRE_MINOR_PCT = 5.0
TIRE_MAJOR_PCT = 10.0
MEL_LIMIT_DAYS = {"B": 3, "C": 10, "D": 120}


@dataclass(frozen=True)
class Finding:
    code: str
    area: str  # mechanical, electrical, parts, records
    severity: str  # minor, major, critical


def tire_deviation_pct(position: str, pressure: float, spec: JSON) -> float:
    nominal = spec[
        "nose_tire_nominal_psi" if position.startswith("NLG") else "main_tire_nominal_psi"
    ]
    return abs(pressure - nominal) * 100 / nominal


def mechanical_findings(readings: JSON, spec: JSON) -> list[Finding]:
    found = []
    for tire in readings["tires"]:
        code = f"TIRE-{tire['position']}"
        if tire["pressure_psi"] is None:
            found.append(Finding(code, "mechanical", "major"))
            continue
        deviation = tire_deviation_pct(tire["position"], tire["pressure_psi"], spec)
        if deviation > TIRE_MAJOR_PCT:
            found.append(Finding(code, "mechanical", "major"))
        elif deviation > TIRE_MINOR_PCT:
            found.append(Finding(code, "mechanical", "minor"))
    for brake in readings["brakes"]:
        if brake["wear_pin_mm"] < spec["brake_wear_pin_min_mm"]:
            found.append(Finding(f"BRAKE-{brake['position']}", "mechanical", "major"))
    for system in readings["hydraulic_systems"]:
        if not spec["hydraulic_min_psi"] <= system["pressure_psi"] <= spec["hydraulic_max_psi"]:
            found.append(Finding(f"HYD-{system['system']}", "mechanical", "critical"))
    for engine in readings["engine_oil"]:
        if engine["quantity_qt"] < spec["engine_oil_min_qt"]:
            found.append(Finding(f"OIL-{engine['engine']}", "mechanical", "minor"))
    return found


def max_tire_deviation(readings: JSON, spec: JSON) -> float:
    """The largest deviation among recorded tires, rounded to one decimal."""
    deviations = [
        tire_deviation_pct(t["position"], t["pressure_psi"], spec)
        for t in readings["tires"]
        if t["pressure_psi"] is not None
    ]
    return round(max(deviations, default=0.0), 1)


def _in_range(value: float | None, low: float, high: float) -> bool:
    return value is not None and low <= value <= high


def electrical_findings(check: JSON, spec: JSON) -> list[Finding]:
    found = []
    if check["battery_volts"] < spec["battery_min_volts"]:
        found.append(Finding("BATT", "electrical", "major"))
    for gen in check["generators"]:
        volts_ok = _in_range(gen["volts"], spec["generator_min_volts"], spec["generator_max_volts"])
        hz_ok = _in_range(gen["frequency_hz"], spec["generator_min_hz"], spec["generator_max_hz"])
        if not (volts_ok and hz_ok):
            found.append(Finding(f"GEN-{gen['generator']}", "electrical", "major"))
    for message in check["bite_messages"]:
        severity = {"caution": "minor", "warning": "critical"}.get(message["fault_class"])
        if severity:
            found.append(Finding(f"BITE-{message['code']}", "electrical", severity))
    return found


def units_to_verify(check: JSON, last_inspection: str | None) -> list[JSON]:
    """Units installed on or after the last inspection; every unit when none is on record."""
    if last_inspection is None:
        return list(check["installed_units"])
    return [u for u in check["installed_units"] if u["installed_on"] >= last_inspection]


def unit_is_authentic(unit: JSON, registry: JSON) -> bool:
    return (
        registry["serial_registered"]
        and registry["part_number_on_record"] == unit["part_number"]
        and registry["release_certificate_on_file"] is True
        and registry["registry_status"] == "serviceable"
    )


def deferral_expires(item: JSON) -> int:
    """Days an open deferral may run: category A carries its own interval."""
    if item["mel_category"] == "A":
        return item["repair_interval_days"]
    return MEL_LIMIT_DAYS[item["mel_category"]]


def records_findings(
    aircraft: JSON, log: JSON, spec: JSON, departure: date
) -> tuple[list[Finding], int]:
    """Certificate, periodic inspection and deferrals; also the open deferrals still valid."""
    found = []
    if date.fromisoformat(aircraft["airworthiness_cert_expiry"]) < departure:
        found.append(Finding("CERT", "records", "critical"))
    last = log["last_inspection_date"]
    if last is None:
        overdue = True
    else:
        days = (departure - date.fromisoformat(last)).days
        hours = aircraft["total_flight_hours"] - log["hours_at_last_inspection"]
        overdue = (
            days > spec["inspection_interval_days"] or hours > spec["inspection_interval_hours"]
        )
    if overdue:
        found.append(Finding("INSP", "records", "major"))
    valid_open = 0
    for item in log["deferred_items"]:
        if item["status"] != "open":
            continue
        age = (departure - date.fromisoformat(item["deferred_on"])).days
        if age > deferral_expires(item):
            found.append(Finding(f"MEL-{item['item_id']}", "records", "major"))
        else:
            valid_open += 1
    return found, valid_open


def highest_severity(findings: list[Finding]) -> str:
    return max((f.severity for f in findings), key=SEVERITY_RANK.__getitem__, default="none")


def decision(severity: str, valid_open_deferrals: int) -> str:
    return {
        "critical": "grounded",
        "major": "hold_for_maintenance",
        "minor": "release_after_servicing",
    }.get(severity, "release_with_deferrals" if valid_open_deferrals else "release")
