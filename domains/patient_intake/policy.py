"""The patient intake SOP as code: the reference policy that derives every label."""

from __future__ import annotations

from datetime import date

from sopgym.core.domain import PolicyRun
from sopgym.core.tasks import Solution, Task

FULL_COVERAGE_MAX_GENERIC = 10
FULL_COVERAGE_MAX_BRAND = 25


def insurance_is_valid(task_inputs: dict, policy: dict) -> bool:
    """SOP §2: found, active, same provider, held by this patient, visit inside coverage."""
    if not policy["policy_found"] or policy["policy_status"] != "active":
        return False
    if (
        policy["provider_on_file"].casefold()
        != task_inputs["insurance_provider"].strip().casefold()
    ):
        return False
    if policy["holder_patient_id"] != task_inputs["patient_id"]:
        return False
    visit = date.fromisoformat(task_inputs["visit_date"])
    start = date.fromisoformat(policy["coverage_start"])
    end = date.fromisoformat(policy["coverage_end"])
    return start <= visit <= end


def lifestyle_level(total_points: int) -> str:
    return "low" if total_points <= 2 else "moderate" if total_points <= 5 else "high"


def overall_level(total_points: int) -> str:
    return "low" if total_points <= 3 else "medium" if total_points <= 7 else "high"


def prescription_coverage(plan: dict) -> str:
    if not plan["plan_found"]:
        return "none"
    full = (
        plan["generic_copay_percent"] <= FULL_COVERAGE_MAX_GENERIC
        and plan["brand_copay_percent"] <= FULL_COVERAGE_MAX_BRAND
    )
    return "full" if full else "partial"


def pharmacy_status(pharmacy: dict) -> str:
    in_network = (
        pharmacy["pharmacy_found"]
        and pharmacy["network_participation"] in ("preferred", "standard")
        and pharmacy["accepting_prescriptions"]
    )
    return "in_network" if in_network else "out_of_network"


def solve(task: Task, run: PolicyRun) -> Solution:
    x = task.inputs
    pid = x["patient_id"]

    policy = run.call(
        "validate_insurance",
        patient_id=pid,
        insurance_provider=x["insurance_provider"],
        policy_number=x["policy_number"],
    )
    insurance_valid = insurance_is_valid(x, policy)

    if insurance_valid and x.get("rx_member_id"):
        plan = run.call(
            "check_prescription_benefits", patient_id=pid, rx_member_id=x["rx_member_id"]
        )
        coverage = prescription_coverage(plan)
    else:
        coverage = "not_checked"

    lifestyle = run.call(
        "score_lifestyle",
        patient_id=pid,
        smoking_status=x["smoking_status"],
        alcohol_consumption=x["alcohol_consumption"],
        exercise_frequency=x["exercise_frequency"],
    )
    lifestyle_risk = lifestyle_level(lifestyle["total_points"])

    clinical = run.call(
        "score_clinical_risk",
        patient_id=pid,
        date_of_birth=x["date_of_birth"],
        visit_date=x["visit_date"],
        past_surgeries=x["past_surgeries"],
        chronic_conditions=x["chronic_conditions"],
        lifestyle_risk_level=lifestyle_risk,
    )
    overall_risk = overall_level(clinical["total_points"])

    pharmacy_fields = (x.get("pharmacy_name"), x.get("pharmacy_address"), x.get("pharmacy_phone"))
    if all(pharmacy_fields):
        pharmacy = run.call(
            "verify_pharmacy",
            patient_id=pid,
            pharmacy_name=pharmacy_fields[0],
            pharmacy_address=pharmacy_fields[1],
            pharmacy_phone=pharmacy_fields[2],
        )
        pharmacy_result = pharmacy_status(pharmacy)
    else:
        pharmacy_result = "not_provided"

    if insurance_valid:
        registration = run.call(
            "register_patient",
            patient_id=pid,
            policy_number=x["policy_number"],
            lifestyle_risk_level=lifestyle_risk,
            overall_risk_level=overall_risk,
            care_coordination=overall_risk == "high",
        )
        registration_status = "success" if registration["accepted"] else "failure"
        registration_branch = "accepted" if registration["accepted"] else "refused_by_registry"
    else:
        registration_status = "failure"
        registration_branch = "not_attempted_invalid_insurance"

    return Solution(
        outputs={
            "insurance_status": "valid" if insurance_valid else "invalid",
            "prescription_coverage": coverage,
            "lifestyle_risk": lifestyle_risk,
            "overall_risk": overall_risk,
            "pharmacy_status": pharmacy_result,
            "registration_status": registration_status,
        },
        decisions={
            "lifestyle_points": lifestyle["total_points"],
            "clinical_points": clinical["total_points"],
            "registration_branch": registration_branch,
            "optional_data_missing": not all(pharmacy_fields) or not x.get("rx_member_id"),
        },
    )
