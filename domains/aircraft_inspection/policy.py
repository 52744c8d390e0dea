"""The pre-flight airworthiness SOP as code: the reference policy that derives every label."""

from __future__ import annotations

from datetime import date

from sopgym.core.domain import PolicyRun
from sopgym.core.tasks import Solution, Task
from sopgym.domains.aircraft_inspection import rules


def solve(task: Task, run: PolicyRun) -> Solution:
    x = task.inputs
    tail = x["tail_number"]
    aircraft = run.call("get_aircraft_record", tail_number=tail)
    spec = run.call("get_type_specifications", aircraft_model=aircraft["aircraft_model"])
    mechanical = run.call("get_mechanical_readings", tail_number=tail)
    electrical = run.call("run_electrical_checks", tail_number=tail)
    log = run.call("get_maintenance_log", tail_number=tail)

    part_findings = []
    checked = rules.units_to_verify(electrical, log["last_inspection_date"])
    for unit in checked:
        registry = run.call(
            "verify_component_authenticity",
            part_number=unit["part_number"],
            serial_number=unit["serial_number"],
        )
        if not rules.unit_is_authentic(unit, registry):
            part_findings.append(
                rules.Finding(f"PART-{unit['serial_number']}", "parts", "critical")
            )

    record_findings, valid_deferrals = rules.records_findings(
        aircraft, log, spec, date.fromisoformat(x["departure_date"])
    )
    mechanical_findings = rules.mechanical_findings(mechanical, spec)
    electrical_findings = rules.electrical_findings(electrical, spec)
    findings = [*mechanical_findings, *electrical_findings, *part_findings, *record_findings]
    severity = rules.highest_severity(findings)
    verdict = rules.decision(severity, valid_deferrals)
    if findings:
        run.call(
            "file_discrepancy_report",
            tail_number=tail,
            flight_number=x["flight_number"],
            discrepancy_codes=[f.code for f in findings],
            highest_severity=severity,
            airworthiness_decision=verdict,
        )

    authentication = "failed" if part_findings else "verified" if checked else "not_required"
    return Solution(
        outputs={
            "mechanical_status": "fail" if mechanical_findings else "pass",
            "electrical_status": "fail" if electrical_findings else "pass",
            "parts_authentication": authentication,
            "records_status": "noncompliant" if record_findings else "compliant",
            "highest_severity": severity,
            "airworthiness_decision": verdict,
            "discrepancy_count": len(findings),
            "max_tire_deviation_pct": rules.max_tire_deviation(mechanical, spec),
        },
        decisions={
            "discrepancy_codes": [f.code for f in findings],
            "units_verified": len(checked),
            "valid_open_deferrals": valid_deferrals,
        },
    )
