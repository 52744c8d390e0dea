"""The know-your-business SOP as code: the reference policy behind every label."""

from __future__ import annotations

from sopgym.core.domain import PolicyRun
from sopgym.core.tasks import Solution, Task
from sopgym.domains.know_your_business.tools._common import normalized

# SOP section 3: what the applicant must supply (address is optional: the registry has it)
REQUIRED_FIELDS = ("registration_number", "jurisdiction", "tax_id")
NAME_MATCH_MIN = 90
MAJOR_OWNER_MIN_PERCENT = 25
SANCTIONS_CONFIRMED_MIN = 90
SANCTIONS_POTENTIAL_MIN = 75
RISK_HIGH_MIN = 70
RISK_MEDIUM_MIN = 40
REQUIRED_LICENSE = {
    "money_services": "money_transmission",
    "pharmaceutical_wholesale": "wholesale_drug_distribution",
    "alcohol_distribution": "alcohol_wholesale",
    "financial_advisory": "investment_advice",
}
RISK_ORDER = ["low", "medium", "high"]
CHECKS = (
    "registration_check",
    "tax_check",
    "license_check",
    "ownership_check",
    "sanctions_check",
    "jurisdiction_risk",
)
RED_FLAGS = {
    "registration_check": {"details_mismatch", "inactive", "not_found"},
    "tax_check": {"name_mismatch", "invalid"},
    "license_check": {"expired_or_suspended"},
    "ownership_check": {"complex"},
    "sanctions_check": {"potential_match", "confirmed_match"},
    "jurisdiction_risk": {"high"},
}


def registration_result(inputs: dict, registry: dict) -> str:
    if not registry["record_found"]:
        return "not_found"
    if registry["registration_status"] != "active":
        return "inactive"
    address = inputs.get("registered_address") or ""
    address_differs = bool(address) and normalized(address) != normalized(
        registry["registered_address"]
    )
    if registry["name_similarity"] < NAME_MATCH_MIN or address_differs:
        return "details_mismatch"
    return "verified"


def tax_result(tin: dict) -> str:
    if not tin["tin_found"] or tin["tin_status"] != "active":
        return "invalid"
    return "verified" if tin["name_similarity"] >= NAME_MATCH_MIN else "name_mismatch"


def license_result(licenses: list[dict], application_date: str) -> str:
    if not licenses:
        return "missing"
    valid = any(
        lic["status"] == "active" and lic["expiry_date"] >= application_date for lic in licenses
    )
    return "verified" if valid else "expired_or_suspended"


def major_owners(owners: list[dict]) -> list[dict]:
    return [o for o in owners if o["ownership_percent"] >= MAJOR_OWNER_MIN_PERCENT]


def ownership_result(owners: list[dict]) -> str:
    corporate = any(o["owner_type"] == "corporate" for o in major_owners(owners))
    undisclosed = sum(o["ownership_percent"] for o in owners) < 100
    return "complex" if corporate or undisclosed else "transparent"


def sanctions_result(best_score: int) -> str:
    if best_score >= SANCTIONS_CONFIRMED_MIN:
        return "confirmed_match"
    return "potential_match" if best_score >= SANCTIONS_POTENTIAL_MIN else "clear"


def risk_band(score: int) -> str:
    return "high" if score >= RISK_HIGH_MIN else "medium" if score >= RISK_MEDIUM_MIN else "low"


def decide(checks: dict[str, str]) -> str:
    """SOP section 9: any red flag escalates; else a missing licence waits; else approve."""
    if any(checks[name] in flags for name, flags in RED_FLAGS.items()):
        return "escalate"
    return "awaiting_information" if checks["license_check"] == "missing" else "approve"


def _finish(
    run: PolicyRun, application_id: str, checks: dict[str, str], outcome: str, decisions: dict
) -> Solution:
    record = run.call("record_kyb_decision", application_id=application_id, outcome=outcome)
    return Solution(
        outputs={**checks, "kyb_decision": outcome, "case_reference": record["case_id"]},
        decisions=decisions,
    )


def solve(task: Task, run: PolicyRun) -> Solution:
    x = task.inputs
    application_id = x["application_id"]
    not_checked = dict.fromkeys(CHECKS, "not_checked")

    missing = [name for name in REQUIRED_FIELDS if not x.get(name)]
    if missing:
        run.call(
            "request_missing_information", application_id=application_id, missing_items=missing
        )
        return _finish(
            run,
            application_id,
            not_checked,
            "awaiting_information",
            {"branch": "incomplete_application", "missing_items": missing},
        )

    registry = run.call(
        "lookup_business_registry",
        registration_number=x["registration_number"],
        jurisdiction=x["jurisdiction"],
        business_name=x["business_name"],
    )
    if not registry["record_found"]:
        checks = {**not_checked, "registration_check": "not_found"}
        return _finish(run, application_id, checks, "escalate", {"branch": "not_in_registry"})

    checks = {"registration_check": registration_result(x, registry)}
    tin = run.call("verify_tax_identity", tax_id=x["tax_id"], legal_name=registry["legal_name"])
    checks["tax_check"] = tax_result(tin)

    license_type = REQUIRED_LICENSE.get(x["business_type"])
    if license_type:
        held = run.call(
            "check_business_licenses",
            registration_number=x["registration_number"],
            license_type=license_type,
        )
        checks["license_check"] = license_result(held["licenses"], x["application_date"])
    else:
        checks["license_check"] = "not_required"

    owners = run.call("get_ownership_structure", registration_number=x["registration_number"])[
        "owners"
    ]
    checks["ownership_check"] = ownership_result(owners)
    major = major_owners(owners)

    parties = [(registry["legal_name"], "organization")] + [
        (o["owner_name"], "individual" if o["owner_type"] == "individual" else "organization")
        for o in major
    ]
    scores = [
        run.call("screen_sanctions", party_name=name, party_type=party)["best_match_score"]
        for name, party in parties
    ]
    checks["sanctions_check"] = sanctions_result(max(scores))

    countries = list(dict.fromkeys([registry["jurisdiction"], *(o["country"] for o in major)]))
    bands = [
        risk_band(run.call("get_jurisdiction_risk", country_code=code)["risk_score"])
        for code in countries
    ]
    checks["jurisdiction_risk"] = max(bands, key=RISK_ORDER.index)

    outcome = decide(checks)
    if outcome == "awaiting_information":
        run.call(
            "request_missing_information", application_id=application_id, missing_items=["license"]
        )
    decisions = {
        "branch": "full_verification",
        "address_from_registry": not x.get("registered_address"),
        "screening_scores": scores,
        "countries_rated": countries,
    }
    return _finish(run, application_id, checks, outcome, decisions)
